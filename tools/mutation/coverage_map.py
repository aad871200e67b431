"""Which suite cases run which line of the shadow reference: the map that picks a mutant's cases.

The ci profile is drawn once and every case is judged with the (unmutated) shadow as the
backend, under coverage.py with one dynamic context per case. The map sends each line of the
shadow to the ids of the cases whose judging ran it. Lines run only while importing (module
constants, tables, decorators) are in no case's context: every case depends on them, and the
map says so with the id ``*``.

A mutant then runs only the cases that reach its line, so one costs seconds rather than a full
run; a line no case reaches is a survivor without running anything.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import coverage
from shadow import PACKAGE

EVERY_CASE = "*"


def build(shadow_root: Path, out: Path, seed: int = 0) -> dict[str, dict[str, list[str]]]:
    """Judge the ci profile on the shadow under coverage; write and return the map
    ``{file relative to shadow_root: {line: [case ids]}}`` (stored with the ids numbered,
    since most lines are run by thousands of cases)."""
    cov = coverage.Coverage(data_file=None, source=[str(shadow_root / PACKAGE)],
                            branch=False)
    cov.start()
    sys.path.insert(0, str(shadow_root))
    import fusionspec_shadow.backend as shadow_backend

    from fusionspec.conformance.grade.verdicts import judge
    from fusionspec.conformance.selection import RunSettings, Selection
    from fusionspec.conformance.suite import plan_cases

    backend = shadow_backend.ReferenceBackend()
    device = backend.devices()[0]
    run_settings = RunSettings(Selection().validate(), seed=seed)
    plan = plan_cases(run_settings, device=device)
    for planned in plan.cases:
        cov.switch_context(planned.case.id)
        judge(planned.case, backend, device, seed=run_settings.seed)
    cov.stop()
    data = cov.get_data()
    lines: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for path in data.measured_files():
        rel = Path(path).resolve().relative_to(shadow_root.resolve()).as_posix()
        for line, contexts in data.contexts_by_lineno(path).items():
            lines[rel][str(line)] |= {c or EVERY_CASE for c in contexts}
    ids = [EVERY_CASE, *(p.case.id for p in plan.cases)]
    number = {case_id: n for n, case_id in enumerate(ids)}
    compact = {f: {ln: sorted(number[i] for i in found) for ln, found in by_line.items()}
               for f, by_line in lines.items()}
    out.write_text(json.dumps({"seed": seed, "cases": ids, "lines": compact}))
    return load(out)


def load(path: Path) -> dict[str, dict[str, list[str]]]:
    """The map `build` wrote: ``{file: {line: [case ids]}}`` (``*``: every case)."""
    data = json.loads(path.read_text())
    ids: list[str] = data["cases"]
    return {f: {ln: [ids[n] for n in found] for ln, found in by_line.items()}
            for f, by_line in data["lines"].items()}


if __name__ == "__main__":
    build(Path(sys.argv[1]), Path(sys.argv[2]))
