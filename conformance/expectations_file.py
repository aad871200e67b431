"""The expectations file itself: its entries, how an entry matches a case, reading and checking
a file, and writing entries back as TOML text.

What the entries mean to a run, and the file's format, are described in
`fusionspec.conformance.expectations`; writing a file from a run is
`fusionspec.conformance.expectations_write`.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from importlib.resources import files
from pathlib import Path
from typing import Any

from fusionspec.backend import Device
from fusionspec.spec.catalog import CATALOG
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.text import clean_text

from .cases import Case
from .selection import known_rule_ids

__all__ = ["EXPECTATIONS_SCHEMA", "READABLE_SCHEMAS", "MAX_FILE_BYTES", "MAX_ENTRIES",
           "MATCHERS", "ExpectationsError", "Expectation", "Expectations", "load_schema",
           "render_toml"]

#: The format this module writes (the file's ``schema`` key).
EXPECTATIONS_SCHEMA = "fusionspec-expectations/2"
#: The formats this module reads: version 2 only adds the optional ``finding`` of an entry.
READABLE_SCHEMAS = ("fusionspec-expectations/1", EXPECTATIONS_SCHEMA)
#: The largest expectations file read (a real one is a few kilobytes).
MAX_FILE_BYTES = 4 * 2**20
#: The most entries an expectations file may hold (every case is matched against each).
MAX_ENTRIES = 2000

#: The fields that say which cases an entry matches.
MATCHERS = ("pattern", "kind", "rule", "dtype", "case", "device")


class ExpectationsError(FusionspecError):
    """An expectations file that cannot be read or does not follow the schema."""


def load_schema() -> dict[str, Any]:
    """The JSON schema of expectations files (``expectations.schema.json``)."""
    text = files("fusionspec.conformance").joinpath("expectations.schema.json").read_text(
        encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _names(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


@dataclass(frozen=True)
class Expectation:
    """One ``[[expect]]`` entry; `number` counts entries from 1 in file order. `finding` is the
    title of the finding a written entry stands for (kept so that writing the file again
    extends this entry rather than adding another for the same cause)."""

    number: int
    status: str
    reason: str
    link: str = ""
    pattern: tuple[str, ...] = ()
    kind: tuple[str, ...] = ()
    rule: tuple[str, ...] = ()
    dtype: tuple[str, ...] = ()
    case: tuple[str, ...] = ()
    device: tuple[str, ...] = ()
    verdicts: tuple[str, ...] = ()
    finding: str = ""

    def matches(self, case: Case, device: Device) -> bool:
        """Whether every field this entry gives matches `case` on `device`."""
        return self.matches_fields(case.pattern, case.kind.value, case.rule, case.dtype,
                                   case.id, device.id)

    def matches_fields(self, pattern: str, kind: str, rule: str | None, dtype: str | None,
                       case_id: str, device_id: str | None) -> bool:
        """`matches` on a case given by its fields (as results documents record them);
        `device_id` None: on some device (the ``device`` field is not looked at)."""
        checks: list[tuple[tuple[str, ...], str | None, bool]] = [
            (self.pattern, pattern, True), (self.kind, kind, False), (self.rule, rule, True),
            (self.dtype, dtype, False), (self.case, case_id, True)]
        if device_id is not None:
            checks.append((self.device, device_id, True))
        for wanted, got, glob in checks:
            if not wanted:
                continue
            if got is None:
                return False
            if not any(fnmatchcase(got, w) if glob else got == w for w in wanted):
                return False
        return True

    def expects(self, status: str) -> bool:
        """Whether a failing verdict of `status` is the failure this entry expects."""
        return not self.verdicts or status in self.verdicts

    def record(self) -> dict[str, Any]:
        """How the results document cites this entry."""
        found: dict[str, Any] = {"entry": self.number, "status": self.status,
                                 "reason": self.reason}
        if self.link:
            found["link"] = self.link
        return found

    def table(self) -> dict[str, Any]:
        """This entry as a TOML table (for writing a file back)."""
        table: dict[str, Any] = {"status": self.status}
        for name in (*MATCHERS, "verdicts"):
            values = getattr(self, name)
            if values:
                table[name] = values[0] if len(values) == 1 else list(values)
        table["reason"] = self.reason
        if self.link:
            table["link"] = self.link
        if self.finding:
            table["finding"] = self.finding
        return table


@dataclass(frozen=True)
class Expectations:
    """A loaded expectations file: its entries in order, where it came from and its digest."""

    source: str
    sha256: str
    entries: tuple[Expectation, ...]

    def match(self, case: Case, device: Device) -> Expectation | None:
        """The first entry matching `case` on `device`, or None."""
        return next((e for e in self.entries if e.matches(case, device)), None)

    def header(self) -> dict[str, Any]:
        return {"file": self.source, "sha256": self.sha256, "entries": len(self.entries)}

    @staticmethod
    def load(path: str | Path) -> Expectations:
        """Read and validate the file at `path` (ExpectationsError naming what is wrong)."""
        try:
            with Path(path).open("rb") as handle:  # bounded: the path may be /dev/zero
                raw = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise ExpectationsError(f"{path}: cannot read the expectations file: "
                                    f"{exc.strerror or exc}") from None
        if len(raw) > MAX_FILE_BYTES:
            raise ExpectationsError(f"{path}: the expectations file is larger than "
                                    f"{MAX_FILE_BYTES // 2**20} MiB")
        return Expectations.parse(raw.decode("utf-8", errors="replace"), str(path))

    @staticmethod
    def parse(text: str, source: str = "<expectations>") -> Expectations:
        """Parse and validate expectations given as TOML text."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ExpectationsError(f"{source}: not valid TOML: {exc}") from None
        except RecursionError:
            raise ExpectationsError(f"{source}: not valid TOML: nested too deeply") from None
        _check_size(data, source)
        _check_schema(data, source)
        entries = tuple(_entry(number, table) for number, table in
                        enumerate(data.get("expect", []), start=1))
        _raise_all(source, [problem for e in entries for problem in _name_problems(e)])
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return Expectations(source, digest, entries)


def _check_size(data: Mapping[str, Any], source: str) -> None:
    """Refuse more entries than `MAX_ENTRIES` before each is checked and matched."""
    entries = data.get("expect")
    if isinstance(entries, list) and len(entries) > MAX_ENTRIES:
        raise ExpectationsError(f"{source}: {len(entries)} entries, more than {MAX_ENTRIES}; "
                                "group cases with globs and lists")


def _entry(number: int, table: Mapping[str, Any]) -> Expectation:
    return Expectation(number=number, status=str(table["status"]), reason=str(table["reason"]),
                       link=str(table.get("link", "")), finding=str(table.get("finding", "")),
                       **{name: _names(table.get(name)) for name in (*MATCHERS, "verdicts")})


def _where(path: Sequence[object]) -> str:
    """``expect[3].status`` style location (entries counted from 1, as people count)."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part + 1}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "the file"


def _raise_all(source: str, problems: Sequence[str]) -> None:
    """One ExpectationsError listing every problem (each with its location) on one line."""
    if len(problems) == 1:
        raise ExpectationsError(f"{source}: {problems[0]}")
    if problems:
        raise ExpectationsError(f"{source}: {len(problems)} problems: " + "; ".join(problems))


def _schema_message(error: Any) -> str:
    from jsonschema.exceptions import best_match

    if error.validator == "oneOf" and error.context:
        # "is not valid under any of the given schemas" says little; the closest branch says
        # what was wrong.
        closest = best_match(error.context)
        return str(closest.message) if closest is not None else str(error.message)
    return str(error.message)


def _check_schema(data: Mapping[str, Any], source: str) -> None:
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(load_schema())
    errors = sorted(validator.iter_errors(dict(data)),
                    key=lambda e: [str(p).zfill(8) for p in e.absolute_path])
    _raise_all(source, [f"{_where(list(e.absolute_path))}: {_schema_message(e)}"
                        for e in errors])


def _name_problems(entry: Expectation) -> list[str]:
    where = f"expect[{entry.number}]"
    ids = [e.id for e in CATALOG]
    problems = [f"{where}.pattern: {glob!r} matches no catalog pattern"
                for glob in entry.pattern if not any(fnmatchcase(i, glob) for i in ids)]
    rules = known_rule_ids()
    problems += [f"{where}.rule: {glob!r} matches no rule id"
                 for glob in entry.rule if not any(fnmatchcase(r, glob) for r in rules)]
    if entry.verdicts and entry.status != "fail":
        problems.append(f"{where}.verdicts: only an entry with status \"fail\" expects "
                        "verdicts")
    return problems


_HEADER = ("# fusionspec expectations: what this backend is known not to do yet.\n"
           "# The first entry matching a case decides: status \"fail\" runs it and expects a "
           "failing verdict,\n# \"skip\" does not run it. Fields: pattern, kind, rule, dtype, "
           "case, device (globs where\n# it makes sense), verdicts, reason, link; finding "
           "names the cause a written entry stands for.\n# See docs/ci.md.\n")


def render_toml(tables: Sequence[Mapping[str, Any]], title: str = "") -> str:
    """An expectations file holding `tables` (``[[expect]]`` entries, in order), with the
    format's explanatory header and `title` as one more comment line."""
    import tomli_w

    header = _HEADER
    if title:
        # One comment line, whatever the title holds (a device id may carry a newline).
        header += f"# {' '.join(clean_text(title, 400).split())}\n"
    body: str = tomli_w.dumps({"schema": EXPECTATIONS_SCHEMA,
                               "expect": [dict(t) for t in tables]},
                              multiline_strings=False)
    return header + "\n" + body
