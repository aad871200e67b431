"""The JSON schemas fusionspec ships, each generated from the root record of its document:
``grade/results.schema.json`` from `fusionspec.conformance.grade.document.ResultsDocument`
and ``perf/perf.schema.json`` from `fusionspec.conformance.perf.records.PerfDocument`
(`fusionspec.conformance.records.schema` builds them). A test holds each shipped file equal to
the one its records give; after changing a record, write them again::

    python -m fusionspec.conformance.schemas
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .grade.document import ResultsDocument
from .perf.records import PerfDocument
from .records.record import Record
from .records.schema import schema_text

__all__ = ["SCHEMAS", "write_schemas"]

_HERE = Path(__file__).parent

#: Each shipped schema file, by the root record it is generated from.
SCHEMAS: Mapping[Path, type[Record]] = {
    _HERE / "grade" / "results.schema.json": ResultsDocument,
    _HERE / "perf" / "perf.schema.json": PerfDocument,
}


def write_schemas() -> list[Path]:
    """Write every shipped schema from its records; the files written."""
    for path, root in SCHEMAS.items():
        path.write_text(schema_text(root), encoding="utf-8")
    return list(SCHEMAS)


if __name__ == "__main__":  # pragma: no cover - a maintainer's command
    for written in write_schemas():
        print(f"wrote {written}")
