"""The performance results document: one bench run of one backend on one device, as JSON.

Its top-level keys (`perf.schema.json` holds their types):

- ``format`` (``fusionspec-perf``) and ``version`` (`PERF_VERSION`);
- ``backend``, ``backend_spec`` (as the command was given it), ``device``, ``size`` (``small``
  or ``full``), ``seed``, ``shard`` and ``command`` (the command that reruns the run);
- ``policy``: the timing policy (`fusionspec.backend.timing.TimingPolicy`) and the idle pause
  between sides (``settle_s``); ``environment``: Python, NumPy, the machine, its load average;
- ``yardsticks``: on CPU devices, NumPy's copy bandwidth and sgemm rate on this machine;
- ``workloads``: one record per workload (id, pattern, source, ops, the partitions the backend
  formed, FLOPs and bytes, the output check, the timings of each side in milliseconds, the
  op-by-op over fused ratio, the verdict, the roofline figures), or, for a workload the
  backend could not run, its ``error``.

`load_perf` reads and checks one; `merge_perf` joins the documents of shards of one run.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from fusionspec.spec.errors import FusionspecError

__all__ = ["PERF_FORMAT", "PERF_VERSION", "PerfFormatError", "load_perf", "check_perf",
           "merge_perf", "is_perf_document", "write_perf"]

PERF_FORMAT = "fusionspec-perf"
PERF_VERSION = 1


class PerfFormatError(FusionspecError):
    """A file that is not a performance results document of this version."""


@functools.cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    schema = json.loads(resources.files(__package__).joinpath("perf.schema.json")
                        .read_text(encoding="utf-8"))
    return Draft202012Validator(schema)


def check_perf(document: object, where: str = "document") -> dict[str, Any]:
    """`document` if it is a performance document of this version; `PerfFormatError` naming
    the first member that is not as the schema says."""
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
        raise PerfFormatError(f"{where}: ${path}: {message}")
    return document


def is_perf_document(path: str | Path) -> bool:
    """Whether the JSON file at `path` says it is a performance document (False for anything
    unreadable: the caller's own loader then says what is wrong)."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(document, dict) and document.get("format") == PERF_FORMAT


def load_perf(path: str | Path) -> dict[str, Any]:
    """Read and check a performance document (`PerfFormatError` otherwise)."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise PerfFormatError(f"{path}: cannot read a performance document: "
                              f"{type(exc).__name__}: {exc}") from None
    return check_perf(document, str(path))


def write_perf(document: Mapping[str, Any], path: str | Path) -> Path:
    """Check `document` and write it to `path` (folders created)."""
    target = Path(path)
    check_perf(dict(document), str(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return target


_ALIKE = ("backend", "backend_spec", "size", "seed")


def merge_perf(documents: Sequence[Mapping[str, Any]], sources: Sequence[str] = ()
               ) -> dict[str, Any]:
    """The shards of one run as one document: the same backend, device, size and seed, no
    workload twice; workloads in table order of the first document, then the others'."""
    if not documents:
        raise PerfFormatError("no performance document to merge")
    names = list(sources) or [f"document {i + 1}" for i in range(len(documents))]
    first = documents[0]
    for doc, name in zip(documents[1:], names[1:]):
        for key in _ALIKE:
            if doc.get(key) != first.get(key):
                raise PerfFormatError(f"{name}: {key} {doc.get(key)!r} differs from "
                                      f"{names[0]}'s {first.get(key)!r}; only shards of one "
                                      "run merge")
        if doc["device"].get("id") != first["device"].get("id"):
            raise PerfFormatError(f"{name}: device {doc['device'].get('id')!r} differs from "
                                  f"{names[0]}'s {first['device'].get('id')!r}")
    seen: dict[str, str] = {}
    workloads: list[Any] = []
    for doc, name in zip(documents, names):
        for record in doc["workloads"]:
            if record["id"] in seen:
                raise PerfFormatError(f"workload {record['id']} is in both {seen[record['id']]} "
                                      f"and {name}")
            seen[record["id"]] = name
            workloads.append(record)
    merged = {**first, "workloads": workloads, "shard": None}
    return check_perf(merged, "merged document")
