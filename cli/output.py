"""How every command prints: human-readable text, or JSON with ``--json``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["emit"]


def emit(args: argparse.Namespace, text: str, data: Any) -> None:
    """Print `data` as JSON when ``--json`` was given, else the human-readable `text`."""
    if getattr(args, "json", False):
        json.dump(data, sys.stdout, indent=2, sort_keys=False)
        sys.stdout.write("\n")
    elif text:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
