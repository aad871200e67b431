"""The interpolate family: Interpolate alone or with post-ops (pattern
fp.interpolate_post_ops), nearest and (bi/tri)linear, NCX or NXC, sizes or scales.

One work item computes one dst element. The output size is the dst tensor's known shape
(whether it came from the ``sizes`` attribute, the ``scales`` or the optional sizes input), so
the source index and weight of every output position along every spatial axis are computed at
build time, with the reference's own f32 coordinate functions
(`fusionspec.reference.ops.interpolate`), and passed in f32 table arguments (`TableArg`,
uploaded once per compiled partition): the kernel's coordinates are therefore exactly the
reference's, and its text does not depend on the sizes or scales (extents and strides are
kernel arguments too). Nearest copies one source element; linear
combines the 2, 4 or 8 neighbours axis by axis in f32 (the suite allows 7*eps(f32) for it).
The result goes through the shared epilogue (`fusionspec.accel.codegen.epilogue`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from fusionspec.reference.ops.interpolate import linear_taps, nearest_index, source_coords
from fusionspec.spec.graph import Op, Partition

from ..codegen.access import Domain, known_shape, stride_exprs
from ..codegen.args import KernelArgs
from ..codegen.epilogue import supported_kinds
from ..codegen.opctx import attr_of
from ..codegen.source import render
from ..codegen.types import TypePolicy, check_supported
from ..errors import UnsupportedPartitionError
from ..plan import KernelPlan, Launch
from .base import BuildContext, KernelFamily
from .forms import build_in_form
from .post_ops import check_post_ops, post_ops_body
from .window_table import interpolate_map, window_plan

__all__ = ["FAMILY", "KERNEL_NAME", "is_interpolate", "build_interpolate"]

KERNEL_NAME = "fs_interpolate"
#: Indices travel in float tables; they are exact below 2**24.
_TABLE_LIMIT = 1 << 24


def is_interpolate(partition: Partition) -> bool:
    """One Interpolate followed by element-wise ops only."""
    kinds = supported_kinds()
    mains = [op for op in partition.ops if op.kind == "Interpolate"]
    return len(mains) == 1 and all(op.kind in kinds for op in partition.ops
                                   if op is not mains[0])


def _taps(main: Op, in_sp: list[int], out_sp: list[int], axes: list[int], args: KernelArgs,
          ) -> tuple[list[str], list[list[tuple[str, str]]]]:
    """Statements declaring each spatial axis's source indices and weights at idx[], and per
    axis its (index variable, weight expression) taps."""
    mode = str(attr_of(main, "mode"))
    ctm = str(attr_of(main, "coordinate_transformation_mode"))
    lines: list[str] = []
    taps: list[list[tuple[str, str]]] = []
    # A table index converts through int (it is a source position, exact in f32): Intel's CPU
    # compiler turns a float converted to long into scalar code, and the nearest 2x
    # upsampling of the benchmark ran 7x slower through one (0.53 against 0.07 ms).
    for n, (axis, i, o) in enumerate(zip(axes, in_sp, out_sp)):
        coords = source_coords(o, i, ctm)
        if mode == "nearest":
            table = args.table("nearest", [float(v) for v in nearest_index(coords, i)])
            lines.append(f"const long n{n} = (int){table}[idx[{axis}]];")
            taps.append([(f"n{n}", "")])
            continue
        left, right, w_left, w_right = linear_taps(coords, i)
        tl = args.table("left", [float(v) for v in left])
        tr = args.table("right", [float(v) for v in right])
        twl = args.table("wleft", [float(v) for v in w_left])
        twr = args.table("wright", [float(v) for v in w_right])
        lines += [f"const long l{n} = (int){tl}[idx[{axis}]];",
                  f"const long r{n} = (int){tr}[idx[{axis}]];",
                  f"const float wl{n} = {twl}[idx[{axis}]];",
                  f"const float wr{n} = {twr}[idx[{axis}]];"]
        taps.append([(f"l{n}", f"wl{n}"), (f"r{n}", f"wr{n}")])
    return lines, taps


def _combine(taps: list[list[tuple[str, str]]], axes: list[int], fixed: dict[int, str],
             load: Callable[[dict[int, str]], str], chosen: dict[int, str] | None = None,
             depth: int = 0) -> str:
    """The separable combination of the taps, first axis outermost, as one expression."""
    chosen = chosen or {}
    if depth == len(taps):
        return load({**fixed, **chosen})
    parts: list[str] = []
    for index, weight in taps[depth]:
        inner = _combine(taps, axes, fixed, load, {**chosen, axes[depth]: index}, depth + 1)
        parts.append(f"{weight} * ({inner})" if weight else inner)
    return " + ".join(parts) if len(parts) == 1 else "(" + " + ".join(parts) + ")"


def build_interpolate(partition: Partition, ctx: BuildContext) -> KernelPlan:
    """One grid-stride kernel (table-driven taps, then the epilogue), or for a small
    interpolation the gathering program of the table form
    (`fusionspec.accel.families.window_table`)."""
    kinds = [op.kind for op in partition.ops]
    main = next(op for op in partition.ops if op.kind == "Interpolate")
    post = [op for op in partition.ops if op is not main]

    def fail(message: str) -> UnsupportedPartitionError:
        return UnsupportedPartitionError(message, pattern=partition.pattern, kinds=kinds)

    src, dst = main.inputs[0], main.outputs[0]
    for t in (src, dst):
        check_supported(t.dtype, f"tensor {t.id} of Interpolate")
    in_shape, out_shape = known_shape(src), known_shape(dst)
    rank = len(in_shape)
    fmt = str(attr_of(main, "data_format"))
    if rank < 3 or len(out_shape) != rank or fmt not in ("NCX", "NXC"):
        raise fail(f"Interpolate needs src and dst of equal rank >= 3 in NCX or NXC (src "
                   f"{list(in_shape)}, dst {list(out_shape)}, {fmt})")
    axes = list(range(2, rank)) if fmt == "NCX" else list(range(1, rank - 1))
    in_sp, out_sp = [in_shape[a] for a in axes], [out_shape[a] for a in axes]
    if max(in_sp) >= _TABLE_LIMIT or min(out_sp) <= 0:
        raise fail(f"Interpolate spatial sizes {in_sp} -> {out_sp} are not supported")
    check_post_ops(post, shape=out_shape, outputs=partition.outputs, given=dst.id, fail=fail)
    size = math.prod(out_shape)
    taps_per_output = 1 if str(attr_of(main, "mode")) == "nearest" \
        else 2 ** len(axes)
    return build_in_form(ctx, size, size * taps_per_output,
                         table=lambda: _table(partition, ctx, main, post, axes),
                         specialised=lambda: _specialised(partition, ctx, main, post, axes))


def _table(partition: Partition, ctx: BuildContext, main: Op, post: list[Op], axes: list[int]
           ) -> KernelPlan | None:
    where, weights = interpolate_map(main, known_shape(main.inputs[0]),
                                     known_shape(main.outputs[0]), axes)
    return window_plan(partition, "interpolate", main, [], post, where, weights,
                       "first" if weights is None else "weighted", ctx)


def _specialised(partition: Partition, ctx: BuildContext, main: Op, post: list[Op],
                 axes: list[int]) -> KernelPlan:
    """The interpolation kernel of a validated partition."""
    src, dst = main.inputs[0], main.outputs[0]
    in_shape, out_shape = known_shape(src), known_shape(dst)
    rank = len(in_shape)
    in_sp, out_sp = [in_shape[a] for a in axes], [out_shape[a] for a in axes]
    preamble = ctx.preamble()
    preamble.uses(src.dtype)
    policy: TypePolicy = ctx.policy
    args = KernelArgs(preamble)
    buffer = args.read(src)
    lines, taps = _taps(main, in_sp, out_sp, axes, args)
    strides = dict(enumerate(stride_exprs(src, args)))
    fixed = {j: f"idx[{j}]" for j in range(rank) if j not in axes}
    helpers: set[str] = set()

    def load(index: dict[int, str]) -> str:
        offset = " + ".join(index[j] if strides[j] == "1" else f"{index[j]} * {strides[j]}"
                            for j in sorted(strides)) or "0"
        expr, needed = policy.load(src.dtype, buffer, offset)
        helpers.update(needed)
        return expr

    value = _combine(taps, axes, fixed, load)
    preamble.need(helpers)
    domain = Domain(out_shape, args)
    # Small domains run the post-ops in the table form (fusionspec.accel.families.post_ops).
    body = post_ops_body(post, ctx, domain=domain, outputs=partition.outputs, given=dst.id,
                         args=args, preamble=preamble, fail=AssertionError)  # validated
    splits = domain.split("rest")
    size = domain.size_arg()
    source = render("interpolate.cl.j2", preamble=preamble.render(), name=KERNEL_NAME,
                    params=args.decls(), index_t=domain.index_type, size=size, rank=rank,
                    splits=splits, taps="\n".join(lines), value=value, body=body)
    launches: tuple[Launch, ...] = ()
    if domain.size:
        launches = (Launch(KERNEL_NAME, args.params, *ctx.launch_1d(domain.size)),)
    return KernelPlan("interpolate", source, launches, reads=tuple(partition.inputs),
                      writes=tuple(partition.outputs))


FAMILY = KernelFamily("interpolate", is_interpolate, build_interpolate)
