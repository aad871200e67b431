"""``fusionspec validate FILE.json...``: load oneDNN graph JSON files and check them against the
op schemas.

For each file it prints ``FILE: ok: N ops, M tensors (K outside the spec)`` or
``FILE: error: <ErrorClass>: <message>``, where the message names the JSON path (for a file that
is not a well-formed graph document) or the op, port or attribute and rule id (for a graph that
breaks a rule). "Outside the spec" counts ops of kinds oneDNN defines but the spec pages do not
name: they are accepted, never fused.

With ``--json`` one file gives ``{"file", "ok", "ops", "tensors", "outside_spec", "warnings",
"error"}``, several give ``{"ok": <all ok>, "files": [those objects]}``. The exit code is 0 only
when every file is valid.

A valid graph is one ``fusionspec run`` executes: besides the schemas, validation makes every
check ``run`` makes before executing (`fusionspec.cli.run.check_runnable`: the memory budget,
``--max-memory`` as ``run``'s, the partitioning, that every input can be filled), so a graph
``run`` refuses is refused here with the same message.
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

from fusionspec.spec import OPAQUE_KINDS, onednn_json
from fusionspec.spec.errors import FusionspecError, GraphError, JsonFormatError

from .output import emit
from .run import check_runnable, max_memory

__all__ = ["HELP", "add_arguments", "run", "validate_file"]

HELP = "check oneDNN graph JSON files against the op schemas (exit 0 only if all are valid)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE.json",
                        help="oneDNN graph JSON (the format benchdnn reads and "
                             "ONEDNN_GRAPH_DUMP writes)")
    parser.add_argument("--max-memory", type=float, metavar="GB",
                        help="refuse graphs needing more memory to run than this (as "
                             "`fusionspec run --max-memory`)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")


def _error(exc: Exception) -> dict[str, Any]:
    info: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, GraphError):
        info.update(rule=exc.rule, op_id=exc.op_id, op_kind=exc.op_kind, where=exc.where)
    elif isinstance(exc, JsonFormatError):
        # the file name is already on the line; keep the JSON path and the problem
        info.update(message=f"{exc.path}: {exc.detail}", path=exc.path)
    return info


def validate_file(path: str, limit: int | None = None) -> dict[str, Any]:
    """The result object for one file (never raises for a bad or missing file); `limit` is
    the memory budget in bytes (default: `run`'s)."""
    result: dict[str, Any] = {"file": path, "ok": False, "ops": None, "tensors": None,
                              "outside_spec": None, "warnings": [], "error": None}
    try:
        graph = onednn_json.load(path)
        result.update(ops=len(graph.ops), tensors=len(graph.tensors),
                      outside_spec=sum(1 for op in graph.ops if op.kind in OPAQUE_KINDS))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                check_runnable(graph.finalize(), max_memory(None) if limit is None else limit)
            finally:
                result["warnings"] = [str(w.message) for w in caught]
    except FusionspecError as exc:
        result["error"] = _error(exc)
        return result
    except OSError as exc:
        result["error"] = {"type": type(exc).__name__,
                           "message": f"{exc.strerror or exc}: {path}"}
        return result
    except (OverflowError, RecursionError, MemoryError) as exc:
        result["error"] = {"type": type(exc).__name__,
                           "message": f"the graph is too large to handle: {exc}"}
        return result
    result["ok"] = True
    return result


def _line(result: dict[str, Any]) -> str:
    if result["ok"]:
        return (f"{result['file']}: ok: {result['ops']} ops, {result['tensors']} tensors "
                f"({result['outside_spec']} outside the spec)")
    error = result["error"]
    return f"{result['file']}: error: {error['type']}: {error['message']}"


def run(args: argparse.Namespace) -> int:
    limit = max_memory(args.max_memory)
    results = [validate_file(path, limit) for path in args.files]
    all_ok = all(r["ok"] for r in results)
    data: dict[str, Any] = results[0] if len(results) == 1 else {"ok": all_ok, "files": results}
    emit(args, "\n".join(_line(r) for r in results), data)
    return 0 if all_ok else 1
