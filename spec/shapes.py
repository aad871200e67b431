"""Shape inference for the ops the pages name.

Each function takes an op and its input shapes, and returns its output shapes; an attribute the
op leaves out reads as its schema default (`fusionspec.spec.attrs`), so an op not yet finalized
infers as its finalized form does. A shape may be None (rank unknown) and a dim may be negative
(size unknown): inference infers what it can and leaves the rest unknown, as oneDNN does.
Contradictions raise `InferenceFailure`.

The arithmetic follows oneDNN's shape inference (graph-style dilations, auto_pad rules,
``data_format`` NXC/NCX, weight formats OIX/XIO for Convolution and IOX/XOI for ConvTranspose).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

from .attrs import attr_value
from .ir import UNKNOWN_DIM, Op
from .schema import InferenceFailure, Shape

__all__ = [
    "broadcast_shapes",
    "pads_for",
    "channel_axis",
    "spatial_dims",
    "filled_default",
    "MAX_NDIMS",
    "infer_identity",
    "infer_elementwise",
    "infer_bias_add",
    "infer_bias_add_backward",
    "infer_reduce",
    "infer_conv",
    "infer_conv_transpose",
    "infer_matmul",
    "infer_pool",
    "infer_interpolate",
    "infer_softmax",
]

U = UNKNOWN_DIM
#: oneDNN's DNNL_MAX_NDIMS: it fills defaulted per-dim attributes (ConvTranspose output_padding,
#: MaxPool dilations) with this many values, and its graph dumps carry them that way.
MAX_NDIMS = 12


#: The largest output extent shape inference produces from attribute values.
_DIM_MAX = 2**31 - 1


def _known(d: int) -> bool:
    return d >= 0


def _f32(x: float) -> float:
    """`x` rounded to the nearest float32 (the f64 product of two f32 values is exact, so one
    rounding gives C's f32 product)."""
    return float(struct.unpack("f", struct.pack("f", x))[0])


def _ints(op: Op, name: str) -> tuple[int, ...]:
    value = attr_value(op, name)
    assert isinstance(value, tuple)
    return tuple(int(v) for v in value)


def _given(op: Op, name: str) -> tuple[float, ...]:
    """An optional list attribute without a default (Interpolate's sizes and scales, the zero
    points of quantization): its values, or none when the op leaves it out."""
    value = op.attrs.get(name)
    if value is None:
        return ()
    assert isinstance(value, tuple)
    return value


def _given_ints(op: Op, name: str) -> tuple[int, ...]:
    return tuple(int(v) for v in _given(op, name))


def _int(op: Op, name: str) -> int:
    value = attr_value(op, name)
    assert isinstance(value, int)
    return value


def _str(op: Op, name: str) -> str:
    value = attr_value(op, name)
    assert isinstance(value, str)
    return value


def broadcast_shapes(a: Shape, b: Shape, *, auto_broadcast: str = "numpy") -> Shape:
    """NumPy (right-aligned, two-way) broadcasting; with "none" the shapes must be equal."""
    if a is None or b is None:
        return None
    if auto_broadcast == "none":
        if len(a) != len(b) or any(_known(x) and _known(y) and x != y for x, y in zip(a, b)):
            raise InferenceFailure(
                f"shapes {list(a)} and {list(b)} differ and auto_broadcast is 'none'")
        return tuple(x if _known(x) else y for x, y in zip(a, b))
    rank = max(len(a), len(b))
    pa = (1,) * (rank - len(a)) + a
    pb = (1,) * (rank - len(b)) + b
    out: list[int] = []
    for x, y in zip(pa, pb):
        if _known(x) and _known(y):
            if x != y and 1 not in (x, y):
                raise InferenceFailure(
                    f"shapes {list(a)} and {list(b)} do not broadcast (numpy rules)")
            out.append(y if x == 1 else x)  # NumPy: 1 stretches to the other, even to 0
        elif _known(x):
            out.append(x if x != 1 else U)
        elif _known(y):
            out.append(y if y != 1 else U)
        else:
            out.append(U)
    return tuple(out)


def channel_axis(data_format: str, ndim: int) -> int:
    """The channel axis: 1 for NCX, the last for NXC (oneDNN's default)."""
    return 1 if data_format == "NCX" else ndim - 1


def spatial_dims(shape: tuple[int, ...], data_format: str) -> tuple[int, ...]:
    return shape[2:] if data_format == "NCX" else shape[1:-1]


def _make_data_shape(data_format: str, n: int, c: int, sp: Sequence[int]) -> tuple[int, ...]:
    return (n, c, *sp) if data_format == "NCX" else (n, *sp, c)


def pads_for(op: Op, src_sp: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
             dilations: Sequence[int], *, transposed: bool = False,
             ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """pads_begin/pads_end after applying `auto_pad` (which overrides the explicit pads)."""
    auto_pad = str(attr_value(op, "auto_pad"))
    begin, end = _ints(op, "pads_begin"), _ints(op, "pads_end")
    nsp = len(src_sp)
    begin = begin or (0,) * nsp
    end = end or (0,) * nsp
    if auto_pad == "None":
        return begin, end
    if auto_pad == "VALID":
        return (0,) * nsp, (0,) * nsp
    new_begin: list[int] = []
    new_end: list[int] = []
    for i in range(nsp):
        eff_k = (kernel[i] - 1) * dilations[i] + 1
        if transposed or not _known(src_sp[i]) or src_sp[i] % strides[i] == 0:
            total = eff_k - strides[i]
        else:
            total = eff_k - src_sp[i] % strides[i]
        total = max(total, 0)
        b = (total + 1) // 2 if auto_pad == "SAME_LOWER" else total // 2
        new_begin.append(b)
        new_end.append(total - b)
    return tuple(new_begin), tuple(new_end)


def filled_default(values: tuple[int, ...], fill: int, n: int) -> tuple[int, ...]:
    """`values`, or `n` copies of `fill` when `values` is oneDNN's filled-in default form
    (MAX_NDIMS copies of `fill`), which stands for "one `fill` per spatial dim"."""
    if len(values) == MAX_NDIMS and n != MAX_NDIMS and all(v == fill for v in values):
        return (fill,) * n
    return values


def _check_len(name: str, values: Sequence[int], n: int) -> None:
    if len(values) != n:
        raise InferenceFailure(f"{name} has {len(values)} values, the data has {n} spatial dims",
                               where=f"attribute {name}")


def infer_identity(op: Op, shapes: Sequence[Shape]) -> Sequence[Shape]:
    return [shapes[0]] * max(len(op.outputs), 1)


def infer_elementwise(op: Op, shapes: Sequence[Shape]) -> Sequence[Shape]:
    mode = str(attr_value(op, "auto_broadcast"))
    return [broadcast_shapes(shapes[0], shapes[1], auto_broadcast=mode)]


def infer_bias_add(op: Op, shapes: Sequence[Shape]) -> Sequence[Shape]:
    src, bias = shapes[0], shapes[1]
    if src is not None:
        if len(src) < 2:
            raise InferenceFailure(f"src must have rank >= 2, got {list(src)}", where="input 0")
        if bias is not None:
            if len(bias) != 1:
                raise InferenceFailure(f"bias must be 1-D, got {list(bias)}", where="input 1")
            c = src[channel_axis(_str(op, "data_format"), len(src))]
            if _known(c) and _known(bias[0]) and c != bias[0]:
                raise InferenceFailure(
                    f"bias length {bias[0]} differs from the {c} channels of src",
                    where="input 1")
    return [src]


def infer_bias_add_backward(op: Op, shapes: Sequence[Shape]) -> Sequence[Shape]:
    src = shapes[0]
    if src is None:
        return [None]
    if len(src) < 2:
        raise InferenceFailure(f"diff_dst must have rank >= 2, got {list(src)}", where="input 0")
    return [(src[channel_axis(_str(op, "data_format"), len(src))],)]


def infer_reduce(op: Op, shapes: Sequence[Shape]) -> Sequence[Shape]:
    src = shapes[0]
    if src is None:
        return [None]
    if len(shapes) > 1 and not op.attrs.get("axes"):
        # The axes are the optional input's data: only the declared output can say the shape.
        return [None]
    rank = len(src)
    axes = _ints(op, "axes")
    norm: set[int] = set()
    for a in axes:
        if not -rank <= a < rank:
            raise InferenceFailure(f"axis {a} is out of range for rank {rank}",
                                   where="attribute axes")
        if a % rank in norm:
            raise InferenceFailure(f"axis {a % rank} is listed twice in axes {list(axes)}",
                                   where="attribute axes")
        norm.add(a % rank)
    keep = bool(attr_value(op, "keep_dims"))
    if keep:
        return [tuple(1 if i in norm else d for i, d in enumerate(src))]
    return [tuple(d for i, d in enumerate(src) if i not in norm)]


def _conv_out(size: int, k: int, s: int, d: int, pb: int, pe: int) -> int:
    if not _known(size):
        return U
    out = (size + pb + pe - ((k - 1) * d + 1)) // s + 1
    if out <= 0:
        raise InferenceFailure(
            f"output spatial size would be {out} (input {size}, kernel {k}, stride {s}, "
            f"dilation {d}, pads {pb}/{pe})")
    return out


def _weight_dims(fmt: str, w: tuple[int, ...]) -> tuple[int, int, tuple[int, ...]]:
    """(first-named channel dim, second-named channel dim, spatial) for OIX/XIO/IOX/XOI."""
    if fmt in ("OIX", "IOX"):
        return w[0], w[1], w[2:]
    return w[-1], w[-2], w[:-2]  # XIO -> (O, I, X); XOI -> (I, O, X)


def _check_positive(op: Op, *names: str) -> None:
    for name in names:
        values = _ints(op, name)
        if any(v <= 0 for v in values):
            raise InferenceFailure(f"{name} must be positive, got {list(values)}",
                                   where=f"attribute {name}")


def _conv_common(op: Op, src: tuple[int, ...], wei: tuple[int, ...]) -> tuple[str, str, int]:
    """Checks Convolution and ConvTranspose share; returns (data_format, weights_format,
    groups)."""
    fmt, wfmt, g = _str(op, "data_format"), _str(op, "weights_format"), _int(op, "groups")
    if len(src) < 3 or len(wei) != len(src):
        raise InferenceFailure(f"src {list(src)} and weights {list(wei)} must have the same "
                               "rank, at least 3")
    if g <= 0:
        raise InferenceFailure(f"groups must be positive, got {g}", where="attribute groups")
    _check_positive(op, "strides", "dilations")
    return fmt, wfmt, g


def _check_bias(shapes: Sequence[Shape], channels: int) -> None:
    """The optional bias input (port 2) is 1-D with one value per output channel."""
    bias = shapes[2] if len(shapes) > 2 else None
    if bias is not None and (len(bias) != 1 or (
            _known(bias[0]) and _known(channels) and bias[0] != channels)):
        raise InferenceFailure(f"bias {list(bias)} must be 1-D of length {channels}",
                               where="input 2 (bias)")


def infer_conv(op: Op, shapes: Sequence[Shape]) -> Sequence[Shape]:
    src, wei = shapes[0], shapes[1]
    if src is None or wei is None:
        return [None]
    fmt, wfmt, g = _conv_common(op, src, wei)
    o, i, k = _weight_dims(wfmt, wei)
    c = src[channel_axis(fmt, len(src))]
    if _known(c) and _known(i) and c != i * g:
        raise InferenceFailure(f"src has {c} channels but weights take {i} x {g} groups",
                               where="input 1 (weights)")
    if _known(o) and o % g != 0:
        raise InferenceFailure(f"{o} output channels are not divisible by {g} groups",
                               where="attribute groups")
    sp = spatial_dims(src, fmt)
    strides, dil = _ints(op, "strides"), _ints(op, "dilations")
    for name, vals in (("strides", strides), ("dilations", dil)):
        _check_len(name, vals, len(sp))
    pb, pe = pads_for(op, sp, k, strides, dil)
    _check_len("pads_begin", pb, len(sp))
    _check_len("pads_end", pe, len(sp))
    out_sp = [_conv_out(sp[j], k[j], strides[j], dil[j], pb[j], pe[j]) for j in range(len(sp))]
    _check_bias(shapes, o)
    return [_make_data_shape(fmt, src[0], o, out_sp)]


def infer_conv_transpose(op: Op, shapes: Sequence[Shape]) -> Sequence[Shape]:
    src, wei = shapes[0], shapes[1]
    if src is None or wei is None:
        return [None]
    fmt, wfmt, g = _conv_common(op, src, wei)
    # IOX = (IC, OC/G, K...), XOI = (K..., OC/G, IC): see docs/semantics.md, Conventions common to
    # all ops (weights formats).
    if wfmt == "IOX":
        i, o_g, k = wei[0], wei[1], wei[2:]
    else:
        i, o_g, k = wei[-1], wei[-2], wei[:-2]
    c = src[channel_axis(fmt, len(src))]
    if _known(c) and _known(i) and c != i:
        raise InferenceFailure(f"src has {c} channels but weights take {i}",
                               where="input 1 (weights)")
    if _known(c) and c % g != 0:
        raise InferenceFailure(f"{c} input channels are not divisible by {g} groups",
                               where="attribute groups")
    sp = spatial_dims(src, fmt)
    strides, dil = _ints(op, "strides"), _ints(op, "dilations")
    out_pad = filled_default(_ints(op, "output_padding"), 0, len(sp)) or (0,) * len(sp)
    for name, vals in (("strides", strides), ("dilations", dil), ("output_padding", out_pad)):
        _check_len(name, vals, len(sp))
    pb, pe = pads_for(op, sp, k, strides, dil, transposed=True)
    _check_len("pads_begin", pb, len(sp))
    _check_len("pads_end", pe, len(sp))
    out_sp: list[int] = []
    for j in range(len(sp)):
        if not _known(sp[j]):
            out_sp.append(U)
            continue
        size = strides[j] * (sp[j] - 1) + (k[j] - 1) * dil[j] + 1 + out_pad[j] - pb[j] - pe[j]
        if size <= 0:
            raise InferenceFailure(f"output spatial size would be {size}")
        out_sp.append(size)
    oc = o_g * g if _known(o_g) else U
    _check_bias(shapes, oc)
    return [_make_data_shape(fmt, src[0], oc, out_sp)]


def infer_matmul(op: Op, shapes: Sequence[Shape]) -> Sequence[Shape]:
    a, b = shapes[0], shapes[1]
    if a is None or b is None:
        return [None]
    if not a or not b:
        raise InferenceFailure("MatMul operands must have rank >= 1")
    ta = bool(attr_value(op, "transpose_a")) and len(a) >= 2
    tb = bool(attr_value(op, "transpose_b")) and len(b) >= 2
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if ta:
        a2 = (*a2[:-2], a2[-1], a2[-2])
    if tb:
        b2 = (*b2[:-2], b2[-1], b2[-2])
    m, ka = a2[-2], a2[-1]
    kb, n = b2[-2], b2[-1]
    if _known(ka) and _known(kb) and ka != kb:
        raise InferenceFailure(f"inner dims differ: src {list(a)} x weights {list(b)}"
                               f" (transpose_a={ta}, transpose_b={tb})")
    try:
        batch = broadcast_shapes(a2[:-2], b2[:-2])
    except InferenceFailure as exc:
        raise InferenceFailure(f"batch dims do not broadcast: {exc}") from None
    assert batch is not None
    out: tuple[int, ...] = (*batch, m, n)
    if len(a) == 1:
        out = (*out[:-2], out[-1])
    if len(b) == 1:
        out = out[:-1]
    bias = shapes[2] if len(shapes) > 2 else None
    known = bool(out) and all(_known(d) for d in out)
    if bias is not None and known and broadcast_shapes(out, bias) != out:
        raise InferenceFailure(f"bias {list(bias)} does not broadcast to dst "
                                   f"{list(out)}", where="input 2 (bias)")
    return [out]


def infer_pool(op: Op, shapes: Sequence[Shape]) -> Sequence[Shape]:
    src = shapes[0]
    if src is None:
        return [None]
    fmt = _str(op, "data_format")
    if len(src) < 3:
        raise InferenceFailure(f"src must have rank >= 3, got {list(src)}", where="input 0")
    sp = spatial_dims(src, fmt)
    kernel, strides = _ints(op, "kernel"), _ints(op, "strides")
    # Only MaxPool has dilations; an AvgPool window is dense.
    given = _ints(op, "dilations") if op.kind == "MaxPool" else ()
    dil = filled_default(given, 1, len(sp)) or (1,) * len(sp)
    for name, vals in (("kernel", kernel), ("strides", strides), ("dilations", dil)):
        _check_len(name, vals, len(sp))
    _check_positive(op, "kernel", "strides")
    pb, pe = pads_for(op, sp, kernel, strides, dil)
    _check_len("pads_begin", pb, len(sp))
    _check_len("pads_end", pe, len(sp))
    ceil = attr_value(op, "rounding_type") == "ceil"
    out_sp: list[int] = []
    for j in range(len(sp)):
        if not _known(sp[j]):
            out_sp.append(U)
            continue
        span = sp[j] + pb[j] + pe[j] - ((kernel[j] - 1) * dil[j] + 1)
        size = (-(-span // strides[j]) if ceil else span // strides[j]) + 1
        if size <= 0:
            raise InferenceFailure(f"output spatial size would be {size}")
        out_sp.append(size)
    c = src[channel_axis(fmt, len(src))]
    return [_make_data_shape(fmt, src[0], c, out_sp)]


def infer_interpolate(op: Op, shapes: Sequence[Shape]) -> Sequence[Shape]:
    src = shapes[0]
    if src is None:
        return [None]
    fmt = _str(op, "data_format")
    if len(src) < 3:
        raise InferenceFailure(f"src must have rank >= 3, got {list(src)}", where="input 0")
    sp = spatial_dims(src, fmt)
    c = src[channel_axis(fmt, len(src))]
    if len(shapes) > 1:
        return [_make_data_shape(fmt, src[0], c, [U] * len(sp))]
    sizes = _given_ints(op, "sizes")
    scales = _given(op, "scales")
    if sizes:
        _check_len("sizes", sizes, len(sp))
        out_sp = list(sizes)
    else:
        _check_len("scales", [0] * len(scales), len(sp))
        if any(not s > 0 for s in scales):
            raise InferenceFailure(f"scales must be positive, got {list(scales)}",
                                   where="attribute scales")
        # oneDNN multiplies in f32, float(in) * scale, then truncates: 10 x 0.7 gives 7, not 6.
        sizes_f = [_f32(float(d) * _f32(float(s))) if _known(d) else float(U)
                   for d, s in zip(sp, scales)]
        if any(not math.isfinite(v) or v > _DIM_MAX for v in sizes_f):
            raise InferenceFailure(f"scales {list(scales)} give an output size past "
                                   f"{_DIM_MAX}", where="attribute scales")
        out_sp = [int(v) if _known(d) else U for v, d in zip(sizes_f, sp)]
        if any(_known(d) and d < 1 for d in out_sp):
            raise InferenceFailure(f"scales {list(scales)} give an empty output "
                                   f"{out_sp}", where="attribute scales")
    return [_make_data_shape(fmt, src[0], c, out_sp)]


def infer_softmax(op: Op, shapes: Sequence[Shape]) -> Sequence[Shape]:
    src = shapes[0]
    if src is not None:
        axis = _int(op, "axis")
        if not -len(src) <= axis < len(src):
            raise InferenceFailure(f"axis {axis} is out of range for rank {len(src)}",
                                   where="attribute axis")
    if len(op.outputs) < 2:
        return [src]
    stats = None if src is None else tuple(1 if i == _int(op, "axis") % len(src) else d
                                           for i, d in enumerate(src))
    return [src, stats]
