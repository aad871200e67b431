"""The implicit-GEMM view of MatMul, Convolution and ConvTranspose, as C index code.

Every main op of the GEMM family is a batch of ``Z`` products ``D[z] (M x N) = A[z] (M x K) x
B[z] (K x N)`` whose operands are never materialised: `Geometry` says, in OpenCL C, where the
element (z, m, k) of A sits in the src tensor (its multi-index ``ai[]`` and whether it is
inside the tensor or in the zero padding), where (z, k, n) of B sits in the weights (``bi[]``),
and which element of dst (``idx[]``) the result (z, m, n) is.

- MatMul: z runs over dst's batch dims (NumPy broadcasting, a size-1 dim of an operand reads
  index 0), m/k/n are the matrix dims after ``transpose_a``/``transpose_b``; a 1-D src is one
  row and a 1-D weights one column, as the reference treats them.
- Convolution: z is the group, m the (batch item, output position), k the (kernel tap, input
  channel of the group), n the output channel of the group. The input position of tap t at
  output o is ``o*S + t*D - pads_begin`` (graph-style dilations: D = 1 is none).
- ConvTranspose: the same, read backwards: output position y takes tap t from the input
  ``i = (y + pads_begin - t*D) / S`` when that division is exact and i is in range.

`Geometry.a_run` says where A can be read in runs: when k's innermost coordinate (MatMul: k
itself; Convolution/ConvTranspose: the input channel of the group) enters A's index in one dim
only, with coefficient 1, and the padding test does not depend on it, then A at (m, k0 + c) for
c below the run's length is A at (m, k0) plus c times that dim's stride. The register-blocked
GEMM decodes each row's window once per run instead of once per element.

The decoded coordinates are C locals named after the operand (``a_m1``, ``b_k0`` ...); the kernel
template declares ``z``, ``m``, ``k``, ``n`` and the arrays. Every size the index code uses is a
kernel argument named after its meaning (``batch``, ``out0``, ``ker1``, ``icg``, ``stride0``,
``pad1``, ``in0`` ...; `fusionspec.accel.codegen.args`), and every coordinate is decoded whatever
its extent, so one program serves all shapes of a main op's rank, layouts and transposes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fusionspec.spec.graph import Op
from fusionspec.spec.shapes import pads_for, spatial_dims

from ..codegen.access import broadcast_domain, known_shape, split_lines
from ..codegen.args import KernelArgs
from ..codegen.opctx import attr_of
from ..errors import UnsupportedPartitionError

__all__ = ["ConvDims", "conv_dims", "backward_dims", "Geometry", "IndexCode", "OperandRun",
           "geometry_of", "MAIN_KINDS", "split_index", "ints_of"]

#: The main ops of the family.
MAIN_KINDS = frozenset({"MatMul", "Convolution", "ConvTranspose"})

_INT_LIMIT = 2 ** 31 - 1


@dataclass(frozen=True)
class IndexCode:
    """C statements decoding the GEMM coordinates, the tensor multi-index they give (one C
    expression per dim) and the condition for a real (not padding) element, if any."""

    statements: tuple[str, ...]
    index: tuple[str, ...]
    valid: str | None = None


@dataclass(frozen=True)
class Geometry:
    """One main op as a batch of implicit GEMMs (see the module docstring)."""

    z: int
    m: int
    n: int
    k: int
    prologue: tuple[str, ...]  # decodes z (needs `z`)
    a: IndexCode               # needs m, k
    b: IndexCode               # needs k, n
    d: IndexCode               # needs m, n
    channel: str | None        # the dst channel index (Convolution/ConvTranspose bias)
    a_run: OperandRun | None = None


@dataclass(frozen=True)
class OperandRun:
    """Runs of A along k (see the module docstring): `length` (a C expression, a kernel
    argument dividing K) consecutive k step along A's dim `dim` with coefficient 1."""

    length: str
    dim: int


Extents = Sequence[tuple[str, int]]


def split_index(var: str, extents: Extents, prefix: str, args: KernelArgs
                ) -> tuple[list[str], list[str]]:
    """Statements splitting `var` (below the product of the extents) into row-major coordinates
    over `extents` ((argument name, extent) pairs; the extents become divisor arguments), named
    prefix0, prefix1 ...; and those names. A dim of extent 1 is split like any other (its
    coordinate is 0 at run time), so the code does not depend on where the extents of 1 are."""
    names = [f"{prefix}{i}" for i in range(len(extents))]
    if len(extents) <= 1:
        return [f"const int {name} = {var};" for name in names], names
    rest = f"{prefix}r"
    coords = [(f"const int {name}", args.divisor(*extent) if i else None)
              for i, (name, extent) in enumerate(zip(names, extents))]
    return [f"int {rest} = {var};", *split_lines(rest, coords)], names


def ints_of(op: Op, name: str, count: int, fill: int) -> tuple[int, ...]:
    value = attr_of(op, name)
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise UnsupportedPartitionError(f"op {op.id} ({op.kind}) attribute {name!r} must be "
                                        f"a list, got {value!r}")
    ints = tuple(int(v) for v in value) or (fill,) * count
    if len(ints) != count:
        raise UnsupportedPartitionError(f"op {op.id} ({op.kind}) attribute {name!r} has "
                                        f"{len(ints)} values for {count} spatial dims")
    return ints


@dataclass(frozen=True)
class ConvDims:
    """The sizes of a convolution-like op (Convolution, ConvTranspose or
    ConvolutionBackwardWeights), read once from its shapes and attributes: both the generated
    index code and the host-side index maps of the table form start from these."""

    fmt: str
    wfmt: str
    groups: int
    nsp: int
    in_sp: tuple[int, ...]
    out_sp: tuple[int, ...]
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    begin: tuple[int, ...]
    icg: int
    ocg: int
    batch: int


def _groups_of(op: Op, channels: int) -> int:
    groups = int(attr_of(op, "groups"))  # type: ignore[arg-type]
    if groups <= 0 or channels % groups:
        raise UnsupportedPartitionError(f"op {op.id} ({op.kind}): {channels} channels do not "
                                        f"split into {groups} groups")
    return groups


def conv_dims(op: Op, src: tuple[int, ...], wei: tuple[int, ...],
              dst: tuple[int, ...]) -> ConvDims:
    """`ConvDims` of a Convolution or ConvTranspose with source, weights and destination
    shapes `src`, `wei`, `dst`."""
    fmt, wfmt = str(attr_of(op, "data_format")), str(attr_of(op, "weights_format"))
    nsp = len(src) - 2
    in_sp, out_sp = spatial_dims(src, fmt), spatial_dims(dst, fmt)
    kernel = tuple(wei[2:] if wfmt in ("OIX", "IOX") else wei[:-2])
    strides, dilations = ints_of(op, "strides", nsp, 1), ints_of(op, "dilations", nsp, 1)
    begin, _ = pads_for(op, in_sp, kernel, strides, dilations,
                        transposed=op.kind == "ConvTranspose")
    ic = src[1] if fmt == "NCX" else src[-1]
    groups = _groups_of(op, ic)
    oc = dst[1] if fmt == "NCX" else dst[-1]
    return ConvDims(fmt, wfmt, groups, nsp, tuple(in_sp), tuple(out_sp), kernel, strides,
                    dilations, tuple(begin), ic // groups, oc // groups, src[0])


def backward_dims(op: Op, src: tuple[int, ...], dy: tuple[int, ...],
                  wshape: tuple[int, ...]) -> ConvDims:
    """`ConvDims` of a ConvolutionBackwardWeights with source, diff_dst and diff_weights
    shapes `src`, `dy`, `wshape`."""
    fmt, wfmt = str(attr_of(op, "data_format")), str(attr_of(op, "weights_format"))
    nsp = len(src) - 2
    in_sp, out_sp = spatial_dims(src, fmt), spatial_dims(dy, fmt)
    kernel = tuple(wshape[2:] if wfmt == "OIX" else wshape[:-2])
    strides, dilations = ints_of(op, "strides", nsp, 1), ints_of(op, "dilations", nsp, 1)
    begin, _ = pads_for(op, in_sp, kernel, strides, dilations)
    icg = wshape[1] if wfmt == "OIX" else wshape[-2]
    oc = dy[1] if fmt == "NCX" else dy[-1]
    groups = _groups_of(op, oc)
    return ConvDims(fmt, wfmt, groups, nsp, tuple(in_sp), tuple(out_sp), kernel, strides,
                    dilations, tuple(begin), icg, oc // groups, dy[0])


def geometry_of(op: Op, args: KernelArgs) -> Geometry:
    """The implicit GEMM of a MatMul, Convolution or ConvTranspose op (shapes known); the
    sizes its index code uses go to `args`."""
    shapes = [known_shape(t) for t in (*op.inputs[:2], op.outputs[0])]
    if max(math.prod(s) for s in shapes) > _INT_LIMIT:
        raise UnsupportedPartitionError(f"op {op.id} ({op.kind}) has a tensor of more than "
                                        f"{_INT_LIMIT} elements")
    if op.kind == "MatMul":
        return _matmul(op, args, *shapes)
    if op.kind in ("Convolution", "ConvTranspose"):
        return _conv(op, args, *shapes)
    raise UnsupportedPartitionError(f"op {op.id} ({op.kind}) is not a GEMM main op")


def _matmul(op: Op, args: KernelArgs, sa: tuple[int, ...], sb: tuple[int, ...],
            sd: tuple[int, ...]) -> Geometry:
    ta = bool(attr_of(op, "transpose_a")) and len(sa) >= 2
    tb = bool(attr_of(op, "transpose_b")) and len(sb) >= 2
    a2 = sa if len(sa) >= 2 else (1, *sa)
    b2 = sb if len(sb) >= 2 else (*sb, 1)
    m, k = (a2[-1], a2[-2]) if ta else (a2[-2], a2[-1])
    kb, n = (b2[-1], b2[-2]) if tb else (b2[-2], b2[-1])
    if k != kb:
        raise UnsupportedPartitionError(f"MatMul op {op.id}: src {list(sa)} and weights "
                                        f"{list(sb)} disagree on K ({k} vs {kb})")
    batch = broadcast_domain([a2[:-2], b2[:-2]])
    prologue, zb = split_index("z", [(f"batch{j}", e) for j, e in enumerate(batch)], "zb",
                               args)

    def batch_index(shape: tuple[int, ...]) -> list[str]:
        # Index 0 only where the operand truly broadcasts; a dim of extent 1 like dst's
        # takes the batch coordinate (0 at run time), so equal batches share one program.
        lead = len(batch) - (len(shape) - 2)
        return ["0" if d == 1 and batch[lead + j] != 1 else zb[lead + j]
                for j, d in enumerate(shape[:-2])]

    a_index = ["k"] if len(sa) == 1 else [*batch_index(sa), *(("k", "m") if ta else ("m", "k"))]
    b_index = ["k"] if len(sb) == 1 else [*batch_index(sb), *(("n", "k") if tb else ("k", "n"))]
    d_index = [*zb, *(["m"] if len(sa) >= 2 else []), *(["n"] if len(sb) >= 2 else [])]
    if len(d_index) != len(sd):
        raise UnsupportedPartitionError(f"MatMul op {op.id}: dst {list(sd)} is not the "
                                        f"product of src {list(sa)} and weights {list(sb)}")
    run = OperandRun(args.index("K", k), 0 if len(sa) == 1 else len(sa) - (2 if ta else 1))
    return Geometry(math.prod(batch), m, n, k, tuple(prologue), IndexCode((), tuple(a_index)),
                    IndexCode((), tuple(b_index)), IndexCode((), tuple(d_index)), None, run)


def _conv(op: Op, args: KernelArgs, src: tuple[int, ...], wei: tuple[int, ...],
          dst: tuple[int, ...]) -> Geometry:
    transposed = op.kind == "ConvTranspose"
    c = conv_dims(op, src, wei, dst)
    fmt, wfmt, groups, nsp, batch = c.fmt, c.wfmt, c.groups, c.nsp, c.batch
    in_sp, out_sp, kernel, icg, ocg = c.in_sp, c.out_sp, c.kernel, c.icg, c.ocg
    strides, dilations, begin = c.strides, c.dilations, c.begin

    positions = [("batch", batch), *((f"out{d}", o) for d, o in enumerate(out_sp))]
    window = [*((f"ker{d}", t) for d, t in enumerate(kernel)), ("icg", icg)]
    mlines, mc = split_index("m", positions, "a_m", args)
    klines, kc = split_index("k", window, "a_k", args)
    taps, cin = kc[:-1], kc[-1]
    a_lines = [*mlines, *klines]
    pos: list[str] = []
    valid: list[str] = []
    for d in range(nsp):
        o, t = mc[1 + d], taps[d]
        dil, pad = args.index(f"dil{d}", dilations[d]), args.index(f"pad{d}", begin[d])
        extent = args.index(f"in{d}", in_sp[d])
        if not transposed:
            s = args.index(f"stride{d}", strides[d])
            a_lines.append(f"const int a_i{d} = {o} * {s} + {t} * {dil} - {pad};")
            valid.append(f"a_i{d} >= 0 && a_i{d} < {extent}")
        else:
            # a_u may be negative, where the divisor helpers do not hold; such a tap is not
            # valid and the && stops before its quotient is used.
            step = args.divisor(f"stride{d}", strides[d])
            a_lines += [f"const int a_u{d} = {o} + {pad} - {t} * {dil};",
                        f"const int a_i{d} = {step.div(f'a_u{d}')};"]
            valid.append(f"a_u{d} >= 0 && {step.mod(f'a_u{d}')} == 0 && a_i{d} < {extent}")
        pos.append(f"a_i{d}")
    # With one group z is 0, so the grouped form serves it too (one program for both).
    icg_arg, ocg_arg = args.index("icg", icg), args.index("ocg", ocg)
    cidx = f"z * {icg_arg} + {cin}"
    a_index = [mc[0], cidx, *pos] if fmt == "NCX" else [mc[0], *pos, cidx]

    b_lines, bk = split_index("k", window, "b_k", args)
    btaps, bc = bk[:-1], bk[-1]
    if transposed:  # IOX (IC, OC/G, K...), XOI (K..., OC/G, IC)
        wic = f"z * {icg_arg} + {bc}"
        b_index = [wic, "n", *btaps] if wfmt == "IOX" else [*btaps, "n", wic]
    else:  # OIX (OC, IC/G, K...), XIO (K..., IC/G, OC)
        woc = f"z * {ocg_arg} + n"
        b_index = [woc, bc, *btaps] if wfmt == "OIX" else [*btaps, bc, woc]

    d_lines, dm = split_index("m", positions, "d_m", args)
    chan = f"z * {ocg_arg} + n"
    d_index = [dm[0], chan, *dm[1:]] if fmt == "NCX" else [*dm, chan]
    run = OperandRun(icg_arg, 1 if fmt == "NCX" else len(src) - 1)
    return Geometry(groups, batch * math.prod(out_sp), ocg, math.prod(kernel) * icg, (),
                    IndexCode(tuple(a_lines), tuple(a_index), " && ".join(valid) or None),
                    IndexCode(tuple(b_lines), tuple(b_index)),
                    IndexCode(tuple(d_lines), tuple(d_index)), chan, run)
