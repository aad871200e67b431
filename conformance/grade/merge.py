"""Joining the results documents of one run split into parts: shards, or pytest-xdist workers.

``fusionspec conform --shard K/N`` judges a stable slice of the cases; `merge_documents` joins
the N documents into the one a single run would have written: the same verdicts in the same
order (every case keeps its plan ``index``), the same totals, per-pattern and per-rule counts,
grammar coverage, failures, limitations, extensions and expectations records. What differs
between two runs anyway (start and end times, wall times per case, the machine) is taken from
the parts: the earliest start, the latest end, the first part's environment.

The parts must come from one run's command: the same backend and device, suite and spec
versions, profile, seed, selection and expectations file; otherwise `ResultsFormatError` says
which field differs. Shards must be the N slices of one N-way split; a missing shard, or a part
that was interrupted or could not run, leaves the merged document ``incomplete`` with the
reason (it is never a PASS). Parts without a shard (pytest-xdist workers) may hold any cases,
but no case twice.

`gather_artifacts` (`fusionspec.conformance.grade.gather`) copies the parts' failure folders
next to the merged document, so its replay commands and the report's drill-downs work from
there; it checks every path the documents name before it copies anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TypeVar

from .document import ExpectationsSummary, PatternCounts, ResultsDocument, RuleCounts
from .emptiness import shows_nothing
from .gather import gather_artifacts
from .results import ResultsFormatError, by_index, canonical_counts

__all__ = ["merge_documents", "gather_artifacts", "SAME_FIELDS"]

#: Fields every part of one run has in common (compared before merging).
SAME_FIELDS = ("schema", "suite_version", "spec_version", "backend", "backend_spec", "seed",
               "profile", "selection", "planned")

_R = TypeVar("_R")


def _summed(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """The counts added up, keys in sorted order (as every tally of a document)."""
    return canonical_counts(_added(counts))


def _summed_tables(tables: Iterable[Mapping[str, Mapping[str, int]]],
                   ) -> dict[str, dict[str, int]]:
    rows: dict[str, list[Mapping[str, int]]] = {}
    for table in tables:
        for name, counts in table.items():
            rows.setdefault(name, []).append(counts)
    return canonical_counts({name: _summed(parts) for name, parts in rows.items()})


def _added(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """The counts added up, keys in the order they first appear (the backend's counters)."""
    total: dict[str, int] = {}
    for part in counts:
        for key, n in part.items():
            total[key] = total.get(key, 0) + n
    return total


def _patterns(documents: Sequence[ResultsDocument]) -> dict[str, PatternCounts]:
    parts: dict[str, list[PatternCounts]] = {}
    for doc in documents:
        for pattern, entry in doc.patterns.items():
            parts.setdefault(pattern, []).append(entry)
    return {pattern: PatternCounts(
        counts=_summed(e.counts for e in entries),
        by_kind=_summed_tables(e.by_kind for e in entries),
        by_dtype=_summed_tables(e.by_dtype for e in entries),
        rules=_summed_tables(e.rules for e in entries),
        coverage=_summed_tables(e.coverage for e in entries))
        for pattern, entries in sorted(parts.items())}


def _rules(documents: Sequence[ResultsDocument]) -> dict[str, RuleCounts]:
    parts: dict[str, list[RuleCounts]] = {}
    for doc in documents:
        for rule, entry in doc.rules.items():
            parts.setdefault(rule, []).append(entry)
    return {rule: RuleCounts(statement=entries[0].statement,
                             counts=_summed(e.counts for e in entries),
                             patterns=_summed(e.patterns for e in entries))
            for rule, entries in sorted(parts.items())}


def _check_alike(documents: Sequence[ResultsDocument], sources: Sequence[str]) -> None:
    first, first_source = documents[0], sources[0]
    for doc, source in zip(documents[1:], sources[1:]):
        for name in SAME_FIELDS:
            if name == "planned" and (doc.shard or first.shard):
                continue  # a shard plans its own draws' cases: the shards' counts add up
            if getattr(doc, name) != getattr(first, name):
                raise ResultsFormatError(
                    f"cannot merge {source} with {first_source}: they differ in {name} "
                    f"({getattr(doc, name)!r} vs {getattr(first, name)!r}); the parts of one "
                    "run share it")
        if doc.device.id != first.device.id:
            raise ResultsFormatError(f"cannot merge {source} with {first_source}: device "
                                     f"{doc.device.id!r} vs {first.device.id!r}")
        if _digest(doc) != _digest(first):
            raise ResultsFormatError(f"cannot merge {source} with {first_source}: they used "
                                     "different expectations files")


def _digest(document: ResultsDocument) -> str | None:
    return document.expectations.sha256 if document.expectations is not None else None


def _shards(documents: Sequence[ResultsDocument], sources: Sequence[str]) -> list[str]:
    """Check the parts' shards; the notes on missing shards (empty when complete)."""
    labels = [doc.shard for doc in documents]
    if not any(labels):
        return []
    if not all(labels):
        raise ResultsFormatError("cannot merge sharded and unsharded documents: "
                                 + ", ".join(f"{s} ({label or 'no shard'})"
                                             for s, label in zip(sources, labels)))
    counts = {str(label).partition("/")[2] for label in labels}
    if len(counts) != 1:
        raise ResultsFormatError("cannot merge shards of different splits: "
                                 + ", ".join(sorted(map(str, labels))))
    total = int(counts.pop())
    seen: dict[str, str] = {}
    for label, source in zip(labels, sources):
        if str(label) in seen:
            raise ResultsFormatError(f"shard {label} is given twice: {seen[str(label)]} and "
                                     f"{source}")
        seen[str(label)] = source
    missing = [f"{k}/{total}" for k in range(1, total + 1) if f"{k}/{total}" not in seen]
    return [f"shard {m} is missing" for m in missing]


def _part_notes(documents: Sequence[ResultsDocument], sources: Sequence[str]) -> list[str]:
    notes = []
    for doc, source in zip(documents, sources):
        label = f"shard {doc.shard}" if doc.shard else source
        if doc.unavailable:
            notes.append(f"{label} could not run: {doc.unavailable}")
        elif doc.incomplete:
            notes.append(f"{label} is incomplete: {doc.incomplete}")
    return notes


def _expectations(documents: Sequence[ResultsDocument]) -> ExpectationsSummary | None:
    first = documents[0].expectations
    if first is None:
        return None
    sections = [doc.expectations for doc in documents if doc.expectations is not None]
    return replace(first, expected_failures=sum(s.expected_failures for s in sections),
                   unexpected_passes=by_index(p for s in sections
                                                   for p in s.unexpected_passes),
                   skipped=by_index(c for s in sections for c in s.skipped))


def merge_documents(documents: Sequence[ResultsDocument], sources: Sequence[str],
                    ) -> ResultsDocument:
    """The results document of the run whose parts are `documents` (`sources` name them in
    messages). See the module docstring."""
    if not documents:
        raise ResultsFormatError("nothing to merge")
    _check_alike(documents, sources)
    notes = _shards(documents, sources) + _part_notes(documents, sources)
    first = documents[0]
    expectations = _expectations(documents)
    verdicts = [v for doc in documents for v in doc.verdicts]
    skipped = expectations.skipped if expectations is not None else []
    indices = [v.index for v in verdicts] + [s.index for s in skipped]
    if any(i is None for i in indices):
        raise ResultsFormatError("cannot merge documents whose verdicts have no plan index "
                                 "(written by an older fusionspec)")
    if len(set(indices)) != len(indices):
        raise ResultsFormatError("the documents overlap: some case is in two of them (the same "
                                 "shard or results file given twice?)")
    planned = first.planned
    if first.shard:
        counts = [doc.planned for doc in documents]
        planned = sum(c for c in counts if c is not None) if None not in counts else None
    problems: dict[str, str] = {}
    for doc in documents:
        problems.update(doc.device_problems)
    unavailable = first.unavailable if all(d.unavailable for d in documents) else None
    incomplete = "; ".join(notes) if notes and unavailable is None else None
    ordered = by_index(verdicts)
    hollow = None if unavailable is not None else shows_nothing(ordered, skipped)
    if hollow is not None:
        # A merged run that shows nothing is incomplete, never a PASS.
        incomplete = "; ".join(filter(None, [incomplete, hollow]))
    return replace(
        first, shard=None, planned=planned,
        started=min(d.started or "" for d in documents),
        finished=max(d.finished or "" for d in documents),
        totals=_summed(d.totals for d in documents), patterns=_patterns(documents),
        rules=_rules(documents), verdicts=ordered,
        failures=by_index(f for d in documents for f in d.failures),
        limitations=by_index(lim for d in documents for lim in d.limitations),
        extensions=by_index(e for d in documents for e in d.extensions),
        device_problems=problems, backend_counters=_added(d.backend_counters
                                                          for d in documents),
        unavailable=unavailable, incomplete=incomplete, expectations=expectations)
