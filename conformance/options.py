"""The options of a conformance run, declared once for ``fusionspec conform`` and the pytest
plugin, so both take the same values with the same meaning.

`FLAGS` lists them; the command line adds each as ``--NAME`` and the pytest plugin as
``--fs-NAME`` (prefixed, so it cannot clash with another project's options). Every enumerated
value is checked while the command line is read: a pattern glob that matches nothing, an
unknown kind, rule, dtype or family, a malformed case id, shard or expectations file is a
one-line usage error, never a traceback and never an empty run. `read_options` turns parsed
values (from either parser) into `RunOptions`.

List options take comma-separated values and may be repeated (``--dtype bf16,f16`` is
``--dtype bf16 --dtype f16``). ``--case`` and ``--exclude`` also take ``@FILE``, a list of one
value a line: FILE must be a regular file of at most `LIST_FILE_LIMIT` bytes (a device such as
``/dev/zero``, a FIFO or a folder is a usage error, never an endless read).
"""

from __future__ import annotations

import argparse
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, TypeVar

from fusionspec.spec.catalog import CATALOG, PatternFamily
from fusionspec.spec.errors import FusionspecError

from .cases import CaseKind
from .expectations import Expectations, check_write_options
from .selection import (
    HEADLINE_DTYPES,
    PROFILES,
    Profile,
    RunSettings,
    Selection,
    Shard,
    excludes_something,
    known_rule_ids,
    split_case_id,
)

__all__ = ["Flag", "FLAGS", "RunOptions", "read_options", "add_flags", "gigabytes",
           "LIST_FILE_LIMIT", "RefusedValue", "refused_value"]

T = TypeVar("T")

#: The largest ``@FILE`` list read (bytes): ample for every case id of a thorough run.
LIST_FILE_LIMIT = 4 * 2**20


@dataclass(frozen=True)
class Flag:
    """One option: its name (``--NAME``, ``--fs-NAME``), help text and argparse settings."""

    name: str
    help: str
    settings: Mapping[str, Any]

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")


def _listed(parse: Callable[[str], T]) -> Callable[[str], list[T]]:
    """A type for a comma-separated list whose items `parse` checks."""
    def parse_all(text: str) -> list[T]:
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError("no value given")
        return [parse(item) for item in items]
    parse_all.__name__ = getattr(parse, "__name__", "value")
    return parse_all


def _read_list(path: Path) -> str:
    """The text of the ``@FILE`` list `path` (see the module docstring); ArgumentTypeError
    for one that cannot be read."""
    try:
        # Non-blocking, so that opening a FIFO with no writer does not wait; only a regular
        # file is read.
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"cannot read the list {path}: "
                                         f"{getattr(exc, 'strerror', None) or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            raise argparse.ArgumentTypeError(f"the list {path} is not a regular file (one "
                                             "case id or glob a line)")
        with os.fdopen(os.dup(handle), "rb") as stream:
            data = stream.read(LIST_FILE_LIMIT + 1)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read the list {path}: "
                                         f"{exc.strerror or exc}") from None
    finally:
        os.close(handle)
    if len(data) > LIST_FILE_LIMIT:
        raise argparse.ArgumentTypeError(f"the list {path} is larger than "
                                         f"{LIST_FILE_LIMIT // 2**20} MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise argparse.ArgumentTypeError(f"cannot read the list {path}: {exc}") from None


def _from_file(parse: Callable[[str], T]) -> Callable[[str], list[T]]:
    """A list type like `_listed`'s that also takes ``@FILE``: one value a line, blank lines
    and ``#`` comments skipped; a bad line is named by file and line number."""
    listed = _listed(parse)

    def parse_all(text: str) -> list[T]:
        if not text.startswith("@"):
            return listed(text)
        path = Path(text[1:])
        lines = _read_list(path).splitlines()
        values: list[T] = []
        for number, line in enumerate(lines, 1):
            item = line.split("#", 1)[0].strip()
            if not item:
                continue
            try:
                values.append(parse(item))
            except argparse.ArgumentTypeError as exc:
                raise argparse.ArgumentTypeError(f"{path}, line {number}: {exc}") from None
        if not values:
            raise argparse.ArgumentTypeError(f"the list {path} holds no value")
        return values
    parse_all.__name__ = getattr(parse, "__name__", "value")
    return parse_all


def _one_of(names: Sequence[str], what: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in names:
            raise argparse.ArgumentTypeError(f"{text!r} is no {what}; choose among "
                                             f"{', '.join(names)}")
        return text
    parse.__name__ = what
    return parse


def _shown(names: Sequence[str]) -> str:
    return ", ".join(names) if len(names) <= 12 else ", ".join(names[:12]) + ", ..."


def _pattern(glob: str) -> str:
    ids = [e.id for e in CATALOG]
    if not any(fnmatchcase(i, glob) for i in ids):
        raise argparse.ArgumentTypeError(f"{glob!r} matches no catalog pattern (known: "
                                         f"{_shown(ids)}; globs such as 'int8.*' work)")
    return glob


def _rule(glob: str) -> str:
    rules = known_rule_ids()
    if not any(fnmatchcase(r, glob) for r in rules):
        raise argparse.ArgumentTypeError(f"{glob!r} matches no rule id (known: "
                                         f"{_shown(rules)}; globs such as 'structure.*' work)")
    return glob


def _kind(text: str) -> CaseKind:
    known = {k.value: k for k in CaseKind}
    if text not in known:
        raise argparse.ArgumentTypeError(f"{text!r} is no case kind; choose among "
                                         f"{', '.join(known)}")
    return known[text]


def _case(text: str) -> str:
    try:
        pattern, kind, _, _ = split_case_id(text)
    except ValueError:
        pattern, kind = text, "*"
    if not any(fnmatchcase(e.id, pattern) for e in CATALOG) or \
            not any(fnmatchcase(k.value, kind) for k in CaseKind):
        raise argparse.ArgumentTypeError(
            f"{text!r} is no case id of the catalog (a case id is "
            "<pattern>/<kind>[/<rule>]/<hash>, as results and failures print it)")
    return text


def _exclude(text: str) -> str:
    if not excludes_something(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} names no case of the catalog (case ids or globs: 'fp.conv_*', "
            "'int8.*/near-miss/*', as results and failures print them)")
    return text


def _shard(text: str) -> Shard:
    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"the seed must be 0 or more, got {value}")
    return value


def _expectations(text: str) -> Expectations:
    try:
        return Expectations.load(text)
    except FusionspecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def gigabytes(text: str) -> int:
    """``--memory-limit``: gigabytes as a number of bytes (0 for no cap)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of gigabytes") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"--memory-limit must be 0 or more, got {text}")
    size = int(min(value, 2.0**60) * 2**30)
    # A cap below what a Python process needs to start, or past what the kernel takes, is a
    # typo; neither may silently become "no cap".
    if value and not _MIN_CAP <= size <= _MAX_CAP:
        raise argparse.ArgumentTypeError(
            f"--memory-limit must be 0 (no cap) or between {_MIN_CAP / 2**30:g} and "
            f"{_MAX_CAP // 2**30} GB, got {text}")
    return size


#: The smallest and largest address-space caps ``--memory-limit`` takes (bytes).
_MIN_CAP = 2**26
_MAX_CAP = 2**50


_KINDS = ", ".join(k.value for k in CaseKind)
_FAMILIES = [f.value for f in PatternFamily]

#: The options of a run, in the order help lists them.
FLAGS: tuple[Flag, ...] = (
    Flag("backend", "the backend to grade: a registered name, or module:attr "
         "(default: reference; with --replay, the backend the failure was saved from)",
         {"metavar": "NAME"}),
    Flag("device", "device id of the backend (default: its first device; with --replay, the "
         "recorded device)", {"metavar": "ID"}),
    Flag("profile", "how many cases to draw: ci (bounded) or thorough (default: ci)",
         {"choices": sorted(PROFILES), "default": "ci"}),
    Flag("seed", "seed of the drawn cases and their input data (default: 0); the same "
         "profile and seed always draw the same cases", {"type": _seed, "default": 0,
                                                         "metavar": "N"}),
    Flag("patterns", "pattern ids or globs, comma-separated (int8.*,fp.conv_*; default: all)",
         {"type": _listed(_pattern), "action": "extend", "metavar": "GLOBS"}),
    Flag("family", f"pattern families, comma-separated, among {', '.join(_FAMILIES)}",
         {"type": _listed(_one_of(_FAMILIES, "pattern family")), "action": "extend",
          "metavar": "NAMES"}),
    Flag("kinds", f"case kinds, comma-separated, among {_KINDS} (default: all three)",
         {"type": _listed(_kind), "action": "extend", "metavar": "KINDS"}),
    Flag("case", "case ids (or globs), comma-separated or repeated, or @FILE (one a line, "
         "# comments): only these cases",
         {"type": _from_file(_case), "action": "extend", "metavar": "IDS"}),
    Flag("exclude", "case ids or globs to leave out (fp.conv_*, */near-miss/*; a bare "
         "pattern id leaves out its cases), comma-separated or repeated, or @FILE (one a "
         "line, # comments)",
         {"type": _from_file(_exclude), "action": "extend", "metavar": "GLOBS"}),
    Flag("rule", "rule ids (or globs) the near-miss and ill-formed cases break",
         {"type": _listed(_rule), "action": "extend", "metavar": "RULES"}),
    Flag("dtype", f"case dtypes, comma-separated, among {', '.join(HEADLINE_DTYPES)}",
         {"type": _listed(_one_of(HEADLINE_DTYPES, "case dtype")), "action": "extend",
          "metavar": "DTYPES"}),
    Flag("shard", "judge shard K of N: a stable slice of the selected cases by case id "
         "(merge the N results with `fusionspec merge`)", {"type": _shard, "metavar": "K/N"}),
    Flag("expectations", "expectations file (TOML): cases expected to fail or to skip, with "
         "reasons (see docs/ci.md)", {"type": _expectations, "metavar": "FILE"}),
    Flag("strict-expectations", "an expected failure that passes fails the run",
         {"action": "store_true"}),
    Flag("out", "folder for results.json, failure folders and logs (default: "
         "results/conformance/<backend>-<device>)", {"type": Path, "metavar": "DIR"}),
    Flag("write-expectations", "write an expectations file expecting this run's failures: "
         "the entries of --expectations, kept with their reasons, and one entry per cause of "
         "the failures they do not expect (never the --expectations file itself)",
         {"type": Path, "metavar": "FILE"}),
    Flag("prune-expectations", "with --write-expectations: leave out the stale entries of "
         "--expectations (a fail entry none of whose cases in this run's selection failed, a "
         "skip entry that skipped none); not with --shard", {"action": "store_true"}),
    Flag("memory-limit", "address-space cap of each backend process in GB (default: half the "
         "machine's memory; 0: no cap)", {"type": gigabytes, "metavar": "GB"}),
)


class RefusedValue:
    """A value its option refused, kept in place of the parsed value (`add_flags` with
    ``deferred``) so that the caller says so in its own way, with its own exit code."""

    def __init__(self, message: str) -> None:
        self.message = message


def _deferred(option: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """`settings` with the value's check (type and choices) deferred: a refused value parses
    as a `RefusedValue`."""
    found = dict(settings)
    parse: Callable[[str], Any] | None = found.pop("type", None)
    choices: Sequence[str] | None = found.pop("choices", None)
    if parse is None and choices is None:
        return found
    if choices is not None:
        found.setdefault("metavar", "{" + ",".join(choices) + "}")
    listed = found.get("action") == "extend"

    def parse_later(text: str) -> Any:
        try:
            if choices is not None and text not in choices:
                raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(choices)}")
            return parse(text) if parse is not None else text
        except (argparse.ArgumentTypeError, ValueError) as exc:
            refused = RefusedValue(f"{option} {text}: {exc}")
            return [refused] if listed else refused
    parse_later.__name__ = getattr(parse, "__name__", "value")
    return {**found, "type": parse_later}


def add_flags(add: Callable[..., Any], prefix: str = "", *, deferred: bool = False) -> None:
    """Declare `FLAGS` through `add` (argparse's ``add_argument`` or pytest's ``addoption``),
    each as ``--<prefix><name>``; with `deferred`, a bad value is not an error of the parser
    but parses as a `RefusedValue` (`refused_value` finds it)."""
    for flag in FLAGS:
        option = f"--{prefix}{flag.name}"
        add(option, dest=f"{prefix.replace('-', '_')}{flag.dest}", help=flag.help,
            **(_deferred(option, flag.settings) if deferred else flag.settings))


def refused_value(get: Callable[[str], Any]) -> str | None:
    """What is wrong with the first refused value of the flags (`get(dest)` as for
    `read_options`), or None when every value parsed."""
    for flag in FLAGS:
        value = get(flag.dest)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, RefusedValue):
                return item.message
    return None


@dataclass(frozen=True)
class RunOptions:
    """The options of a run as the suite takes them: `run_settings` (profile, seed, selection
    and shard) is the one object the run's planner, runners and collector are given."""

    backend: str | None
    device: str | None
    run_settings: RunSettings
    expectations: Expectations | None
    strict: bool
    out: Path | None
    memory_limit: int | None
    write_expectations: Path | None = None
    prune_expectations: bool = False

    @property
    def profile(self) -> Profile:
        return self.run_settings.profile

    @property
    def seed(self) -> int:
        return self.run_settings.seed

    @property
    def selection(self) -> Selection:
        return self.run_settings.selection

    @property
    def shard(self) -> Shard | None:
        return self.run_settings.shard


def read_options(get: Callable[[str], Any]) -> RunOptions:
    """`RunOptions` from parsed values; `get(dest)` returns the value of the flag with that
    destination name (without prefix). SelectionError when the selection names nothing,
    ExpectationsError for expectations options that do not go together."""
    selection = Selection(
        patterns=tuple(get("patterns") or ()), families=tuple(get("family") or ()),
        kinds=tuple(dict.fromkeys(get("kinds") or CaseKind)),
        cases=tuple(get("case") or ()), rules=tuple(get("rule") or ()),
        dtypes=tuple(dict.fromkeys(get("dtype") or ())),
        excludes=tuple(dict.fromkeys(get("exclude") or ()))).validate()
    check_write_options(get("expectations"), get("write_expectations"),
                        bool(get("prune_expectations")), get("shard") is not None)
    run_settings = RunSettings(selection, PROFILES[get("profile")], int(get("seed")),
                               get("shard"))
    return RunOptions(backend=get("backend"), device=get("device"), run_settings=run_settings,
                      expectations=get("expectations"),
                      strict=bool(get("strict_expectations")), out=get("out"),
                      memory_limit=get("memory_limit"),
                      write_expectations=get("write_expectations"),
                      prune_expectations=bool(get("prune_expectations")))
