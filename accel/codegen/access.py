"""Tensor access from a kernel's iteration domain: buffers, strides and NumPy broadcasting.

A generated kernel iterates over a *domain* (a shape; for the elementwise family the partition's
output shape). A tensor of shape ``s`` (rank ``r <= R``) is read at the domain index by NumPy's
right-aligned broadcasting: its dim ``j`` takes the domain's index along axis ``R - r + j``, or 0
where ``s[j] == 1``.

Every number of the addressing is a kernel argument (`fusionspec.accel.codegen.args`), so the
code depends only on the rank, on which dims have extent 1 and on each tensor's layout class.
A domain names its arguments after its index: ``idx_n2`` (extent of axis 2), ``idx_size``, and
the divisors that split a linear index (`Divisor`, divided by with a multiply and a shift):
``idx_n2_div``, ``idx_n1_2_div`` (the product of axes 1..2), ``idx_in2_div`` (what lies inside
axis 2: the product of the later axes). `split_lines` writes the statements that split a linear
index into coordinates, for every family.

Extents of 1. A tensor that broadcasts into a domain reads index 0 along its dims of extent 1
(its broadcast structure is part of the code). A tensor of exactly the domain's shape (a main
op's source or destination) is addressed along every dim, whatever the extents, with only the
innermost dim's stride taken as 1: its code is then the same for every shape of its rank.

Layouts. A tensor is *dense* (`is_dense`) when its buffer is row-major whatever the caller
passes: it has no logical strides, or row-major ones (the executor uploads an array of the
tensor's shape densely, a flat buffer with the tensor's strides as it is, and writes every
output densely). A dense tensor is addressed with its row-major strides as ``int`` arguments
(a stride of 1 is left out); any other read tensor through runtime strides (`StrideArg`, one
``long`` per dim), so the same kernel reads a strided buffer or a dense copy of it. Written
tensors are dense.

Index forms. A `Domain` gives the domain index in one of two forms:

- a multi-index array ``idx[0..R-1]`` that the kernel template fills (the main-op families:
  their loops produce the coordinates anyway);
- *lazy*, from a linear row-major index (``Domain(shape, args, linear="i")``, the elementwise
  family): a dense tensor that covers the domain is read at ``i`` itself, a dense broadcast
  operand at ``((i / inner) % extent) * stride`` per run of consecutive dims it does not
  broadcast, and only the axes something asks for (a strided operand, a per-channel parameter,
  the guard of a smaller output) become locals ``idx<k>``, each one division and one remainder
  (`axis_declarations`). So a dense chain needs no division at all, and a broadcast operand
  only divisions by invariant divisors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from fusionspec.spec.graph import LogicalTensor, row_major_strides

from ..errors import UnsupportedPartitionError
from .args import INT_LIMIT, Divisor, KernelArgs

__all__ = ["Domain", "known_shape", "check_broadcast", "broadcast_domain", "is_dense",
           "stride_exprs", "channel_offset", "split_lines", "INT_LIMIT"]


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


def check_broadcast(tensor: LogicalTensor, domain: Sequence[int]) -> tuple[int, ...]:
    """The tensor's shape, which must broadcast into a kernel's domain of shape `domain`
    (UnsupportedPartitionError otherwise)."""
    shape = known_shape(tensor)
    rank = len(domain)
    ok = len(shape) <= rank and all(
        d in (1, domain[rank - len(shape) + j]) for j, d in enumerate(shape))
    if not ok:
        raise UnsupportedPartitionError(f"tensor {tensor.id} of shape {list(shape)} does "
                                        f"not broadcast to the kernel's domain "
                                        f"{list(domain)}")
    return shape


def is_dense(tensor: LogicalTensor) -> bool:
    """Whether `tensor`'s buffer is always dense row-major (see the module docstring): no
    logical strides, or row-major ones on every dim of extent above 1 (a dim of extent 1 is
    never stepped along, so its stride does not matter)."""
    shape = known_shape(tensor)
    strides = tensor.strides
    if strides is None:
        return True
    if len(strides) != len(shape):
        return False
    return all(s == d for s, d, n in zip(strides, row_major_strides(shape), shape) if n != 1)


def _unit_stride(shape: tuple[int, ...], dim: int) -> bool:
    """Whether the row-major stride of `dim` is 1: every later dim has extent 1 (a matter of
    where the extents of 1 are, so leaving the factor out keeps the code shape-generic)."""
    return all(d == 1 for d in shape[dim + 1:])


def stride_exprs(tensor: LogicalTensor, args: KernelArgs) -> list[str]:
    """Per dim of `tensor`, the C expression of its stride in elements, for addressing it
    along every dim whatever the extents: ``1`` for a dense tensor's innermost dim, else a
    kernel argument (dense: its row-major stride; any other layout: the runtime stride)."""
    shape = known_shape(tensor)
    if not is_dense(tensor):
        return [args.stride(tensor, j) for j in range(len(shape))]
    return ["1" if j == len(shape) - 1 else args.dense_stride(tensor, j)
            for j in range(len(shape))]


def channel_offset(tensor: LogicalTensor, index: str, args: KernelArgs) -> str:
    """The element offset of entry `index` of a 1-D tensor (a per-channel parameter)."""
    shape = known_shape(tensor)
    if len(shape) != 1:
        raise UnsupportedPartitionError(f"tensor {tensor.id} of shape {list(shape)} is not 1-D")
    if is_dense(tensor):
        return index
    return f"({index}) * {args.stride(tensor, 0)}"


def split_lines(rest: str, coords: Sequence[tuple[str, Divisor | None]]) -> list[str]:
    """Statements splitting the linear index in variable `rest` (which they consume) into
    row-major coordinates: per (target, divisor of its extent), outermost first,
    ``target = rest mod extent; rest = rest div extent`` from the innermost out. The
    outermost coordinate is what remains, as `rest` is below the product of the extents, so
    its divisor is not needed (it may be None)."""
    lines: list[str] = []
    for target, divisor in reversed(coords[1:]):
        assert divisor is not None, f"no divisor to split off {target}"
        lines += [f"{target} = {divisor.mod(rest)};", f"{rest} = {divisor.div(rest)};"]
    if coords:
        lines.append(f"{coords[0][0]} = {rest};")
    return lines


def _term(index: str, stride: str) -> str:
    return index if stride == "1" else f"{index} * {stride}"


class Domain:
    """The iteration space of a kernel: its shape and how its index is spelled in C.

    `args` receives the arguments the domain's expressions use; `index` names the
    multi-index array (``idx[k]``), or in lazy mode the prefix of the axis locals (``idx0``,
    ``idx1`` ...), and prefixes the names of the domain's arguments; `linear`, when given,
    makes the domain lazy: every index derives from that linear row-major index (see the
    module docstring)."""

    def __init__(self, shape: Sequence[int], args: KernelArgs, index: str = "idx", *,
                 linear: str | None = None) -> None:
        self.shape = tuple(shape)
        self.args = args
        self.index = index
        self.linear = linear
        self._used: set[int] = set()

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def lazy(self) -> bool:
        return self.linear is not None

    @property
    def index_type(self) -> str:
        """The C type of the domain's indices: ``int`` when it fits, else ``long``."""
        return "int" if self.size <= INT_LIMIT else "long"

    # -- the domain's arguments ---------------------------------------------------------------

    def extent(self, k: int) -> str:
        """The argument holding the extent of axis `k`."""
        return self.args.index(f"{self.index}_n{k}", self.shape[k])

    def size_arg(self) -> str:
        """The argument holding the domain's element count."""
        return self.args.product(f"{self.index}_size", self.shape)

    def _divisor(self, name: str, extents: Sequence[int]) -> Divisor:
        return self.args.divisor(f"{self.index}_{name}", math.prod(extents),
                                 wide=self.index_type == "long")

    def divisor(self, k: int) -> Divisor:
        """The extent of axis `k` as a divisor of the domain's linear indices."""
        return self._divisor(f"n{k}", self.shape[k:k + 1])

    def _span(self, first: int, last: int) -> Divisor:
        """The product of the extents of axes first..last as a divisor."""
        if first == last:
            return self.divisor(first)
        return self._divisor(f"n{first}_{last}", self.shape[first:last + 1])

    def _inner(self, k: int) -> Divisor:
        """How many linear positions one step along axis `k` spans, as a divisor."""
        return self._divisor(f"in{k}", self.shape[k + 1:])

    def split(self, rest: str, axes: Sequence[int] | None = None) -> list[str]:
        """`split_lines` filling ``<index>[k]`` for `axes` (all, by default; row-major order)
        from the linear index in `rest`, below the product of their extents."""
        axes = range(self.rank) if axes is None else axes
        return split_lines(rest, [(f"{self.index}[{k}]", self.divisor(k)) for k in axes])

    def check(self, tensor: LogicalTensor) -> tuple[int, ...]:
        """The tensor's shape, which must broadcast into the domain."""
        return check_broadcast(tensor, self.shape)

    # -- the index along one axis -----------------------------------------------------------

    def axis(self, k: int) -> str:
        """The C expression of the domain index along axis `k` (in lazy mode it becomes a
        local that `axis_declarations` declares)."""
        if not self.lazy:
            return f"{self.index}[{k}]"
        if self.shape[k] == 1:
            return "0"
        self._used.add(k)
        return f"{self.index}{k}"

    def _outermost(self) -> int | None:
        return next((k for k, d in enumerate(self.shape) if d != 1), None)

    def _split(self, first: int, last: int) -> str:
        """The composite index over axes first..last (consecutive, row-major) in lazy mode:
        the linear index divided by what lies inside, modulo the run's extent (no remainder
        when nothing lies outside)."""
        assert self.linear is not None
        expr = self.linear
        if not _unit_stride(self.shape, last):
            expr = self._inner(last).div(expr)
        if first != self._outermost():
            expr = self._span(first, last).mod(expr)
        return expr

    def axis_declarations(self) -> list[str]:
        """Lazy mode: the statements declaring the axis locals the generated code used."""
        return [f"const {self.index_type} {self.index}{k} = {self._split(k, k)};"
                for k in sorted(self._used)]

    # -- tensors ------------------------------------------------------------------------------

    def index_of(self, tensor: LogicalTensor) -> list[str]:
        """Per dim of `tensor`, the C expression of its index at the domain index."""
        return [self.index_along(tensor, j) for j in range(len(self.check(tensor)))]

    def index_along(self, tensor: LogicalTensor, j: int) -> str:
        """The C expression of `tensor`'s index along its dim `j` at the domain index (only
        that axis is derived in lazy mode)."""
        shape = self.check(tensor)
        if self._whole(shape):
            return self.axis(j)
        return "0" if shape[j] == 1 else self.axis(self.rank - len(shape) + j)

    def _whole(self, shape: tuple[int, ...]) -> bool:
        """Whether a tensor of `shape` is addressed along every dim (see the module
        docstring): it has the domain's shape, in a domain with an ``idx[]`` array."""
        return not self.lazy and shape == self.shape

    def _dense_stride(self, tensor: LogicalTensor, shape: tuple[int, ...], j: int) -> str:
        unit = j == len(shape) - 1 if self._whole(shape) else _unit_stride(shape, j)
        return "1" if unit else self.args.dense_stride(tensor, j)

    def covers(self, tensor: LogicalTensor) -> bool:
        """Whether `tensor` broadcasts into the domain without repeating: its dense offset is
        then the domain's linear index."""
        return math.prod(self.check(tensor)) == self.size

    def dense_offset(self, tensor: LogicalTensor, linear: str | None = None) -> str:
        """The element offset of `tensor` at the domain index, dense row-major: `linear` (or
        the lazy domain's linear index) when the tensor covers the domain; in lazy mode one
        division and remainder per run of dims the tensor does not broadcast; else from
        ``idx[]`` with its row-major strides."""
        shape = self.check(tensor)
        linear = self.linear or linear
        if linear is not None and self.covers(tensor):
            return linear
        if self.lazy:
            return self._run_offset(tensor, shape)
        terms = [_term(index, self._dense_stride(tensor, shape, j))
                 for j, index in enumerate(self.index_of(tensor)) if index != "0"]
        return " + ".join(terms) or "0"

    def _run_offset(self, tensor: LogicalTensor, shape: tuple[int, ...]) -> str:
        lead = self.rank - len(shape)
        runs: list[list[int]] = []  # domain axes (extent > 1) the tensor steps along, in runs
        previous_live = False
        for k, extent in enumerate(self.shape):
            if extent == 1:
                continue  # never stepped along: neither breaks nor extends a run
            live = k >= lead and shape[k - lead] != 1
            if live and previous_live:
                runs[-1].append(k)
            elif live:
                runs.append([k])
            previous_live = live
        terms = []
        for run in runs:
            split = self._split(run[0], run[-1])
            dim = run[-1] - lead
            terms.append(split if _unit_stride(shape, dim) else
                         f"({split}) * {self.args.dense_stride(tensor, dim)}")
        return " + ".join(terms) or "0"

    def strided_offset(self, tensor: LogicalTensor) -> str:
        """The element offset of `tensor` at the domain index through runtime strides (one
        argument per dim that is not broadcast)."""
        terms = [f"{index} * {self.args.stride(tensor, j)}"
                 for j, index in enumerate(self.index_of(tensor)) if index != "0"]
        return " + ".join(terms) or "0"

    def read_offset(self, tensor: LogicalTensor, linear: str | None = None) -> str:
        """The element offset of a read tensor at the domain index: `dense_offset` for a
        dense tensor, `strided_offset` for any other layout."""
        if is_dense(tensor):
            return self.dense_offset(tensor, linear)
        return self.strided_offset(tensor)

    def owner_guard(self, tensor: LogicalTensor) -> str | None:
        """A condition true at exactly one domain index per element of `tensor` (None when
        the tensor spans the whole domain), so a broadcast-smaller output is written once."""
        shape = self.check(tensor)
        lead = self.rank - len(shape)
        zeros = [f"{self.axis(k)} == 0" for k in range(self.rank) if self.shape[k] != 1 and
                 (k < lead or shape[k - lead] == 1)]
        return " && ".join(zeros) if zeros else None
