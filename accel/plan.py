"""What a kernel family produces: a `KernelPlan`, the device work that computes a partition.

A plan is plain data: one OpenCL program (`source`, build `options`), the kernel launches to
enqueue in order, the tensors it reads and writes, and any device-only scratch buffers. Every
kernel parameter is a `Param`: its C declaration plus a binding that tells the executor
(`fusionspec.accel.compiled`) what to pass:

- `BufferArg(tensor_id)`: the device buffer of a tensor. A tensor the plan reads is the
  partition's input (uploaded once) or, in op-by-op mode, another plan's output (left on the
  device); a tensor it writes is dense row-major in its declared dtype's storage type;
- `StrideArg(tensor_id, dim)`: a ``long``, the stride in elements of a read tensor's `dim`, as
  the data actually sits in its buffer (the logical strides for a flat strided buffer, dense
  strides for an array of the tensor's shape or a tensor left by an earlier plan);
- `ScratchArg(name)`: a scratch buffer of the plan (`Scratch`), allocated per execution;
- `ScalarArg(ctype, value)`: a scalar (``int``, ``uint``, ``long``, ``float``; or ``uint4``, a
  divisor with its multiplier and shift): a shape-derived integer or an attribute value, passed
  as an argument so that partitions differing only in such values share one program
  (`fusionspec.accel.codegen.args`);
- `TableArg(values)`: a read-only buffer of f32 values (per-channel scales and zero points,
  interpolation taps) that the executor uploads once, when the partition is compiled; with
  ``ctype="int"`` a buffer of int32 values (the instructions of the table form,
  `fusionspec.accel.codegen.table_translate`);
- `LongsArg(entries)`: a read-only buffer of int64 values, each a `StrideArg` or `ScalarArg`
  (the table form's slot strides, some of them an input's runtime strides): uploaded once when
  every entry is a constant, else filled at each execution.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusionspec.spec.graph import LogicalTensor

__all__ = ["BufferArg", "StrideArg", "ScratchArg", "ScalarArg", "TableArg", "LongsArg", "Binding",
           "Param",
           "Launch", "Scratch", "KernelPlan"]


@dataclass(frozen=True)
class BufferArg:
    tensor_id: int


@dataclass(frozen=True)
class StrideArg:
    tensor_id: int
    dim: int


@dataclass(frozen=True)
class ScratchArg:
    name: str


@dataclass(frozen=True)
class ScalarArg:
    ctype: str  # "int", "uint", "long", "float", or "uint4" (a divisor: a tuple of 4 ints)
    value: int | float | tuple[int, ...]


@dataclass(frozen=True)
class TableArg:
    values: tuple[float, ...]  # already rounded to f32; uploaded as float32
    ctype: str = "float"  # or "int": an int32 table (the table form's instructions)


@dataclass(frozen=True)
class LongsArg:
    entries: tuple[StrideArg | ScalarArg, ...]

    @property
    def constant(self) -> bool:
        """Whether no entry depends on how an input is laid out (then uploaded once)."""
        return not any(isinstance(e, StrideArg) for e in self.entries)


Binding = BufferArg | StrideArg | ScratchArg | ScalarArg | TableArg | LongsArg


@dataclass(frozen=True)
class Param:
    """One kernel parameter: its C declaration (``__global const float* restrict t0``) and
    what the executor binds to it."""

    decl: str
    binding: Binding


@dataclass(frozen=True)
class Launch:
    """One kernel enqueue: the kernel's name in the program, its parameters in signature order
    and the NDRange. `local_size` None lets the driver choose."""

    kernel: str
    params: tuple[Param, ...]
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Scratch:
    """A device-only temporary buffer of `nbytes` bytes (e.g. partial sums between launches)."""

    name: str
    nbytes: int


@dataclass(frozen=True)
class KernelPlan:
    """The device work for one partition (or one op in op-by-op mode); see the module
    docstring. `family` names the kernel family that generated it."""

    family: str
    source: str
    launches: tuple[Launch, ...]
    reads: tuple[LogicalTensor, ...]
    writes: tuple[LogicalTensor, ...]
    scratch: tuple[Scratch, ...] = ()
    options: tuple[str, ...] = ()
