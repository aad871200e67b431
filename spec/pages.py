"""The three specification pages the catalog and its rules cite.

Each page is identified by its file name in the specification folder (``spec-docs/``), its
title as the page states it and the SHA-256 of its text (the exact text the catalog encodes);
sections are given where they are used, as ``"Inference / Floating Point Patterns"`` (heading
path inside the page).

The pages are oneDNN Graph API documentation pages (reStructuredText as rendered by the docs),
but neither they nor the folder they come in state which oneDNN release they document: their
only markers are Doxygen anchors (``doxid-dev_guide_graph_fusion_patterns``), which every
release shares. `DOCS_RELEASE` records that plainly rather than guessing, and `SPEC_VERSION`
names the pages by digest, so two results documents are known to check the same text.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Page", "FUSION_PATTERNS", "QUANTIZED_CONVTRANSPOSE", "SOFTMAX", "PAGES",
           "DOCS_RELEASE", "SPEC_VERSION"]


@dataclass(frozen=True)
class Page:
    """A specification page: `file` in spec-docs/, its `title` and the SHA-256 of its text."""

    file: str
    title: str
    sha256: str

    def cite(self, section: str) -> str:
        """``"Supported Fusion Patterns (001_....txt), Inference / Quantized Patterns"``."""
        return f"{self.title} ({self.file}), {section}"


FUSION_PATTERNS = Page(
    "001_6971bc15df9bcdad.txt", "Supported Fusion Patterns",
    "d427dcf08a4e0dd68d66e2665ed9e1bcc9424a1c4a5ce7312e9388effa88534c")
QUANTIZED_CONVTRANSPOSE = Page(
    "000_635ea0b72c94d57b.txt", "Quantized ConvTranspose Fusion Patterns",
    "3c791d51c3d84a1c8e92a2154563faea9297fd6203bafc0686a69ef6ea2ba1de")
SOFTMAX = Page(
    "003_91e1b16238b836f3.txt", "Softmax Fusion Patterns",
    "6810ec4f6034e356ce4c7d3b7137f576eb623a1a508738283f7d44413508b853")

#: The pages in catalog order (page 001's rows come first, then 000, then 003).
PAGES: tuple[Page, ...] = (FUSION_PATTERNS, QUANTIZED_CONVTRANSPOSE, SOFTMAX)

#: The oneDNN release the pages document: not stated by the pages (see the module docstring).
DOCS_RELEASE: str | None = None

#: The spec the suite checks: oneDNN's documentation pages, named by the first 12 hex digits of
#: each page's SHA-256, in catalog order.
SPEC_VERSION = "onednn-docs@release-unstated:" + "+".join(p.sha256[:12] for p in PAGES)
