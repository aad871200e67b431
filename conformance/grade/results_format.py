"""The results document's family of records: the error a reading of one raises
(`ResultsFormatError`), and the base its records share (`ResultsRecord`).

Results records are read leniently, as they always were: a member whose type admits None
admits JSON null too, and a null or absent member reads as its field's default (a missing
``kind`` as ``""``, missing ``details`` as empty ones); the members a file must hold are
checked by ``results.schema.json`` when the file is loaded.
"""

from __future__ import annotations

from typing import ClassVar

from fusionspec.spec.errors import FusionspecError

from ..records.record import Record

__all__ = ["ResultsFormatError", "ResultsRecord"]


class ResultsFormatError(FusionspecError):
    """A results document or failure folder that cannot be read."""


class ResultsRecord(Record):
    """A record of the results document (see the module docstring)."""

    ERROR: ClassVar[type[FusionspecError]] = ResultsFormatError
    NULLABLE: ClassVar[bool] = True
    LENIENT: ClassVar[bool] = True
