"""ConvolutionBackwardWeights as an implicit GEMM, and the BiasAddBackward that may follow it.

The weight gradient of a convolution is a GEMM like the forward one, with the roles moved:
per group z, ``diff_weights (taps*IC/G x OC/G) = cols (taps*IC/G x N*positions) x diff_dst
(N*positions x OC/G)``, where cols is the src window at output position o and tap t
(``o*S + t*D - pads_begin``, zero in the padding). `backward_geometry` gives its index code in
the form of `fusionspec.accel.families.gemm_geometry`; the GEMM template computes it.

The pattern train.conv_bwd_weights_bias_bwd then reduces diff_weights with BiasAddBackward
(every axis but its channel axis). That is a second, small kernel of the same program:
`bias_backward_kernel` sums, per channel, the dense diff_weights the GEMM kernel left in global
memory (the partition's output buffer, or a scratch buffer when diff_weights is internal), in f32
with TwoSum compensation, close to the reference's f64 sum. As in the forward geometry, every
size is a kernel argument (`fusionspec.accel.codegen.args`).
"""

from __future__ import annotations

import math

from fusionspec.spec.graph import LogicalTensor, Op

from ..codegen.access import known_shape
from ..codegen.args import KernelArgs
from ..codegen.opctx import attr_of
from ..codegen.source import Preamble
from ..codegen.types import TypePolicy, check_supported
from ..errors import UnsupportedPartitionError
from ..plan import Binding, BufferArg, Param
from .gemm_geometry import Geometry, IndexCode, backward_dims, split_index

__all__ = ["backward_geometry", "bias_backward_kernel", "check_bias_backward", "BIAS_KERNEL"]

#: The name of the BiasAddBackward kernel.
BIAS_KERNEL = "fs_bias_backward"


def backward_geometry(op: Op, args: KernelArgs) -> Geometry:
    """The implicit GEMM of a ConvolutionBackwardWeights op (shapes known); the sizes its
    index code uses go to `args`."""
    src, dy, wshape = (known_shape(t) for t in (op.inputs[0], op.inputs[1], op.outputs[0]))
    c = backward_dims(op, src, dy, wshape)
    fmt, wfmt, groups, nsp, icg, ocg = c.fmt, c.wfmt, c.groups, c.nsp, c.icg, c.ocg
    in_sp, out_sp, kernel = c.in_sp, c.out_sp, c.kernel
    strides, dilations, begin = c.strides, c.dilations, c.begin

    # m = (tap, input channel of the group), k = (batch item, output position), n = oc.
    window = [*((f"ker{d}", t) for d, t in enumerate(kernel)), ("icg", icg)]
    positions = [("batch", dy[0]), *((f"out{d}", o) for d, o in enumerate(out_sp))]
    a_lines, mc = split_index("m", window, "a_m", args)
    k_lines, kc = split_index("k", positions, "a_k", args)
    a_lines += k_lines
    valid: list[str] = []
    for d in range(nsp):
        s, dil = args.index(f"stride{d}", strides[d]), args.index(f"dil{d}", dilations[d])
        pad, extent = args.index(f"pad{d}", begin[d]), args.index(f"in{d}", in_sp[d])
        a_lines.append(f"const int a_i{d} = {kc[1 + d]} * {s} + {mc[d]} * {dil} - {pad};")
        valid.append(f"a_i{d} >= 0 && a_i{d} < {extent}")
    pos = [f"a_i{d}" for d in range(nsp)]
    # With one group z is 0, so the grouped form serves it too (one program for both).
    cin = f"z * {args.index('icg', icg)} + {mc[-1]}"
    a_index = [kc[0], cin, *pos] if fmt == "NCX" else [kc[0], *pos, cin]

    b_lines, bk = split_index("k", positions, "b_k", args)
    chan = f"z * {args.index('ocg', ocg)} + n"
    b_index = [bk[0], chan, *bk[1:]] if fmt == "NCX" else [*bk, chan]

    d_lines, dm = split_index("m", window, "d_m", args)
    d_index = [chan, dm[-1], *dm[:-1]] if wfmt == "OIX" else [*dm, chan]
    return Geometry(groups, math.prod(kernel) * icg, ocg, dy[0] * math.prod(out_sp), (),
                    IndexCode(tuple(a_lines), tuple(a_index), " && ".join(valid) or None),
                    IndexCode(tuple(b_lines), tuple(b_index)),
                    IndexCode(tuple(d_lines), tuple(d_index)), None)


def check_bias_backward(op: Op, source: LogicalTensor) -> None:
    """Raise what `bias_backward_kernel` raises for `op` summing `source` (either form)."""
    shape = known_shape(source)
    attr_of(op, "data_format")
    if len(shape) < 2:
        raise UnsupportedPartitionError(f"op {op.id} (BiasAddBackward) needs rank >= 2")
    check_supported(source.dtype, "a tensor")
    check_supported(op.outputs[0].dtype, "a tensor")


def bias_backward_kernel(op: Op, source: LogicalTensor, binding: Binding, policy: TypePolicy,
                         preamble: Preamble) -> tuple[str, tuple[Param, ...], int]:
    """The OpenCL C of a kernel summing dense `source` (BiasAddBackward's input, in the
    parameter ``src``, bound to `binding`) per channel into ``dst``; its parameters; and the
    channel count (one work item per channel, a grid-stride loop)."""
    shape = known_shape(source)
    fmt = str(attr_of(op, "data_format"))
    if len(shape) < 2:
        raise UnsupportedPartitionError(f"op {op.id} (BiasAddBackward) needs rank >= 2")
    axis = 1 if fmt == "NCX" else len(shape) - 1
    outer, channels = math.prod(shape[:axis]), shape[axis]
    inner = math.prod(shape[axis + 1:])
    dst = op.outputs[0]
    preamble.uses(source.dtype)
    preamble.uses(dst.dtype)
    args = KernelArgs(preamble)
    src_name = args.buffer("src", policy.storage(source.dtype), binding, const=True)
    dst_name = args.buffer("dst", policy.storage(dst.dtype), BufferArg(dst.id), const=False)
    n_channels, n_outer, n_inner = (args.index(name, value) for name, value in (
        ("channels", channels), ("outer", outer), ("inner", inner)))
    value, helpers = policy.load(source.dtype, src_name,
                                 f"(r * {n_channels} + c) * {n_inner} + q")
    store, more = policy.store(dst.dtype, dst_name, "c", "sum + comp", "float")
    preamble.need(helpers | more)
    signature = ",\n    ".join(args.decls())
    code = f"""\
__kernel void {BIAS_KERNEL}(
    {signature})
{{
    for (int c = get_global_id(0); c < {n_channels}; c += get_global_size(0)) {{
        float sum = 0.0f, comp = 0.0f;  /* TwoSum: comp collects each addition's error */
        for (int r = 0; r < {n_outer}; ++r)
            for (int q = 0; q < {n_inner}; ++q) {{
                const float y = {value};
                const float t = sum + y;
                const float back = t - sum;
                comp += (sum - (t - back)) + (y - back);
                sum = t;
            }}
        {store}
    }}
}}
"""
    return code, args.params, channels
