"""How every command prints (human-readable text, or JSON with ``--json``), and the checks
every command makes of the paths it is given."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fusionspec.spec.errors import FusionspecError

__all__ = ["emit", "UsageError", "check_paths", "unknown_backend"]


def emit(args: argparse.Namespace, text: str, data: Any) -> None:
    """Print `data` as JSON when ``--json`` was given, else the human-readable `text`."""
    if getattr(args, "json", False):
        json.dump(data, sys.stdout, indent=2, sort_keys=False)
        sys.stdout.write("\n")
    elif text:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


class UsageError(FusionspecError):
    """A command line that cannot be right (exit 2, as argparse's own errors)."""


def check_paths(inputs: Mapping[str, str | Path | None],
                outputs: Mapping[str, str | Path | None]) -> None:
    """Refuse an output that is also an input, or two outputs on one path (``run g.json --out
    g.json`` would replace its own input), with a `UsageError` naming the options."""
    def key(value: str | Path) -> str:
        return os.path.realpath(os.fspath(value))

    seen = {key(v): name for name, v in inputs.items() if v is not None}
    for name, value in outputs.items():
        if value is None:
            continue
        other = seen.get(key(value))
        if other is not None:
            what = "an input" if other in inputs else "another output"
            raise UsageError(f"{name} {value} is also {what} ({other}); give it another path")
        seen[key(value)] = name


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
