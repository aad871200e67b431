"""Wiring a drawn instance shape (`Skeleton`) and dtype plan (`DtypePlan`) into a graph.

`build(draw, entry, skeleton, plan)` creates the ops of the main chain one after the other,
each consuming the previous op's output on its first operand (or, for a commutative binary,
sometimes on its second), with every other input a fresh graph input or the output of a side
subgraph (a Dequantize, or a Quantize + Dequantize on the weights path). Output shapes come from
the op schemas' own shape inference, so a drawn graph is valid by construction; a mistake in the
drawing shows up as a `GraphError` here rather than as a bad case.

Binary operands broadcast to the chain's shape fully, per channel (along the chain's
data_format channel axis) or per tensor (all ones). The result (`Built`) keeps the op id of each
main-chain step, words for the case description, and the attribute features of the case.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from fusionspec.spec.attrs import attr_value_in
from fusionspec.spec.catalog import PatternEntry
from fusionspec.spec.categories import BINARY, UNARY
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import AttrValue, Graph, LogicalTensor, Op
from fusionspec.spec.opschemas import COMMUTATIVE_KINDS, SCHEMAS
from fusionspec.spec.schema import Shape
from fusionspec.spec.validate import validate_op

from .attrs import (
    ConvSpec,
    HeadSpec,
    InterpolateSpec,
    Layout,
    MatMulSpec,
    ReduceSpec,
    draw_conv,
    draw_interpolate,
    draw_layout,
    draw_matmul,
    draw_pool,
    draw_qparams,
    draw_reduce,
    draw_softmax,
    draw_unary_attrs,
    maybe_default,
)
from .dtypes import DtypePlan, int8_row
from .model import UNDRAWN, schema_ranks
from .plan import Side, Skeleton, Step

__all__ = ["Built", "build", "BROADCASTS"]

D = DataType
F32, BF16 = D.f32, D.bf16
BROADCASTS = ("full", "per-channel", "per-tensor")
_WEIGHTED = frozenset({"Convolution", "ConvTranspose", "MatMul"})


@dataclass(frozen=True)
class Built:
    """A drawn instance: its graph, the op id of each main-chain step (`step_ops`), words for
    each step, and its features (grammar, attributes and ``dtype_row``)."""

    entry: PatternEntry
    graph: Graph
    skeleton: Skeleton
    plan: DtypePlan
    step_ops: tuple[int, ...]
    words: tuple[str, ...]
    features: dict[str, str | int]

    @property
    def row(self) -> str:
        return str(self.features["dtype_row"])

    def describe(self) -> str:
        return " + ".join(self.words) + f", {self.row}"


@dataclass(frozen=True)
class _Chain:
    tensor: LogicalTensor
    data_format: str

    @property
    def layout(self) -> Layout:
        return Layout(self.tensor.shape or (), self.data_format)


class _Builder:
    def __init__(self, draw: st.DrawFn, entry: PatternEntry, skeleton: Skeleton,
                 plan: DtypePlan) -> None:
        self.draw, self.entry, self.skel, self.plan = draw, entry, skeleton, plan
        self.ops: list[Op] = []
        self.ids = itertools.count()
        self.words: list[str] = []
        self.step_ops: list[int] = []
        self.notes: dict[str, set[str]] = {}
        self.columns: dict[str, str] = {"bias": "none"}

    # -- plumbing ---------------------------------------------------------------------------

    def tensor(self, shape: Sequence[int], dtype: DataType,
               strides: tuple[int, ...] | None = None) -> LogicalTensor:
        return LogicalTensor(next(self.ids), dtype, tuple(shape), strides)

    def add(self, kind: str, inputs: Sequence[LogicalTensor], attrs: dict[str, AttrValue],
            dtypes: Sequence[DataType], shapes: Sequence[Shape] | None = None) -> Op:
        """Append an op; output shapes are inferred by its schema unless given."""
        if shapes is None:
            probe = Op(-1, kind, tuple(inputs),
                       tuple(LogicalTensor(-1 - i, dt) for i, dt in enumerate(dtypes)), attrs)
            infer = SCHEMAS[kind].infer
            assert infer is not None
            shapes = infer(validate_op(probe), [t.shape for t in inputs])
        outs = []
        for dtype, shape in zip(dtypes, shapes):
            assert shape is not None and all(d > 0 for d in shape), f"{kind}: shape {shape}"
            outs.append(self.tensor(shape, dtype))
        op = Op(len(self.ops), kind, tuple(inputs), tuple(outs), attrs)
        self.ops.append(op)
        return op

    def note(self, key: str, value: str | int) -> None:
        self.notes.setdefault(key, set()).add(str(value))

    # -- quantized inputs -------------------------------------------------------------------

    def quantized(self, shape: Sequence[int], qdtype: DataType, *, quantize_first: bool = False,
                  oc_axis: int | None = None) -> LogicalTensor:
        """An f32 tensor made by a Dequantize of a `qdtype` input (or of a Quantize of an f32
        input); per channel along `oc_axis` when drawn so."""
        channels = None
        if oc_axis is not None and self.draw(st.booleans(), label="per-channel weights"):
            channels = shape[oc_axis]
        self.note("weights_quantization", "per_channel" if channels else "per_tensor")
        params = draw_qparams(self.draw, qdtype.value, channels=channels,
                              axis=oc_axis if oc_axis is not None else 1, rank=len(shape),
                              zero_zps=self.plan.gpu)
        if channels:
            axis = params.get("axis")
            self.note("quantization_axis", "negative" if isinstance(axis, int) and axis < 0
                      else "non-negative")
            zps = params.get("zps") or ()
            self.note("channel_zps", "differing" if isinstance(zps, tuple)
                      and len(set(zps)) > 1 else "uniform")
        src = self.tensor(shape, F32 if quantize_first else qdtype)
        if quantize_first:
            src = self.add("Quantize", [src], dict(params), [qdtype]).outputs[0]
        return self.add("Dequantize", [src], dict(params), [F32]).outputs[0]

    def side(self, side: Side, shape: Sequence[int], oc_axis: int | None = None,
             ) -> LogicalTensor:
        kinds = [s.kind for s in side.steps]
        if oc_axis is not None:  # the weights path
            first = "Quantize" in kinds
            self.columns["weights"] = "f32" if first else self.plan.weights.value
            return self.quantized(shape, self.plan.weights, quantize_first=first,
                                  oc_axis=oc_axis)
        qdtype = self.draw(st.sampled_from(self.plan.side_types), label="operand type")
        self.columns["add"] = qdtype.value
        return self.quantized(shape, qdtype)

    # -- heads ------------------------------------------------------------------------------

    def head_spec(self, kind: str) -> HeadSpec:
        draw = self.draw
        bias = False if kind == "ConvolutionBackwardWeights" else self.plan.bias_input
        if kind in ("Convolution", "ConvTranspose", "ConvolutionBackwardWeights"):
            return draw_conv(draw, kind == "ConvTranspose", bias)
        if kind == "MatMul":
            return draw_matmul(draw, bias, vector_dst="BiasAdd" not in self.skel.kinds())
        if kind in ("AvgPool", "MaxPool"):
            return draw_pool(draw, kind)
        if kind == "Interpolate":
            return draw_interpolate(draw)
        if kind.startswith("Reduce"):
            return draw_reduce(draw, kind)
        if kind == "SoftMax":
            return draw_softmax(draw)
        # The ranks every op of the chain accepts (a BiasAdd or a batch norm backward after
        # the head needs rank 2).
        ranks = tuple(r for r in (4, 2, 3, 5, 1)
                      if all(r in schema_ranks(k) and (f"{k}.rank", str(r)) not in UNDRAWN
                             for k in self.skel.kinds() if k in SCHEMAS))
        return HeadSpec(draw_layout(draw, ranks), {}, kind)

    def head(self, step: Step, index: int, spec: HeadSpec, src: LogicalTensor | None) -> _Chain:
        kind = step.kind
        x = src if src is not None else self.tensor(spec.src.shape, self.plan.start)
        dt, fmt = x.dtype, spec.src.data_format
        for key, value in spec.features.items():
            self.note(key, value)
        words = spec.words
        out_dt = self.plan.head_dst or dt
        if isinstance(spec, ConvSpec) and kind != "ConvolutionBackwardWeights":
            side = self.skel.side_of(index)
            w = (self.side(side, spec.weights, spec.weights_oc_axis) if side is not None
                 else self.tensor(spec.weights, dt))
            inputs = [x, w] + ([self.tensor((spec.bias,), dt)] if spec.bias else [])
            self.columns["bias"] = dt.value if spec.bias else self.columns["bias"]
            op = self.add(kind, inputs, spec.attrs, [dt])
        elif isinstance(spec, MatMulSpec):
            side = self.skel.side_of(index)
            w = (self.side(side, spec.weights, spec.weights_oc_axis) if side is not None
                 else self.tensor(spec.weights, dt))
            inputs = [x, w] + ([self.tensor(spec.bias, dt)] if spec.bias else [])
            op = self.add(kind, inputs, spec.attrs, [out_dt])
            fmt = spec.chain_format
        elif kind == "ConvolutionBackwardWeights":
            assert isinstance(spec, ConvSpec)
            conv = dict(spec.attrs)
            probe = self.add("Convolution", [x, self.tensor(spec.weights, dt)], conv, [dt])
            self.ops.pop()  # only its output shape was wanted
            diff = self.tensor(probe.outputs[0].shape or (), dt)
            if self.draw(st.booleans(), label="weights_shape as input"):
                ws = self.tensor((len(spec.weights),), D.s32)
                op = self.add(kind, [x, diff, ws], conv, [dt], [spec.weights])
                self.note("weights_shape_source", "input")
            else:
                op = self.add(kind, [x, diff], {**conv, "weights_shape": spec.weights}, [dt])
                self.note("weights_shape_source", "attribute")
            words = words.replace("Convolution", kind)
        elif isinstance(spec, InterpolateSpec) and spec.sizes_input is not None:
            shape = self.add(kind, [x], {**spec.attrs, "sizes": spec.sizes_input},
                             [dt]).outputs[0].shape
            self.ops.pop()
            sizes = self.tensor((len(spec.sizes_input),), D.s32)
            op = self.add(kind, [x, sizes], spec.attrs, [dt], [shape])
        elif kind == "SoftMax":
            # The optional stats output (f32 whatever the dst) is requested as often as not.
            stats = self.draw(st.booleans(), label="stats output")
            op = self.add(kind, [x], spec.attrs, [out_dt, F32] if stats else [out_dt])
            self.note("softmax_stats", "yes" if stats else "no")
            words += " +stats" if stats else ""
        elif isinstance(spec, ReduceSpec) and spec.axes_input:
            shape = self.add(kind, [x], spec.attrs, [dt]).outputs[0].shape
            self.ops.pop()
            axes = spec.attrs["axes"]
            assert isinstance(axes, tuple)
            given = self.tensor((len(axes),), D.s32)
            attrs = {k: v for k, v in spec.attrs.items() if k != "axes"}
            op = self.add(kind, [x, given], attrs, [dt], [shape])
            self.note("axes_source", "input")
        elif kind in ("AvgPool", "MaxPool", "Interpolate") or kind.startswith("Reduce"):
            if kind.startswith("Reduce"):
                self.note("axes_source", "attribute")
            op = self.add(kind, [x], spec.attrs, [dt])
        else:
            return self.follow(step, index, _Chain(x, fmt), head=True)
        self.record(op, words)
        return _Chain(op.outputs[0], fmt)

    def record(self, op: Op, words: str) -> None:
        self.step_ops.append(op.id)
        self.words.append(words)

    # -- followers --------------------------------------------------------------------------

    def follow(self, step: Step, index: int, chain: _Chain, head: bool = False) -> _Chain:
        kind, x, draw = step.kind, chain.tensor, self.draw
        shape, dt = chain.layout.shape, x.dtype
        if kind in BINARY:
            return self.binary(step, index, chain, head)
        attrs: dict[str, AttrValue] = {}
        inputs = [x]
        words = kind
        dtypes = [dt]
        if kind in UNARY:
            attrs = draw_unary_attrs(draw, kind)
            if kind == "LeakyReLU":
                alpha = attrs["alpha"]
                self.note("leaky_relu_alpha", "above 1" if isinstance(alpha, float)
                          and alpha > 1 else "at most 1")
            if kind == "SoftPlus":
                beta = attr_value_in(kind, attrs, "beta")
                self.note("softplus_beta", "negative" if isinstance(beta, float) and beta < 0
                          else "positive")
            if attrs:
                words += "(" + ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                                         for k, v in attrs.items()) + ")"
        elif kind == "BiasAdd":
            inputs.append(self.tensor((chain.layout.channels,), dt))
            maybe_default(draw, attrs, kind, "data_format", chain.data_format)
            self.columns["bias"] = dt.value
        elif kind in ("BatchNormInference", "BatchNormTrainingBackward"):
            return self.batchnorm(kind, chain, head)
        elif kind == "Quantize":
            target = self.plan.quant_dst or D.u8
            attrs = draw_qparams(draw, target.value, zero_zps=self.plan.gpu)
            if self.plan.gpu:
                attrs["scales"] = (1.0,)  # page 000's GPU limit on the F2Q Quantize
            dtypes, words = [target], f"Quantize {target}"
        elif kind == "TypeCast":
            target = (self.plan.cast or BF16) if dt is F32 else F32
            dtypes, words = [target], f"TypeCast {target}"
        elif kind == "Reorder":
            return self.reorder(chain)
        elif kind == "ReLUBackward":
            inputs.append(self.tensor(shape, dt))
            maybe_default(draw, attrs, kind, "use_dst", draw(st.booleans(), label="use_dst"))
        elif kind == "BiasAddBackward":
            fmt = draw(st.sampled_from(("NCX", "NXC")), label="data_format")
            maybe_default(draw, attrs, kind, "data_format", fmt)
            words = f"BiasAddBackward {fmt}"
        elif kind == "Dequantize":
            qdtype = self.plan.src
            self.columns["src"] = qdtype.value
            attrs = draw_qparams(draw, qdtype.value, zero_zps=self.plan.gpu)
            inputs, dtypes, words = [self.tensor(shape, qdtype)], [F32], f"Dequantize {qdtype}"
        elif kind != "Reciprocal":
            raise AssertionError(f"no builder for {kind} in a chain")
        op = self.add(kind, inputs, attrs, dtypes)
        self.record(op, words)
        return _Chain(op.outputs[0], chain.data_format)

    def operand_dtype(self, index: int, chain_dt: DataType) -> DataType:
        if index in self.plan.low_operands and self.plan.low is not None:
            return self.plan.low
        return F32 if index == self.plan.switch else chain_dt

    def binary(self, step: Step, index: int, chain: _Chain, head: bool) -> _Chain:
        draw, layout, x = self.draw, chain.layout, chain.tensor
        how = draw(st.sampled_from(BROADCASTS), label="broadcast")
        ones = [1] * len(layout.shape)
        if how == "full":
            shape = list(layout.shape)
        elif how == "per-channel":
            shape = list(ones)
            if shape:
                shape[layout.channel_axis] = layout.channels
        else:
            shape = ones
        side = self.skel.side_of(index)
        if side is not None:
            other = self.side(side, shape)
        else:
            other = self.tensor(shape, self.operand_dtype(index, x.dtype))
        port = step.chain_port
        if port is None:
            port = draw(st.sampled_from((0, 1)), label="chain port") if (
                step.kind in COMMUTATIVE_KINDS and not head) else 0
        attrs: dict[str, AttrValue] = {}
        mode = draw(st.sampled_from(("numpy", "none")), label="auto_broadcast") if (
            how == "full") else "numpy"
        maybe_default(draw, attrs, step.kind, "auto_broadcast", mode)
        out = F32 if F32 in (x.dtype, other.dtype) else x.dtype
        op = self.add(step.kind, [x, other] if port == 0 else [other, x], attrs, [out])
        self.note("broadcast", how)
        self.note("chain_port", f"src_{port}")
        self.note("auto_broadcast", mode)
        detail = ", ".join(filter(None, ["dq" if side else "", how,
                                         "src_1" if port else "", mode if mode != "numpy"
                                         else "", other.dtype.value if other.dtype != x.dtype
                                         else ""]))
        self.record(op, f"{step.kind}({detail})")
        return _Chain(op.outputs[0], chain.data_format)

    def batchnorm(self, kind: str, chain: _Chain, head: bool) -> _Chain:
        draw, x, layout = self.draw, chain.tensor, chain.layout
        stats = draw(st.sampled_from((F32, BF16)), label="statistics type") if (
            x.dtype is BF16) else F32
        self.note("bn_stats", stats.value)
        vec = (layout.channels,)
        attrs: dict[str, AttrValue] = {"epsilon": draw(st.sampled_from(
            (1e-5, 1e-3, 0.0625, 0.0, 1.0)), label="epsilon")}
        maybe_default(draw, attrs, kind, "data_format", chain.data_format)
        if kind == "BatchNormInference":
            inputs = [x, *(self.tensor(vec, stats) for _ in range(4))]
            op = self.add(kind, inputs, attrs, [x.dtype])
        else:
            gamma = draw(st.booleans(), label="gamma input")
            outs = draw(st.sampled_from((1, 3)), label="outputs")
            inputs = [x, self.tensor(layout.shape, x.dtype),
                      *(self.tensor(vec, stats) for _ in range(3 if gamma else 2))]
            op = self.add(kind, inputs, attrs, [x.dtype, stats, stats][:outs])
            self.note("bn_bwd_outputs", outs)
        self.record(op, f"{kind} {chain.data_format}" + (f" {stats} stats" if stats != x.dtype
                                                          else ""))
        return _Chain(op.outputs[0], chain.data_format)

    def reorder(self, chain: _Chain) -> _Chain:
        x, shape = chain.tensor, chain.layout.shape
        strides = None
        if len(shape) >= 2 and self.draw(st.booleans(), label="permuted dst layout"):
            # Store the last two axes swapped in memory: a real layout change.
            order = [*range(len(shape) - 2), len(shape) - 1, len(shape) - 2]
            stride, found = 1, [0] * len(shape)
            for axis in reversed(order):
                found[axis] = stride
                stride *= shape[axis]
            strides = tuple(found)
        out = self.tensor(shape, x.dtype, strides)
        op = Op(len(self.ops), "Reorder", (x,), (out,), {})
        self.ops.append(op)
        self.note("reorder_layout", "permuted" if strides else "dense")
        self.record(op, "Reorder" + (" (permuted)" if strides else ""))
        return _Chain(out, chain.data_format)

    # -- the whole instance -----------------------------------------------------------------

    def run(self) -> Built:
        steps = self.skel.steps
        chain: _Chain | None = None
        pending: HeadSpec | None = None
        for index, step in enumerate(steps):
            if chain is None and step.kind == "Dequantize" and len(steps) > 1:
                # The src Q2F path: the base op after it decides the shape it dequantizes.
                pending = self.head_spec(steps[index + 1].kind)
                shape_only = LogicalTensor(-1, F32, pending.src.shape)
                chain = self.follow(step, index, _Chain(shape_only, pending.src.data_format))
            elif chain is None or pending is not None:
                spec = pending or self.head_spec(step.kind)
                chain = self.head(step, index, spec, chain.tensor if chain else None)
                pending = None
            else:
                chain = self.follow(step, index, chain)
        assert chain is not None
        features: dict[str, str | int] = dict(self.skel.features)
        features.update({k: ",".join(sorted(v)) for k, v in self.notes.items()})
        if self.plan.row == "int8":
            self.columns["dst"] = chain.tensor.dtype.value
            self.columns.setdefault("src", self.plan.src.value)
            features["dtype_row"] = int8_row(self.entry, self.columns)
        else:
            features["dtype_row"] = self.plan.row
        features["engine_kind"] = "gpu" if self.plan.gpu else "cpu"
        graph = Graph(self.ops, engine_kind="gpu" if self.plan.gpu else "cpu")
        return Built(self.entry, graph, self.skel, self.plan, tuple(self.step_ops),
                     tuple(self.words), features)


def build(draw: st.DrawFn, entry: PatternEntry, skeleton: Skeleton, plan: DtypePlan) -> Built:
    """The graph of one instance (see the module docstring)."""
    return _Builder(draw, entry, skeleton, plan).run()
