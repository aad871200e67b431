"""How every command prints (human-readable text, or JSON with ``--json``), and the checks
every command makes of the paths it is given.

What a command prints may hold text from its inputs (a graph's op kinds, a document's
fields, a backend's words): `emit` passes the text through `clean_text` (no escape sequence,
control character or bidirectional override reaches the terminal, and a lone surrogate cannot
stop the write) and the JSON through `clean_json`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fusionspec.conformance.outputs import OutputClashError, conform_outputs, same_file
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.text import clean_json, clean_text

__all__ = ["emit", "say", "UsageError", "check_paths", "check_conform_outputs",
           "unknown_backend"]


def emit(args: argparse.Namespace, text: str, data: Any) -> None:
    """Print `data` as JSON when ``--json`` was given, else the human-readable `text` (both
    cleaned: see the module docstring)."""
    if getattr(args, "json", False):
        # A copy is cleaned: `data` may be the caller's own document.
        json.dump(clean_json(json.loads(json.dumps(data, default=str))), sys.stdout,
                  indent=2, sort_keys=False)
        sys.stdout.write("\n")
    elif text:
        sys.stdout.write(say(text) + "\n")


def say(text: object) -> str:
    """`text` as a terminal may be shown it: cleaned (`clean_text`, not clipped), without a
    trailing newline."""
    return clean_text(text, None).removesuffix("\n")


class UsageError(FusionspecError):
    """A command line that cannot be right (exit 2, as argparse's own errors)."""


def check_paths(inputs: Mapping[str, str | Path | None],
                outputs: Mapping[str, str | Path | None]) -> None:
    """Refuse an output that is also an input, or two outputs on one path (``run g.json --out
    g.json`` would replace its own input), with a `UsageError` naming the options."""
    seen = [(name, v) for name, v in inputs.items() if v is not None]
    for name, value in outputs.items():
        if value is None:
            continue
        other = next((n for n, v in seen if same_file(value, v)), None)
        if other is not None:
            what = "an input" if other in inputs else "another output"
            raise UsageError(f"{name} {value} is also {what} ({other}); give it another path")
        seen.append((name, value))


def check_conform_outputs(out_dir: str | Path | None, junit: str | Path | None,
                          write_expectations: str | Path | None,
                          expectations: object = None) -> None:
    """`fusionspec.conformance.outputs.conform_outputs` as a `UsageError` (exit 2);
    `expectations` the loaded ``--expectations`` file (its ``source``) or its path."""
    source = getattr(expectations, "source", expectations)
    try:
        conform_outputs(out_dir=out_dir, junit=junit, write_expectations=write_expectations,
                        expectations=source if isinstance(source, str | Path) else None)
    except OutputClashError as exc:
        raise UsageError(str(exc)) from None


def unknown_backend(spec: str) -> str:
    """Why `spec` names no backend (a usage error: exit 2, like any other bad flag), or "".
    A ``module:attr`` spec is left to loading, which says what went wrong there; a plain name
    must be a registered one, and the nearest registered names are suggested."""
    import difflib

    from fusionspec.backend import available_backends

    if ":" in spec:
        return ""
    known = available_backends()
    if spec in known:
        return ""
    near = difflib.get_close_matches(spec, known, n=3)
    hint = f" (did you mean {' or '.join(near)}?)" if near else ""
    return (f"--backend {spec!r} is no registered backend{hint}; registered: "
            f"{', '.join(known) or 'none'} (or give module:attr)")
