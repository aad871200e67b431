"""The expectations file itself: its entries, how an entry matches a case, reading and checking
a file, and writing entries back as TOML text.

What the entries mean to a run, and the file's format, are described in
`fusionspec.conformance.expectations`; writing a file from a run is
`fusionspec.conformance.expectations_write`.

A file is someone's text, read by every run: its size is bounded (`MAX_FILE_BYTES`,
`MAX_ENTRIES`, `MAX_VALUES` values of the matching fields, `MAX_GLOBS` of them globs, each at
most `MAX_VALUE_CHARS` characters), its words (``reason``, ``link``, ``finding``) are cleaned
of control characters, escape sequences and bidirectional overrides and clipped to
`TEXT_LIMIT` characters (a reason is copied into every verdict it explains), and each entry's
globs are compiled once into one regular expression per field, its plain values into a set, so
matching a case costs a lookup per field rather than a glob per value.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase, translate
from importlib.resources import files
from pathlib import Path
from typing import Any

from fusionspec.backend import Device
from fusionspec.spec.catalog import CATALOG
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.text import clean_json, clean_text, fit_text

from .cases import Case
from .selection import known_rule_ids

__all__ = ["EXPECTATIONS_SCHEMA", "READABLE_SCHEMAS", "MAX_FILE_BYTES", "MAX_ENTRIES",
           "MAX_VALUES", "MAX_GLOBS", "MAX_VALUE_CHARS", "TEXT_LIMIT", "MATCHERS",
           "entry_text", "is_glob", "ExpectationsError", "Citation", "Expectation", "Expectations",
           "load_schema", "render_toml"]

#: The format this module writes (the file's ``schema`` key).
EXPECTATIONS_SCHEMA = "fusionspec-expectations/2"
#: The formats this module reads: version 2 only adds the optional ``finding`` of an entry.
READABLE_SCHEMAS = ("fusionspec-expectations/1", EXPECTATIONS_SCHEMA)
#: The largest expectations file read (a real one is a few kilobytes).
MAX_FILE_BYTES = 2 * 2**20
#: The most entries an expectations file may hold (every case is matched against each).
MAX_ENTRIES = 2000
#: The most values the matching fields (``pattern``, ``case``, ...) of all entries hold
#: together: a file written from a run lists a few thousand case ids at most.
MAX_VALUES = 20_000
#: The most of those values that are globs (hold ``*``, ``?`` or ``[``); each costs a pattern
#: match where a plain value costs a set lookup.
MAX_GLOBS = 1000
#: The longest value of a matching field (a case id is under a hundred characters).
MAX_VALUE_CHARS = 300
#: The longest ``reason``, ``link`` or ``finding`` kept (characters); longer ones are clipped.
TEXT_LIMIT = 500

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
        return (fit_text(value),)
    return tuple(fit_text(str(v)) for v in value) if isinstance(value, list) else ()


def is_glob(value: str) -> bool:
    """Whether `value` is a glob (anything but a plain name to compare as it is)."""
    return any(c in value for c in "*?[")


@dataclass(frozen=True)
class _Names:
    """The values of one field, compiled: plain ones in a set, globs that only end in ``*``
    (``fp.bn_relu/valid/*``, as written files hold them) as prefixes, other globs in one
    expression."""

    plain: frozenset[str]
    prefixes: tuple[str, ...]
    globs: re.Pattern[str] | None

    @staticmethod
    def of(values: Sequence[str], glob: bool) -> _Names:
        found = [v for v in values if glob and is_glob(v)]
        prefixes = tuple(v[:-1] for v in found if not is_glob(v[:-1]) and v.endswith("*"))
        others = [v for v in found if v[:-1] not in prefixes or not v.endswith("*")]
        pattern = re.compile("|".join(translate(v) for v in others)) if others else None
        return _Names(frozenset(v for v in values if v not in found), prefixes, pattern)

    def __call__(self, value: str) -> bool:
        return value in self.plain or value.startswith(self.prefixes) or (
            self.globs is not None and self.globs.match(value) is not None)


#: Where each matching field's value sits in the tuple `Expectation.accepts` is given.
_AT = {name: index for index, name in enumerate(MATCHERS)}


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
    #: The matching fields it gives, compiled: (index in `MATCHERS`, `_Names`).
    _checks: tuple[tuple[int, _Names], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_checks", tuple(
            (_AT[name], _Names.of(getattr(self, name), name not in ("kind", "dtype")))
            for name in MATCHERS if getattr(self, name)))

    def matches(self, case: Case, device: Device) -> bool:
        """Whether every field this entry gives matches `case` on `device`."""
        return self.matches_fields(case.pattern, case.kind.value, case.rule, case.dtype,
                                   case.id, device.id)

    def matches_fields(self, pattern: str, kind: str, rule: str | None, dtype: str | None,
                       case_id: str, device_id: str | None) -> bool:
        """`matches` on a case given by its fields (as results documents record them);
        `device_id` None: on some device (the ``device`` field is not looked at)."""
        return self.accepts((pattern, kind, rule, dtype, case_id, device_id),
                            device_id is not None)

    def accepts(self, values: tuple[str | None, ...], on_device: bool = True) -> bool:
        """`matches_fields` given the fields as a tuple in `MATCHERS` order (the device
        field not looked at unless `on_device`)."""
        device = _AT["device"]
        for index, names in self._checks:
            got = values[index]
            if index == device and not on_device:
                continue
            if got is None or not (got in names.plain or got.startswith(names.prefixes) or (
                    names.globs is not None and names.globs.match(got) is not None)):
                return False
        return True

    def expects(self, status: str) -> bool:
        """Whether a failing verdict of `status` is the failure this entry expects."""
        return not self.verdicts or status in self.verdicts

    def citation(self) -> Citation:
        """How the results document cites this entry."""
        return Citation(self.number, self.status, self.reason, self.link or None)

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
class Citation:
    """An entry as a results document cites it: its number in the file, its status, its
    reason and its link (None: none given)."""

    entry: int
    status: str
    reason: str
    link: str | None = None

    def to_json(self) -> dict[str, int | str]:
        """The citation as the document writes it (no ``link`` key when there is none)."""
        found: dict[str, int | str] = {"entry": self.entry, "status": self.status,
                                       "reason": self.reason}
        if self.link:
            found["link"] = self.link
        return found

    def text(self) -> str:
        """``expectations entry N: reason (link)``, as pytest's skip and xfail lines say it."""
        link = f" ({self.link})" if self.link else ""
        return f"expectations entry {self.entry}: {self.reason}{link}"


@dataclass(frozen=True)
class Expectations:
    """A loaded expectations file: its entries in order, where it came from and its digest."""

    source: str
    sha256: str
    entries: tuple[Expectation, ...]

    def match(self, case: Case, device: Device) -> Expectation | None:
        """The first entry matching `case` on `device`, or None."""
        values = (case.pattern, case.kind.value, case.rule, case.dtype, case.id, device.id)
        return next((e for e in self.entries if e.accepts(values)), None)

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
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        try:
            data = tomllib.loads(fit_text(text))
        except tomllib.TOMLDecodeError as exc:
            raise ExpectationsError(f"{source}: not valid TOML: {exc}") from None
        except RecursionError:
            raise ExpectationsError(f"{source}: not valid TOML: nested too deeply") from None
        _check_size(data, source)
        _check_schema(data, source)
        entries = tuple(_entry(number, table) for number, table in
                        enumerate(data.get("expect", []), start=1))
        ids, rules = {e.id for e in CATALOG}, set(known_rule_ids())
        _raise_all(source, [problem for e in entries
                             for problem in _name_problems(e, ids, rules)])
        return Expectations(source, digest, entries)


def _check_size(data: Mapping[str, Any], source: str) -> None:
    """Refuse more entries than `MAX_ENTRIES`, more values than `MAX_VALUES`, more globs than
    `MAX_GLOBS` or a value longer than `MAX_VALUE_CHARS`, before each is checked and
    matched."""
    entries = data.get("expect")
    if not isinstance(entries, list):
        return
    if len(entries) > MAX_ENTRIES:
        raise ExpectationsError(f"{source}: {len(entries)} entries, more than {MAX_ENTRIES}; "
                                "group cases with globs and lists")
    values = globs = 0
    for number, table in enumerate(entries, start=1):
        if not isinstance(table, Mapping):
            continue
        for name in MATCHERS:
            given = table.get(name)
            for value in [given] if isinstance(given, str) else \
                    given if isinstance(given, list) else ():
                if not isinstance(value, str):
                    continue
                values += 1
                globs += is_glob(value)
                if len(value) > MAX_VALUE_CHARS:
                    raise ExpectationsError(f"{source}: expect[{number}].{name}: a value of "
                                            f"{len(value)} characters, more than "
                                            f"{MAX_VALUE_CHARS}")
    if values > MAX_VALUES:
        raise ExpectationsError(f"{source}: {values} values in the entries' matching fields, "
                                f"more than {MAX_VALUES}; group cases with globs")
    if globs > MAX_GLOBS:
        raise ExpectationsError(f"{source}: {globs} globs in the entries' matching fields, "
                                f"more than {MAX_GLOBS}; use fewer, broader globs")


def _entry(number: int, table: Mapping[str, Any]) -> Expectation:
    return Expectation(number=number, status=str(table["status"]),
                       reason=entry_text(table["reason"]),
                       link=entry_text(table.get("link", "")),
                       finding=entry_text(table.get("finding", "")),
                       **{name: _names(table.get(name)) for name in (*MATCHERS, "verdicts")})


def entry_text(value: object) -> str:
    """A ``reason``, ``link`` or ``finding`` as kept: on one line, cleaned (`clean_text`),
    at most `TEXT_LIMIT` characters."""
    return " ".join(clean_text(value, TEXT_LIMIT).split())


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
    errors = sorted(validator.iter_errors(_shortened(data)),
                    key=lambda e: [str(p).zfill(8) for p in e.absolute_path])
    _raise_all(source, [f"{_where(list(e.absolute_path))}: {_schema_message(e)}"
                        for e in errors])


def _shortened(data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` as the schema sees it: a list of non-empty strings under a field whose values
    may be any such strings (``pattern``, ``rule``, ``case``, ``device``) is right whatever
    its length, and is shown to the validator as its first value only (the validator takes
    a hundred times longer per value than this check)."""
    entries = data.get("expect")
    if not isinstance(entries, list):
        return dict(data)
    shown: list[Any] = []
    for table in entries:
        if isinstance(table, Mapping):
            table = {name: value[:1] if name in _FREE and isinstance(value, list) and value
                     and all(isinstance(v, str) and v for v in value) else value
                     for name, value in table.items()}
        shown.append(table)
    return {**data, "expect": shown}


#: The matching fields whose values are any non-empty strings.
_FREE = frozenset({"pattern", "rule", "case", "device"})


def _name_problems(entry: Expectation, ids: set[str], rules: set[str]) -> list[str]:
    where = f"expect[{entry.number}]"
    problems = [f"{where}.pattern: {glob!r} matches no catalog pattern"
                for glob in entry.pattern if not _matches_some(glob, ids)]
    problems += [f"{where}.rule: {glob!r} matches no rule id"
                 for glob in entry.rule if not _matches_some(glob, rules)]
    if entry.verdicts and entry.status != "fail":
        problems.append(f"{where}.verdicts: only an entry with status \"fail\" expects "
                        "verdicts")
    return problems


def _matches_some(glob: str, names: set[str]) -> bool:
    return glob in names or (is_glob(glob) and any(fnmatchcase(n, glob) for n in names))


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
    # Every string fit for UTF-8: the values come from a run's document and a backend.
    body: str = tomli_w.dumps(clean_json({"schema": EXPECTATIONS_SCHEMA,
                                          "expect": [dict(t) for t in tables]}),
                              multiline_strings=False)
    return header + "\n" + body
