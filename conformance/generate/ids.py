"""Case ids and hypothesis events: what every case generator stamps on the cases it draws.

A case id is ``<pattern>/<kind>[/<rule>]/<hash>``, the hash being the first 8 hex digits of the
SHA-256 of the graph's compact oneDNN JSON (followed, for a case whose inputs leave the default
grid, by its value domains), so the same graph with the same values always gets the same id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import replace

from hypothesis import event
from hypothesis.control import currently_in_test_context

from fusionspec.spec.graph import Graph
from fusionspec.spec.onednn_json import dumps

from ..cases import Case, CaseKind
from .coverage import case_items

__all__ = ["case_id", "report_events", "unique_cases"]


def case_id(pattern: str, kind: CaseKind, graph: Graph, rule: str | None = None,
            values: Mapping[int, str] | None = None) -> str:
    """``<pattern>/<kind>[/<rule>]/<8 hex digits of the graph JSON's SHA-256>`` (the value
    domains, when any, hashed after the graph)."""
    text = dumps(graph, indent=None)
    if values:
        text += "|" + ",".join(f"{k}={values[k]}" for k in sorted(values))
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    middle = f"{kind.value}/{rule}" if rule else kind.value
    return f"{pattern}/{middle}/{digest}"


def report_events(pattern: str, kind: CaseKind, features: Mapping[str, str | int],
                  rule: str | None = None) -> None:
    """Report a drawn case's features to hypothesis' statistics (only inside a test)."""
    if not currently_in_test_context():
        return
    event(f"{pattern} {kind.value}" + (f" [{rule}]" if rule else ""))
    for key, value in case_items(features):
        event(f"{pattern}: {key} = {value}")


def unique_cases(cases: Iterable[Case]) -> list[Case]:
    """`cases` with each id once, where it first appears. A later case with the same id is the
    same graph with the same values reached by another route: it is dropped, and the features
    it records join the first one's, so that what either route reached still counts towards
    coverage."""
    kept: dict[str, Case] = {}
    for case in cases:
        first = kept.get(case.id)
        kept[case.id] = case if first is None else \
            replace(first, features=_joined(first.features, case.features))
    return list(kept.values())


def _joined(ours: Mapping[str, str | int], theirs: Mapping[str, str | int],
            ) -> dict[str, str | int]:
    """Both cases' features; a feature they record differently takes both values, comma-joined
    as the features of a case that exercised several values are."""
    found = dict(ours)
    for key, value in theirs.items():
        if key not in found:
            found[key] = value
        elif found[key] != value:
            parts = {part for v in (found[key], value) for part in str(v).split(",") if part}
            found[key] = ",".join(sorted(parts))
    return found
