"""A seeded, stratified sample of cosmic-ray's mutants, by the area of the reference they mutate.

`cosmic-ray init` lists every mutation of the shadow package (thousands). A run tests a random
sample: a share of each area (the op functions, the executor, the partitioner, the validator),
drawn with a seeded generator so the same seed and sources give the same mutants. Every mutant
left out of the sample is marked *skipped* in the session, which `cosmic-ray exec` then passes
over (the way cosmic-ray's own filters work).
"""

from __future__ import annotations

import ast
import random
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


def sample(session: Path, size: int, seed: int, root: Path) -> dict[str, int]:
    """Keep a stratified sample of `size` mutants in `session` (of the shadow under `root`),
    skip the rest; return how many each area keeps."""
    with use_db(str(session), WorkDB.Mode.open) as db:
        by_area: dict[str, list[str]] = defaultdict(list)
        skipped: list[str] = []
        for item in db.work_items:
            mutation = item.mutations[0]
            module = mutation.module_path.as_posix()
            area = area_of(module)
            if area is None or inert(root, module, mutation.start_pos, mutation.end_pos):
                skipped.append(item.job_id)
            else:
                by_area[area].append(item.job_id)
        rng = random.Random(seed)
        kept: dict[str, int] = {}
        for area in AREAS:
            jobs = sorted(by_area[area])
            take = min(len(jobs), round(size * SHARES[area]))
            chosen = set(rng.sample(jobs, take))
            kept[area] = take
            skipped += [j for j in jobs if j not in chosen]
        db.set_multiple_results(skipped, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
    return kept
