"""The expectations file: what a backend's CI knows its backend does not do yet.

A backend team checks a TOML file into its repository and passes it to every run
(``fusionspec conform --expectations FILE``, ``pytest --fs-expectations FILE``)::

    schema = "fusionspec-expectations/1"

    [[expect]]
    status = "fail"                      # run it, expect a failing verdict
    pattern = "int8.*"                   # globs over pattern ids
    dtype = "int8"
    verdicts = ["numeric-mismatch"]      # optional: which failing statuses are expected
    reason = "u8 rounding is half-up, the spec rounds half to even"
    link = "https://github.com/org/backend/issues/12"

    [[expect]]
    status = "skip"                      # do not run it at all (it hangs the device)
    case = "softmax.post_ops/valid/1a2b3c4d"
    reason = "hangs the GPU driver"

An entry matches a case when every field it gives matches (``pattern``, ``kind``, ``rule``,
``dtype``, ``case``, ``device``; each a value or a list of values, any of which may match;
``pattern``, ``rule``, ``case`` and ``device`` are globs). The first matching entry decides.
The file is validated against ``expectations.schema.json`` (shipped beside this module; editors
that read JSON schemas can check the file as it is written) and then against the catalog (a
pattern or rule glob must match something), each problem reported with the file and the entry.

What an entry does to a case (`Expectations.match` finds the entry; the suite and the results
document, `fusionspec.conformance.grade.results`, apply it):

- ``skip``: the case is not judged; the results document lists it with the reason;
- ``fail``: the case is judged; a failing verdict (of one of ``verdicts``, when given) is an
  *expected failure*: recorded with its status and the reason, saved and replayable like any
  failure, but it does not fail the run. A case that does not fail is an *unexpected pass*:
  reported, and an error in strict mode (``--strict-expectations``): the entry is stale.

Limitations a backend declares in its class (`fusionspec.backend.Limitation`) are the backend's
own statement and stay as they are (``unsupported``); expectations are its CI's.

`expectations_toml` writes a file from a run's failures (``--write-expectations``): one entry per
pattern and failing status, listing the case ids, to be edited into reasons.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Iterable, Mapping, Sequence
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

__all__ = ["EXPECTATIONS_SCHEMA", "ExpectationsError", "Expectation", "Expectations",
           "load_schema", "expectations_toml"]

#: The format this module reads and writes (the file's ``schema`` key).
EXPECTATIONS_SCHEMA = "fusionspec-expectations/1"
#: The largest expectations file read (a real one is a few kilobytes).
MAX_FILE_BYTES = 4 * 2**20
#: The most entries an expectations file may hold (every case is matched against each).
MAX_ENTRIES = 2000

_MATCHERS = ("pattern", "kind", "rule", "dtype", "case", "device")


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
    """One ``[[expect]]`` entry; `number` counts entries from 1 in file order."""

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

    def matches(self, case: Case, device: Device) -> bool:
        """Whether every field this entry gives matches `case` on `device`."""
        checks = ((self.pattern, case.pattern, True), (self.kind, case.kind.value, False),
                  (self.rule, case.rule, True), (self.dtype, case.dtype, False),
                  (self.case, case.id, True), (self.device, device.id, True))
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
        for name in (*_MATCHERS, "verdicts"):
            values = getattr(self, name)
            if values:
                table[name] = values[0] if len(values) == 1 else list(values)
        table["reason"] = self.reason
        if self.link:
            table["link"] = self.link
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
                       link=str(table.get("link", "")),
                       **{name: _names(table.get(name)) for name in (*_MATCHERS, "verdicts")})


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


def expectations_toml(failures: Iterable[Mapping[str, Any]],
                      keep: Sequence[Expectation] = (), *, title: str = "") -> str:
    """An expectations file expecting every failure in `failures` (results-document failure
    records): one entry per pattern, failing status and reason already given, listing the
    case ids. Entries of `keep` (the skips of the file the run used) come first, unchanged.
    A failure that already matched an entry keeps that entry's reason and link."""
    import tomli_w

    groups: dict[tuple[str, str, str, str], list[str]] = {}
    first_reason: dict[tuple[str, str, str, str], str] = {}
    for failure in failures:
        if failure.get("minimal_of"):
            continue  # a shrunk copy of a failure listed anyway
        expected = failure.get("expected") or {}
        key = (str(failure["pattern"]), str(failure["status"]), str(expected.get("reason", "")),
               str(expected.get("link", "")))
        groups.setdefault(key, [])
        if failure["case_id"] not in groups[key]:
            groups[key].append(str(failure["case_id"]))
        first_reason.setdefault(key, str(failure.get("reason", "")))
    tables = [e.table() for e in keep]
    for (pattern, status, reason, link), cases in groups.items():
        seen = " ".join(first_reason[(pattern, status, reason, link)].split())[:160]
        table: dict[str, Any] = {
            "status": "fail", "pattern": pattern, "verdicts": status,
            "case": cases if len(cases) > 1 else cases[0],
            "reason": reason or f"TODO: say why (the run said: {status}: {seen})"}
        if link:
            table["link"] = link
        tables.append(table)
    header = ("# fusionspec expectations: what this backend is known not to do yet.\n"
              "# The first entry matching a case decides: status \"fail\" runs it and expects "
              "a failing verdict,\n# \"skip\" does not run it. Fields: pattern, kind, rule, "
              "dtype, case, device (globs where\n# it makes sense), verdicts, reason, link. "
              "See docs/ci.md.\n")
    if title:
        # One comment line, whatever the title holds (a device id may carry a newline).
        header += f"# {' '.join(clean_text(title, 400).split())}\n"
    body: str = tomli_w.dumps({"schema": EXPECTATIONS_SCHEMA, "expect": tables},
                              multiline_strings=False)
    return header + "\n" + body
