"""A seeded, stratified sample of cosmic-ray's mutants, by the area of the reference they mutate.

`cosmic-ray init` lists every mutation of the shadow package (thousands). A run tests a random
sample: a share of each area (the op functions, the executor, the partitioner, the validator),
taken in the order of a keyed hash of each mutant's identity (`rank`), so the same seed and
sources give the same mutants on any machine, and an edit changes the sample only where it
changes the code. Every mutant
left out of the sample is marked *skipped* in the session, which `cosmic-ray exec` then passes
over (the way cosmic-ray's own filters work).
"""

from __future__ import annotations

import ast
import hashlib
from collections import defaultdict
from functools import cache
from pathlib import Path

from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import WorkerOutcome, WorkResult

#: Which files of the shadow make each area. Files outside every area are not mutated: the
#: backend under test never runs them (input filling, the explain text, .npz files) or they
#: hold nothing a verdict can see (error classes, package inits, and the memory budget, which
#: refuses graphs over gigabytes that no conformance case comes near).
AREAS: dict[str, tuple[str, ...]] = {
    "op functions": ("fusionspec_shadow/ops/",),
    "executor": ("fusionspec_shadow/execute.py", "fusionspec_shadow/registry.py",
                 "fusionspec_shadow/dtypes.py", "fusionspec_shadow/backend.py"),
    "partitioner": ("fusionspec_shadow/partitioner.py", "fusionspec_shadow/matcher.py"),
    "validator": ("fusionspec_shadow/validate.py",),
}

#: Each area's share of a sample: the op functions hold most of the code and every op kind.
SHARES = {"op functions": 0.4, "executor": 0.2, "partitioner": 0.2, "validator": 0.2}

EXCLUDED = ("fusionspec_shadow/filling.py", "fusionspec_shadow/explain.py",
            "fusionspec_shadow/errors.py", "fusionspec_shadow/__init__.py",
            "fusionspec_shadow/ops/__init__.py", "fusionspec_shadow/arrays.py",
            "fusionspec_shadow/memory.py")


Span = tuple[tuple[int, int], tuple[int, int]]


@cache
def _inert_spans(path: Path) -> tuple[Span, ...]:
    """The (start, end) positions of the parts of the module at `path` whose mutants no input
    can tell apart through the backend protocol: type annotations (every module of the
    reference starts with ``from __future__ import annotations``, so they are never evaluated)
    and the text of error messages (f-strings, the arguments of a raised exception, an
    assertion's message: the suite judges a rejection by its kind and rule, never by its
    words)."""
    spans = []
    for node in ast.walk(ast.parse(path.read_text())):
        found: list[ast.expr | None] = []
        if isinstance(node, ast.arg):
            found.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        elif isinstance(node, ast.JoinedStr):
            found.append(node)
        elif isinstance(node, ast.Assert):
            found.append(node.msg)
        elif isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            found += node.exc.args  # the message; the keywords (rule, op id) are judged
        for expr in found:
            if expr is None or expr.end_lineno is None or expr.end_col_offset is None:
                continue
            spans.append(((expr.lineno, expr.col_offset),
                          (expr.end_lineno, expr.end_col_offset)))
    return tuple(spans)


def inert(root: Path, module: str, start: tuple[int, int], end: tuple[int, int]) -> bool:
    """Whether a mutation lies inside an annotation or a message (`_inert_spans`): such a
    mutant is equivalent by construction and is left out of the population."""
    return any(a <= start and end <= b for a, b in _inert_spans(root / module))


def area_of(module: str) -> str | None:
    for area, prefixes in AREAS.items():
        if any(module == p or (p.endswith("/") and module.startswith(p)) for p in prefixes):
            return area
    return None


def identity(root: Path, module: str, definition: str | None, operator: str,
             start: tuple[int, int], end: tuple[int, int]) -> str:
    """A mutant's name that survives unrelated edits and a new ``cosmic-ray init`` (whose job
    ids are random): its file, function, operator and the text it mutates, with the column
    where that text starts on its line."""
    lines = _lines(root / module)
    first, last = start[0] - 1, end[0] - 1
    if first == last:
        text = lines[first][start[1]:end[1]]
    else:
        text = "\n".join([lines[first][start[1]:], *lines[first + 1:last], lines[last][:end[1]]])
    return f"{module}|{definition or ''}|{operator}|{lines[first].strip()}|{start[1]}|{text}"


@cache
def _lines(path: Path) -> tuple[str, ...]:
    return tuple(path.read_text().splitlines())


def rank(seed: int, name: str) -> str:
    """Where a mutant stands in the seed's order: a keyed hash of its identity, so each mutant
    keeps its place whatever else the code holds, and a sample changes only where the code
    does."""
    return hashlib.sha256(f"{seed}\x00{name}".encode()).hexdigest()


def sample(session: Path, size: int, seed: int, root: Path) -> dict[str, int]:
    """Keep a stratified sample of `size` mutants in `session` (of the shadow under `root`),
    skip the rest; return how many each area keeps. Within an area the mutants with the
    lowest `rank` are kept: the same code and seed give the same sample on any machine."""
    with use_db(str(session), WorkDB.Mode.open) as db:
        named: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
        skipped: list[str] = []
        for item in db.work_items:
            mutation = item.mutations[0]
            module = mutation.module_path.as_posix()
            area = area_of(module)
            if area is None or inert(root, module, mutation.start_pos, mutation.end_pos):
                skipped.append(item.job_id)
                continue
            name = identity(root, module, mutation.definition_name, mutation.operator_name,
                            mutation.start_pos, mutation.end_pos)
            named[(area, name)].append((mutation.occurrence, item.job_id))
        # An operator may make several mutants of one place (a number both raised and
        # lowered): they are told apart by their order there, not by the module-wide
        # occurrence count, which moves whenever code above them changes.
        by_area: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for (area, name), jobs in named.items():
            for n, (_, job) in enumerate(sorted(jobs)):
                by_area[area].append((rank(seed, f"{name}|{n}"), job))
        kept: dict[str, int] = {}
        for area in AREAS:
            ranked = sorted(by_area[area])
            take = min(len(ranked), round(size * SHARES[area]))
            kept[area] = take
            skipped += [job for _, job in ranked[take:]]
        db.set_multiple_results(skipped, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
    return kept
