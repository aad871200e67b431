"""The parameters of one generated kernel, and the names it declares: what keeps a program's
text independent of everything but the partition's structure.

A program is built once per distinct source text (and build options), so whatever may differ
between partitions of the same structure travels as a kernel argument instead of a literal:
extents and the products that split an index, dense strides, pads, window sizes, row counts,
attribute values (f32 scalars), per-channel tables (``__global const float*`` buffers the
executor uploads once per compiled partition). And nothing in the text is named after a
tensor or op id. `KernelArgs` is the one place that hands out those names and records, for
each, the `Param` the executor binds:

- buffers ``t0``, ``t1`` ... in order of first use, whatever the tensors' ids;
- runtime strides of a buffer ``<buffer>_s<dim>`` (`StrideArg`, as the data sits);
- dense strides under the same names, as integer scalars (the row-major stride of the shape);
- integer scalars named after their role by the caller (``M``, ``idx_n2``, ``stride0``):
  a name denotes one value, and asking for it again with another value is a generator bug;
- per-op values (``alpha0``, ``scales1``) and locals (``v0``, ``e2``) numbered per prefix in
  order of first use.

Integer scalars get the C type a literal of their value would have had, ``int`` when it fits
and ``long`` otherwise, so every index expression keeps the arithmetic it had with literals;
the caller asks for ``long`` where the template's literal carried an ``L`` suffix.

Divisors. A division by a kernel argument costs far more than one by a literal, which the
compiler turns into a multiply and a shift: on PoCL's CPU device it also keeps the work-item
loop from being vectorised (a broadcast Add ran 2.4x slower). So a divisor (`Divisor`, a
``uint4`` parameter ``<name>_div``) carries the multiplier and shift the compiler would have
chosen (`divisor_magic`), and the helpers ``fs_div``/``fs_mod`` divide with them; that holds for
dividends in [0, 2**31), i.e. in ``int`` index arithmetic. Where indices are ``long`` a divisor
is a plain ``long`` and divides as one (`KernelArgs.divisor` with ``wide``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fusionspec.spec.graph import LogicalTensor, row_major_strides

from ..plan import Binding, BufferArg, Param, ScalarArg, StrideArg, TableArg
from .source import Preamble

__all__ = ["KernelArgs", "Divisor", "INT_LIMIT", "int_type", "divisor_magic"]

#: The largest element count an ``int`` index can address.
INT_LIMIT = 2 ** 31 - 1


def int_type(value: int) -> str:
    """The C type of an integer literal of `value` (without suffix): int when it fits."""
    return "int" if -INT_LIMIT - 1 <= value <= INT_LIMIT else "long"


def divisor_magic(divisor: int) -> tuple[int, int, int, int]:
    """(divisor, multiplier, shift, 0) such that ``(n * multiplier) >> shift == n // divisor``
    for every 0 <= n < 2**31, with a multiplier below 2**32 (the ``fs_div`` helper's operands).

    With s = ceil(log2 divisor) and multiplier m = ceil(2**(31+s) / divisor), n*m / 2**(31+s)
    exceeds n / divisor by less than 2**-s <= 1 / divisor, which never reaches the next
    integer; and m < 2**32 because divisor > 2**(s-1)."""
    if not 1 <= divisor <= INT_LIMIT:
        raise ValueError(f"divisor {divisor} is outside 1..{INT_LIMIT}")
    s = (divisor - 1).bit_length()
    return divisor, -(-(1 << (31 + s)) // divisor), 31 + s, 0


@dataclass(frozen=True)
class Divisor:
    """A divisor kernel argument: C expressions dividing by it (see the module docstring)."""

    name: str
    wide: bool = False  # a plain ``long``: dividends may pass 2**31

    def div(self, n: str) -> str:
        return f"({n}) / {self.name}" if self.wide else f"fs_div({n}, {self.name})"

    def mod(self, n: str) -> str:
        return f"({n}) % {self.name}" if self.wide else f"fs_mod({n}, {self.name})"


def _f32(value: float) -> float:
    """`value` rounded to f32 (nearest even; past the f32 range, infinity, as an f32
    attribute holds it)."""
    with np.errstate(over="ignore"):
        return float(np.float32(value))


def _same(a: Param, b: Param) -> bool:
    """Whether two requests for one name agree (f32 values compared bit for bit: NaN too)."""
    if isinstance(a.binding, ScalarArg) and isinstance(b.binding, ScalarArg) and \
            a.binding.ctype == b.binding.ctype == "float":
        x, y = a.binding.value, b.binding.value
        assert isinstance(x, float) and isinstance(y, float)
        return a.decl == b.decl and np.float32(x).tobytes() == np.float32(y).tobytes()
    return a == b


class KernelArgs:
    """The parameters of one kernel, in signature order (order of first use), and its
    canonical names (see the module docstring)."""

    def __init__(self, preamble: Preamble) -> None:
        self.preamble = preamble
        self.policy = preamble.policy
        self._params: dict[str, Param] = {}
        self._buffers: dict[int, str] = {}
        self._counts: dict[str, int] = {}
        self._sealed = False

    @property
    def params(self) -> tuple[Param, ...]:
        """The parameters in signature order; none may be added afterwards (a launch and a
        signature taken at different times would disagree)."""
        self._sealed = True
        return tuple(self._params.values())

    def decls(self) -> list[str]:
        """The C declarations of the parameters, in signature order (sealed as `params`)."""
        return [p.decl for p in self.params]

    # -- names ----------------------------------------------------------------------------

    def fresh(self, prefix: str) -> str:
        """A new name ``<prefix><n>``, n counting from 0 per prefix (registers, temporaries,
        numbered parameters)."""
        n = self._counts.get(prefix, 0)
        self._counts[prefix] = n + 1
        return f"{prefix}{n}"

    def name_of(self, tensor: LogicalTensor) -> str:
        """The name of `tensor`'s buffer in this kernel (``t<n>``, given on first mention)."""
        found = self._buffers.get(tensor.id)
        if found is None:
            found = self._buffers[tensor.id] = self.fresh("t")
        return found

    def alias(self, tensor: LogicalTensor, name: str) -> None:
        """Name `tensor` `name` (a scratch buffer standing for it) before any mention."""
        if self._buffers.get(tensor.id, name) != name:
            raise AssertionError(f"tensor {tensor.id} is already named "
                                 f"{self._buffers[tensor.id]}")
        self._buffers[tensor.id] = name

    def _add(self, name: str, param: Param) -> str:
        old = self._params.get(name)
        if old is None:
            if self._sealed:
                raise AssertionError(f"kernel parameter {name} added after the signature was "
                                     "taken")
            self._params[name] = param
        elif not _same(old, param):
            raise AssertionError(f"kernel parameter {name} asked for as {old} and as {param}")
        return name

    def custom(self, name: str, decl: str, binding: Binding) -> str:
        """A parameter of a fixed name and declaration (the table form's slots and tables)."""
        return self._add(name, Param(decl, binding))

    # -- buffers --------------------------------------------------------------------------

    def read(self, tensor: LogicalTensor) -> str:
        """The name of a buffer the kernel reads `tensor` from (its parameter added)."""
        name = self.name_of(tensor)
        storage = self.policy.storage(tensor.dtype)
        return self._add(name, Param(f"__global const {storage}* restrict {name}",
                                     BufferArg(tensor.id)))

    def write(self, tensor: LogicalTensor) -> str:
        """The name of a buffer the kernel writes `tensor` to (its parameter added)."""
        name = self.name_of(tensor)
        storage = self.policy.storage(tensor.dtype)
        return self._add(name, Param(f"__global {storage}* restrict {name}",
                                     BufferArg(tensor.id)))

    def buffer(self, name: str, element: str, binding: Binding, *, const: bool) -> str:
        """A buffer parameter of a fixed name (scratch buffers, helper kernels)."""
        qualifier = "const " if const else ""
        return self._add(name, Param(f"__global {qualifier}{element}* restrict {name}",
                                     binding))

    def stride(self, tensor: LogicalTensor, dim: int) -> str:
        """The runtime stride (in elements) of `tensor`'s `dim`, as its buffer holds it."""
        name = f"{self.name_of(tensor)}_s{dim}"
        return self._add(name, Param(f"const long {name}", StrideArg(tensor.id, dim)))

    def dense_stride(self, tensor: LogicalTensor, dim: int) -> str:
        """The row-major stride of `tensor`'s `dim`, for a tensor whose buffer is dense."""
        shape = tensor.shape or ()
        return self.index(f"{self.name_of(tensor)}_s{dim}", row_major_strides(shape)[dim])

    # -- scalars --------------------------------------------------------------------------

    def index(self, name: str, value: int) -> str:
        """An integer the index arithmetic uses, typed as a literal of `value` would be."""
        return self.scalar(name, int_type(value), value)

    def long(self, name: str, value: int) -> str:
        """An integer the template compares with ``long`` counters."""
        return self.scalar(name, "long", value)

    def product(self, name: str, values: Sequence[int]) -> str:
        """`index` of the product of `values` (an extent spanning several dims)."""
        return self.index(name, math.prod(values))

    def divisor(self, name: str, value: int, *, wide: bool = False) -> Divisor:
        """A divisor ``<name>_div`` of `value` for index arithmetic: a ``uint4`` with its
        multiplier and shift for dividends in [0, 2**31), or with `wide` a ``long`` for any.
        A divisor of 0 (an empty extent, never divided by) is passed as 1."""
        param = f"{name}_div"
        if wide:
            self.long(param, value)
            return Divisor(param, wide=True)
        self.preamble.need(("fs_div", "fs_mod"))
        self._add(param, Param(f"const uint4 {param}",
                               ScalarArg("uint4", divisor_magic(max(value, 1)))))
        return Divisor(param)

    def f32(self, name: str, value: float) -> str:
        """An f32 scalar: `value` rounded to f32 exactly as a literal of it was."""
        return self.scalar(name, "float", _f32(value))

    def numbered_f32(self, prefix: str, value: float) -> str:
        """`f32` under a new name ``<prefix><n>`` (one per use: an op's attribute)."""
        return self.f32(self.fresh(prefix), value)

    def scalar(self, name: str, ctype: str, value: int | float) -> str:
        """A scalar parameter of C type `ctype` (``int``, ``uint``, ``long``, ``float``)."""
        return self._add(name, Param(f"const {ctype} {name}", ScalarArg(ctype, value)))

    def table(self, prefix: str, values: Sequence[float]) -> str:
        """A new read-only f32 table ``<prefix><n>`` of `values` (per-channel scales,
        interpolation taps), uploaded once when the partition is compiled."""
        name = self.fresh(prefix)
        rounded = tuple(_f32(v) for v in values)
        return self._add(name, Param(f"__global const float* restrict {name}",
                                     TableArg(rounded)))
