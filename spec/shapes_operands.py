"""Shape inference for the ops whose output copies one input's shape while their other inputs
must agree with it: batch norm (per-channel statistics), the backward ops (a gradient of the
shape of what it differentiates), quantization (one scale per channel), a reduction whose axes
come from an input (only their count is known), and ConvolutionBackwardWeights (the
convolution its gradient belongs to must exist).

Each check here is one the reference makes when it executes the op: a graph the validator
accepts is a graph the reference can run (validation is execution's check, stated once).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from .attrs import attr_value
from .ir import Op
from .schema import InferenceFailure, Shape
from .shapes import _given_ints, _ints, _known, _str, channel_axis, infer_conv
from .shapes import infer_reduce as reduce_by_attribute

__all__ = ["infer_batchnorm", "infer_batchnorm_backward", "infer_relu_backward",
           "infer_quantize", "infer_reduce", "infer_conv_backward_weights"]


def _same(a: Shape, b: Shape) -> bool:
    """Whether two shapes can be the same (unknown ranks and dims agree with anything)."""
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(not (_known(x) and _known(y)) or x == y
                                    for x, y in zip(a, b))


def _channels(op: Op, src: Shape) -> int | None:
    if src is None:
        return None
    if len(src) < 2:
        raise InferenceFailure(f"src must have rank >= 2, got {list(src)}", where="input 0")
    c = src[channel_axis(_str(op, "data_format"), len(src))]
    return c if _known(c) else None


def _per_channel(shapes: Sequence[Shape], ports: Mapping[int, str], c: int | None) -> None:
    """The inputs at `ports` (port -> name) hold one value per channel."""
    for port, name in ports.items():
        shape = shapes[port] if port < len(shapes) else None
        if shape is not None and not _same(shape, (c if c is not None else -1,)):
            raise InferenceFailure(f"{name} {list(shape)} must be 1-D with one value per "
                                   f"channel ({c})", where=f"input {port} ({name})")


def infer_batchnorm(op: Op, shapes: Sequence[Shape]) -> Sequence[Shape]:
    """dst is src; gamma, beta, mean and variance hold one value per channel."""
    _per_channel(shapes, {1: "gamma", 2: "beta", 3: "mean", 4: "variance"},
                 _channels(op, shapes[0]))
    return [shapes[0]]


def infer_batchnorm_backward(op: Op, shapes: Sequence[Shape]) -> Sequence[Shape]:
    """diff_src is src (diff_dst has its shape); mean, variance and gamma, and the optional
    diff_gamma and diff_beta, hold one value per channel."""
    src = shapes[0]
    c = _channels(op, src)
    if not _same(src, shapes[1]):
        raise InferenceFailure(f"diff_dst {list(shapes[1] or ())} must have the shape of src "
                               f"{list(src or ())}", where="input 1 (diff_dst)")
    _per_channel(shapes, {2: "mean", 3: "variance", 4: "gamma"}, c)
    per_channel: Shape = None if src is None else (c if c is not None else -1,)
    return [src, per_channel, per_channel][: max(len(op.outputs), 1)]


def infer_relu_backward(op: Op, shapes: Sequence[Shape]) -> Sequence[Shape]:
    """diff_src, src (or dst) and diff_dst share one shape."""
    if not _same(shapes[0], shapes[1]):
        raise InferenceFailure(f"diff_dst {list(shapes[1] or ())} must have the shape of src "
                               f"{list(shapes[0] or ())}", where="input 1 (diff_dst)")
    return [shapes[0] if shapes[0] is not None else shapes[1]]


def infer_quantize(op: Op, shapes: Sequence[Shape]) -> Sequence[Shape]:
    """dst is src; per channel, there is one scale (and zero point) per element of the axis."""
    src = shapes[0]
    if src is not None and op.attrs.get("qtype") == "per_channel":
        axis = attr_value(op, "axis")
        assert isinstance(axis, int)
        if not -len(src) <= axis < len(src):
            raise InferenceFailure(f"axis {axis} is out of range for rank {len(src)}",
                                   where="attribute axis")
        n = src[axis % len(src)]
        for name in ("scales", "zps"):
            values = _given_ints(op, name) if name == "zps" else attr_value(op, name)
            assert isinstance(values, tuple)
            if _known(n) and len(values) > 1 and len(values) != n:
                raise InferenceFailure(f"{len(values)} {name} for the {n} channels of axis "
                                       f"{axis}", where=f"attribute {name}")
    return [src]


def infer_reduce(op: Op, shapes: Sequence[Shape]) -> Sequence[Shape]:
    """A reduction: from its axes attribute (`fusionspec.spec.shapes.infer_reduce`), or from
    its axes input, whose values are data but whose count is the length of that 1-D tensor: the
    declared dst must then be src with that many axes removed (or set to 1 under keep_dims)."""
    if len(shapes) < 2 or op.attrs.get("axes"):
        return reduce_by_attribute(op, shapes)
    _check_axes_input(op, shapes, op.outputs[0].shape if op.outputs else None)
    return [None]


def _check_axes_input(op: Op, shapes: Sequence[Shape], declared: Shape) -> None:
    src, axes = shapes[0], shapes[1]
    if axes is not None and len(axes) != 1:
        raise InferenceFailure(f"the axes input must be 1-D, got {list(axes)}",
                               where="input 1 (axes)")
    if src is None or axes is None or not _known(axes[0]) or declared is None:
        return
    count, keep = axes[0], bool(attr_value(op, "keep_dims"))
    if count > len(src):
        raise InferenceFailure(f"{count} axes for a rank-{len(src)} src", where="input 1 (axes)")
    for chosen in itertools.combinations(range(len(src)), count):
        if keep:
            want: tuple[int, ...] = tuple(1 if i in chosen else d for i, d in enumerate(src))
        else:
            want = tuple(d for i, d in enumerate(src) if i not in chosen)
        if _same(want, declared):
            return
    raise InferenceFailure(f"no {count} axes of src {list(src)} reduce to the declared dst "
                           f"{list(declared)}", where="output 0")


def infer_conv_backward_weights(op: Op, shapes: Sequence[Shape]) -> Sequence[Shape]:
    """diff_weights has the shape `weights_shape` names; the convolution of src by weights of
    that shape (its strides, pads, dilations, groups and formats) gives diff_dst's shape."""
    declared = _ints(op, "weights_shape")
    if len(shapes) > 2:
        return [None]  # the shape comes from a runtime tensor
    if not declared or all(d == 0 for d in declared):
        raise InferenceFailure("weights_shape is required when there is no weights_shape "
                               "input", where="attribute weights_shape")
    if any(d <= 0 for d in declared):
        raise InferenceFailure(f"weights_shape {list(declared)} must be positive",
                               where="attribute weights_shape")
    src, diff_dst = shapes[0], shapes[1]
    if src is not None:
        dst = infer_conv(op, [src, declared])[0]
        if not _same(dst, diff_dst):
            raise InferenceFailure(f"diff_dst {list(diff_dst or ())} is not the shape the "
                                   f"convolution of src {list(src)} by weights "
                                   f"{list(declared)} gives ({list(dst or ())})",
                                   where="input 1 (diff_dst)")
    return [declared]
