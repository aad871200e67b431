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

from collections.abc import Mapping, Sequence
from typing import Any

from .document import ResultsDocument
from .emptiness import shows_nothing
from .gather import gather_artifacts
from .results import ResultsFormatError, by_index, canonical_counts

__all__ = ["merge_documents", "gather_artifacts", "SAME_FIELDS"]

#: Fields every part of one run has in common (compared before merging).
SAME_FIELDS = ("schema", "suite_version", "spec_version", "backend", "backend_spec", "seed",
               "profile", "selection", "planned")

_CASE_LISTS = ("verdicts", "failures", "limitations", "extensions")


def _sum_counts(into: dict[str, Any], more: Mapping[str, Any]) -> None:
    """Add nested ``name -> count`` objects of `more` into `into`."""
    for key, value in more.items():
        if isinstance(value, Mapping):
            _sum_counts(into.setdefault(key, {}), value)
        elif isinstance(value, int) and not isinstance(value, bool):
            into[key] = into.get(key, 0) + value


def _check_alike(documents: Sequence[Mapping[str, Any]], sources: Sequence[str]) -> None:
    first, first_source = documents[0], sources[0]
    for doc, source in zip(documents[1:], sources[1:]):
        for name in SAME_FIELDS:
            if name == "planned" and (doc.get("shard") or first.get("shard")):
                continue  # a shard plans its own draws' cases: the shards' counts add up
            if doc.get(name) != first.get(name):
                raise ResultsFormatError(
                    f"cannot merge {source} with {first_source}: they differ in {name} "
                    f"({doc.get(name)!r} vs {first.get(name)!r}); the parts of one run share it")
        device, first_device = doc.get("device") or {}, first.get("device") or {}
        if device.get("id") != first_device.get("id"):
            raise ResultsFormatError(f"cannot merge {source} with {first_source}: device "
                                     f"{device.get('id')!r} vs {first_device.get('id')!r}")
        theirs = (doc.get("expectations") or {}).get("sha256")
        ours = (first.get("expectations") or {}).get("sha256")
        if theirs != ours:
            raise ResultsFormatError(f"cannot merge {source} with {first_source}: they used "
                                     "different expectations files")


def _shards(documents: Sequence[Mapping[str, Any]], sources: Sequence[str]) -> list[str]:
    """Check the parts' shards; the notes on missing shards (empty when complete)."""
    labels = [doc.get("shard") for doc in documents]
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


def merge_documents(documents: Sequence[Mapping[str, Any]], sources: Sequence[str],
                    ) -> dict[str, Any]:
    """The results document of the run whose parts are `documents` (read with `load_results`;
    `sources` name them in messages). See the module docstring."""
    if not documents:
        raise ResultsFormatError("nothing to merge")
    _check_alike(documents, sources)
    notes = _shards(documents, sources)
    first = documents[0]
    merged: dict[str, Any] = {key: first[key] for key in first}
    merged["shard"] = None
    if first.get("shard"):
        counts = [doc.get("planned") for doc in documents]
        merged["planned"] = sum(counts) if all(isinstance(c, int) for c in counts) else None
    merged["started"] = min(str(d.get("started") or "") for d in documents)
    merged["finished"] = max(str(d.get("finished") or "") for d in documents)
    totals: dict[str, Any] = {}
    patterns: dict[str, Any] = {}
    rules: dict[str, Any] = {}
    problems: dict[str, Any] = {}
    counters: dict[str, Any] = {}
    lists: dict[str, list[Any]] = {name: [] for name in _CASE_LISTS}
    expected = 0
    passes: list[Any] = []
    skipped: list[Any] = []
    for doc, source in zip(documents, sources):
        _sum_counts(totals, doc.get("totals") or {})
        for pattern, entry in (doc.get("patterns") or {}).items():
            _sum_counts(patterns.setdefault(pattern, {}), entry)
        for rule, entry in (doc.get("rules") or {}).items():
            into = rules.setdefault(rule, {"statement": entry.get("statement", ""),
                                           "counts": {}, "patterns": {}})
            _sum_counts(into["counts"], entry.get("counts") or {})
            _sum_counts(into["patterns"], entry.get("patterns") or {})
        for name in _CASE_LISTS:
            lists[name] += list(doc.get(name) or [])
        problems.update(doc.get("device_problems") or {})
        _sum_counts(counters, doc.get("backend_counters") or {})
        section = doc.get("expectations") or {}
        expected += int(section.get("expected_failures", 0) or 0)
        passes += list(section.get("unexpected_passes") or [])
        skipped += list(section.get("skipped") or [])
        label = f"shard {doc['shard']}" if doc.get("shard") else source
        if doc.get("unavailable"):
            notes.append(f"{label} could not run: {doc['unavailable']}")
        elif doc.get("incomplete"):
            notes.append(f"{label} is incomplete: {doc['incomplete']}")
    indices = [v.get("index") for v in lists["verdicts"]] + [s.get("index") for s in skipped]
    if any(i is None for i in indices):
        raise ResultsFormatError("cannot merge documents whose verdicts have no plan index "
                                 "(written by an older fusionspec)")
    if len(set(indices)) != len(indices):
        raise ResultsFormatError("the documents overlap: some case is in two of them (the same "
                                 "shard or results file given twice?)")
    merged["totals"] = canonical_counts(totals)
    merged["patterns"] = {p: canonical_counts(patterns[p]) for p in sorted(patterns)}
    merged["rules"] = {r: {"statement": rules[r]["statement"],
                           "counts": canonical_counts(rules[r]["counts"]),
                           "patterns": canonical_counts(rules[r]["patterns"])}
                       for r in sorted(rules)}
    for name in _CASE_LISTS:
        merged[name] = by_index(lists[name])
    merged["device_problems"] = problems
    merged["backend_counters"] = counters
    if "expectations" in first:
        merged["expectations"] = {**first["expectations"], "expected_failures": expected,
                                  "unexpected_passes": by_index(passes),
                                  "skipped": by_index(skipped)}
    merged.pop("unavailable", None)
    merged.pop("incomplete", None)
    if all(doc.get("unavailable") for doc in documents):
        merged["unavailable"] = first["unavailable"]
    elif notes:
        merged["incomplete"] = "; ".join(notes)
    _mark_empty(merged, skipped)
    # Through the typed model, as every document written: a merge writes what readers read.
    return ResultsDocument.from_json(merged, "the merged document").to_json()


def _mark_empty(merged: dict[str, Any], skipped: list[Any]) -> None:
    """A merged run that shows nothing (`shows_nothing`) is incomplete, never a PASS."""
    why = shows_nothing(merged["verdicts"], skipped)
    if why is not None and not merged.get("unavailable"):
        merged["incomplete"] = "; ".join(filter(None, [merged.get("incomplete"), why]))
