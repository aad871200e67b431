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

Every way in and out goes through the records (`fusionspec.conformance.perf.records`), whose
reading checks what the schema says and more (finite numbers, unique workload ids, intervals
that hold their medians): `read_perf` reads parsed JSON to records, `load_perf` a file;
`write_perf` writes one atomically (a link at the destination is replaced, never followed),
checked by reading it back first. `merge_perf` joins the documents of shards of one run, and
says what is missing.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

from fusionspec.spec.files import atomic_write_text
from fusionspec.spec.text import clean_text

from ..records.record import Record
from .records import PERF_FORMAT, PERF_VERSION, PerfDocument, PerfFormatError

__all__ = ["PERF_FORMAT", "PERF_VERSION", "PerfFormatError", "PerfDocument", "load_perf",
           "read_perf", "merge_perf", "is_perf_document", "write_perf"]


def read_perf(document: object, where: str = "document") -> PerfDocument:
    """The records of `document` (parsed JSON) from `where` (named in errors), checked
    (`PerfFormatError` naming the first member that is not as it should be)."""
    return PerfDocument.from_json(document, where)


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
    data = document.to_json()
    PerfDocument.from_json(data, str(target))  # refuses what no reader would take back
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
