"""The program preamble: what goes above the kernels of one OpenCL program.

Generators ask a `Preamble` for what their code uses (helper functions from
`fusionspec.accel.codegen.types.HELPERS`, the data types whose storage needs a pragma) and
render it once at the top of the program, so two kernels of a program share helpers without
duplicate definitions. Nothing partition-specific goes here: per-channel values are kernel
arguments (`fusionspec.accel.codegen.args`). `render` fills a family's
Jinja2 kernel template from ``accel/templates``.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path

import jinja2

from fusionspec.spec.dtypes import DataType

from .types import HELPERS, TypePolicy, helper_closure

__all__ = ["Preamble", "render", "TEMPLATES"]

#: The folder of the kernel templates (one per family).
TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


class Preamble:
    """Collects helper functions and pragmas for one program."""

    def __init__(self, policy: TypePolicy) -> None:
        self.policy = policy
        self._helpers: set[str] = set()
        self._dtypes: set[DataType] = set()
        self._extra: list[str] = []

    def need(self, helpers: Iterable[str]) -> None:
        """Require helper functions by name (unknown names are a generator bug: KeyError)."""
        for name in helpers:
            HELPERS[name]
            self._helpers.add(name)

    def uses(self, dtype: DataType) -> None:
        """Record that a buffer of `dtype` appears (f16 may need the cl_khr_fp16 pragma)."""
        self._dtypes.add(dtype)

    def add(self, text: str) -> None:
        """Program-scope code of a family (its own helpers); emitted after the shared ones."""
        if text not in self._extra:
            self._extra.append(text)

    def render(self) -> str:
        parts = list(self.policy.pragmas(self._dtypes))
        parts.extend(HELPERS[name] for name in helper_closure(self._helpers))
        parts.extend(self._extra)
        return "\n\n".join(parts) + ("\n" if parts else "")


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)


def render(template: str, **values: object) -> str:
    """Render ``accel/templates/<template>`` (Jinja2, strict about undefined names)."""
    return _environment().get_template(template).render(**values)
