"""Sessions for developing and running fusionspec.

    nox -s tests          the project's test suite (unit, property, CLI), without the slow tests
    nox -s tests-slow     the slow tests (the conformance suite on the OpenCL backend)
    nox -s lint           ruff and the import contracts (import-linter)
    nox -s typecheck      mypy --strict on the installed package (paths mapped to the sources)
    nox -s conformance    the main job: the conformance suite (ci profile) on every installed
                          backend and device, results under results/conformance/
    nox -s conformance-reference  the same for the reference backend only
    nox -s report         the HTML report of results/conformance/*/results.json, written to
                          reports/out/index.html (the conformance session ends with it too)
    nox -s examples       validate, partition and run the example graphs in examples/
    nox -s corpus         load/finalize every oneDNN benchdnn graph under $FUSIONSPEC_ONEDNN_INPUTS
    nox -s bench-reference  reference executor vs PyTorch CPU on realistic shapes
    nox -s bench-partition  partitioner on 10,000- and 20,000-op graphs
    nox -s bench-accel      fusionspec bench on an OpenCL device, with its copy bandwidth
    nox -s bench-conform    the reference's ci run with --jobs 1 and --jobs 2, side by side
    nox -s mutation       the mutation score: every planted bug through the ci profile
    nox -s mutation-sample  a seeded sample of cosmic-ray's mutants of the reference, each run
                          as a backend under test: the score per area with its interval
    nox -s real-bugs      the real-bug score: bugs shipped and fixed by real implementations,
                          each re-created and run through the ci profile
    nox -s bench-values   the share of NaN/inf and weak-signal outputs of the drawn cases
    nox -s conformance-onednn   the suite on the real oneDNN library, each graded version
                          (3.2 and 3.13, installed from PyPI), results next to the others,
                          the HTML report and docs/onednn-findings.md
    nox -s bench-onednn     fusionspec bench on oneDNN 3.2 and the OpenCL devices, side by side
    nox -s bench-runtimes   the OpenCL runtimes side by side (probe, cold and warm compile cost)
    nox -s bench-perf     fusionspec bench (does each fusion pay?) on the reference and accel,
                          perf documents under results/perf/, their report and findings
    nox -s bench-perf-onednn  the same on oneDNN 3.2 and 3.13 (installed from PyPI)
    nox -s bench-perf-noise   ten small bench runs compared pairwise by the perf gate (0 flags)
    nox -s gpu-check      on a GPU machine without network, from a wheel directory
                          (-- --wheels DIR or FUSIONSPEC_WHEELS): the accel tests, the ci run on
                          the GPU and the GPU bench next to PyTorch (results/gpu_check/)
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True

PYTHON = "3.11"
ROOT = Path(__file__).parent
IMPORT_LINTER = "import-linter>=2.1"
#: The versions every session's environment is held to (see the file).
CONSTRAINTS = ROOT / "constraints.txt"
# The independent implementation the reference ops are checked against (a test-only need).
TORCH = "torch==2.13.0"
# The oneDNN versions the suite grades, as PyPI requirements (library + headers). 3.2 is the
# CPU/OpenMP build; 3.13's CPU engine runs through SYCL on Intel's OpenCL CPU runtime, which
# the package pulls in (fusionspec.onednn.library points the OpenCL loader at it).
# Backends graded for their findings, not held to zero failures: the main job leaves them out.
GRADED_ONLY = frozenset({"onednn"})
#: `fusionspec conform`'s exit code for a backend or device that cannot be used.
UNAVAILABLE = 3
#: Backends whose device needs no probe (the reference's is NumPy): their runs start before
#: the devices are listed.
UNPROBED = {"reference": "numpy"}
#: Cases judged at a time by `fusionspec conform` in the conformance sessions.
JOBS = os.environ.get("FUSIONSPEC_JOBS", "auto")
ONEDNN = {
    "3.2": ("onednn-cpu-gomp==2023.2.0", "onednn-devel-cpu-gomp==2023.2.0"),
    "3.13": ("onednn==2026.1.0", "onednn-devel==2026.1.0"),
}


def _required(*names: str) -> str:
    """FUSIONSPEC_REQUIRE for a test run: what the caller requires (CI: the spec pages and
    Chromium) plus `names`, which the session itself installed (see tests/testkit/material.py)."""
    given = [n for n in os.environ.get("FUSIONSPEC_REQUIRE", "").split(",") if n.strip()]
    return ",".join(dict.fromkeys([*given, *names]))


def _source_digest() -> str:
    """A digest of what an install of this checkout holds: the package folders named in
    pyproject.toml and the files that build it."""
    import hashlib
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    folders = sorted(config["tool"]["setuptools"]["package-dir"].values())
    digest = hashlib.sha256()
    files = [ROOT / name for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md",
                                      "LICENSE")]
    for folder in folders:
        # What a run writes inside a package folder (the report's reports/out/) is not source.
        files += sorted(p for p in (ROOT / folder).rglob("*")
                        if p.is_file() and "__pycache__" not in p.parts
                        and not p.relative_to(ROOT).as_posix().startswith("reports/out/"))
    for path in files:
        if path.is_file():
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _install(session: nox.Session, *extras: str, editable: bool = False) -> None:
    """Install this checkout with `extras` into the session's environment, unless the same
    sources are installed there already with these extras or more (a reused environment: the
    main job's second run then spends no time reinstalling)."""
    target = f".[{','.join(extras)}]" if extras else "."
    location = getattr(session.virtualenv, "location", None)
    stamp = Path(location) / ".fusionspec-installed" if location else None
    key = f"{_source_digest()} {'editable' if editable else 'wheel'}"
    had = _installed_extras(stamp, key)
    if had is not None and set(extras) <= had:
        session.log("fusionspec is installed from these sources already: install skipped")
        return
    held = ("-c", str(CONSTRAINTS))
    if editable:
        session.install(*held, "-e", target)
    else:
        session.install(*held, target)
    if stamp is not None:
        stamp.write_text(f"{key}\n{','.join(sorted((had or set()) | set(extras)))}\n")


def _installed_extras(stamp: Path | None, key: str) -> set[str] | None:
    """The extras installed from the sources `key` names, by the stamp `_install` writes; None
    where nothing from these sources is installed (or the stamp is an older form)."""
    if stamp is None or not stamp.is_file():
        return None
    first, _, rest = stamp.read_text().partition("\n")
    if first != key:
        return None
    return {extra for extra in rest.strip().split(",") if extra}


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Run the test suite, one pytest-xdist worker per core (many tests wait on subprocesses);
    extra arguments go to pytest instead of the defaults (e.g. -k notation)."""
    _install(session, "accel", "intel-opencl", "conformance", "report", "dev", "onednn",
             "mutation")
    session.install(TORCH)
    session.run("pytest", *(session.posargs or ["-q", "-m", "not slow", "-n", "auto"]),
                env={"FUSIONSPEC_REQUIRE": _required("onednn")})


@nox.session(name="tests-slow", python=PYTHON)
def tests_slow(session: nox.Session) -> None:
    """The slow tests: the conformance suite on the OpenCL backend, family by family (each
    kernel is built once, then served from the disk cache)."""
    _install(session, "accel", "conformance", "report", "dev")
    session.run("pytest", "-q", "-m", "slow", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff, and the import contracts of pyproject.toml (the floors of CONTRIBUTING.md, no
    cycles)."""
    session.install("ruff>=0.5", IMPORT_LINTER)
    session.install("--no-deps", ".")  # the contracts read the package by its import names
    session.run("ruff", "check", ".")
    session.run("python", "tools/lint_imports.py")


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy --strict on the installed (not editable) package; errors name repository files."""
    _install(session, "accel", "conformance", "report", "dev")
    session.run("python", "tools/typecheck.py", *session.posargs)


@nox.session(python=PYTHON)
def examples(session: nox.Session) -> None:
    """Validate, partition and execute every example graph shipped in examples/."""
    _install(session)
    files = sorted(str(p) for p in (ROOT / "examples").glob("*.json"))
    out = ROOT / "results" / "examples"
    out.mkdir(parents=True, exist_ok=True)
    session.run("fusionspec", "validate", *files)
    for path in files:
        name = Path(path).stem
        session.run("fusionspec", "partition", path)
        session.run("fusionspec", "run", path, "--seed", "0", "--out",
                    str(out / f"{name}.outputs.npz"))


@nox.session(python=PYTHON)
def corpus(session: nox.Session) -> None:
    """Check every oneDNN benchdnn graph in $FUSIONSPEC_ONEDNN_INPUTS loads and validates."""
    if not os.environ.get("FUSIONSPEC_ONEDNN_INPUTS"):
        session.error("set FUSIONSPEC_ONEDNN_INPUTS to a checkout's tests/benchdnn/inputs/graph")
    _install(session, "conformance")
    session.run("pytest", "-q", "tests/spec/test_onednn_corpus.py",
                "tests/reference/test_partition_corpus.py", *session.posargs)


@nox.session(name="bench-reference", python=PYTHON)
def bench_reference(session: nox.Session) -> None:
    """Reference executor vs PyTorch CPU, side by side; writes results/bench_reference.json."""
    _install(session)
    session.install(TORCH)
    (ROOT / "results").mkdir(exist_ok=True)
    session.run("python", "bench/bench_reference.py", "--out",
                str(ROOT / "results" / "bench_reference.json"), *session.posargs)


@nox.session(name="bench-partition", python=PYTHON)
def bench_partition(session: nox.Session) -> None:
    """Partitioner on 10,000- and 20,000-op graphs; writes results/bench_partition.json."""
    _install(session)
    (ROOT / "results").mkdir(exist_ok=True)
    session.run("python", "bench/bench_partition.py", "--out",
                str(ROOT / "results" / "bench_partition.json"), *session.posargs)


def _conform(session: nox.Session, backends: list[str] | None,
             spent: dict[str, float] | None = None) -> None:
    """Run `fusionspec conform` for each backend and device, the runs side by side; fail if
    any run failed (the graded oneDNN is not among them: its departures are its findings, see
    conformance-onednn). `spent` collects the seconds each step took.

    A run spends much of its time waiting (on its workers' pipes, on a device, on a compiler),
    so runs side by side fill the cores that one leaves idle; they share their draws through
    the draw cache (the first to need a draw makes it, the others read it back). The
    reference needs no device probe, so it starts while the devices are probed. Each run's
    output is printed whole when it ends, not interleaved with the others'."""
    spent = {} if spent is None else spent

    def wanted(name: str) -> bool:
        return name in backends if backends is not None else name not in GRADED_ONLY

    runs: list[tuple[str, str | None, Future[bool]]] = []
    failed: list[str] = []
    with ThreadPoolExecutor(max_workers=8) as threads:
        def start(name: str, device: str | None) -> None:
            runs.append((name, device, threads.submit(_conform_one, session, name, device,
                                                      spent)))

        for unprobed, its_device in UNPROBED.items():
            if wanted(unprobed):
                start(unprobed, its_device)
        listing: dict[str, Any] = {}
        if backends is None or set(backends) - set(UNPROBED):
            with _timed(spent, "devices"):
                listing = _listing(session)
                if wanted("accel") and _no_device(listing, "accel") and INTEL_OPENCL_HERE:
                    listing = _with_intel_opencl(session, listing)
        for row in listing.get("backends", []):
            listed: str = row["backend"]
            if not wanted(listed) or listed in UNPROBED:
                continue
            # A backend without a usable device still gets a run: it writes a results
            # document saying why, which the report shows.
            for device in row["devices"] or [None]:
                start(listed, device)
        for name, device, run in runs:
            if not run.result():
                failed.append(f"{name}:{device}")
    if failed:
        session.error(f"conformance failures on {', '.join(failed)} (see results/conformance)")


def _listing(session: nox.Session) -> dict[str, Any]:
    """`fusionspec conform --list --json`: every installed backend with its usable devices."""
    listing: dict[str, Any] = json.loads(session.run("fusionspec", "conform", "--list", "--json",
                                                     silent=True) or "{}")
    return listing


def _no_device(listing: dict[str, Any], backend: str) -> bool:
    return any(row["backend"] == backend and not row["devices"]
               for row in listing.get("backends", []))


#: Whether Intel's CPU OpenCL runtime installs here (the intel-opencl extra's markers).
INTEL_OPENCL_HERE = sys.platform == "linux" and platform.machine() == "x86_64"


def _with_intel_opencl(session: nox.Session, listing: dict[str, Any]) -> dict[str, Any]:
    """Where no installed OpenCL device can run the backend (PoCL's LLVM does not know every
    CPU: on an AMD Zen 5 it builds no kernel), install Intel's CPU runtime, which runs on
    either vendor's processors, and list the devices again; the listing as it was where the
    runtime is installed already."""
    location = getattr(session.virtualenv, "location", None)
    stamp = Path(location) / ".fusionspec-installed" if location else None
    had = _installed_extras(stamp, f"{_source_digest()} wheel") or set()
    if "intel-opencl" in had:
        return listing
    why = next((row.get("unavailable", "") for row in listing.get("backends", [])
                if row["backend"] == "accel"), "")
    session.log(f"accel has no usable device ({why}); installing Intel's CPU OpenCL runtime "
                "(the intel-opencl extra) and listing the devices again")
    _install(session, "intel-opencl")
    return _listing(session)


def _conform_one(session: nox.Session, name: str, device: str | None,
                 spent: dict[str, float]) -> bool:
    """One `fusionspec conform` run (its output printed when it ends); whether it passed."""
    out = ROOT / "results" / "conformance" / f"{name}-{device or 'unavailable'}"
    chosen = ["--device", device] if device else []
    profile = os.environ.get("FUSIONSPEC_PROFILE", "ci")
    command = ["fusionspec", "conform", "--backend", name, *chosen, "--profile", profile,
               "--jobs", JOBS, "--out", str(out), *session.posargs]
    with _timed(spent, f"{name}:{device}"):
        try:
            said = session.run(*command, silent=True, success_codes=[0, UNAVAILABLE])
        except nox.command.CommandFailed:  # nox has printed its output
            return False
    session.log(f"{name}:{device or 'unavailable'}:")
    print(said, end="", flush=True)
    why = json.loads((out / "results.json").read_text()).get("unavailable")
    if why:  # the results document says why, and the report shows it
        session.warn(f"{name}:{device} is unavailable: {why}")
    return True


def _report(session: nox.Session, *args: str, required: bool = True) -> None:
    """Render reports/out/index.html from every results/conformance/*/results.json (the
    report finds the catch rates, results/mutation_sample.json and results/real_bugs.json,
    beside them by itself, and says "not measured" without them)."""
    files = sorted(str(p) for p in (ROOT / "results" / "conformance").glob("*/results.json"))
    if not files:
        if required:
            session.error("no results/conformance/*/results.json yet: run `nox -s conformance`")
        session.warn("no results to report on")
        return
    score = ROOT / "results" / "mutation.json"  # nox -s mutation
    mutation = ["--mutation", str(score)] if score.is_file() else []
    session.run("fusionspec", "report", *files, "-o",
                str(ROOT / "reports" / "out" / "index.html"), *mutation, *args)


# uv where it is installed (the README's main command installs it): it fetches and installs
# the packages in parallel, a fifth of pip's time with empty caches; pip's virtualenv otherwise.
@nox.session(python=PYTHON, venv_backend="uv|virtualenv")
def conformance(session: nox.Session) -> None:
    """The conformance suite on every installed backend and device (FUSIONSPEC_PROFILE=ci):
    the reference and the OpenCL backend (PoCL's CPU device comes with the accel extra)."""
    spent: dict[str, float] = {}
    begun = time.perf_counter()
    # The session's environment keeps the bytecode its processes compile: where the machine
    # sets PYTHONDONTWRITEBYTECODE, each of the dozen processes of the job would compile every
    # module it imports again (5 s of a warm run). Compiling all of it at install costs more.
    session.env["PYTHONDONTWRITEBYTECODE"] = ""
    with _timed(spent, "install"):
        _install(session, "accel", "conformance", "report")
    try:
        _conform(session, None, spent)
    finally:
        # The report is most wanted when a run failed, so it is rendered either way.
        with _timed(spent, "report"):
            _report(session, required=False)
        session.log("time: " + ", ".join(f"{step} {seconds:.1f} s"
                                         for step, seconds in spent.items())
                    + f" (the runs and the device probe side by side); in all "
                    f"{time.perf_counter() - begun:.1f} s")


@contextlib.contextmanager
def _timed(spent: dict[str, float], step: str) -> Iterator[None]:
    """Add the seconds the block takes to ``spent[step]`` (the main job's closing time line;
    steps that run side by side each count their own)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        with _SPENT_LOCK:
            spent[step] = spent.get(step, 0.0) + time.perf_counter() - start


_SPENT_LOCK = threading.Lock()


@nox.session(python=PYTHON)
def report(session: nox.Session) -> None:
    """The HTML report of the last conformance runs; arguments go to `fusionspec report`
    (e.g. --baseline old/results.json)."""
    _install(session, "conformance", "report")
    _report(session, *session.posargs)


@nox.session(name="conformance-reference", python=PYTHON)
def conformance_reference(session: nox.Session) -> None:
    """The conformance suite on the reference backend."""
    _install(session, "conformance")
    _conform(session, ["reference"])


@nox.session(name="bench-conform", python=PYTHON)
def bench_conform(session: nox.Session) -> None:
    """`fusionspec conform` on the reference with --jobs 1 and 2, interleaved; writes
    results/bench_conform.json."""
    _install(session, "conformance")
    session.run("python", "bench/bench_conform.py", "--out",
                str(ROOT / "results" / "bench_conform.json"), *session.posargs)


@nox.session(python=PYTHON)
def mutation(session: nox.Session) -> None:
    """Every planted bug (tests/testkit/mutants*.py) through the ci profile, each checked for
    the status the suite must give; writes results/mutation.json (the score)."""
    _install(session, "conformance", "dev")
    session.run("pytest", "-q", "tests/conformance/test_mutation.py", *session.posargs,
                env={"FUSIONSPEC_MUTATION_OUT": str(ROOT / "results" / "mutation.json")})


@nox.session(name="mutation-sample", python=PYTHON)
def mutation_sample(session: nox.Session) -> None:
    """A seeded, stratified sample of cosmic-ray's mutants of the reference (op functions,
    executor, partitioner, validator), each run as a backend under test on the cases that reach
    its lines (tools/mutation); prints the score per area with its 95% interval and every
    survivor not triaged as equivalent in tools/mutation/triage.toml, and writes
    results/mutation_sample.json. Arguments after ``--`` go to tools/mutation/run.py
    (``--size``, ``--seed``, ``--workers``, ``--urls``; see docs/mutation.md)."""
    _install(session, "conformance", "mutation")
    out, start = ROOT / "results" / "mutation_sample.json", time.time()
    session.run("python", str(ROOT / "tools" / "mutation" / "run.py"), *session.posargs)
    score = _written(out, start)
    if score is not None:
        low, high = score["interval"]
        shown = f"{score['score']:.1%}" if score["score"] is not None else "n/a"
        session.log(f"sampled mutation score: {shown} ({score['killed']} of "
                    f"{score['non_equivalent']} non-equivalent mutants killed, 95% interval "
                    f"[{low:.1%}, {high:.1%}]); {out} (the report shows it)")


@nox.session(name="real-bugs", python=PYTHON)
def real_bugs(session: nox.Session) -> None:
    """Every bug of the real-bug corpus (tests/testkit/real_bugs*.py: bugs that shipping
    implementations released and fixed) through the ci profile; writes results/real_bugs.json
    and prints the score."""
    _install(session, "conformance", "dev")
    out, start = ROOT / "results" / "real_bugs.json", time.time()
    session.run("pytest", "-q", "-m", "slow", "tests/conformance/test_real_bugs.py",
                *session.posargs, env={"FUSIONSPEC_REAL_BUGS_OUT": str(out)})
    score = _written(out, start)
    if score is not None:
        session.log(f"real-bug score: {score['caught']} of {score['bugs']} caught "
                    f"({score['score']:.0%}); {score['not_applicable']} found not applicable; "
                    f"{out} (the report shows it)")


def _written(path: Path, since: float) -> dict[str, Any] | None:
    """The score document at `path` when this session wrote it (not one left by an earlier
    run, or by none), else None."""
    if not path.is_file() or path.stat().st_mtime < since - 1:
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@nox.session(name="bench-values", python=PYTHON)
def bench_values(session: nox.Session) -> None:
    """The share of NaN/inf and weak-signal outputs per pattern, clean cases and corner cases
    apart; writes results/bench_values.json."""
    _install(session, "conformance")
    session.run("python", "bench/bench_values.py", "--out",
                str(ROOT / "results" / "bench_values.json"), *session.posargs)


@nox.session(name="bench-accel", python=PYTHON)
def bench_accel(session: nox.Session) -> None:
    """`fusionspec bench` on an OpenCL device (size full, a GEMM, a convolution, SoftMax and
    the element-wise patterns; `-- --all` for the catalog) with the device's copy bandwidth
    as a roof; writes results/perf/bench-accel/perf.json. With FUSIONSPEC_BENCH_INTEL_OCL=1
    the Intel CPU OpenCL runtime is installed and made visible (select it with
    `-- --device intel-cpu`)."""
    _install(session, "accel", "conformance")
    _maybe_intel_opencl(session)
    session.run("python", "bench/bench_accel.py", "--out",
                str(ROOT / "results" / "perf" / "bench-accel"), *session.posargs,
                success_codes=[0, 1])


@nox.session(name="conformance-onednn", python=PYTHON)
@nox.parametrize("version", list(ONEDNN), ids=list(ONEDNN))
def conformance_onednn(session: nox.Session, version: str) -> None:
    """The suite on oneDNN `version` (FUSIONSPEC_PROFILE=ci): results under
    results/conformance/onednn-<version>-cpu/, then the report over every results file and
    docs/onednn-findings.md over every graded oneDNN version. oneDNN's departures from the
    pages are what this session measures, so they do not fail it; a run that cannot start
    does."""
    _install(session, "conformance", "report")
    session.install(*ONEDNN[version])
    profile = os.environ.get("FUSIONSPEC_PROFILE", "ci")
    out = ROOT / "results" / "conformance" / f"onednn-{version}-cpu"
    session.run("fusionspec", "conform", "--backend", "onednn", "--device", "cpu",
                "--profile", profile, "--out", str(out), *session.posargs, success_codes=[0, 1])
    graded = sorted(str(p) for p in (ROOT / "results" / "conformance").glob(
        "onednn-*-cpu/results.json"))
    session.run("fusionspec", "findings", *graded, "-o", str(ROOT / "docs" / "onednn-findings.md"),
                "--examples", str(ROOT / "docs" / "onednn-findings"),
                "--title", "oneDNN against the spec pages: findings",
                "--intro", str(ROOT / "docs" / "onednn-findings-intro.md"))
    _report(session)


@nox.session(name="bench-onednn", python=PYTHON)
def bench_onednn(session: nox.Session) -> None:
    """`fusionspec bench` on oneDNN 3.2 and on every OpenCL device, then their fused sides
    side by side; writes results/perf/bench-onednn/ (a perf.json per backend and device,
    comparison.json). With FUSIONSPEC_BENCH_INTEL_OCL=1 the Intel CPU OpenCL runtime
    (intel-opencl-rt) is installed and benchmarked as an accel device too."""
    _install(session, "accel", "onednn", "conformance")
    _maybe_intel_opencl(session)
    session.run("python", "bench/bench_onednn.py", "--out",
                str(ROOT / "results" / "perf" / "bench-onednn"), *session.posargs)


def _bench_perf(session: nox.Session, backend: str, label: str, *device: str) -> None:
    """`fusionspec bench` of `backend` into results/perf/`label`/perf.json (size from
    FUSIONSPEC_BENCH_SIZE, default small), then the report and findings of every perf document
    there. A workload that cannot run is recorded in the document, so exit 1 does not stop the
    session."""
    size = os.environ.get("FUSIONSPEC_BENCH_SIZE", "small")
    out = ROOT / "results" / "perf" / label
    session.run("fusionspec", "bench", "--backend", backend, *device, "--size", size,
                "--out", str(out), *session.posargs, success_codes=[0, 1])
    documents = sorted(str(p) for p in (ROOT / "results" / "perf").glob("*/perf.json"))
    session.run("fusionspec", "report", *documents, "-o", str(ROOT / "reports" / "out" /
                                                             "perf.html"))
    session.run("fusionspec", "findings", *documents, "-o",
                str(ROOT / "results" / "perf" / "findings.md"),
                "--title", "Performance findings")


@nox.session(name="bench-perf", python=PYTHON)
@nox.parametrize("backend", ["reference", "accel"], ids=["reference", "accel"])
def bench_perf(session: nox.Session, backend: str) -> None:
    """Does each fusion pay on `backend`? Perf document under results/perf/<backend>/, the
    report at reports/out/perf.html and results/perf/findings.md over every perf document.
    With FUSIONSPEC_BENCH_INTEL_OCL=1 the Intel CPU OpenCL runtime is visible too (select it
    with `-- --device intel-cpu`)."""
    if backend == "accel":
        _install(session, "accel", "conformance", "report")
        _maybe_intel_opencl(session)
    else:
        _install(session, "conformance", "report")
    _bench_perf(session, backend, backend)


@nox.session(name="bench-perf-onednn", python=PYTHON)
@nox.parametrize("version", list(ONEDNN), ids=list(ONEDNN))
def bench_perf_onednn(session: nox.Session, version: str) -> None:
    """Does each fusion pay on oneDNN `version`? Perf document under
    results/perf/onednn-<version>-cpu/, then the report and findings as bench-perf."""
    _install(session, "conformance", "report")
    session.install(*ONEDNN[version])
    _bench_perf(session, "onednn", f"onednn-{version}-cpu", "--device", "cpu")


@nox.session(name="bench-perf-noise", python=PYTHON)
@nox.parametrize("backend", ["reference", "accel"], ids=["reference", "accel"])
def bench_perf_noise(session: nox.Session, backend: str) -> None:
    """The perf gate's noise check: ten `small` bench runs of `backend` over the catalog,
    every pair compared both ways with the gate; fails when it flags any (noise taken for a
    slowdown). Writes results/perf/noise-<backend>/ (run-NN/perf.json, noise.json)."""
    _install(session, *(["accel"] if backend == "accel" else []), "conformance")
    session.run("python", "bench/bench_perf_noise.py", "--backend", backend, "--out",
                str(ROOT / "results" / "perf" / f"noise-{backend}"), *session.posargs)


@nox.session(name="bench-runtimes", python=PYTHON)
def bench_runtimes(session: nox.Session) -> None:
    """The OpenCL runtimes side by side (PoCL from pip, Intel's CPU runtime, and any other
    installed): probe, cold and warm compile cost per partition; writes
    results/bench_runtimes.json (copy bandwidth and GEMM: run bench-accel per device)."""
    _install(session, "conformance", "intel-opencl")
    session.run("python", "bench/bench_runtimes.py", "--out",
                str(ROOT / "results" / "bench_runtimes.json"), *session.posargs)


@nox.session(name="gpu-check", python=PYTHON, venv_params=["--system-site-packages"])
def gpu_check(session: nox.Session) -> None:
    """tools/gpu_check.py on the machine's GPU, the project installed from wheels only (no
    network): ``nox -s gpu-check -- --wheels DIR [gpu_check.py options]`` or
    FUSIONSPEC_WHEELS=DIR. The environment sees the system's packages, so a PyTorch installed
    there is timed next to the kernels. Writes results/gpu_check/gpu_check.{json,md}."""
    args = list(session.posargs)
    wheels = os.environ.get("FUSIONSPEC_WHEELS")
    if "--wheels" in args:
        at = args.index("--wheels")
        if at + 1 >= len(args):
            session.error("--wheels needs a directory")
        wheels = args[at + 1]
        del args[at:at + 2]
    if not wheels or not Path(wheels).is_dir():
        session.error(f"no wheel directory ({wheels or 'none given'}): pass -- --wheels DIR or "
                      "set FUSIONSPEC_WHEELS; make it where there is network with "
                      "`pip wheel '.[accel,conformance,report]' -w DIR`")
    session.install("--no-index", "--find-links", str(wheels),
                    "fusionspec[accel,conformance,report]")
    session.run("python", "tools/gpu_check.py", "--out", str(ROOT / "results" / "gpu_check"),
                *args)


@nox.session(name="bench-programs", python=PYTHON)
def bench_programs(session: nox.Session) -> None:
    """How many OpenCL programs the ci profile needs, per kernel family, in the specialised
    and the default (auto) kernel form (code generation only); writes
    results/bench_programs.json."""
    _install(session, "conformance")
    session.run("python", "bench/bench_programs.py", "--out",
                str(ROOT / "results" / "bench_programs.json"), *session.posargs)


def _maybe_intel_opencl(session: nox.Session) -> None:
    """With FUSIONSPEC_BENCH_INTEL_OCL=1: install Intel's CPU OpenCL runtime (the
    ``intel-opencl`` extra), which fusionspec makes visible to the OpenCL loader itself
    (fusionspec.accel.icd), as the ``intel-cpu`` device."""
    if os.environ.get("FUSIONSPEC_BENCH_INTEL_OCL") == "1":
        _install(session, "intel-opencl")
