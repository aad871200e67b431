"""The test command cosmic-ray runs for each mutant: does the suite kill it?

cosmic-ray has just written one mutation into a file of this worker's shadow package (the
current folder holds ``fusionspec_shadow``). This script finds the lines that changed by
comparing the package with the pristine copy, takes the suite cases whose judging ran those
lines (the coverage map), and runs ``fusionspec conform`` on them with the mutated shadow as
the backend. The oracle is the installed, unmutated reference.

Exit status, as cosmic-ray reads it: 0 the mutant survived (the run passed, or no case reaches
the mutated lines), 1 it was killed (a failing verdict, or the backend did not load). A run
that could not judge at all (a usage error, an interrupt) exits 2 with ``error:`` in its output,
which the score counts as an error, never as a kill.
"""

from __future__ import annotations

import ast
import difflib
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

try:
    from coverage_map import EVERY_CASE, load
    from shadow import PACKAGE
except ImportError as exc:  # not the environment fusionspec is installed in: judge nothing
    print(f"error: {exc} (run the workers with the Python fusionspec is installed in)")
    sys.exit(2)

#: The most cases one mutant runs: a spread over patterns and case kinds (lines that every case
#: runs would otherwise cost a whole ci run per mutant).
CASE_CAP = 400

BACKEND = f"{PACKAGE}.backend:ReferenceBackend"


def changed_lines(worker: Path, pristine: Path) -> tuple[str, range] | None:
    """The file (relative to the worker folder) that differs from the pristine copy and the
    range of its pristine lines that changed."""
    for path in sorted((worker / PACKAGE).rglob("*.py")):
        rel = path.relative_to(worker).as_posix()
        old = (pristine / rel).read_text().splitlines()
        new = path.read_text().splitlines()
        if old == new:
            continue
        blocks = [b for b in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
                  if b[0] != "equal"]
        first = min(b[1] for b in blocks)
        last = max(max(b[2], b[1] + 1) for b in blocks)
        return rel, range(first + 1, last + 1)
    return None


def statement_lines(source: str, lines: range) -> range:
    """`lines` widened to the first line of the innermost statement holding them. Coverage
    records a statement by its first line, so a mutation on a continuation line (a long
    condition, a signature's second line) is reached by the cases that run that first line."""
    best: ast.stmt | None = None
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.stmt) and node.end_lineno is not None and \
                node.lineno <= lines.start and lines.stop - 1 <= node.end_lineno and \
                (best is None or node.lineno >= best.lineno):
            best = node
    return range(min(lines.start, best.lineno), lines.stop) if best is not None else lines


def compiles(path: Path) -> bool:
    """Whether the mutated file is still Python (a mutant that is not never loads: the suite
    refuses the backend, which kills it without running a case)."""
    try:
        compile(path.read_text(), str(path), "exec")
    except SyntaxError:
        return False
    return True


def spread(ids: list[str], cap: int) -> list[str]:
    """At most `cap` of `ids`, taken in turn from each (pattern, case kind) group."""
    if len(ids) <= cap:
        return ids
    groups: dict[str, list[str]] = defaultdict(list)
    for case_id in sorted(ids):
        groups["/".join(case_id.split("/")[:2])].append(case_id)
    chosen: list[str] = []
    queues = [iter(g) for _, g in sorted(groups.items())]
    while len(chosen) < cap and queues:
        for queue in list(queues):
            item = next(queue, None)
            if item is None:
                queues.remove(queue)
            elif len(chosen) < cap:
                chosen.append(item)
    return chosen


def cases_for(lines_map: dict[str, dict[str, list[str]]], rel: str, lines: range) -> list[str]:
    by_line = lines_map.get(rel, {})
    found = {c for line in lines for c in by_line.get(str(line), [])}
    if EVERY_CASE in found:
        found = {c for per_line in lines_map.values() for ids in per_line.values() for c in ids}
    found.discard(EVERY_CASE)
    return sorted(found)


#: Lines after the mutated ones whose cases come first: a changed condition or value shows in
#: the branch it guards or the statements that use it.
NEAR_AFTER = 6


def chosen(lines_map: dict[str, dict[str, list[str]]], rel: str, lines: range,
           cap: int) -> list[str]:
    """At most `cap` of the cases that reach `lines`, in three thirds:

    - those that also run the rarely run lines around them (a guarded branch that only
      ill-formed graphs of one rule reach is where a flipped condition shows);
    - those whose path through the mutated file is the most unusual (the sum, over the file's
      lines a case runs, of one over the cases that run each line): a corner that depends on
      the data rather than on the lines next to the mutation (an unknown rank, a fan-out after
      an optional node) shows in cases that run the file's rare lines elsewhere;
    - a spread over patterns and case kinds.
    """
    reach = cases_for(lines_map, rel, lines)
    if len(reach) <= cap:
        return reach
    by_line = lines_map.get(rel, {})
    reachable = set(reach)
    weight: dict[str, float] = defaultdict(float)
    for line in range(lines.start - 1, lines.stop + NEAR_AFTER):
        ids = [c for c in by_line.get(str(line), []) if c in reachable]
        for case_id in ids:
            weight[case_id] += 1.0 / len(ids)
    rare = sorted((c for c in weight if weight[c] > min(weight.values(), default=0.0)),
                  key=lambda c: (-weight[c], c))[:cap // 3]
    taken = set(rare)
    oddity: dict[str, float] = defaultdict(float)
    for ids in by_line.values():
        for case_id in ids:
            if case_id in reachable and case_id not in taken:
                oddity[case_id] += 1.0 / len(ids)
    odd = sorted(oddity, key=lambda c: (-oddity[c], c))[:cap // 3]
    taken.update(odd)
    rest = spread([c for c in reach if c not in taken], cap - len(taken))
    return rare + odd + rest


def main() -> int:
    work = Path(os.environ["FUSIONSPEC_MUTATION_WORK"])
    worker = Path.cwd()
    change = changed_lines(worker, work / "pristine")
    if change is None:
        print("error: no file of the shadow differs from the pristine copy")
        return 2
    rel, lines = change
    if not compiles(worker / rel):
        print(f"mutated {rel}:{lines.start}-{lines.stop - 1} is not valid Python: the backend "
              "cannot load")
        return 1
    lines = statement_lines((work / "pristine" / rel).read_text(), lines)
    ids = chosen(load(work / "coverage.json"), rel, lines, CASE_CAP)
    print(f"mutated {rel}:{lines.start}-{lines.stop - 1}; {len(ids)} case(s) reach it")
    if not ids:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        case_file = Path(tmp) / "cases.txt"
        case_file.write_text("\n".join(ids) + "\n")
        env = {**os.environ, "PYTHONPATH": str(worker), "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.run(
            [sys.executable, "-m", "fusionspec.cli", "conform", "--backend", BACKEND,
             "--profile", "ci", "--case", f"@{case_file}", "--out", str(Path(tmp) / "out")],
            env=env, capture_output=True, text=True, cwd=tmp)
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
    print("\n".join(tail))
    if proc.returncode in (0, 1, 3):
        return 0 if proc.returncode == 0 else 1
    print(f"error: fusionspec conform exited {proc.returncode}")
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # a broken kill command must read as an error, never as a kill
        print(f"error: {type(exc).__name__}: {exc}")
        sys.exit(2)
