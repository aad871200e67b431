"""Writing a benchmark's results document (shared by the bench scripts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_json(path: str | Path, document: dict[str, Any]) -> None:
    """Write `document` to `path` (creating its folder) and say where."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=2), encoding="utf-8")
    print(f"wrote {target}")
