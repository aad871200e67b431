"""Random but valid shapes and attributes for the ops that head a pattern instance.

Each ``draw_*`` function draws what one op kind needs before it can be wired: its input
shapes, its attributes and a few words for the case description. Values are chosen so that the
graph is valid under the op schemas *and* the comparison against the reference stays
meaningful (benchdnn's filling is the model):

- tensors stay small (at most a couple of thousand elements);
- convolution and pooling pads never exceed the dilated kernel, so no window lies wholly in
  padding (an average over nothing, a max over -inf);
- scales are powers of two and zero points small integers, so quantization is exact;
- Clamp has min <= max, Pow a small integer exponent, Elu/LeakyReLU/SoftPlus powers of two
  (SoftPlus's beta of either sign).

Attributes equal to a schema default are sometimes left out, so defaults are exercised too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from fusionspec.spec.attrs import attr_value_in
from fusionspec.spec.graph import AttrValue, Op
from fusionspec.spec.shapes import channel_axis, pads_for

__all__ = ["MAX_RANK", "Layout", "ConvSpec", "PoolSpec", "MatMulSpec", "InterpolateSpec",
           "HeadSpec", "ReduceSpec", "POW2",
           "draw_layout", "draw_conv", "draw_pool", "draw_matmul", "draw_interpolate",
           "draw_reduce", "draw_softmax", "draw_unary_attrs", "draw_qparams", "maybe_default"]

#: Scales: powers of two, so that x/scale and q*scale are exact in f32.
POW2 = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0)
FORMATS = ("NCX", "NXC")


@dataclass(frozen=True)
class Layout:
    """A data tensor's shape and which axis is its channel axis (`data_format`)."""

    shape: tuple[int, ...]
    data_format: str

    @property
    def channel_axis(self) -> int:
        return channel_axis(self.data_format, len(self.shape)) if len(self.shape) > 1 else 0

    @property
    def channels(self) -> int:
        return self.shape[self.channel_axis] if self.shape else 1


@dataclass(frozen=True)
class HeadSpec:
    """What a head op needs: its src layout, attributes, and words for the description."""

    src: Layout
    attrs: dict[str, AttrValue]
    words: str
    features: dict[str, str | int] = field(default_factory=dict)


@dataclass(frozen=True)
class ConvSpec(HeadSpec):
    weights: tuple[int, ...] = ()
    #: axis of `weights` holding output channels (per-channel weight quantization)
    weights_oc_axis: int = 0
    #: length of the bias input when the op takes one, else None
    bias: int | None = None


@dataclass(frozen=True)
class PoolSpec(HeadSpec):
    pass


@dataclass(frozen=True)
class InterpolateSpec(HeadSpec):
    #: the output's spatial sizes when they come from a ``sizes`` input tensor (shape inference
    #: cannot know them then), else None
    sizes_input: tuple[int, ...] | None = None


@dataclass(frozen=True)
class ReduceSpec(HeadSpec):
    #: whether the axes come from the optional input (filled with the axes of `attrs`, which
    #: the op then leaves out)
    axes_input: bool = False


@dataclass(frozen=True)
class MatMulSpec(HeadSpec):
    weights: tuple[int, ...] = ()
    weights_oc_axis: int = 0
    bias: tuple[int, ...] | None = None
    #: data_format giving the dst's channel axis for BiasAdd and per-channel operands
    chain_format: str = "NXC"


def maybe_default(draw: st.DrawFn, attrs: dict[str, AttrValue], kind: str, name: str,
                  value: AttrValue) -> None:
    """Set attribute `name` of an op of `kind`; when `value` is the schema default, sometimes
    leave it to the default."""
    if value != attr_value_in(kind, {}, name) or draw(st.booleans(),
                                                      label=f"write default {name}"):
        attrs[name] = value


def _data_shape(fmt: str, n: int, c: int, spatial: tuple[int, ...]) -> tuple[int, ...]:
    return (n, c, *spatial) if fmt == "NCX" else (n, *spatial, c)


#: The largest rank the generator gives a tensor (tensors stay small); the coverage model asks
#: each op for every rank its schema accepts up to this one.
MAX_RANK = 5
#: (batch, channel, spatial) size ranges by rank, keeping a tensor near 1000 elements at most.
_DIMS = {2: ((1, 6), (1, 16), (1, 1)), 3: ((1, 2), (1, 8), (1, 16)),
         4: ((1, 2), (1, 6), (1, 8)), 5: ((1, 2), (1, 4), (1, 5))}


def draw_layout(draw: st.DrawFn, ranks: tuple[int, ...] = (4, 2, 3, 5, 1)) -> Layout:
    """An activation tensor of rank in `ranks` and its data_format (a rank-1 tensor is its
    own channel axis: NXC)."""
    rank = draw(st.sampled_from(ranks), label="rank")
    if rank == 1:
        return Layout((draw(st.integers(1, 16), label="channels"),), "NXC")
    fmt = draw(st.sampled_from(FORMATS), label="data_format")
    (n0, n1), (c0, c1), (s0, s1) = _DIMS[rank]
    n = draw(st.integers(n0, n1), label="batch")
    c = draw(st.integers(c0, c1), label="channels")
    spatial = tuple(draw(st.integers(s0, s1), label="spatial") for _ in range(rank - 2))
    return Layout(_data_shape(fmt, n, c, spatial), fmt)


def _spatial_params(draw: st.DrawFn, nsp: int, dilate: bool) -> tuple[list[int], ...]:
    kernel = [draw(st.integers(1, 3), label="kernel") for _ in range(nsp)]
    strides = [draw(st.integers(1, 2), label="stride") for _ in range(nsp)]
    dil = [draw(st.integers(1, 2), label="dilation") if dilate and k > 1 else 1 for k in kernel]
    return kernel, strides, dil


def _pads(draw: st.DrawFn, auto_pad: str, eff: list[int], transposed: bool = False,
          ) -> tuple[list[int], list[int]]:
    """Explicit pads below the dilated kernel (for a transposed convolution, both together:
    its output then keeps at least one element)."""
    if auto_pad != "None":
        return [0] * len(eff), [0] * len(eff)
    begin = [draw(st.integers(0, e - 1), label="pad begin") for e in eff]
    end = [draw(st.integers(0, e - 1 - (b if transposed else 0)), label="pad end")
           for e, b in zip(eff, begin)]
    return begin, end


def _bias_input(draw: st.DrawFn, bias: bool | None) -> bool:
    """Whether the op takes a bias input: `bias` when given, else drawn (rarely)."""
    if bias is not None:
        return bias
    return draw(st.sampled_from((False, False, True)), label="bias input")


def draw_conv(draw: st.DrawFn, transposed: bool, bias: bool | None = None) -> ConvSpec:
    """A Convolution (or ConvTranspose) with groups, strides, pads, dilations and formats;
    with a bias input when `bias` (drawn when None)."""
    kind = "ConvTranspose" if transposed else "Convolution"
    nsp = draw(st.sampled_from((2, 1, 3)), label="spatial dims")
    fmt = draw(st.sampled_from(FORMATS), label="data_format")
    grouping = draw(st.sampled_from(("1", "2", "depthwise")), label="groups")
    if grouping == "depthwise":
        groups = draw(st.integers(2, 4), label="channels")
        ic_g, oc_g = 1, draw(st.integers(1, 2), label="depth multiplier")
    else:
        groups = int(grouping)
        ic_g = draw(st.integers(1, 4 // groups + 1), label="in channels per group")
        oc_g = draw(st.integers(1, 4 // groups + 1), label="out channels per group")
    kernel, strides, dil = _spatial_params(draw, nsp, dilate=True)
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dil)]
    auto_pad = draw(st.sampled_from(("None", "None", "SAME_UPPER", "SAME_LOWER", "VALID")),
                    label="auto_pad")
    begin, end = _pads(draw, auto_pad, eff, transposed)
    if transposed:
        # A transposed convolution's output is larger than its input: keep the input small.
        top = {1: 8, 2: 4, 3: 2}[nsp]
        spatial = tuple(draw(st.integers(1, top), label="spatial") for _ in eff)
    else:
        top = {1: 12, 2: 8, 3: 5}[nsp]
        spatial = tuple(draw(st.integers(e if auto_pad == "VALID" else max(1, e - b - p),
                                         max(top, e)), label="spatial")
                        for e, b, p in zip(eff, begin, end))
    batch = draw(st.integers(1, 2), label="batch")
    c = ic_g * groups
    attrs: dict[str, AttrValue] = {"strides": tuple(strides), "pads_begin": tuple(begin),
                                   "pads_end": tuple(end), "dilations": tuple(dil)}
    maybe_default(draw, attrs, kind, "auto_pad", auto_pad)
    maybe_default(draw, attrs, kind, "groups", groups)
    maybe_default(draw, attrs, kind, "data_format", fmt)
    formats = ("IOX", "XOI") if transposed else ("OIX", "XIO")
    wfmt = draw(st.sampled_from(formats), label="weights_format")
    maybe_default(draw, attrs, kind, "weights_format", wfmt)
    k = tuple(kernel)
    if transposed:
        pads_out = [draw(st.integers(0, s - 1), label="output_padding") for s in strides]
        if any(pads_out):
            attrs["output_padding"] = tuple(pads_out)
        weights = (c, oc_g, *k) if wfmt == "IOX" else (*k, oc_g, c)
        oc_axis = 1 if wfmt == "IOX" else nsp
    else:
        weights = (oc_g * groups, ic_g, *k) if wfmt == "OIX" else (*k, ic_g, oc_g * groups)
        oc_axis = 0 if wfmt == "OIX" else nsp + 1
    bias_len = oc_g * groups if _bias_input(draw, bias) else None
    words = (f"{kind} {fmt} {'x'.join(map(str, kernel))}"
             + (f" s{'x'.join(map(str, strides))}" if any(s > 1 for s in strides) else "")
             + (f" d{'x'.join(map(str, dil))}" if any(d > 1 for d in dil) else "")
             + (f" g{groups}" if groups > 1 else "")
             + (f" {auto_pad}" if auto_pad != "None" else "") + f" {wfmt}"
             + (" +bias" if bias_len else ""))
    features: dict[str, str | int] = {
        "data_format": fmt, "weights_format": wfmt, "groups": grouping, "auto_pad": auto_pad,
        "spatial_dims": nsp, "bias_input": "yes" if bias_len else "no"}
    return ConvSpec(Layout(_data_shape(fmt, batch, c, spatial), fmt), attrs, words, features,
                    weights, oc_axis, bias_len)


def _window_ok(op: Op, size: tuple[int, ...], kernel: list[int], strides: list[int],
               dil: list[int], ceil: bool) -> bool:
    """Whether every pooling window holds at least one element of the input."""
    begin, end = pads_for(op, size, kernel, strides, dil)
    for n, k, s, d, b, e in zip(size, kernel, strides, dil, begin, end):
        span = n + b + e - ((k - 1) * d + 1)
        out = (-(-span // s) if ceil else span // s) + 1
        for o in range(out):
            if not any(0 <= o * s - b + j * d < n for j in range(k)):
                return False
    return True


def draw_pool(draw: st.DrawFn, kind: str) -> PoolSpec:
    """An AvgPool or MaxPool whose windows never fall wholly into padding."""
    nsp = draw(st.sampled_from((2, 1, 3)), label="spatial dims")
    fmt = draw(st.sampled_from(FORMATS), label="data_format")
    kernel, strides, dil = _spatial_params(draw, nsp, dilate=kind == "MaxPool")
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dil)]
    auto_pad = draw(st.sampled_from(("None", "None", "SAME_UPPER", "SAME_LOWER", "VALID")),
                    label="auto_pad")
    begin, end = _pads(draw, auto_pad, eff)
    top = {1: 12, 2: 8, 3: 5}[nsp]
    spatial = tuple(draw(st.integers(e, max(top, e)), label="spatial") for e in eff)
    rounding = draw(st.sampled_from(("floor", "ceil")), label="rounding_type")
    attrs: dict[str, AttrValue] = {"kernel": tuple(kernel), "strides": tuple(strides),
                                   "pads_begin": tuple(begin), "pads_end": tuple(end)}
    maybe_default(draw, attrs, kind, "auto_pad", auto_pad)
    maybe_default(draw, attrs, kind, "rounding_type", rounding)
    maybe_default(draw, attrs, kind, "data_format", fmt)
    if kind == "AvgPool":
        attrs["exclude_pad"] = draw(st.booleans(), label="exclude_pad")
    elif any(d > 1 for d in dil) or draw(st.booleans(), label="write dilations"):
        attrs["dilations"] = tuple(dil)
    probe = Op(0, kind, (), (), attrs)
    if not _window_ok(probe, spatial, kernel, strides, dil, rounding == "ceil"):
        # Fall back to explicit zero padding and floor rounding: every window is inside.
        attrs.update(pads_begin=(0,) * nsp, pads_end=(0,) * nsp, auto_pad="None",
                     rounding_type="floor")
        auto_pad, rounding = "None", "floor"
    c = draw(st.integers(1, 6), label="channels")
    batch = draw(st.integers(1, 2), label="batch")
    words = (f"{kind} {fmt} k{'x'.join(map(str, kernel))} s{'x'.join(map(str, strides))}"
             + (f" {auto_pad}" if auto_pad != "None" else "") + f" {rounding}"
             + (" exclude_pad" if attrs.get("exclude_pad") else ""))
    features: dict[str, str | int] = {"data_format": fmt, "auto_pad": auto_pad,
                                      "rounding_type": rounding, "spatial_dims": nsp}
    if kind == "AvgPool":
        features["exclude_pad"] = "yes" if attrs["exclude_pad"] else "no"
    return PoolSpec(Layout(_data_shape(fmt, batch, c, spatial), fmt), attrs, words, features)


def draw_matmul(draw: st.DrawFn, bias: bool | None = None, vector_dst: bool = True,
                ) -> MatMulSpec:
    """A MatMul with transposes, broadcast batch dims and 1-D operands; with a bias input
    when `bias` (drawn when None); with a 1-D dst only when `vector_dst` (a BiasAdd after it
    needs rank 2)."""
    # A 1-D operand (vector times matrix, matrix times vector) is drawn as often as a batched
    # one: the matrix side may still carry batch dims, which the vector broadcasts against.
    rank = draw(st.sampled_from((2, 3, 4, 1, 5)), label="src rank")
    if rank == 1:
        w_rank = draw(st.sampled_from((2, 3) if vector_dst else (3,)), label="weights rank")
    elif bias or (rank == 2 and not vector_dst):
        w_rank = draw(st.sampled_from((2, rank)), label="weights rank")
    else:
        w_rank = draw(st.sampled_from((2, rank, 1)), label="weights rank")
    m, k, n = (draw(st.integers(1, 8), label=d) for d in "MKN")
    batch_a: list[int] = []
    batch_w: list[int] = []
    for _ in range(max(rank, w_rank) - 2):
        b = draw(st.integers(1, 3 if rank < 5 else 2), label="batch dim")
        pair = draw(st.sampled_from(((b, b), (b, 1), (1, b))), label="batch broadcast")
        batch_a.append(pair[0])
        batch_w.append(pair[1])
    if w_rank <= 2:
        batch_w = []
    if rank <= 2:
        batch_a = []
    ta = draw(st.booleans(), label="transpose_a")
    tb = draw(st.booleans(), label="transpose_b")
    # A transpose of a 1-D operand is ignored (the spec's shape rule): drawn all the same.
    src = (k,) if rank == 1 else (*batch_a, *((k, m) if ta else (m, k)))
    weights = (k,) if w_rank == 1 else (*batch_w, *((n, k) if tb else (k, n)))
    attrs: dict[str, AttrValue] = {}
    maybe_default(draw, attrs, "MatMul", "transpose_a", ta)
    maybe_default(draw, attrs, "MatMul", "transpose_b", tb)
    # Modes that only license a lower-precision sum: the exact value stays right under each.
    maybe_default(draw, attrs, "MatMul", "accumulation_mode", draw(st.sampled_from(
        ("strict", "relaxed", "any", "f32")), label="accumulation_mode"))
    bias_shape: tuple[int, ...] | None = None
    if w_rank != 1 and _bias_input(draw, bias):
        shapes = ((n,),) if rank == 1 else ((n,), (1, n))
        bias_shape = draw(st.sampled_from(shapes), label="bias shape")
    fmt = draw(st.sampled_from(FORMATS), label="channel axis format")
    words = (f"MatMul {'x'.join(map(str, src))} @ {'x'.join(map(str, weights))}"
             + (" tA" if ta else "") + (" tB" if tb else "")
             + (" +bias" if bias_shape else ""))
    features: dict[str, str | int] = {
        "transpose_a": "yes" if ta else "no", "transpose_b": "yes" if tb else "no",
        "src_rank": rank, "weights_rank": w_rank,
        "batch_broadcast": "yes" if batch_a != batch_w and batch_w else "no",
        "bias_input": "yes" if bias_shape else "no"}
    oc_axis = 0 if w_rank == 1 else len(weights) - (2 if tb else 1)
    return MatMulSpec(Layout(src, fmt), attrs, words, features, weights, oc_axis, bias_shape,
                      fmt)


def draw_interpolate(draw: st.DrawFn) -> InterpolateSpec:
    """An Interpolate sized by a ``sizes`` or ``scales`` attribute or a ``sizes`` input."""
    layout = draw_layout(draw, (4, 3, 5))
    nsp = len(layout.shape) - 2
    spatial = layout.shape[2:] if layout.data_format == "NCX" else layout.shape[1:-1]
    modes = {1: ("nearest", "linear"), 2: ("nearest", "linear", "bilinear"),
             3: ("nearest", "linear", "trilinear")}[nsp]
    mode = draw(st.sampled_from(modes), label="mode")
    attrs: dict[str, AttrValue] = {"mode": mode}
    source = draw(st.sampled_from(("sizes", "scales", "sizes input")), label="size source")
    sizes_input: tuple[int, ...] | None = None
    if source == "scales":
        scales = tuple(draw(st.sampled_from((1.0, 1.5, 2.0, 0.5) if d > 1 else (1.0, 2.0)),
                            label="scale") for d in spatial)
        attrs["scales"] = scales
        detail = "x" + "x".join(f"{s:g}" for s in scales)
    else:
        sizes = tuple(draw(st.integers(1, min(2 * d + 1, 12)), label="size") for d in spatial)
        detail = "to " + "x".join(map(str, sizes))
        if source == "sizes":
            attrs["sizes"] = sizes
        else:
            sizes_input = sizes
    ctm = draw(st.sampled_from(("half_pixel", "align_corners")),
               label="coordinate_transformation_mode")
    maybe_default(draw, attrs, "Interpolate", "coordinate_transformation_mode", ctm)
    maybe_default(draw, attrs, "Interpolate", "data_format", layout.data_format)
    words = (f"Interpolate {layout.data_format} {mode} {detail}"
             + (" (sizes input)" if sizes_input else "") + (f" {ctm}" if ctm != "half_pixel"
                                                            else ""))
    features: dict[str, str | int] = {"data_format": layout.data_format, "mode": mode,
                                      "size_source": source, "spatial_dims": nsp,
                                      "coordinate_transformation_mode": ctm}
    return InterpolateSpec(layout, attrs, words, features, sizes_input)


def draw_reduce(draw: st.DrawFn, kind: str) -> ReduceSpec:
    """A reduction over a non-empty set of axes (some written negative), given by the
    attribute or the optional axes input."""
    layout = draw_layout(draw, (4, 2, 3, 5, 1))
    rank = len(layout.shape)
    # Reducing the only axis of a rank-1 src away would leave a scalar: it keeps its dims.
    keep = draw(st.booleans(), label="keep_dims") or rank == 1
    axes = draw(st.lists(st.integers(0, rank - 1), min_size=1,
                         max_size=rank if keep else rank - 1, unique=True), label="axes")
    written = tuple(a - rank if draw(st.booleans(), label="negative axis") else a
                    for a in sorted(axes))
    attrs: dict[str, AttrValue] = {"axes": written}
    maybe_default(draw, attrs, kind, "keep_dims", keep)
    # The axes may come from the optional s32 input instead of the attribute.
    from_input = draw(st.sampled_from((False, False, True)), label="axes input")
    words = (f"{kind} axes {list(written)}" + (" (axes input)" if from_input else "")
             + (" keep_dims" if keep else ""))
    return ReduceSpec(layout, attrs, words, {"keep_dims": "yes" if keep else "no",
                                             "reduced_axes": len(axes)}, from_input)


def draw_softmax(draw: st.DrawFn) -> HeadSpec:
    layout = draw_layout(draw, (2, 3, 4, 5))
    rank = len(layout.shape)
    axis = draw(st.sampled_from(range(-rank, rank)), label="axis")
    attrs: dict[str, AttrValue] = {}
    maybe_default(draw, attrs, "SoftMax", "axis", axis)
    mode = draw(st.sampled_from(("none", "inf_as_zero")), label="mode")
    maybe_default(draw, attrs, "SoftMax", "mode", mode)
    return HeadSpec(layout, attrs, f"SoftMax axis {axis}" + (" inf_as_zero" if mode != "none"
                                                             else ""),
                    {"softmax_mode": mode, "axis": axis})


def draw_unary_attrs(draw: st.DrawFn, kind: str) -> dict[str, AttrValue]:
    """Attributes of a unary op that keep it well-defined and its results exact where the
    math allows (powers of two, small integer exponents)."""
    if kind == "Clamp":
        # Either bound of any sign (min <= max): a window wholly below or above zero too.
        low = draw(st.integers(-8, 4), label="clamp min") / 4
        return {"min": low, "max": low + draw(st.integers(0, 8), label="clamp width") / 4}
    if kind == "LeakyReLU":
        # Above 1 as often as below: max(x, alpha*x) equals LeakyReLU only for alpha <= 1.
        return {"alpha": draw(st.sampled_from((0.5, 2.0, 0.25, 1.5, 1.0, 4.0, 0.125, 0.0,
                                               -0.5)), label="alpha")}
    if kind == "Elu":
        return {"alpha": draw(st.sampled_from((0.5, 0.25, 1.0, 2.0, 0.125, 0.0, -0.5)),
                              label="alpha")}
    if kind == "Pow":
        return {"beta": draw(st.sampled_from((2.0, 1.0, 3.0, 0.0, -1.0)), label="beta")}
    if kind == "SoftPlus":
        attrs: dict[str, AttrValue] = {}
        # Negative betas too: the function mirrors (-softplus(-x) scaled), and the switch to
        # x past the exp bound must follow beta's sign.
        maybe_default(draw, attrs, kind, "beta", draw(
            st.sampled_from((1.0, 2.0, -1.0, 0.5, -0.5)), label="beta"))
        return attrs
    if kind == "GELU":
        attrs = {}
        maybe_default(draw, attrs, kind, "mode", draw(
            st.sampled_from(("gelu_erf", "gelu_tanh")), label="mode"))
        return attrs
    return {}


def draw_qparams(draw: st.DrawFn, qdtype: str, *, channels: int | None = None,
                 axis: int = 1, rank: int | None = None,
                 zero_zps: bool = False) -> dict[str, AttrValue]:
    """Quantize/Dequantize attributes: power-of-two scales, small zero points (none for f8;
    per channel, all zero or non-zero and differing between channels; all zero when
    `zero_zps`), per-tensor unless `channels` is given. A
    per-channel `axis` of a rank-`rank` tensor is written negative (counted from the end) as
    often as not."""
    count = channels or 1
    scales = tuple(draw(st.sampled_from(POW2), label="scale") for _ in range(count))
    if count > 1 and draw(st.booleans(), label="uniform scales"):
        # One scale for every channel as often as not: per-channel lists that do not differ
        # are a value class of their own (a kernel may take them for per-tensor).
        scales = scales[:1] * count
    attrs: dict[str, AttrValue] = {"scales": scales}
    if channels is None:
        # Quantize and Dequantize share their attributes and defaults.
        maybe_default(draw, attrs, "Quantize", "qtype", "per_tensor")
    else:
        negative = rank is not None and draw(st.booleans(), label="negative axis")
        attrs.update(qtype="per_channel", axis=axis - rank if negative and rank else axis)
    if qdtype.startswith("f8"):
        return attrs
    low, high = (0, 8) if qdtype == "u8" else (-4, 4)
    if channels is not None and not zero_zps and draw(st.booleans(), label="channel zps"):
        # Non-zero and differing per channel (the spec allows it; oneDNN's CPU kernels keep
        # them 0): a kernel reading one zero point for all channels shows.
        zps = [draw(st.integers(low, high), label="zero point") for _ in range(count)]
        if count > 1 and len(set(zps)) == 1:
            zps[-1] = zps[0] + 1 if zps[0] < high else zps[0] - 1
        if not any(zps):
            zps[0] = high
        attrs["zps"] = tuple(zps)
        return attrs
    if channels is not None or zero_zps:
        if draw(st.booleans(), label="write zps"):
            attrs["zps"] = (0,) * count
        return attrs
    zp = draw(st.integers(low, high), label="zero point")
    if zp != 0 or draw(st.booleans(), label="write zps"):
        attrs["zps"] = (zp,)
    return attrs
