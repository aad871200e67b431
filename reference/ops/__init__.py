"""Reference op implementations, one small function per op kind, grouped by op family.

Every module of this package is imported here so that its ``@register`` functions land in
`fusionspec.reference.registry.REGISTRY`.
"""

from __future__ import annotations

import importlib
import pkgutil

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    importlib.import_module(f"{__name__}.{_info.name}")
