"""The results of a conformance run as a versioned JSON document, and failure artifacts.

`ResultsCollector` gathers (case, verdict) pairs for one backend and device and produces the
document the HTML report is rendered from (`to_dict`, `write`; `load_results` reads one back
and checks its schema version). Its top-level keys:

- ``schema`` (`SCHEMA_VERSION`), ``suite_version`` (fusionspec's package version),
  ``spec_version`` (`SPEC_VERSION`, naming the three pages) and ``spec_pages``;
- ``backend``, ``device`` (every `Device` field), ``environment`` (Python, NumPy, ml_dtypes,
  platform, hypothesis and pytest when installed), ``seed``, ``started``, ``finished``;
- ``totals``: cases per status;
- ``patterns``: per catalog pattern, counts by status, by case kind, by dtype and by rule, and
  the grammar coverage (`Case.features`: feature -> value -> number of cases);
- ``rules``: per rule (catalog, structural or schema rule id), counts by status and patterns;
- ``verdicts``: every case in one line (id, pattern, kind, rule, dtype, status, reason);
- ``failures``: each failing case with its description, the verdict's details and how to
  replay it; ``limitations``: each ``unsupported`` case, with whether it passed anyway;
  ``extensions``: each ``extension`` case (a near miss the backend fused and computed right),
  recorded like a failure so that it can be replayed too;
- ``device_problems``: the backend's other devices that could not be used, and why (a compiler
  that failed its probe); ``backend_counters``: what the backend reported doing (the OpenCL
  backend: programs built and taken from its caches), summed over the run's worker processes;
- ``unavailable``: present (with the reason) only in the document of a run that could not
  start because the backend had no usable device; it has no cases;
- ``incomplete``: present (with the reason) when the run did not judge everything it was asked
  to (stopped with Ctrl-C, or no case at all): such a run is never a PASS.

With an output folder, each failing case also gets ``failures/<case id>/`` (an extension
``extensions/<case id>/``) holding ``graph.json`` (oneDNN graph JSON), ``inputs.npz`` (the filled
inputs, keyed by tensor id, in `fusionspec.reference.arrays`' encoding), ``case.json`` (the case and
verdict) and ``replay.txt`` (the commands that replay it); `load_failure` turns such a folder back
into the case and its seed.
"""

from __future__ import annotations

import json
import math
import platform
import shlex
from collections import Counter, defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from fusionspec.backend import Device
from fusionspec.reference.arrays import write_npz
from fusionspec.reference.filling import fill_inputs
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.files import atomic_write_text, safe_component
from fusionspec.spec.graph import Graph
from fusionspec.spec.onednn_json import dump, load
from fusionspec.spec.pages import PAGES

from ..cases import Case, CaseKind, Status, Verdict
from .verdicts import rule_statement

__all__ = ["SCHEMA_VERSION", "SPEC_VERSION", "ResultsFormatError", "ResultsCollector",
           "load_results", "write_failure", "load_failure", "suite_version", "environment",
           "artifact_name"]

#: The results document's format; a reader refuses any other.
SCHEMA_VERSION = "fusionspec-results/1"
#: The spec the suite checks: the three pages, by file name.
SPEC_VERSION = "+".join(page.file.removesuffix(".txt") for page in PAGES)

_REQUIRED_KEYS = ("schema", "suite_version", "spec_version", "backend", "device", "environment",
                  "started", "finished", "totals", "patterns", "rules", "verdicts", "failures")


class ResultsFormatError(FusionspecError):
    """A results document or failure folder that cannot be read."""


def suite_version() -> str:
    try:
        return version("fusionspec")
    except PackageNotFoundError:
        return "unknown"


def environment() -> dict[str, str]:
    """Versions of what the numbers depend on (packages that are not installed are left out)."""
    env = {"python": platform.python_version(), "implementation": platform.python_implementation(),
           "platform": platform.platform(), "machine": platform.machine()}
    for package in ("numpy", "ml_dtypes", "hypothesis", "pytest"):
        try:
            env[package] = version(package)
        except PackageNotFoundError:
            continue
    return env


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _jsonable(value: object) -> Any:
    """`value` with NaN/inf as strings and anything JSON lacks as its text (details come from
    backends and may hold anything)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if value is None or isinstance(value, str | int | bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    return str(value)


def artifact_name(case_id: str) -> str:
    """A folder name for a case id: letters, digits, '.', '_' and '-' only."""
    return safe_component(case_id, fallback="case", limit=120)


def _tally() -> defaultdict[str, Counter[str]]:
    return defaultdict(Counter)


class ResultsCollector:
    """Collects verdicts of one run; see the module docstring for the document it builds."""

    def __init__(self, backend: str, device: Device, *, seed: int = 0,
                 out_dir: str | Path | None = None,
                 device_problems: Mapping[str, str] | None = None,
                 unavailable: str | None = None) -> None:
        self.backend = backend
        self.device = device
        self.seed = seed
        self.device_problems = dict(device_problems or {})
        self.unavailable = unavailable
        self.counters: dict[str, int] = {}
        #: Why the run did not judge everything it was asked to (Ctrl-C, no case at all).
        self.incomplete: str | None = None
        self.interrupted = False
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.started = _now()
        self.finished: str | None = None
        self.totals: Counter[str] = Counter()
        self._pattern: defaultdict[str, dict[str, Any]] = defaultdict(lambda: {
            "counts": Counter(), "by_kind": _tally(), "by_dtype": _tally(), "rules": _tally(),
            "coverage": defaultdict(Counter)})
        self._rules: defaultdict[str, dict[str, Counter[str]]] = defaultdict(
            lambda: {"counts": Counter(), "patterns": Counter()})
        self.verdicts: list[dict[str, Any]] = []
        self.failures: list[dict[str, Any]] = []
        self.extensions: list[dict[str, Any]] = []
        self.limitations: list[dict[str, Any]] = []
        self._used_names: set[str] = set()

    @property
    def cases(self) -> int:
        """How many cases have been recorded."""
        return len(self.verdicts)

    @property
    def failed(self) -> bool:
        """Whether any case has a failing status (extension and unsupported do not fail)."""
        return bool(self.failures)

    def add(self, case: Case, verdict: Verdict, *, seed: int | None = None) -> None:
        """Record `verdict` on `case`; a failing one is listed (and saved under out_dir)."""
        status = verdict.status.value
        use_seed = self.seed if seed is None else seed
        self.totals[status] += 1
        entry = self._pattern[case.pattern]
        entry["counts"][status] += 1
        entry["by_kind"][case.kind.value][status] += 1
        entry["by_dtype"][case.dtype][status] += 1
        for feature, value in case.features.items():
            entry["coverage"][feature][str(value)] += 1
        if case.rule is not None:
            entry["rules"][case.rule][status] += 1
            self._rules[case.rule]["counts"][status] += 1
            self._rules[case.rule]["patterns"][case.pattern] += 1
        self.verdicts.append({"id": case.id, "pattern": case.pattern, "kind": case.kind.value,
                              "rule": case.rule, "dtype": case.dtype, "status": status,
                              "reason": verdict.reason})
        if verdict.status is Status.unsupported:
            self.limitations.append({
                "case_id": case.id, "pattern": case.pattern, "dtype": case.dtype,
                "reason": verdict.reason,
                "limitation_passed": bool(verdict.details.get("limitation_passed", False)),
                "observed_status": verdict.details.get("observed_status")})
        if verdict.failed:
            self.failures.append(self._failure(case, verdict, use_seed))
        elif verdict.status is Status.extension:
            self.extensions.append(self._failure(case, verdict, use_seed, folder="extensions"))

    def add_minimal(self, case: Case, verdict: Verdict, *, of_case: str) -> None:
        """Record a shrunk case that stands for the failure `of_case`: saved and listed with
        the failures (``minimal_of``), but not counted again in the totals."""
        if not verdict.failed:
            return
        record = self._failure(case, verdict, self.seed)
        record["minimal_of"] = of_case
        self.failures.append(record)

    def _failure(self, case: Case, verdict: Verdict, seed: int, *,
                 folder: str = "failures") -> dict[str, Any]:
        replay: dict[str, Any] = {"seed": seed, "case_id": case.id}
        if self.out_dir is not None:
            name = artifact_name(case.id)
            base, n = name, 2
            while name in self._used_names:
                name, n = f"{base}-{n}", n + 1
            self._used_names.add(name)
            saved = write_failure(self.out_dir / folder / name, case, verdict,
                                  backend=self.backend, device_id=self.device.id, seed=seed)
            replay.update(dir=str(saved), commands=_replay_lines(
                saved, self.backend, self.device.id, (saved / "inputs.npz").exists()))
        return {"case_id": case.id, "pattern": case.pattern, "kind": case.kind.value,
                "rule": case.rule, "dtype": case.dtype, "description": case.description,
                "features": _jsonable(case.features), "status": verdict.status.value,
                "reason": verdict.reason, "details": _jsonable(verdict.details),
                "replay": replay}

    def finish(self) -> None:
        """Stamp the end time (done by `to_dict` if not called)."""
        self.finished = _now()

    def to_dict(self) -> dict[str, Any]:
        if self.finished is None:
            self.finish()
        device = {"id": self.device.id, "kind": self.device.kind, "name": self.device.name,
                  "driver": self.device.driver, "runtime": self.device.runtime,
                  "extras": dict(self.device.extras)}
        patterns = {
            pid: {"counts": dict(e["counts"]),
                  "by_kind": {k: dict(c) for k, c in e["by_kind"].items()},
                  "by_dtype": {k: dict(c) for k, c in e["by_dtype"].items()},
                  "rules": {k: dict(c) for k, c in e["rules"].items()},
                  "coverage": {f: dict(c) for f, c in e["coverage"].items()}}
            for pid, e in sorted(self._pattern.items())}
        rules = {rid: {"statement": _statement(rid), "counts": dict(r["counts"]),
                       "patterns": dict(r["patterns"])} for rid, r in sorted(self._rules.items())}
        document = {
            "schema": SCHEMA_VERSION, "suite_version": suite_version(),
            "spec_version": SPEC_VERSION,
            "spec_pages": [{"file": p.file, "title": p.title} for p in PAGES],
            "backend": self.backend, "device": device, "environment": environment(),
            "seed": self.seed, "started": self.started, "finished": self.finished,
            "totals": dict(self.totals), "patterns": patterns, "rules": rules,
            "verdicts": self.verdicts, "failures": self.failures,
            "limitations": self.limitations, "extensions": self.extensions,
            "device_problems": self.device_problems, "backend_counters": self.counters}
        if self.unavailable is not None:
            document["unavailable"] = self.unavailable
        if self.incomplete is not None:
            document["incomplete"] = self.incomplete
        result: dict[str, Any] = _jsonable(document)
        return result

    def write(self, path: str | Path) -> Path:
        """Write the document as JSON (strict: no NaN tokens) and return its path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n")
        return target


def _statement(rule_id: str) -> str:
    text = rule_statement(rule_id)
    return text.split(": ", 1)[1] if ": " in text else ""


def load_results(path: str | Path) -> dict[str, Any]:
    """Read a results document; ResultsFormatError if it is not one of this schema version."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ResultsFormatError(f"{path}: cannot read a results document: "
                                 f"{type(exc).__name__}: {exc}") from None
    if not isinstance(document, dict):
        raise ResultsFormatError(f"{path}: a results document is a JSON object, got "
                                 f"{type(document).__name__}")
    schema = document.get("schema")
    if schema != SCHEMA_VERSION:
        raise ResultsFormatError(f"{path}: results schema {schema!r}, this fusionspec reads "
                                 f"{SCHEMA_VERSION!r}")
    missing = [key for key in _REQUIRED_KEYS if key not in document]
    if missing:
        raise ResultsFormatError(f"{path}: results document lacks {', '.join(missing)}")
    return document


# -- failure artifacts -------------------------------------------------------------------------

def _replay_lines(folder: Path, backend: str, device_id: str, has_inputs: bool) -> list[str]:
    where = shlex.quote(str(folder))
    lines = [f"fusionspec conform --backend {shlex.quote(backend)} "
             f"--device {shlex.quote(device_id)} --replay {where}"]
    if has_inputs:
        lines.append(f"fusionspec run {shlex.quote(str(folder / 'graph.json'))} "
                     f"--inputs {shlex.quote(str(folder / 'inputs.npz'))}")
    return lines


def write_failure(folder: str | Path, case: Case, verdict: Verdict, *, backend: str,
                  device_id: str, seed: int) -> Path:
    """Save `case` and `verdict` in `folder` (see the module docstring) and return it.

    A graph that cannot be dumped or filled (an ill-formed one may not be) is noted in
    ``case.json`` instead of failing the run.
    """
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    try:
        dump(case.graph, target / "graph.json")
    except (FusionspecError, ValueError, TypeError) as exc:
        notes.append(f"graph.json not written: {type(exc).__name__}: {exc}")
    try:
        graph = case.graph if case.graph.finalized else case.graph.finalize()
        write_npz(target / "inputs.npz", fill_inputs(graph, seed), graph.tensors)
    except (FusionspecError, ValueError, TypeError) as exc:
        notes.append(f"inputs.npz not written: {type(exc).__name__}: {exc}")
    record = {"case_id": case.id, "kind": case.kind.value, "pattern": case.pattern,
              "rule": case.rule, "dtype": case.dtype, "features": case.features,
              "description": case.description, "seed": seed, "backend": backend,
              "device": device_id, "status": verdict.status.value, "reason": verdict.reason,
              "details": verdict.details, "notes": notes}
    atomic_write_text(target / "case.json",
                      json.dumps(_jsonable(record), indent=1, allow_nan=False) + "\n")
    lines = _replay_lines(target, backend, device_id, (target / "inputs.npz").exists())
    atomic_write_text(target / "replay.txt", "\n".join(lines) + "\n")
    return target


def load_failure(folder: str | Path) -> tuple[Case, int]:
    """The case saved in a failure folder, and the seed its inputs were filled from."""
    target = Path(folder)
    try:
        record = json.loads((target / "case.json").read_text(encoding="utf-8"))
        graph: Graph = load(target / "graph.json")
        case = Case(id=str(record["case_id"]), kind=CaseKind(record["kind"]),
                    pattern=str(record["pattern"]), graph=graph, rule=record.get("rule"),
                    dtype=str(record.get("dtype", "f32")),
                    features=dict(record.get("features") or {}),
                    description=str(record.get("description", "")))
        return case, int(record.get("seed", 0))
    except (OSError, json.JSONDecodeError, KeyError, ValueError, TypeError, RecursionError,
            FusionspecError) as exc:
        raise ResultsFormatError(f"{target}: not a failure folder: {type(exc).__name__}: "
                                 f"{exc}") from None
