"""The report's HTML: one self-contained file rendered with Jinja2 from the view model.

The templates live in ``templates/*.j2`` next to this module (shipped as package data). The
environment escapes every value (``autoescape=True``); the only values marked safe are the SVG
drawings of `fusionspec.reports.svg`, which escape their own text. CSS and the small optional
script are inlined, and nothing is loaded from the network, so the file can be mailed, archived
or opened offline.

Jinja2 is the ``report`` extra; without it `render` raises `ReportError` saying how to install
it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fusionspec.spec.files import atomic_write_text
from fusionspec.spec.text import fit_text

from .document import ReportError
from .model import Report

__all__ = ["environment", "render", "write"]


def environment() -> Any:
    """The Jinja2 environment of the report's templates (autoescaping, strict undefined)."""
    try:
        import jinja2
    except ModuleNotFoundError:
        raise ReportError("the HTML report needs Jinja2: pip install 'fusionspec[report]'") \
            from None
    return jinja2.Environment(
        loader=jinja2.PackageLoader("fusionspec.reports", "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
        lstrip_blocks=True, keep_trailing_newline=True)


def render(report: Report) -> str:
    """The report as one HTML document."""
    env = environment()
    import jinja2

    try:
        template = env.get_template("report.html.j2")
    except jinja2.TemplateNotFound as exc:
        raise ReportError(f"the report template {exc.name} is missing from the installed "
                          "package (reinstall fusionspec)") from None
    from .diff import MAX_LISTED

    html: str = template.render(report=report, max_listed=MAX_LISTED)
    # The data comes cleaned from the documents; this keeps the write safe whatever a caller
    # put in the report (a lone surrogate would stop it).
    return fit_text(html)


def write(report: Report, path: str | Path) -> Path:
    """Render `report` into `path` (folders created as needed) and return the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, render(report))
    return target
