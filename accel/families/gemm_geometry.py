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

The decoded coordinates are C locals named after the operand (``a_m1``, ``b_k0`` ...); the kernel
template declares ``z``, ``m``, ``k``, ``n`` and the arrays.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fusionspec.spec.graph import Op
from fusionspec.spec.shapes import pads_for, spatial_dims

from ..codegen.access import broadcast_domain, known_shape
from ..errors import UnsupportedPartitionError
from .base import attr_of

__all__ = ["Geometry", "IndexCode", "geometry_of", "MAIN_KINDS", "split_index", "attr_of",
           "ints_of"]

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


def split_index(var: str, extents: Sequence[int], prefix: str) -> tuple[list[str], list[str]]:
    """Statements splitting `var` into row-major coordinates over `extents` (named
    prefix0, prefix1 ...), and those names (``0`` for a dim of extent 1)."""
    names = [f"{prefix}{i}" if e != 1 else "0" for i, e in enumerate(extents)]
    live = [i for i, e in enumerate(extents) if e != 1]
    if not live:
        return [], names
    if len(live) == 1:
        return [f"const int {names[live[0]]} = {var};"], names
    rest = f"{prefix}r"
    lines = [f"int {rest} = {var};"]
    for i in reversed(live[1:]):
        lines += [f"const int {names[i]} = {rest} % {extents[i]};", f"{rest} /= {extents[i]};"]
    lines.append(f"const int {names[live[0]]} = {rest};")
    return lines, names




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


def geometry_of(op: Op) -> Geometry:
    """The implicit GEMM of a MatMul, Convolution or ConvTranspose op (shapes known)."""
    shapes = [known_shape(t) for t in (*op.inputs[:2], op.outputs[0])]
    if max(math.prod(s) for s in shapes) > _INT_LIMIT:
        raise UnsupportedPartitionError(f"op {op.id} ({op.kind}) has a tensor of more than "
                                        f"{_INT_LIMIT} elements")
    if op.kind == "MatMul":
        return _matmul(op, *shapes)
    if op.kind in ("Convolution", "ConvTranspose"):
        return _conv(op, *shapes)
    raise UnsupportedPartitionError(f"op {op.id} ({op.kind}) is not a GEMM main op")


def _matmul(op: Op, sa: tuple[int, ...], sb: tuple[int, ...], sd: tuple[int, ...]
            ) -> Geometry:
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
    prologue, zb = split_index("z", batch, "zb")

    def batch_index(shape: tuple[int, ...]) -> list[str]:
        lead = len(batch) - (len(shape) - 2)
        return ["0" if d == 1 else zb[lead + j] for j, d in enumerate(shape[:-2])]

    a_index = ["k"] if len(sa) == 1 else [*batch_index(sa), *(("k", "m") if ta else ("m", "k"))]
    b_index = ["k"] if len(sb) == 1 else [*batch_index(sb), *(("n", "k") if tb else ("k", "n"))]
    d_index = [*zb, *(["m"] if len(sa) >= 2 else []), *(["n"] if len(sb) >= 2 else [])]
    if len(d_index) != len(sd):
        raise UnsupportedPartitionError(f"MatMul op {op.id}: dst {list(sd)} is not the "
                                        f"product of src {list(sa)} and weights {list(sb)}")
    return Geometry(math.prod(batch), m, n, k, tuple(prologue), IndexCode((), tuple(a_index)),
                    IndexCode((), tuple(b_index)), IndexCode((), tuple(d_index)), None)


def _conv(op: Op, src: tuple[int, ...], wei: tuple[int, ...], dst: tuple[int, ...]
          ) -> Geometry:
    transposed = op.kind == "ConvTranspose"
    fmt = str(attr_of(op, "data_format"))
    wfmt = str(attr_of(op, "weights_format"))
    groups = int(attr_of(op, "groups"))  # type: ignore[arg-type]
    nsp = len(src) - 2
    in_sp, out_sp = spatial_dims(src, fmt), spatial_dims(dst, fmt)
    kernel = wei[2:] if wfmt in ("OIX", "IOX") else wei[:-2]
    strides = ints_of(op, "strides", nsp, 1)
    dilations = ints_of(op, "dilations", nsp, 1)
    begin, _ = pads_for(op, in_sp, kernel, strides, dilations, transposed=transposed)
    ic = src[1] if fmt == "NCX" else src[-1]
    if groups <= 0 or ic % groups:
        raise UnsupportedPartitionError(f"op {op.id} ({op.kind}): {ic} channels do not split "
                                        f"into {groups} groups")
    icg = ic // groups
    oc = dst[1] if fmt == "NCX" else dst[-1]
    ocg = oc // groups
    batch = src[0]

    mlines, mc = split_index("m", (batch, *out_sp), "a_m")
    klines, kc = split_index("k", (*kernel, icg), "a_k")
    taps, cin = kc[:-1], kc[-1]
    a_lines = [*mlines, *klines]
    pos: list[str] = []
    valid: list[str] = []
    for d in range(nsp):
        o, t = mc[1 + d], taps[d]
        if not transposed:
            expr = f"{o} * {strides[d]} + {t} * {dilations[d]} - {begin[d]}"
            a_lines.append(f"const int a_i{d} = {expr};")
            valid.append(f"a_i{d} >= 0 && a_i{d} < {in_sp[d]}")
        else:
            num = f"{o} + {begin[d]} - {t} * {dilations[d]}"
            a_lines += [f"const int a_u{d} = {num};", f"const int a_i{d} = a_u{d} / {strides[d]};"]
            exact = f" && a_u{d} % {strides[d]} == 0" if strides[d] != 1 else ""
            valid.append(f"a_u{d} >= 0{exact} && a_i{d} < {in_sp[d]}")
        pos.append(f"a_i{d}")
    cidx = f"z * {icg} + {cin}" if groups > 1 else cin
    a_index = [mc[0], cidx, *pos] if fmt == "NCX" else [mc[0], *pos, cidx]

    b_lines, bk = split_index("k", (*kernel, icg), "b_k")
    btaps, bc = bk[:-1], bk[-1]
    if transposed:  # IOX (IC, OC/G, K...), XOI (K..., OC/G, IC)
        wic = f"z * {icg} + {bc}" if groups > 1 else bc
        b_index = [wic, "n", *btaps] if wfmt == "IOX" else [*btaps, "n", wic]
    else:  # OIX (OC, IC/G, K...), XIO (K..., IC/G, OC)
        woc = f"z * {ocg} + n" if groups > 1 else "n"
        b_index = [woc, bc, *btaps] if wfmt == "OIX" else [*btaps, bc, woc]

    d_lines, dm = split_index("m", (batch, *out_sp), "d_m")
    chan = f"z * {ocg} + n" if groups > 1 else "n"
    d_index = [dm[0], chan, *dm[1:]] if fmt == "NCX" else [*dm, chan]
    return Geometry(groups, batch * math.prod(out_sp), ocg, math.prod(kernel) * icg, (),
                    IndexCode(tuple(a_lines), tuple(a_index), " && ".join(valid) or None),
                    IndexCode(tuple(b_lines), tuple(b_index)),
                    IndexCode(tuple(d_lines), tuple(d_index)), chan)
