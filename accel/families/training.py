"""The training family: single ReLUBackward, BatchNormTrainingBackward and BiasAddBackward
partitions, and the pattern train.relu_bwd_bn_bwd (ReLUBackward feeding the batch norm's src).

- ReLUBackward alone is one grid-stride kernel: ``diff_dst where v > 0 else 0``.
- BiasAddBackward is one per-channel reduction: a work group per channel sums diff_dst over
  every other axis.
- BatchNormTrainingBackward is two launches of one program: first a per-channel reduction of
  ``sum(dy)`` (diff_beta) and ``sum(dy * (x - mean))`` (over sigma: diff_gamma), stored to the
  outputs when the op declares them and, in f32, to a scratch buffer; then a grid-stride pass
  computing diff_src from those statistics. The two passes are needed because every element of
  diff_src depends on its whole channel's sums. With the fused ReLUBackward, ``x`` is the
  ReLUBackward result, computed on the fly in both passes instead of being stored.

Each form is its own template (``training_relu.cl.j2``, ``training_bias.cl.j2``,
``training_batch_norm.cl.j2``), from the shared pieces ``_training_start.cl.j2`` (preamble
and helpers), ``_training_stats.cl.j2`` (the statistics kernel) and
``_training_elementwise.cl.j2`` (the element-wise kernel).

Sums use f32 with TwoSum compensation (and the exact rounding errors of ``x - mean`` and of
the product), so they match the reference's f64 sums within the suite's tolerances.

Extents, counts and epsilon are kernel arguments (`fusionspec.accel.codegen.args`), each kernel
with its own canonical names; the code depends on the rank, the channel axis, the dtypes and
the layouts only.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from fusionspec.spec.graph import LogicalTensor, Op, Partition
from fusionspec.spec.shapes import channel_axis

from ..codegen.access import Domain, channel_offset, known_shape
from ..codegen.args import INT_LIMIT, KernelArgs
from ..codegen.formulas import FORMULAS, Formula
from ..codegen.opctx import attr_of
from ..codegen.source import Preamble, render
from ..codegen.types import TypePolicy, check_supported
from ..errors import UnsupportedPartitionError
from ..plan import KernelPlan, Launch, Scratch, ScratchArg
from .base import BuildContext, KernelFamily
from .forms import build_in_form
from .training_table import training_table_plan

__all__ = ["FAMILY", "is_training", "build_training"]

TRAINING_KINDS = ("ReLUBackward", "BatchNormTrainingBackward", "BiasAddBackward")
#: The template of each form, by the partition's main op (the BatchNormTrainingBackward with
#: or without the ReLUBackward feeding it).
_TEMPLATES = {"ReLUBackward": "training_relu.cl.j2",
              "BatchNormTrainingBackward": "training_batch_norm.cl.j2",
              "BiasAddBackward": "training_bias.cl.j2"}
_MAX_GROUPS = 1 << 16
_SCRATCH = "bn_stats"


def is_training(partition: Partition) -> bool:
    """A single training op, or ReLUBackward followed by BatchNormTrainingBackward."""
    kinds = [op.kind for op in partition.ops]
    return (len(kinds) == 1 and kinds[0] in TRAINING_KINDS) or \
        sorted(kinds) == ["BatchNormTrainingBackward", "ReLUBackward"]


class _Kernel:
    """The loads and stores of one kernel of the program: full-shape tensors at ``idx[]``
    through their strides, per-channel ones at ``c``; its parameters in `args`."""

    def __init__(self, shape: tuple[int, ...], policy: TypePolicy, preamble: Preamble) -> None:
        self.args = KernelArgs(preamble)
        self.domain = Domain(shape, self.args)
        self.policy = policy
        self.preamble = preamble

    def full(self, tensor: LogicalTensor) -> str:
        if known_shape(tensor) != self.domain.shape:
            raise UnsupportedPartitionError(f"tensor {tensor.id} of shape "
                                            f"{list(known_shape(tensor))} differs from "
                                            f"{list(self.domain.shape)}")
        buffer = self.args.read(tensor)
        return self._load(tensor, buffer, self.domain.read_offset(tensor))

    def channel(self, tensor: LogicalTensor) -> str:
        buffer = self.args.read(tensor)
        return self._load(tensor, buffer, channel_offset(tensor, "c", self.args))

    def _load(self, tensor: LogicalTensor, buffer: str, offset: str) -> str:
        check_supported(tensor.dtype, f"tensor {tensor.id}")
        self.preamble.uses(tensor.dtype)
        expr, helpers = self.policy.load(tensor.dtype, buffer, offset)
        self.preamble.need(helpers)
        return self.policy.as_float(expr, self.policy.kind(tensor.dtype))

    def store(self, tensor: LogicalTensor, offset: str, value: str) -> str:
        check_supported(tensor.dtype, f"tensor {tensor.id}")
        self.preamble.uses(tensor.dtype)
        buffer = self.args.write(tensor)
        statement, helpers = self.policy.store(tensor.dtype, buffer, offset, value, "float")
        self.preamble.need(helpers)
        return statement

    def stats_scratch(self) -> str:
        return self.args.buffer(_SCRATCH, "float", ScratchArg(_SCRATCH), const=False)

    def splits(self, rest: str, skip: int | None = None) -> list[str]:
        """Statements splitting the linear index in `rest` into every entry of ``idx[]`` but
        `skip`'s."""
        return self.domain.split(rest, [a for a in range(self.domain.rank) if a != skip])


def _relu_value(relu: Op, kernel: _Kernel) -> str:
    formula = FORMULAS["ReLUBackward"]
    assert isinstance(formula, Formula), "ReLUBackward has one formula"
    src, diff_dst = kernel.full(relu.inputs[0]), kernel.full(relu.inputs[1])
    return f"({formula.spell({'x': src, 'y': diff_dst})})"


def _epsilon(op: Op) -> float:
    value = op.attrs.get("epsilon")
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise UnsupportedPartitionError(f"op {op.id} ({op.kind}) has no numeric epsilon "
                                        f"({value!r})")
    return float(value)


def build_training(partition: Partition, ctx: BuildContext) -> KernelPlan:
    """The program and launches for one training partition (see the module docstring)."""
    kinds = [op.kind for op in partition.ops]

    def fail(message: str) -> UnsupportedPartitionError:
        return UnsupportedPartitionError(message, pattern=partition.pattern, kinds=kinds)

    relu = next((op for op in partition.ops if op.kind == "ReLUBackward"), None)
    main = next((op for op in partition.ops if op.kind != "ReLUBackward"), relu)
    assert main is not None, "is_training guarantees an op"
    if relu is not None and main is not relu:
        if main.inputs[0].id != relu.outputs[0].id:
            raise fail("ReLUBackward must feed BatchNormTrainingBackward's src")
        if any(t.id == relu.outputs[0].id for t in partition.outputs):
            raise fail("the fused ReLUBackward's output cannot also be a partition output")
    shape = known_shape(main.inputs[0])
    _validate(partition, main, relu, shape, fail)
    size = math.prod(shape)
    return build_in_form(
        ctx, size, size,
        table=lambda: training_table_plan(partition, main, relu,
                                          _epsilon(main) if main.kind ==
                                          "BatchNormTrainingBackward" else 0.0, ctx),
        specialised=lambda: _specialised(partition, ctx, main, relu, fail))


def _validate(partition: Partition, main: Op, relu: Op | None, shape: tuple[int, ...],
              fail: Callable[[str], UnsupportedPartitionError]) -> None:
    """Raise what building either form would raise, in the order the specialised program
    meets it (its loads and stores, `_Kernel`)."""
    def full(tensor: LogicalTensor) -> None:
        if known_shape(tensor) != shape:
            raise UnsupportedPartitionError(f"tensor {tensor.id} of shape "
                                            f"{list(known_shape(tensor))} differs from "
                                            f"{list(shape)}")
        check_supported(tensor.dtype, "a tensor")

    def channel(tensor: LogicalTensor) -> None:
        check_supported(tensor.dtype, "a tensor")
        channel_offset(tensor, "c", KernelArgs(Preamble(TypePolicy())))

    def store(tensor: LogicalTensor) -> None:
        check_supported(tensor.dtype, f"tensor {tensor.id}")

    def x_value() -> None:
        source = relu if relu is not None else main
        full(source.inputs[0])
        if relu is not None:
            full(relu.inputs[1])

    if main.kind == "ReLUBackward":
        x_value()
        store(main.outputs[0])
        return
    fmt = str(attr_of(main, "data_format"))
    if len(shape) < 2 or fmt not in ("NCX", "NXC"):
        raise fail(f"{main.kind} needs rank >= 2 and NCX or NXC (shape {list(shape)})")
    outputs = {t.id for t in partition.outputs}
    if main.kind != "BatchNormTrainingBackward":
        full(main.inputs[0])
        store(main.outputs[0])
        return
    x_value()
    full(main.inputs[1])
    channel(main.inputs[2])
    channel(main.inputs[3])
    _epsilon(main)
    if len(main.outputs) == 3:
        for tensor in main.outputs[1:]:
            if tensor.id in outputs:
                store(tensor)
    if len(main.inputs) > 4:
        channel(main.inputs[4])
    store(main.outputs[0])


def _specialised(partition: Partition, ctx: BuildContext, main: Op, relu: Op | None,
                 fail: Callable[[str], UnsupportedPartitionError]) -> KernelPlan:
    """The statistics and element-wise kernels of a validated partition."""
    shape = known_shape(main.inputs[0])
    rank = len(shape)
    preamble = ctx.preamble()
    outputs = {t.id for t in partition.outputs}
    size = math.prod(shape)
    # Template values: those of the statistics kernel (stats_*) and of the element-wise one.
    values: dict[str, object] = {"rank": max(rank, 1), "stats_stores": [],
                                 "index_t": "int" if size <= INT_LIMIT else "long"}
    launches: list[Launch] = []
    scratch: tuple[Scratch, ...] = ()

    def elementwise(kernel: _Kernel) -> None:
        """Finish the element-wise kernel (its value and store already generated)."""
        values.update(splits=kernel.splits("rest"), size=kernel.domain.size_arg())
        values["ew_params"] = kernel.args.decls()
        if size:
            launches.append(Launch("fs_train_elementwise", kernel.args.params,
                                   *ctx.launch_1d(size)))

    if main.kind == "ReLUBackward":
        kernel = _Kernel(shape, ctx.policy, preamble)
        values.update(x=_relu_value(main, kernel),
                      store=kernel.store(main.outputs[0], "i", "value"))
        elementwise(kernel)
    else:
        fmt = str(attr_of(main, "data_format"))
        if rank < 2 or fmt not in ("NCX", "NXC"):
            raise fail(f"{main.kind} needs rank >= 2 and NCX or NXC (shape {list(shape)})")
        caxis = channel_axis(fmt, rank)
        channels = shape[caxis]
        per_channel = size // channels if channels else 0
        wg = ctx.reduction_work_group(per_channel)
        bn = main.kind == "BatchNormTrainingBackward"
        values.update(wg=wg, caxis=caxis)
        stats = _Kernel(shape, ctx.policy, preamble)
        if bn:
            x = _relu_value(relu, stats) if relu is not None else stats.full(main.inputs[0])
            values.update(stats_x=x, stats_dy=stats.full(main.inputs[1]),
                          stats_mean=stats.channel(main.inputs[2]),
                          stats_variance=stats.channel(main.inputs[3]),
                          stats_epsilon=stats.args.f32("epsilon", _epsilon(main)),
                          stats_scratch=stats.stats_scratch())
            scratch = (Scratch(_SCRATCH, 8 * max(channels, 1)),)
            stores = []
            if len(main.outputs) == 3:
                for tensor, value in ((main.outputs[1], "diff_gamma"),
                                      (main.outputs[2], "sum_dy")):
                    if tensor.id in outputs:
                        stores.append(stats.store(tensor, "c", value))
            values["stats_stores"] = stores
        else:
            values.update(stats_dy=stats.full(main.inputs[0]),
                          stats_stores=[stats.store(main.outputs[0], "c", "sum_dy")])
        values.update(others=stats.splits("r", skip=caxis),
                      channels=stats.args.long("channels", channels),
                      per_channel=stats.args.long("per_channel", per_channel))
        values["stats_params"] = stats.args.decls()
        if channels:
            launches.append(Launch("fs_train_stats", stats.args.params,
                                   (min(channels, _MAX_GROUPS) * wg,), (wg,)))
        if bn:
            kernel = _Kernel(shape, ctx.policy, preamble)
            gamma = kernel.channel(main.inputs[4]) if len(main.inputs) > 4 else "1.0f"
            values.update(gamma=gamma, count=kernel.args.f32("channel_count", per_channel),
                          x=_relu_value(relu, kernel) if relu is not None
                          else kernel.full(main.inputs[0]),
                          dy=kernel.full(main.inputs[1]), mean=kernel.channel(main.inputs[2]),
                          variance=kernel.channel(main.inputs[3]),
                          epsilon=kernel.args.f32("epsilon", _epsilon(main)),
                          scratch=kernel.stats_scratch(),
                          store=kernel.store(main.outputs[0], "i", "value"))
            elementwise(kernel)
    source = render(_TEMPLATES[main.kind], preamble=preamble.render(), **values)
    return KernelPlan("training", source, tuple(launches), reads=tuple(partition.inputs),
                      writes=tuple(partition.outputs), scratch=scratch)


FAMILY = KernelFamily("training", is_training, build_training)
