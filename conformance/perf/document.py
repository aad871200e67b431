"""The performance results document: one bench run of one backend on one device, as JSON.

Its top-level keys (`perf.schema.json` holds their types):

- ``format`` (``fusionspec-perf``) and ``version`` (`PERF_VERSION`);
- ``backend``, ``backend_spec`` (as the command was given it), ``device``, ``size`` (``small``
  or ``full``), ``seed``, ``shard`` (``K/N``, or null) and ``command`` (the command that reruns
  the run); ``selection``: how many workloads the run was given before ``--shard`` and a
  digest of their ids; ``incomplete``: why a merged document lacks part of its run;
- ``policy``: the timing policy (`fusionspec.backend.timing.TimingPolicy`) and the idle pause
  between sides (``settle_s``); ``environment``: Python, NumPy, the machine, its load average;
- ``yardsticks``: on CPU devices, NumPy's copy bandwidth and sgemm rate on this machine;
- ``workloads``: one record per workload (id, pattern, source, ops, the partitions the backend
  formed, FLOPs and bytes, the output check, the timings of each side in milliseconds, the
  op-by-op over fused ratio, the verdict, the roofline figures), or, for a workload the
  backend could not run, its ``error``.

`load_perf` reads and checks one: beyond the schema (`check_perf`), every number is finite,
each workload id appears once, and each side's interval holds its median (``ci_low <= median
<= ci_high``, ``min <= median``), so what the gate and the report read is a measurement or is
refused. `write_perf` writes one atomically (a link at the destination is replaced, never
followed). `merge_perf` joins the documents of shards of one run, and says what is missing.
Each reads and gives the document as records (`fusionspec.conformance.perf.records`);
`check_perf` checks parsed JSON, and `read_perf` checks it and reads it to records.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from fusionspec.spec.files import atomic_write_text
from fusionspec.spec.text import clean_text

from .fields import Record
from .records import PERF_FORMAT, PERF_VERSION, PerfDocument, PerfFormatError

__all__ = ["PERF_FORMAT", "PERF_VERSION", "PerfFormatError", "PerfDocument", "load_perf",
           "check_perf", "read_perf", "merge_perf", "is_perf_document", "write_perf"]


@functools.cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    schema = json.loads(resources.files(__package__).joinpath("perf.schema.json")
                        .read_text(encoding="utf-8"))
    return Draft202012Validator(schema)


def check_perf(document: object, where: str = "document") -> dict[str, Any]:
    """`document` (parsed JSON) if it is a performance document of this version;
    `PerfFormatError` naming the first member that is not as the schema says."""
    from jsonschema.exceptions import best_match

    if not isinstance(document, dict):
        raise PerfFormatError(f"{where}: a performance document is a JSON object, got "
                              f"{type(document).__name__}")
    if document.get("format") != PERF_FORMAT:
        raise PerfFormatError(f"{where}: not a performance document (format "
                              f"{document.get('format')!r}, expected {PERF_FORMAT!r})")
    if document.get("version") != PERF_VERSION:
        raise PerfFormatError(f"{where}: performance document version "
                              f"{document.get('version')!r}, this fusionspec reads "
                              f"{PERF_VERSION}")
    error = best_match(_validator().iter_errors(document))
    if error is not None:
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        message = error.message if len(error.message) <= 200 else error.message[:200] + "..."
        raise PerfFormatError(clean_text(f"{where}: ${path}: {message}"))
    _check_figures(document, where)
    return document


def read_perf(document: object, where: str = "document") -> PerfDocument:
    """The records of `document` (parsed JSON), once `check_perf` passed it."""
    return PerfDocument.from_json(check_perf(document, where), where)


def _path(keys: Sequence[object]) -> str:
    return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in keys)


def _check_figures(document: Mapping[str, Any], where: str) -> None:
    """What the schema cannot say: finite numbers, unique ids, intervals that hold their
    medians, a shard K/N with K <= N."""
    pending: list[tuple[object, tuple[object, ...]]] = [(document, ())]
    while pending:
        value, at = pending.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise PerfFormatError(f"{where}: ${_path(at)}: {value} is not a finite number")
        if isinstance(value, dict):
            pending.extend((v, (*at, k)) for k, v in value.items())
        elif isinstance(value, list):
            pending.extend((v, (*at, i)) for i, v in enumerate(value))
    shard = document.get("shard")
    if isinstance(shard, str):
        index, _, count = shard.partition("/")
        if int(index) > int(count):
            raise PerfFormatError(f"{where}: $.shard: {shard!r} is not K/N with K <= N")
    seen: set[str] = set()
    for n, record in enumerate(document["workloads"]):
        if record["id"] in seen:
            raise PerfFormatError(clean_text(f"{where}: $.workloads[{n}]: workload "
                                             f"{record['id']!r} appears twice", 300))
        seen.add(record["id"])
        for side, t in (record.get("timings") or {}).items():
            low, median, high = t["ci_low"], t["median"], t["ci_high"]
            if not low <= median <= high or t["min"] > median:
                raise PerfFormatError(clean_text(
                    f"{where}: $.workloads[{n}].timings.{side}: the interval [{low}, {high}] "
                    f"does not hold the median {median} (or the minimum {t['min']} exceeds "
                    "it): not a measurement", 300))


def is_perf_document(path: str | Path) -> bool:
    """Whether the JSON file at `path` says it is a performance document (False for anything
    unreadable: the caller's own loader then says what is wrong)."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(document, dict) and document.get("format") == PERF_FORMAT


def load_perf(path: str | Path) -> PerfDocument:
    """Read and check a performance document (`PerfFormatError` otherwise)."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise PerfFormatError(f"{path}: cannot read a performance document: "
                              f"{type(exc).__name__}: {exc}") from None
    return read_perf(document, str(path))


def write_perf(document: PerfDocument, path: str | Path) -> Path:
    """Check `document` and write it to `path` atomically (folders created; a link at `path`
    is replaced, never followed)."""
    target = Path(path)
    data = check_perf(document.to_json(), str(target))
    atomic_write_text(target, json.dumps(data, indent=1, allow_nan=False) + "\n")
    return target


_ALIKE = ("backend", "backend_spec", "size", "seed", "selection")


def _alike(document: PerfDocument, key: str) -> object:
    """What `merge_perf` compares of a part, as the document holds it."""
    value = getattr(document, key)
    return value.to_json() if isinstance(value, Record) else value


def _shards(documents: Sequence[PerfDocument], names: Sequence[str]) -> list[str]:
    """Check that the parts are all shards of one split or none is; the missing shards."""
    labels = [doc.shard for doc in documents]
    if not any(labels):
        return []
    if not all(labels):
        raise PerfFormatError("cannot merge sharded and unsharded documents: " + ", ".join(
            f"{name} ({label or 'no shard'})" for name, label in zip(names, labels)))
    counts = {str(label).partition("/")[2] for label in labels}
    if len(counts) != 1:
        raise PerfFormatError("cannot merge shards of different splits: "
                              + ", ".join(sorted(map(str, labels))))
    total = int(counts.pop())
    seen: dict[str, str] = {}
    for label, name in zip(labels, names):
        if str(label) in seen:
            raise PerfFormatError(f"shard {label} is given twice: {seen[str(label)]} and {name}")
        seen[str(label)] = name
    return [f"shard {k}/{total} is missing" for k in range(1, total + 1)
            if f"{k}/{total}" not in seen]


def merge_perf(documents: Sequence[PerfDocument], sources: Sequence[str] = ()
               ) -> PerfDocument:
    """The parts of one run as one document: the same backend, device, size, seed and
    selection, every shard of one split at most once, no workload twice; workloads in the order of
    the parts. A missing shard, a part that was itself incomplete, or fewer workloads than the
    run was given make the merged document ``incomplete`` with the reason."""
    if not documents:
        raise PerfFormatError("no performance document to merge")
    names = list(sources) or [f"document {i + 1}" for i in range(len(documents))]
    first = documents[0]
    for doc, name in zip(documents[1:], names[1:]):
        for key in _ALIKE:
            if _alike(doc, key) != _alike(first, key):
                raise PerfFormatError(clean_text(
                    f"{name}: {key} {_alike(doc, key)!r} differs from {names[0]}'s "
                    f"{_alike(first, key)!r}; only parts of one run merge", 500))
        if doc.device.id != first.device.id:
            raise PerfFormatError(clean_text(
                f"{name}: device {doc.device.id!r} differs from {names[0]}'s "
                f"{first.device.id!r}", 500))
    seen: dict[str, str] = {}
    workloads = []
    for doc, name in zip(documents, names):
        for record in doc.workloads:
            if record.id in seen:
                raise PerfFormatError(clean_text(f"workload {record.id} is in both "
                                                 f"{seen[record.id]} and {name}", 500))
            seen[record.id] = name
            workloads.append(record)
    notes = _shards(documents, names)
    notes += [f"{name} is incomplete: {doc.incomplete}"
              for doc, name in zip(documents, names) if doc.incomplete]
    selection = first.selection
    if selection is not None and not notes and len(workloads) < selection.workloads:
        notes.append(f"the run was given {selection.workloads} workload(s) and the parts "
                     f"hold {len(workloads)}")
    # The merged document keeps the first part's key order; the reason it is incomplete
    # comes last, as a merge adds it.
    keys = first.keys
    if keys:
        keys = tuple(k for k in keys if k != "incomplete") + (
            ("shard",) if "shard" not in keys else ()) + (("incomplete",) if notes else ())
    merged = dataclasses.replace(first, workloads=tuple(workloads), shard=None,
                                 incomplete=clean_text("; ".join(notes)) if notes else None,
                                 keys=keys)
    return read_perf(merged.to_json(), "merged document")
