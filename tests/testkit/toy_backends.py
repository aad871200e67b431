"""Small deliberately broken backends for the suite's own tests, and hand-built cases.

Each backend is the reference with one defect, so each verdict status can be provoked on
purpose. They live in an importable module so that the runner's worker process can load them by
``"testkit.toy_backends:ClassName"`` (the tests put this folder on the worker's sys.path).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fusionspec.backend import CompiledPartition, Device, Limitation
from fusionspec.conformance.cases import Case, CaseKind
from fusionspec.conformance.generate.instance_build import build_instance
from fusionspec.conformance.generate.instance_plans import instance_plans
from fusionspec.reference import execute, single_op_partitions
from fusionspec.reference.backend import NUMPY_DEVICE, ReferenceBackend
from fusionspec.reference.partitioner import external_tensors
from fusionspec.spec.catalog import entry as catalog_entry
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import GraphError
from fusionspec.spec.graph import Graph, Op, Partition
from fusionspec.spec.graph import LogicalTensor as T
from fusionspec.spec.types import Array


class _Compiled:
    """A compiled partition whose execute runs `fn` on the reference's outputs."""

    def __init__(self, partition: Partition, fn: Any = None) -> None:
        self.partition = partition
        self.fn = fn

    def execute(self, inputs: Mapping[int, Array]) -> dict[int, Array]:
        outputs = execute(self.partition, inputs)
        if self.fn is None:
            return outputs
        return {tid: self.fn(tid, array) for tid, array in outputs.items()}


class _Toy:
    """The reference, with hooks for the defect of each subclass."""

    name = "toy"

    def devices(self) -> Sequence[Device]:
        return (NUMPY_DEVICE,)

    def partition(self, graph: Graph) -> list[Partition]:
        return ReferenceBackend().partition(graph)

    def compile(self, partition: Partition, device: Device) -> CompiledPartition:
        return _Compiled(partition)


class Faithful(_Toy):
    name = "faithful"


class NeverFuses(_Toy):
    """Runs every op on its own: a silent fallback to unfused execution."""

    name = "never-fuses"

    def partition(self, graph: Graph) -> list[Partition]:
        return single_op_partitions(graph.finalize())


def _plus_one(tid: int, array: Array) -> Array:
    if array.dtype.kind == "f" or str(array.dtype) == "bfloat16":
        return (array.astype(np.float32) + 1.0).astype(array.dtype)
    return array


class WrongMath(_Toy):
    """Adds 1 to every floating-point output."""

    name = "wrong-math"

    def compile(self, partition: Partition, device: Device) -> CompiledPartition:
        return _Compiled(partition, _plus_one)


class _WrongOn(_Toy):
    """Adds 1 to the floating-point outputs of partitions holding an op of `kinds`."""

    name = "broken"
    kinds: frozenset[str] = frozenset()

    def compile(self, partition: Partition, device: Device) -> CompiledPartition:
        wrong = any(op.kind in self.kinds for op in partition.ops)
        return _Compiled(partition, _plus_one if wrong else None)


class WrongConv(_WrongOn):
    """A backend whose Convolution partitions compute wrong (and nothing else)."""

    kinds = frozenset({"Convolution"})


class WrongConvOwnDevice(WrongConv):
    """`WrongConv` on a device of its own name, which no other backend has."""

    name = "wrong-conv-own-device"

    def devices(self) -> Sequence[Device]:
        return (Device(id="my-cpu", kind="cpu", name="a backend's own CPU device"),)


class WrongConvAndMatMul(_WrongOn):
    """The next version of `WrongConv`, under the same name: MatMul breaks too."""

    kinds = frozenset({"Convolution", "MatMul"})


def _to_f16(tid: int, array: Array) -> Array:
    return array.astype(np.float16) if array.dtype == np.float32 else array


class WrongDtype(_Toy):
    """Returns f32 outputs as f16."""

    name = "wrong-dtype"

    def compile(self, partition: Partition, device: Device) -> CompiledPartition:
        return _Compiled(partition, _to_f16)


class RejectsEverything(_Toy):
    """Refuses every graph with a typed error."""

    name = "rejects-everything"

    def partition(self, graph: Graph) -> list[Partition]:
        raise GraphError("this backend supports no graph", rule="toy.reject")


class AcceptsEverything(_Toy):
    """Never validates: single-op partitions of the graph as given."""

    name = "accepts-everything"

    def partition(self, graph: Graph) -> list[Partition]:
        return single_op_partitions(graph)


class FusesEverything(_Toy):
    """One partition holding the whole graph, computed right (the reference runs it)."""

    name = "fuses-everything"

    def partition(self, graph: Graph) -> list[Partition]:
        graph = graph.finalize()
        inputs, outputs = external_tensors(graph, graph.ops)
        return [Partition(0, graph.ops, inputs, outputs, pattern="everything")]

    def compile(self, partition: Partition, device: Device) -> CompiledPartition:
        return _WholeGraph(Graph(partition.ops))


class _WholeGraph:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def execute(self, inputs: Mapping[int, Array]) -> dict[int, Array]:
        return execute(self.graph, inputs)


class FusesEverythingWrongly(FusesEverything):
    """Fuses the whole graph and gets it wrong."""

    name = "fuses-everything-wrongly"

    def compile(self, partition: Partition, device: Device) -> CompiledPartition:
        return _WrongWholeGraph(Graph(partition.ops))


class _WrongWholeGraph(_WholeGraph):
    def execute(self, inputs: Mapping[int, Array]) -> dict[int, Array]:
        return {tid: _plus_one(tid, a) for tid, a in super().execute(inputs).items()}


class RaisesKeyError(_Toy):
    """Crashes with an untyped exception while partitioning."""

    name = "raises-key-error"

    def partition(self, graph: Graph) -> list[Partition]:
        raise KeyError("no such thing")


class FailsDeepInNumPy(_Toy):
    """Partitions through a few frames of its own, then fails deep inside NumPy (a singular
    matrix inverted): the frames that matter are its own, far from where the error is
    raised."""

    name = "fails-deep-in-numpy"

    def partition(self, graph: Graph) -> list[Partition]:
        return self._plan_weights(graph)

    def _plan_weights(self, graph: Graph) -> list[Partition]:
        # The bug: a cost model that inverts singular matrices, row by row through NumPy.
        np.apply_along_axis(_invert, 0, np.zeros((2, 2)))
        return []


def _invert(row: Any) -> Any:
    return np.linalg.inv(np.zeros((2, 2)))


class ToyRejection(Exception):
    """A backend's own rejection type."""


class DeclaredRejection(_Toy):
    """Rejects everything with its own, declared, exception type."""

    name = "declared-rejection"
    rejection_errors = (ToyRejection,)

    def partition(self, graph: Graph) -> list[Partition]:
        raise ToyRejection("not for me")


class Sleeps(_Toy):
    """Hangs in execute."""

    name = "sleeps"

    def compile(self, partition: Partition, device: Device) -> CompiledPartition:
        return _Compiled(partition, _sleep)


def _sleep(tid: int, array: Array) -> Array:
    time.sleep(60)
    return array


class PrintsToStdout(_Toy):
    """Prints to standard output (as a library's verbose mode does) at every call."""

    name = "prints"

    def partition(self, graph: Graph) -> list[Partition]:
        print("verbose: partitioning", flush=True)
        os.write(1, b"verbose: native line\n")
        return super().partition(graph)


class SpawnsAndHangs(_Toy):
    """Starts a helper process (its pid written to ``child.pid`` in the working directory),
    then hangs. (The working directory, not an environment variable: workers are forked from
    a server started once per session, with the environment of that moment; the working
    directory is the runner's at each start.)"""

    name = "spawns-and-hangs"

    def compile(self, partition: Partition, device: Device) -> CompiledPartition:
        import subprocess

        child = subprocess.Popen(["sleep", "600"])
        with open("child.pid.part", "w") as handle:  # renamed whole: a reader sees all or none
            handle.write(f"{child.pid}\n")
        os.replace("child.pid.part", "child.pid")
        time.sleep(600)
        return super().compile(partition, device)


class ForgesGrades(WrongMath):
    """Computes wrong and replaces the suite's grading in its own process with one that always
    passes: grading happens in the runner, so the forgery changes nothing."""

    name = "forges-grades"

    def __init__(self) -> None:
        from fusionspec.conformance.cases import Status
        from fusionspec.conformance.grade import verdicts
        from fusionspec.conformance.grade.verdict import Verdict

        def always_pass(case: Any, backend: Any, device: Any, **_: Any) -> Verdict:
            return Verdict(case.id, case.pattern, case.kind, Status.passed)

        verdicts.judge = always_pass


class HogsMemory(_Toy):
    """Allocates (and touches) 6 GiB in execute."""

    name = "hogs-memory"

    def compile(self, partition: Partition, device: Device) -> CompiledPartition:
        return _Compiled(partition, _hog)


def _hog(tid: int, array: Array) -> Array:
    block = np.ones(6 * 2**30 // 8)
    return array + float(block[-1]) - 1.0


class Crashes(_Toy):
    """Kills its own process in execute, when the graph has a MatMul (other graphs run)."""

    name = "crashes"

    def compile(self, partition: Partition, device: Device) -> CompiledPartition:
        if any(op.kind == "MatMul" for op in partition.ops):
            return _Compiled(partition, _exit)
        return _Compiled(partition)


def _exit(tid: int, array: Array) -> Array:
    # As a native library dies: last words straight to file descriptor 2, then gone.
    os.write(2, b"terminate called after throwing an instance of 'toy::error'\n"
                b"  what():  could not execute a toy primitive\n")
    os._exit(3)


class LimitedFaithful(_Toy):
    """Declares matmul cases unsupported, but computes everything right."""

    name = "limited-faithful"
    limitations = (Limitation("matmul is not implemented", pattern="fp.matmul_post_ops"),)


class LimitedWrong(WrongMath):
    """Declares matmul unsupported, and indeed gets it wrong."""

    name = "limited-wrong"
    limitations = (Limitation("matmul is not implemented", pattern="fp.matmul_post_ops"),)


class LimitedSleeps(Sleeps):
    """Declares matmul unsupported, and hangs on it."""

    name = "limited-sleeps"
    limitations = (Limitation("matmul hangs", pattern="fp.matmul_post_ops"),)


class LimitedByGlob(WrongMath):
    """Declares every convolution pattern unsupported with a glob, and gets them wrong."""

    name = "limited-by-glob"
    limitations = (Limitation("convolutions are not fused yet", pattern="fp.conv_*"),)


class LimitedByNothing(_Toy):
    """Declares a limitation whose pattern glob names no catalog pattern."""

    name = "limited-by-nothing"
    limitations = (Limitation("matmul is not implemented", pattern="fp.matmull_*"),
                   Limitation("no f4", tensor_dtypes=("f4_*",)))


class NoDevices(_Toy):
    name = "no-devices"

    def devices(self) -> Sequence[Device]:
        return ()



class Chatty(_Toy):
    """Prints compiler chatter on standard error at every compile, and counts compiles."""

    name = "chatty"

    def __init__(self) -> None:
        self.compiled = 0

    def compile(self, partition: Partition, device: Device) -> CompiledPartition:
        os.write(2, b"1 warning generated.\n")
        self.compiled += 1
        return super().compile(partition, device)

    def counters(self) -> dict[str, int]:
        return {"compiled": self.compiled}


class HalfBroken(_Toy):
    """One usable device, and one whose compiler 'failed its probe'."""

    name = "half-broken"

    def device_problems(self) -> dict[str, str]:
        return {"gpu0": "the compiler crashed while building the probe kernels"}


class LeaksIntermediate(_Toy):
    """Partitions like the reference but lists every tensor its ops produce as an output."""

    name = "leaks-intermediate"

    def partition(self, graph: Graph) -> list[Partition]:
        return [Partition(p.id, p.ops, p.inputs, tuple(t for op in p.ops for t in op.outputs),
                          p.pattern) for p in super().partition(graph)]


class MarksUnsupported(_Toy):
    """Partitions like the reference but marks every partition unsupported."""

    name = "marks-unsupported"

    def partition(self, graph: Graph) -> list[Partition]:
        return [Partition(p.id, p.ops, p.inputs, p.outputs, p.pattern, supported=False)
                for p in super().partition(graph)]


class DropsLastOp(_Toy):
    """Leaves the graph's last op out of every partition."""

    name = "drops-last-op"

    def partition(self, graph: Graph) -> list[Partition]:
        graph = graph.finalize()
        last = graph.ops[-1].id
        kept = [op for op in graph.ops if op.id != last]
        inputs, outputs = external_tensors(graph, kept)
        return [Partition(0, kept, inputs, outputs)]


class _Requantized:
    """Runs the reference, then re-rounds each Quantize output from its exact value with
    `rounding` (per-tensor quantization only, as in the instances)."""

    def __init__(self, partition: Partition, rounding: Any) -> None:
        self.partition = partition
        self.rounding = rounding

    def execute(self, inputs: Mapping[int, Array]) -> dict[int, Array]:
        values = execute(self.partition, inputs, keep_intermediates=True)
        out: dict[int, Array] = {}
        for t in self.partition.outputs:
            producer = next(op for op in self.partition.ops if t in op.outputs)
            array = values[t.id]
            if producer.kind == "Quantize":
                scales = producer.attrs["scales"]
                zps = producer.attrs.get("zps") or (0,)
                assert isinstance(scales, tuple) and isinstance(zps, tuple)
                exact = (values[producer.inputs[0].id].astype(np.float64) / float(scales[0])
                         + float(zps[0]))
                info = np.iinfo(array.dtype)
                rounded = np.nan_to_num(self.rounding(exact), nan=0.0)
                array = np.clip(rounded, info.min, info.max).astype(array.dtype)
            out[t.id] = array
        return out


class RoundsHalfUp(_Toy):
    """Quantizes with round-half-up instead of half-to-even: off by one at ties only."""

    name = "rounds-half-up"

    def compile(self, partition: Partition, device: Device) -> CompiledPartition:
        return _Requantized(partition, lambda x: np.floor(x + 0.5))


class QuantizesOneHigh(_Toy):
    """Quantizes one step too high everywhere."""

    name = "quantizes-one-high"

    def compile(self, partition: Partition, device: Device) -> CompiledPartition:
        return _Requantized(partition, lambda x: np.rint(x) + 1)


# -- hand-built cases ------------------------------------------------------------------------

F32 = DataType.f32


def valid_case(pattern: str = "fp.matmul_post_ops", index: int = 0) -> Case:
    """Instance `index` of catalog pattern `pattern`, as the strategies would produce it."""
    entry = catalog_entry(pattern)
    plan = instance_plans(entry)[index]
    return Case(f"{pattern}/valid/{index}", CaseKind.valid, pattern,
                build_instance(entry, plan), dtype="f32",
                features={"post_ops": len(plan.kinds) - 1, "plan": plan.describe()},
                description=plan.describe())


def matmul_relus(count: int) -> Graph:
    """MatMul followed by `count` ReLUs in a chain (f32, 4x8)."""
    ops = [Op(0, "MatMul", [T(0, F32, (4, 8)), T(1, F32, (8, 8))], [T(2, F32, (4, 8))])]
    for i in range(count):
        ops.append(Op(i + 1, "ReLU", [T(2 + i, F32, (4, 8))], [T(3 + i, F32, (4, 8))]))
    return Graph(ops)


def near_miss_case() -> Case:
    """MatMul + 4 ReLUs: one post-op past the bound {0-3}; the reference keeps the 4th apart."""
    return Case("fp.matmul_post_ops/near-miss/bound", CaseKind.near_miss, "fp.matmul_post_ops",
                matmul_relus(4), rule="structure.bound", dtype="f32",
                features={"post_ops": 4}, description="MatMul + ReLU x4")


def ill_formed_case() -> Case:
    """A MatMul whose transpose_a attribute is a string: breaks schema.attr.type."""
    graph = matmul_relus(1)
    bad = Op(0, "MatMul", graph.ops[0].inputs, graph.ops[0].outputs, {"transpose_a": "yes"})
    return Case("fp.matmul_post_ops/ill-formed/attr-type", CaseKind.ill_formed,
                "fp.matmul_post_ops", Graph([bad, graph.ops[1]]), rule="schema.attr.type",
                description="MatMul transpose_a='yes'")


class RejectsAtCompile(_Toy):
    """Partitions as the reference does, then rejects every partition at compile with its
    declared rejection type."""

    name = "rejects-at-compile"
    rejection_errors = (ToyRejection,)

    def compile(self, partition: Partition, device: Device) -> CompiledPartition:
        raise ToyRejection("no kernel for this partition")


class _FailingExecute:
    def execute(self, inputs: Mapping[int, Array]) -> dict[int, Array]:
        raise ToyRejection("ran out of something")


class FailsInExecute(_Toy):
    """Compiles every partition, then raises in execute (with its declared rejection type,
    which execute may not use: a rejection is for partition and compile)."""

    name = "fails-in-execute"
    rejection_errors = (ToyRejection,)

    def compile(self, partition: Partition, device: Device) -> CompiledPartition:
        return _FailingExecute()
