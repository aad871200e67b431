"""Sampled mutation testing of the reference as a backend under test (nox -s mutation-sample).

1. Build the shadow reference (``fusionspec_shadow``, see shadow.py) into ``WORK/pristine`` and
   one copy per local worker (``WORK/w1`` ...): cosmic-ray writes each mutation into its
   worker's copy and restores it after the test.
2. Build the coverage map (coverage_map.py) unless one for the same sources is there.
3. ``cosmic-ray init`` lists every mutant of the shadow; sample.py keeps a seeded stratified
   sample and marks the rest skipped.
4. ``cosmic-ray exec`` tests the sample: with one worker on the local distributor, with more
   through cosmic-ray's HTTP workers (``cosmic-ray http-worker``), one per copy. Workers on
   other machines join the same way (docs/mutation.md).
5. score.py prints the score per area with its interval and every survivor not triaged as
   equivalent, and writes the JSON document (``--out``).

Usage: python tools/mutation/run.py [--size 300] [--seed 0] [--workers 2] [--out FILE]
       [--work DIR] [--urls URL,...]  (extra workers started elsewhere, see docs/mutation.md)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import coverage_map
import sample
import score
import shadow

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def _digest(folder: Path) -> str:
    """Sources that decide the coverage map: the shadow and the suite that draws the cases."""
    sha = hashlib.sha256()
    roots = [folder / shadow.PACKAGE, REPO / "conformance", REPO / "spec"]
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            sha.update(path.relative_to(root).as_posix().encode() + path.read_bytes())
    return sha.hexdigest()


def _kill_command(work: Path) -> str:
    """The test command: relative to a worker's copy when the work folder is inside the
    checkout (so workers on other machines, with their own checkout and environment, find
    their own kill.py and Python), absolute otherwise (one machine only)."""
    script = HERE / "kill.py"
    if work.is_relative_to(REPO):
        return f"python {os.path.relpath(script, work / 'w1')}"
    return f"{sys.executable} {script}"


def _config(work: Path, workers: list[str], timeout: float) -> Path:
    kill = _kill_command(work)
    lines = ["[cosmic-ray]", 'module-path = "fusionspec_shadow"', f"timeout = {timeout}",
             f"excluded-modules = {json.dumps(list(sample.EXCLUDED))}",
             f"test-command = {json.dumps(kill)}", "", "[cosmic-ray.distributor]"]
    if workers:
        lines += ['name = "http"', "", "[cosmic-ray.distributor.http]",
                  f"worker-urls = {json.dumps(workers)}"]
    else:
        lines += ['name = "local"']
    path = work / "cosmic-ray.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"cosmic-ray http-worker on port {port} exited {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)  # polling a port that is not up yet: no event to wait on
    raise SystemExit(f"cosmic-ray http-worker on port {port} did not start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=300,
                        help="mutants in the sample (0: set up the shadow and the map only)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample")
    parser.add_argument("--workers", type=int, default=2,
                        help="local workers (0 with --urls: only the workers named there)")
    parser.add_argument("--urls", default="", help="more http workers, comma-separated")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per mutant")
    parser.add_argument("--work", type=Path, default=REPO / "build" / "mutation")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "mutation_sample.json")
    args = parser.parse_args()
    work: Path = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.environ["FUSIONSPEC_MUTATION_WORK"] = str(work)
    # The test command says `python`: this interpreter, for the local workers.
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent),
                                          os.environ.get("PATH", "")])
    clock = time.monotonic()

    pristine = work / "pristine"
    shadow.build(pristine)
    copies = [work / f"w{n}" for n in range(1, max(1, args.workers) + 1)]
    for copy in copies:
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(pristine, copy)
    stamp, cov = work / "coverage.digest", work / "coverage.json"
    digest = _digest(pristine)
    if not cov.is_file() or not stamp.is_file() or stamp.read_text() != digest:
        print("mutation: building the coverage map (one ci run under coverage) ...", flush=True)
        coverage_map.build(pristine, cov)
        stamp.write_text(digest)
    print(f"mutation: coverage map ready ({time.monotonic() - clock:.0f} s)", flush=True)
    if args.size == 0:  # a worker machine's set-up: the shadow copies and the map, no session
        return 0

    session = work / "session.sqlite"
    session.unlink(missing_ok=True)
    procs: list[subprocess.Popen[bytes]] = []
    urls = [u for u in args.urls.split(",") if u]
    try:
        if args.workers > 1 or urls:
            for copy in copies[:args.workers]:
                port = _free_port()
                log = (work / f"{copy.name}.log").open("wb")
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "cosmic_ray.cli", "http-worker", "--port", str(port)],
                    cwd=copy, stdout=log, stderr=subprocess.STDOUT))
                _wait_listening(port, procs[-1], time.monotonic() + 60)
                urls.append(f"http://127.0.0.1:{port}")
        config = _config(work, urls, args.timeout)
        subprocess.run([sys.executable, "-m", "cosmic_ray.cli", "init", str(config),
                        str(session)], cwd=copies[0], check=True)
        kept = sample.sample(session, args.size, args.seed, pristine)
        print(f"mutation: {sum(kept.values())} mutants sampled (seed {args.seed}): "
              + ", ".join(f"{a} {n}" for a, n in kept.items()), flush=True)
        subprocess.run([sys.executable, "-m", "cosmic_ray.cli", "exec", str(config),
                        str(session)], cwd=copies[0], check=True)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait()
    result = score.score(session, score.load_triage())
    result.update({"seed": args.seed, "size": args.size, "seconds": time.monotonic() - clock})
    print(score.render(result))
    print(f"mutation: {time.monotonic() - clock:.0f} s in all")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
