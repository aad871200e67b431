"""``fusionspec --version``: what a run's results depend on, in a few lines.

The suite's version (`fusionspec.spec.release.VERSION`, with the git commit when it runs from a
checkout), the spec pages it encodes
(title, file, SHA-256, and the oneDNN documentation release, which the pages do not state), the
Python that runs it, and the backends registered in this environment, each with the
distribution and version that registers it (listed, not loaded: ``fusionspec conform --list``
loads each one and lists its devices).
"""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Sequence
from typing import Any

from fusionspec.backend.registry import available_backends, backend_distributions
from fusionspec.spec.pages import DOCS_RELEASE, PAGES, SPEC_VERSION
from fusionspec.spec.release import VERSION, source_commit
from fusionspec.spec.text import clean_text

__all__ = ["version_text", "VersionAction"]


def _suite() -> str:
    commit = source_commit()
    return f"{VERSION} (commit {commit})" if commit else VERSION


def version_text() -> str:
    release = DOCS_RELEASE or "not stated by the pages"
    lines = [f"fusionspec {_suite()}",
             f"spec: {SPEC_VERSION}",
             f"  oneDNN Graph API documentation pages; oneDNN release: {release}"]
    lines += [f"  {p.title} ({p.file}, sha256 {p.sha256[:16]}...)" for p in PAGES]
    lines.append(f"python: {platform.python_version()} ({platform.python_implementation()}, "
                 f"{platform.platform()})")
    backends = available_backends()
    lines.append(f"backends: {', '.join(backends) if backends else 'none registered'} "
                 "(registered; `fusionspec conform --list` shows their devices)")
    # A backend's results depend on its own release: each is named with the distribution that
    # registers it (fusionspec's own ones with fusionspec's version).
    origin = backend_distributions()
    lines += [f"  {name}: {clean_text(origin.get(name, '?'), 200)}" for name in backends]
    return "\n".join(lines)


class VersionAction(argparse.Action):
    """``--version``: print `version_text` and exit 0 (argparse's own action takes a fixed
    string, and this text is only worth computing when asked for)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        sys.stdout.write(version_text() + "\n")
        parser.exit(0)
