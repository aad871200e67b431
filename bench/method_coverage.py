"""Coverage by method, as the Markdown table BENCHMARKS.md shows.

Reads results documents (a run of the ci profile on any backend), takes what their cases drew
and prints, per method of the coverage model (`fusionspec.conformance.generate.methods`), how
many items it asks for, how many the cases drew, how many it leaves out with a reason, and the
items no case drew for no stated reason (there should be none). The same numbers are the
report's "Coverage by method" table.

    python bench/method_coverage.py results/conformance/reference-numpy/results.json
"""

from __future__ import annotations

import sys

from fusionspec.conformance.generate.items import thorough_only
from fusionspec.conformance.generate.methods import method_table
from fusionspec.conformance.grade.results import load_document
from fusionspec.reports.method_coverage import method_coverage, methods_markdown
from fusionspec.reports.model import observed_coverage


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    documents = [load_document(p) for p in paths]
    rows = method_coverage(observed_coverage(documents), method_table(thorough_only()))
    print(methods_markdown(rows), end="")
    for row in rows:
        for item in row.undrawn:
            print(f"not drawn ({row.name}): {item}")
    return 1 if any(row.undrawn for row in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
