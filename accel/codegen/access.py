"""Tensor access from a kernel's iteration domain: buffers, strides and NumPy broadcasting.

A generated kernel iterates over a *domain* (a shape; for the elementwise family the partition's
output shape) with a multi-index ``idx[0..R-1]``. A tensor of shape ``s`` (rank ``r <= R``) is
read at the domain index by NumPy's right-aligned broadcasting: its dim ``j`` takes
``idx[R - r + j]``, or 0 where ``s[j] == 1``. Read tensors are addressed through runtime strides
(`StrideArg`), so the same kernel reads a dense array or a strided buffer; written tensors are
dense row-major, their strides folded into the source as constants.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from fusionspec.spec.graph import LogicalTensor

from ..errors import UnsupportedPartitionError
from ..plan import BufferArg, Param, StrideArg
from .types import TypePolicy

__all__ = ["Domain", "known_shape", "read_param", "write_param", "buffer_name",
           "broadcast_domain"]


def buffer_name(tensor: LogicalTensor) -> str:
    return f"t{tensor.id}"


def known_shape(tensor: LogicalTensor) -> tuple[int, ...]:
    """The tensor's shape; UnsupportedPartitionError when it is not fully known."""
    if tensor.shape is None or not tensor.shape_known:
        raise UnsupportedPartitionError(f"tensor {tensor.id} has no known shape; the OpenCL "
                                        "backend generates kernels for known shapes only")
    return tensor.shape


def broadcast_domain(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """The NumPy broadcast of `shapes` (UnsupportedPartitionError when they do not
    broadcast)."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for shape in shapes:
        for j, d in enumerate(shape):
            k = rank - len(shape) + j
            if d != 1 and out[k] not in (1, d):
                raise UnsupportedPartitionError(f"shapes {[list(s) for s in shapes]} do not "
                                                "broadcast together")
            if d != 1:
                out[k] = d
    return tuple(out)


def read_param(tensor: LogicalTensor, policy: TypePolicy) -> Param:
    return Param(f"__global const {policy.storage(tensor.dtype)}* restrict "
                 f"{buffer_name(tensor)}", BufferArg(tensor.id))


def write_param(tensor: LogicalTensor, policy: TypePolicy) -> Param:
    return Param(f"__global {policy.storage(tensor.dtype)}* restrict {buffer_name(tensor)}",
                 BufferArg(tensor.id))


class Domain:
    """The iteration space of a kernel: its shape and the C name of its multi-index."""

    def __init__(self, shape: Sequence[int], index: str = "idx") -> None:
        self.shape = tuple(shape)
        self.index = index

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def check(self, tensor: LogicalTensor) -> tuple[int, ...]:
        """The tensor's shape, which must broadcast into the domain."""
        shape = known_shape(tensor)
        ok = len(shape) <= self.rank and all(
            d in (1, self.shape[self.rank - len(shape) + j]) for j, d in enumerate(shape))
        if not ok:
            raise UnsupportedPartitionError(f"tensor {tensor.id} of shape {list(shape)} does "
                                            f"not broadcast to the kernel's domain "
                                            f"{list(self.shape)}")
        return shape

    def index_of(self, tensor: LogicalTensor) -> list[str]:
        """Per dim of `tensor`, the C expression of its index at the domain index."""
        shape = self.check(tensor)
        lead = self.rank - len(shape)
        return ["0" if d == 1 else f"{self.index}[{lead + j}]" for j, d in enumerate(shape)]

    def strided_offset(self, tensor: LogicalTensor) -> tuple[str, list[Param]]:
        """The element offset of `tensor` at the domain index through runtime strides, and
        the stride parameters it needs (one per dim that is not broadcast)."""
        terms: list[str] = []
        params: list[Param] = []
        for j, index in enumerate(self.index_of(tensor)):
            if index == "0":
                continue
            name = f"{buffer_name(tensor)}_s{j}"
            params.append(Param(f"const long {name}", StrideArg(tensor.id, j)))
            terms.append(f"{index} * {name}")
        return (" + ".join(terms) or "0"), params

    def dense_offset(self, tensor: LogicalTensor) -> str:
        """The element offset of `tensor` at the domain index, dense row-major."""
        terms: list[str] = []
        step = 1
        shape = self.check(tensor)
        for index, d in zip(reversed(self.index_of(tensor)), reversed(shape)):
            if index != "0":
                terms.append(index if step == 1 else f"{index} * {step}")
            step *= d
        return " + ".join(reversed(terms)) or "0"

    def owner_guard(self, tensor: LogicalTensor) -> str | None:
        """A condition true at exactly one domain index per element of `tensor` (None when
        the tensor spans the whole domain), so a broadcast-smaller output is written once."""
        shape = self.check(tensor)
        lead = self.rank - len(shape)
        zeros = [f"{self.index}[{k}] == 0" for k in range(self.rank) if self.shape[k] != 1 and
                 (k < lead or shape[k - lead] == 1)]
        return " && ".join(zeros) if zeros else None

    def spans(self, tensor: LogicalTensor) -> bool:
        """Whether `tensor` has the domain's shape (its dense offset is the linear index)."""
        return known_shape(tensor) == self.shape
