"""Type aliases shared by every layer: one spelling of "a NumPy array of any dtype"."""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np

__all__ = ["Array"]

#: A NumPy array of any shape and dtype (tensors travel as these between backends and suite).
Array: TypeAlias = np.ndarray[Any, np.dtype[Any]]
