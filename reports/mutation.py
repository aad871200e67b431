"""The mutation score in the report: how many of the project's planted bugs the suite caught
with the status it must give (``nox -s mutation`` writes it as results/mutation.json, from
tests/conformance/test_mutation.py).

The document is untrusted input like a results document: every field is read through
`fusionspec.reports.document.Doc`, which names a wrongly typed field instead of failing later.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .document import Doc, ReportError

__all__ = ["MutationView", "mutation_view"]


@dataclass(frozen=True)
class MutationView:
    """The score and, per planted bug, its class, the status it must get, whether it did,
    and how many findings its run gave (one bug should be one finding; "" where the document
    predates the count)."""

    profile: str
    mutants: int
    caught: int
    rows: tuple[tuple[str, str, str, bool, str], ...]

    @property
    def score(self) -> str:
        share = 100 * self.caught / self.mutants if self.mutants else 0.0
        return f"{self.caught} of {self.mutants} ({share:.0f}%)"


def mutation_view(document: Mapping[str, Any], source: str) -> MutationView:
    """The view of a mutation-score document (see the module docstring)."""
    doc = Doc(document, source)
    rows = tuple((o.text("mutant"), o.text("class"), o.text("expected"),
                  o.raw("caught") is True, _count(o.raw("findings")))
                 for o in doc.objects("outcomes"))
    if not rows:
        raise ReportError(f"{source}: a mutation-score document lists no outcomes")
    return MutationView(doc.text("profile", "ci"), len(rows),
                        sum(1 for r in rows if r[3]), rows)


def _count(value: object) -> str:
    """A findings count as text: the number of a list of finding names, or a plain count."""
    if isinstance(value, list):
        return str(len(value))
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else ""
