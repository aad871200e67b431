"""The suite's two independent catch rates, read for the report: the sampled mutation score
(``nox -s mutation-sample`` writes results/mutation_sample.json) and the real-bug score
(``nox -s real-bugs`` writes results/real_bugs.json). docs/mutation.md says what each measures.

Both documents are untrusted input: `load_sampled` and `load_real_bugs` check every field they
use (types, ranges, and that the totals agree with their parts) and refuse anything else with a
`CatchRateError` naming the file and the field. Every text is cleaned (`clean_text`: no control
characters or escapes, no lone surrogates, a bounded length) before the page escapes it.
`catch_rates` turns a missing document into "not measured" with the command that measures it,
and an unreadable one into a "cannot read" line, so a bad score file never stops the report.

>>> rates = catch_rates(None, None)
>>> rates.notes()[0]
'sampled mutation score: not measured; run `nox -s mutation-sample`'

"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from fusionspec.spec.text import clean_json, clean_text

from .document import ReportError

__all__ = ["CatchRateError", "AreaScore", "SampledScore", "ClassScore", "MissedBug",
           "RealBugScore", "CatchRates", "load_sampled", "load_real_bugs", "catch_rates",
           "SAMPLED_FILE", "REAL_BUGS_FILE", "SAMPLED_COMMAND", "REAL_BUGS_COMMAND", "share"]

#: Where the nox sessions write the documents (under the checkout's results/ folder).
SAMPLED_FILE = "mutation_sample.json"
REAL_BUGS_FILE = "real_bugs.json"
#: The commands that measure each score.
SAMPLED_COMMAND = "nox -s mutation-sample"
REAL_BUGS_COMMAND = "nox -s real-bugs"
#: The survivor verdicts of the triage, in the order the report lists them.
VERDICTS = ("equivalent", "missed", "untriaged")
#: A score document larger than this is refused unread (a real one is well under a megabyte).
MAX_BYTES = 32 * 1024 * 1024
#: The longest text kept from a document's field.
TEXT_LIMIT = 500


_Score = TypeVar("_Score")


class CatchRateError(ReportError):
    """A catch-rate document that cannot be read or does not hold what its writer writes."""


def share(part: int, whole: int) -> str:
    """`part` of `whole` as a percentage with one decimal, or "n/a" when `whole` is 0."""
    return f"{100 * part / whole:.1f}%" if whole > 0 else "n/a"


@dataclass(frozen=True)
class AreaScore:
    """One area of the reference (op functions, executor, ...) in the sampled score."""

    name: str
    killed: int
    survived: int
    equivalent: int
    missed: int
    not_judged: int
    low: float
    high: float

    @property
    def tested(self) -> int:
        return self.killed + self.survived

    @property
    def of(self) -> int:
        """The mutants that can be caught: killed plus the survivors not equivalent."""
        return self.killed + self.missed

    @property
    def score(self) -> str:
        return share(self.killed, self.of)

    @property
    def interval(self) -> str:
        return f"[{self.low:.1%}, {self.high:.1%}]"


@dataclass(frozen=True)
class SampledScore:
    """The sampled mutation score: per area, in all, and the survivors by triage verdict."""

    source: str
    areas: tuple[AreaScore, ...]
    total: AreaScore
    survivors: tuple[tuple[str, int], ...]
    seed: str
    size: str


@dataclass(frozen=True)
class ClassScore:
    """The real bugs of one class: how many the suite caught."""

    name: str
    caught: int
    total: int

    @property
    def score(self) -> str:
        return share(self.caught, self.total)


@dataclass(frozen=True)
class MissedBug:
    """A real bug the suite does not catch, with the corner no case reaches."""

    bug: str
    bug_class: str
    expected: str
    fixed_in: str
    corner: str


@dataclass(frozen=True)
class RealBugScore:
    """The real-bug score: applicable bugs caught, per class, and the misses."""

    source: str
    profile: str
    bugs: int
    caught: int
    not_applicable: int
    classes: tuple[ClassScore, ...]
    misses: tuple[MissedBug, ...]

    @property
    def score(self) -> str:
        return share(self.caught, self.bugs)


@dataclass(frozen=True)
class CatchRates:
    """What the report shows of both scores: each one read, or, in its ``*_problem``, why
    its document cannot be read (empty when there is none: the score was not measured)."""

    sampled: SampledScore | None
    sampled_problem: str
    real_bugs: RealBugScore | None
    real_bugs_problem: str
    sampled_command: str = SAMPLED_COMMAND
    real_bugs_command: str = REAL_BUGS_COMMAND

    def notes(self) -> tuple[str, ...]:
        """One line per score not shown, saying why and how to measure it."""
        lines = []
        for name, score, problem, command in (
                ("sampled mutation score", self.sampled, self.sampled_problem,
                 self.sampled_command),
                ("real-bug score", self.real_bugs, self.real_bugs_problem,
                 self.real_bugs_command)):
            if score is None:
                why = f"cannot read {problem}" if problem else "not measured"
                lines.append(f"{name}: {why}; run `{command}`")
        return tuple(lines)


class _Fields:
    """Typed access to one JSON object of a document, naming the field in every refusal."""

    def __init__(self, data: object, source: str, where: str) -> None:
        if not isinstance(data, Mapping):
            raise CatchRateError(f"{source}: {where or 'the document'} is not a JSON object")
        self.data, self.source, self.where = data, source, where

    def fail(self, key: str, message: str) -> CatchRateError:
        at = f"{self.where}.{key}" if self.where else key
        return CatchRateError(f"{self.source}: {at} {message}")

    def count(self, key: str) -> int:
        value = self.data.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(key, f"must be a whole number >= 0, not {_shown(value)}")
        return value

    def fraction(self, key: str, value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value) or not 0 <= value <= 1:
            raise self.fail(key, f"must hold numbers from 0 to 1, not {_shown(value)}")
        return float(value)

    def text(self, key: str, *, required: bool = True) -> str:
        value = self.data.get(key)
        if value is None and not required:
            return ""
        if not isinstance(value, str | int) or isinstance(value, bool) or value == "":
            raise self.fail(key, f"must be a non-empty text, not {_shown(value)}")
        return clean_text(value, TEXT_LIMIT)

    def obj(self, key: str) -> _Fields:
        at = f"{self.where}.{key}" if self.where else key
        return _Fields(self.data.get(key), self.source, at)

    def objects(self, key: str) -> list[_Fields]:
        value = self.data.get(key)
        if not isinstance(value, list):
            raise self.fail(key, f"must be a list, not {_shown(value)}")
        at = f"{self.where}.{key}" if self.where else key
        return [_Fields(item, self.source, f"{at}[{i}]") for i, item in enumerate(value)]

    def interval(self, key: str) -> tuple[float, float]:
        value = self.data.get(key)
        if not isinstance(value, list) or len(value) != 2:
            raise self.fail(key, f"must be a list [low, high], not {_shown(value)}")
        low, high = (self.fraction(key, v) for v in value)
        if low > high:
            raise self.fail(key, f"has its low end {low} above its high end {high}")
        return low, high

    def score_agrees(self, key: str, part: int, whole: int) -> None:
        """The stored score (null with nothing to score) is `part` / `whole`."""
        value = self.data.get(key)
        if whole == 0 and value is None:
            return
        if whole == 0 or abs(self.fraction(key, value) - part / whole) > 1e-6:
            raise self.fail(key, f"is {_shown(value)}, but the counts give {part} of {whole}")


def _shown(value: object) -> str:
    return clean_text(json.dumps(value) if value is None or isinstance(value, bool | int | float)
                      else repr(value), 60)


def _read(path: Path) -> Any:
    """The JSON data of `path`, its strings made writable, or a `CatchRateError`."""
    shown = clean_text(str(path), TEXT_LIMIT)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise CatchRateError(f"{shown}: larger than {MAX_BYTES // 2 ** 20} MiB; not a "
                                 "score document")
        return clean_json(json.loads(path.read_text(encoding="utf-8")))
    except CatchRateError:
        raise
    except (OSError, ValueError, RecursionError) as exc:
        why = clean_text(f"{type(exc).__name__}: {exc}", TEXT_LIMIT)
        raise CatchRateError(f"{shown}: not a readable JSON document: {why}") from None


def load_sampled(path: str | Path) -> SampledScore:
    """The sampled mutation score of `path` (tools/mutation/score.py's document)."""
    doc = _Fields(_read(Path(path)), clean_text(str(path), TEXT_LIMIT), "")
    areas_obj = doc.obj("areas")
    areas = []
    for name in areas_obj.data:
        a = areas_obj.obj(str(name))
        area = AreaScore(clean_text(name, TEXT_LIMIT), a.count("killed"), a.count("survived"),
                         a.count("equivalent"), a.count("missed"),
                         a.count("errors") + a.count("incompetent"), *a.interval("interval"))
        if area.equivalent + area.missed != area.survived:
            raise a.fail("survived", f"is {area.survived}, but equivalent + missed is "
                         f"{area.equivalent + area.missed}")
        a.score_agrees("score", area.killed, area.of)
        areas.append(area)
    if not areas:
        raise doc.fail("areas", "lists no area")
    total = AreaScore("all", sum(a.killed for a in areas), sum(a.survived for a in areas),
                      sum(a.equivalent for a in areas), sum(a.missed for a in areas),
                      sum(a.not_judged for a in areas), *doc.interval("interval"))
    for key, expected in (("tested", total.tested), ("killed", total.killed),
                          ("non_equivalent", total.of)):
        if doc.count(key) != expected:
            raise doc.fail(key, f"is {doc.count(key)}, but the areas add up to {expected}")
    doc.score_agrees("score", total.killed, total.of)
    verdicts = Counter(s.text("verdict") for s in doc.objects("survivors"))
    if sum(verdicts.values()) != total.survived:
        raise doc.fail("survivors", f"lists {sum(verdicts.values())} survivors, but the areas "
                       f"count {total.survived}")
    if verdicts["equivalent"] != total.equivalent:
        raise doc.fail("survivors", f"has {verdicts['equivalent']} triaged equivalent, but the "
                       f"areas count {total.equivalent}")
    ordered = list(VERDICTS) + sorted(set(verdicts) - set(VERDICTS))
    return SampledScore(doc.source, tuple(areas), total,
                        tuple((v, verdicts[v]) for v in ordered),
                        doc.text("seed", required=False), doc.text("size", required=False))


def load_real_bugs(path: str | Path) -> RealBugScore:
    """The real-bug score of `path` (the document tests/conformance/test_real_bugs.py writes)."""
    doc = _Fields(_read(Path(path)), clean_text(str(path), TEXT_LIMIT), "")
    outcomes = doc.objects("outcomes")
    bugs, caught = doc.count("bugs"), doc.count("caught")
    if bugs != len(outcomes) or not bugs:
        raise doc.fail("bugs", f"is {bugs}, but the document lists {len(outcomes)} outcomes")
    misses = []
    per_class: Counter[str] = Counter()
    for outcome in outcomes:
        hit = outcome.data.get("caught")
        if not isinstance(hit, bool):
            raise outcome.fail("caught", f"must be true or false, not {_shown(hit)}")
        bug_class = outcome.text("class")
        per_class[bug_class] += 1
        if not hit:
            misses.append(MissedBug(outcome.text("bug"), bug_class, outcome.text("expected"),
                                    outcome.text("fixed_in", required=False),
                                    outcome.text("corner", required=False)))
    if caught != bugs - len(misses):
        raise doc.fail("caught", f"is {caught}, but {bugs - len(misses)} outcomes are caught")
    doc.score_agrees("score", caught, bugs)
    table = doc.obj("per_class")
    classes = []
    for name in table.data:
        entry = table.obj(str(name))
        row = ClassScore(clean_text(name, TEXT_LIMIT), entry.count("caught"), entry.count("total"))
        if row.caught > row.total or per_class.get(row.name) != row.total:
            raise entry.fail("total", f"does not match the outcomes of class {row.name!r}")
        classes.append(row)
    if sum(c.total for c in classes) != bugs or sum(c.caught for c in classes) != caught:
        raise doc.fail("per_class", f"does not add up to {caught} of {bugs}")
    return RealBugScore(doc.source, doc.text("profile", required=False) or "ci", bugs, caught,
                        doc.count("not_applicable"), tuple(classes), tuple(misses))


def catch_rates(sampled: Path | None, real_bugs: Path | None) -> CatchRates:
    """Both scores for the report; a path of None or of no file is "not measured", a file that
    cannot be read is named with the reason (the report is still written)."""
    score, sampled_problem = _attempt(load_sampled, sampled)
    real, real_problem = _attempt(load_real_bugs, real_bugs)
    return CatchRates(score, sampled_problem, real, real_problem)


def _attempt(load: Callable[[Path], _Score], path: Path | None) -> tuple[_Score | None, str]:
    """The score of `path`, or None and why it cannot be read ("" when there is no file)."""
    if path is None or not path.exists():
        return None, ""
    try:
        return load(path), ""
    except CatchRateError as exc:
        return None, clean_text(str(exc), 2 * TEXT_LIMIT)
