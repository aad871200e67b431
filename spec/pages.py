"""The three specification pages the catalog and its rules cite.

Each page is identified by its file name in the specification folder (``spec-docs/``) and its
title as the page states it; sections are given where they are used, as
``"Inference / Floating Point Patterns"`` (heading path inside the page).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Page", "FUSION_PATTERNS", "QUANTIZED_CONVTRANSPOSE", "SOFTMAX", "PAGES"]


@dataclass(frozen=True)
class Page:
    """A specification page: `file` in spec-docs/ and its `title`."""

    file: str
    title: str

    def cite(self, section: str) -> str:
        """``"Supported Fusion Patterns (001_....txt), Inference / Quantized Patterns"``."""
        return f"{self.title} ({self.file}), {section}"


FUSION_PATTERNS = Page("001_6971bc15df9bcdad.txt", "Supported Fusion Patterns")
QUANTIZED_CONVTRANSPOSE = Page("000_635ea0b72c94d57b.txt",
                               "Quantized ConvTranspose Fusion Patterns")
SOFTMAX = Page("003_91e1b16238b836f3.txt", "Softmax Fusion Patterns")

#: The pages in catalog order (page 001's rows come first, then 000, then 003).
PAGES: tuple[Page, ...] = (FUSION_PATTERNS, QUANTIZED_CONVTRANSPOSE, SOFTMAX)
