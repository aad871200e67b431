"""The op registry: every kind the pages name has exactly one reference implementation, named
after it, and nothing else is registered."""

from __future__ import annotations

import inspect

from fusionspec.reference.registry import implementation, implemented_kinds
from fusionspec.spec.opschemas import SCHEMAS


def test_every_schema_kind_has_an_implementation_and_nothing_more() -> None:
    kinds = implemented_kinds()
    missing = sorted(set(SCHEMAS) - kinds)
    extra = sorted(kinds - set(SCHEMAS))
    assert not missing, f"op kinds of the pages without a reference implementation: {missing}"
    assert not extra, f"implementations for kinds the pages do not name: {extra}"


def test_attributes_are_keyword_arguments_with_schema_names() -> None:
    for kind, schema in SCHEMAS.items():
        impl = implementation(kind)
        assert impl is not None and impl.fn.__name__ == kind, f"{kind}: function name differs"
        params = inspect.signature(impl.fn).parameters
        keywords = {n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
        unknown = keywords - {a.name for a in schema.attrs} - {"dst_dtype"}
        assert not unknown, f"{kind}: keyword arguments {sorted(unknown)} are not attributes " \
                            "of its schema"


def test_schema_defaults_live_in_the_schema_only() -> None:
    """The executor fills every schema default in; a default repeated in a signature could
    drift from the schema's, so none is."""
    for kind, schema in SCHEMAS.items():
        impl = implementation(kind)
        assert impl is not None
        defaults = {a.name for a in schema.attrs if a.default is not None}
        params = inspect.signature(impl.fn).parameters
        repeated = sorted(n for n, p in params.items()
                          if n in defaults and p.default is not inspect.Parameter.empty)
        assert not repeated, f"{kind}: {repeated} repeat the schema's defaults in the signature"
