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

Sums use f32 with TwoSum compensation (and the exact rounding errors of ``x - mean`` and of
the product), so they match the reference's f64 sums within the suite's tolerances.
"""

from __future__ import annotations

import math

from fusionspec.spec.graph import LogicalTensor, Op, Partition
from fusionspec.spec.shapes import channel_axis

from ..codegen.access import (
    Domain,
    buffer_name,
    channel_offset,
    known_shape,
    read_param,
    write_param,
)
from ..codegen.source import Preamble, render
from ..codegen.types import TypePolicy, c_float, check_supported
from ..errors import UnsupportedPartitionError
from ..plan import KernelPlan, Launch, Param, Scratch, ScratchArg
from .base import BuildContext, Family

__all__ = ["FAMILY", "is_training", "build_training"]

TRAINING_KINDS = ("ReLUBackward", "BatchNormTrainingBackward", "BiasAddBackward")
_INT_LIMIT = 2 ** 31 - 1
_MAX_GROUPS = 1 << 16
_SCRATCH = "bn_stats"


def is_training(partition: Partition) -> bool:
    """A single training op, or ReLUBackward followed by BatchNormTrainingBackward."""
    kinds = [op.kind for op in partition.ops]
    return (len(kinds) == 1 and kinds[0] in TRAINING_KINDS) or \
        sorted(kinds) == ["BatchNormTrainingBackward", "ReLUBackward"]


class _Loads:
    """Loads of one program's tensors: full-shape ones at ``idx[]`` through their strides,
    per-channel ones at ``c``; collects the kernel parameters they need."""

    def __init__(self, shape: tuple[int, ...], policy: TypePolicy, preamble: Preamble) -> None:
        self.domain = Domain(shape)
        self.policy = policy
        self.preamble = preamble
        self.params: dict[Param, None] = {}

    def full(self, tensor: LogicalTensor) -> str:
        if known_shape(tensor) != self.domain.shape:
            raise UnsupportedPartitionError(f"tensor {tensor.id} of shape "
                                            f"{list(known_shape(tensor))} differs from "
                                            f"{list(self.domain.shape)}")
        offset, strides = self.domain.read_offset(tensor)
        for p in (read_param(tensor, self.policy), *strides):
            self.params.setdefault(p, None)
        return self._load(tensor, offset)

    def channel(self, tensor: LogicalTensor) -> str:
        offset, stride = channel_offset(tensor, "c")
        for p in (read_param(tensor, self.policy), *stride):
            self.params.setdefault(p, None)
        return self._load(tensor, offset)

    def _load(self, tensor: LogicalTensor, offset: str) -> str:
        check_supported(tensor.dtype, f"tensor {tensor.id}")
        self.preamble.uses(tensor.dtype)
        expr, helpers = self.policy.load(tensor.dtype, buffer_name(tensor), offset)
        self.preamble.need(helpers)
        return self.policy.as_float(expr, self.policy.kind(tensor.dtype))

    def store(self, tensor: LogicalTensor, offset: str, value: str) -> str:
        check_supported(tensor.dtype, f"tensor {tensor.id}")
        self.preamble.uses(tensor.dtype)
        self.params.setdefault(write_param(tensor, self.policy), None)
        statement, helpers = self.policy.store(tensor.dtype, buffer_name(tensor), offset,
                                               value, "float")
        self.preamble.need(helpers)
        return statement

    def take(self) -> tuple[Param, ...]:
        """The parameters collected so far (then start a new kernel's list)."""
        params = tuple(self.params)
        self.params = {}
        return params


def _relu_value(relu: Op, loads: _Loads) -> str:
    return f"({loads.full(relu.inputs[0])} > 0.0f ? {loads.full(relu.inputs[1])} : 0.0f)"


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
    rank = len(shape)
    preamble = ctx.preamble()
    loads = _Loads(shape, ctx.policy, preamble)
    outputs = {t.id for t in partition.outputs}
    values: dict[str, object] = {"rank": max(rank, 1), "bn": False, "stats": False,
                                 "elementwise": False, "stats_stores": []}
    launches: list[Launch] = []
    scratch: tuple[Scratch, ...] = ()
    size = math.prod(shape)
    index_t = "int" if size <= _INT_LIMIT else "long"
    values.update(index_t=index_t, size=f"{size}{'L' if index_t == 'long' else ''}",
                  splits=[(a, shape[a]) for a in reversed(range(rank))])
    if main.kind == "ReLUBackward":
        values.update(elementwise=True, x=_relu_value(main, loads),
                      store=loads.store(main.outputs[0], "i", "value"))
        params = loads.take()
        values["ew_params"] = [p.decl for p in params]
        if size:
            launches.append(Launch("fs_train_elementwise", params, *ctx.launch_1d(size)))
    else:
        fmt = str(main.attrs.get("data_format", "NXC"))
        if rank < 2 or fmt not in ("NCX", "NXC"):
            raise fail(f"{main.kind} needs rank >= 2 and NCX or NXC (shape {list(shape)})")
        caxis = channel_axis(fmt, rank)
        channels = shape[caxis]
        per_channel = size // channels if channels else 0
        wg = ctx.work_group(min(256, 1 << max(per_channel - 1, 0).bit_length()))
        bn = main.kind == "BatchNormTrainingBackward"
        values.update(stats=True, bn=bn, wg=wg, caxis=caxis, channels=channels,
                      per_channel=per_channel,
                      others=[(a, shape[a]) for a in reversed(range(rank)) if a != caxis])
        if bn:
            x = _relu_value(relu, loads) if relu is not None else loads.full(main.inputs[0])
            values.update(x=x, dy=loads.full(main.inputs[1]), mean=loads.channel(main.inputs[2]),
                          variance=loads.channel(main.inputs[3]),
                          epsilon=c_float(_epsilon(main)))
            loads.params.setdefault(Param(f"__global float* restrict {_SCRATCH}",
                                          ScratchArg(_SCRATCH)), None)
            scratch = (Scratch(_SCRATCH, 8 * max(channels, 1)),)
            stores = []
            if len(main.outputs) == 3:
                for tensor, value in ((main.outputs[1], "diff_gamma"),
                                      (main.outputs[2], "sum_dy")):
                    if tensor.id in outputs:
                        stores.append(loads.store(tensor, "c", value))
            values["stats_stores"] = stores
        else:
            values.update(dy=loads.full(main.inputs[0]),
                          stats_stores=[loads.store(main.outputs[0], "c", "sum_dy")])
        params = loads.take()
        values["stats_params"] = [p.decl for p in params]
        if channels:
            launches.append(Launch("fs_train_stats", params, (min(channels, _MAX_GROUPS) * wg,),
                                   (wg,)))
        if bn:
            gamma = loads.channel(main.inputs[4]) if len(main.inputs) > 4 else "1.0f"
            values.update(elementwise=True, gamma=gamma, count=c_float(per_channel),
                          x=_relu_value(relu, loads) if relu is not None
                          else loads.full(main.inputs[0]),
                          dy=loads.full(main.inputs[1]), mean=loads.channel(main.inputs[2]),
                          variance=loads.channel(main.inputs[3]),
                          store=loads.store(main.outputs[0], "i", "value"))
            loads.params.setdefault(Param(f"__global float* restrict {_SCRATCH}",
                                          ScratchArg(_SCRATCH)), None)
            params = loads.take()
            values["ew_params"] = [p.decl for p in params]
            if size:
                launches.append(Launch("fs_train_elementwise", params, *ctx.launch_1d(size)))
    source = render("training.cl.j2", preamble=preamble.render(), **values)
    return KernelPlan("training", source, tuple(launches), reads=tuple(partition.inputs),
                      writes=tuple(partition.outputs), scratch=scratch)


FAMILY = Family("training", is_training, build_training)
