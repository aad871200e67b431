"""Build the shadow reference: a copy of fusionspec's reference, importable as its own package.

Mutation testing runs a mutated reference as a *backend under test* while the suite's oracle stays
the real, unmutated `fusionspec.reference`. Both must live in one interpreter (the runner imports
the oracle; the backend's worker imports the shadow), so the copy gets its own top-level name,
``fusionspec_shadow``. Its modules import each other relatively, so copying the folder is enough;
the one spec module it mutates beside the reference, the validator (`fusionspec.spec.validate`),
is copied in as ``fusionspec_shadow/validate.py`` and the copy's imports point at it. Graphs are
finalized by `fusionspec.spec.graph`, which binds the validator's `finalize_ops` at import; the
shadow rebinds that name in its worker process, so a mutated validator is the one the shadow
backend's partitioner sees. The runner's process (the oracle's) never imports the shadow.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "fusionspec_shadow"

#: What the shadow adds to its ``__init__``: the validator the shadow partitioner uses.
_REBIND = '''

# Mutation testing: graphs finalized in this (the backend's) process go through the shadow's
# validator, so a mutant of the validator is what this backend checks graphs with.
import fusionspec.spec.graph as _graph  # noqa: E402

from . import validate as _validate  # noqa: E402

_graph.finalize_ops = _validate.finalize_ops
'''


def _validator_source() -> str:
    """spec/validate.py with its relative imports made absolute (it moves out of spec/)."""
    text = (REPO / "spec" / "validate.py").read_text()
    return re.sub(r"^from \.(\w+) import", r"from fusionspec.spec.\1 import", text, flags=re.M)


def build(dest: Path) -> Path:
    """Write the shadow package under `dest` (replacing an older one); return its folder."""
    package = dest / PACKAGE
    if package.exists():
        shutil.rmtree(package)
    shutil.copytree(REPO / "reference", package,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "py.typed"))
    (package / "validate.py").write_text(_validator_source())
    for path in package.rglob("*.py"):
        text = path.read_text()
        swapped = text.replace("from fusionspec.spec.validate import",
                               f"from {PACKAGE}.validate import")
        if swapped != text:
            path.write_text(swapped)
    init = package / "__init__.py"
    init.write_text(init.read_text() + _REBIND)
    return package


if __name__ == "__main__":
    print(build(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "build" / "mutation"))
