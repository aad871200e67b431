"""The OpenCL benchmark's building blocks (`bench/accel_kernels.py`) on a tiny size: the chains
are single partitions, the kernel timer and the copy kernels run, the fused and op-by-op
kernels agree with the reference, the MatMul + BiasAdd + GELU and SoftMax partitions are
single partitions the backend computes within the suite's tolerances; and
`bench/bench_accel.py`, a caller of `fusionspec bench`, writes a performance document with the
device's copy yardstick (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from testkit.accel import first_device, requires_device

from fusionspec.accel.devices import select_device
from fusionspec.accel.runtime import runtime_for
from fusionspec.conformance.grade.bounds import output_bounds
from fusionspec.conformance.grade.tolerances import compare
from fusionspec.reference import execute
from fusionspec.spec.graph import Graph

pytestmark = [requires_device]

ELEMENTS = 1000  # not a multiple of any work-group size, so the loops' tails run too


def _load(name: str) -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, f"cannot load {path}"
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


def _bench() -> ModuleType:
    """The building blocks (loaded the way the script loads them: from its folder)."""
    _load("bench_accel")
    return _load("accel_kernels")


@pytest.mark.parametrize("length", [2, 3, 4])
def test_chain_is_one_partition_and_both_modes_match_reference(length: int) -> None:
    bench = _bench()
    chain = bench.setup_chain(length, ELEMENTS, first_device(), np.random.default_rng(1))
    assert len(chain.partition.ops) == length, \
        f"partition has {len(chain.partition.ops)} ops, chain built {length}"
    assert len(chain.fused.plans) == 1, \
        f"fused mode built {len(chain.fused.plans)} kernel plans for a {length}-op chain"
    assert len(chain.opbyop.plans) == length, \
        f"op-by-op mode built {len(chain.opbyop.plans)} plans for {length} ops"
    from fusionspec.reference import execute

    want = execute(chain.partition, chain.inputs)
    for mode, compiled in (("fused", chain.fused), ("op-by-op", chain.opbyop)):
        diff = bench.max_abs_diff(compiled.execute(chain.inputs), want)
        assert diff == 0.0, f"{mode} chain{length} differs from the reference by {diff}"
    moved = bench.partition_bytes(chain.partition)
    expect = 4 * ELEMENTS * (length + 1)  # one input per op (ReLU's x, each binary's other) + out
    assert moved == expect, f"chain{length} moves {moved} bytes, expected {expect}"


def test_time_launches_reports_one_positive_time_per_run() -> None:
    bench = _bench()
    chain = bench.setup_chain(2, ELEMENTS, first_device(), np.random.default_rng(2))
    times = chain.opbyop.time_launches(chain.inputs, 3)
    assert len(times) == 3, f"asked for 3 runs, got {len(times)} times"
    assert all(t > 0 for t in times), f"non-positive kernel time in {times}"


def test_execute_timed_reads_the_kernels_time_from_events() -> None:
    """One positive device time per run, no more than the host saw, of the same span for op
    by op's several launches; the timing module picks it ("events") over the host's clock."""
    import time

    import pyopencl as cl

    from fusionspec.backend.timing import DeviceTimed, TimingPolicy, time_partition

    bench = _bench()
    chain = bench.setup_chain(3, ELEMENTS, first_device(), np.random.default_rng(4))
    for compiled in (chain.fused, chain.opbyop):
        assert isinstance(compiled, DeviceTimed), "the accel partition is device-timed"
        start = time.perf_counter()
        seconds = compiled.execute_timed(chain.inputs)
        wall = time.perf_counter() - start
        assert 0 < seconds <= wall, f"device time {seconds} s within the host's {wall} s"
        found = time_partition(compiled, chain.inputs, TimingPolicy(warmup=1, min_repeats=2,
                                                                    max_repeats=3))
        assert found.method == "events" and found.minimum > 0, \
            f"timed by events: {found.as_dict()}"
    runtime = chain.fused.runtime
    normal = runtime.queue.get_info(cl.command_queue_info.PROPERTIES)
    profiled = runtime.profiling_queue.get_info(cl.command_queue_info.PROPERTIES)
    assert not normal & cl.command_queue_properties.PROFILING_ENABLE, \
        "the queue of normal runs has no profiling (it would slow them)"
    assert profiled & cl.command_queue_properties.PROFILING_ENABLE, \
        "the timing queue has profiling"
    got = chain.fused.execute(chain.inputs)
    want = execute(chain.partition, chain.inputs)
    assert all(np.array_equal(got[k], want[k]) for k in want), \
        "timed runs leave the partition's normal runs correct"


@pytest.mark.parametrize("variant", ["scalar", "vector", "strided"])
def test_copy_kernel_copies_and_measures(variant: str) -> None:
    bench = _bench()
    runtime = runtime_for(select_device(first_device().id))
    copy = bench.CopyKernel(runtime, ELEMENTS, variant=variant)
    assert copy.check(), f"the {variant} copy kernel's destination differs from its source"
    assert copy.run() > 0, f"the {variant} copy kernel took no time"
    assert copy.nbytes == 8 * ELEMENTS, f"copy moves {copy.nbytes} bytes, not 8 per element"


@pytest.mark.parametrize("which", ["matmul", "conv", "softmax"])
def test_compute_partitions_are_single_and_within_tolerance(which: str) -> None:
    bench = _bench()
    graph = {"matmul": lambda: bench.matmul_graph(9, 20, 13),
             "conv": lambda: bench.conv_graph(2, 5, 7),
             "softmax": lambda: bench.softmax_graph(5, 70)}[which]()
    setup = bench.setup_partition(which, graph, first_device(), np.random.default_rng(3))
    kinds = [op.kind for op in setup.partition.ops]
    want_kinds = {"matmul": ["MatMul", "BiasAdd", "GELU"],
                  "conv": ["Convolution", "BiasAdd", "ReLU"], "softmax": ["SoftMax"]}[which]
    assert kinds == want_kinds, f"{which}: one partition of {want_kinds}, got {kinds}"
    assert len(setup.fused.plans) == 1, f"{which}: fused into {len(setup.fused.plans)} plans"
    assert (setup.opbyop is None) == (which == "softmax"), \
        f"{which}: op by op only for a partition of several ops"
    want = execute(setup.partition, setup.inputs)
    got = setup.fused.execute(setup.inputs)
    bounds = output_bounds(Graph(list(setup.partition.ops)), setup.inputs)
    for tensor in setup.partition.outputs:
        result = compare(want[tensor.id], got[tensor.id], bounds[tensor.id])
        assert result.passed, f"{which} output {tensor.id}: {result.reason}"


def test_script_writes_a_perf_document_with_the_device_copy(tmp_path: Path) -> None:
    script = _load("bench_accel")
    code = script.main(["--out", str(tmp_path), "--size", "small", "--workload",
                        "fp.binary_post_ops/*", "--elements", str(ELEMENTS), "--budget",
                        "0.02", "--device", first_device().id])
    assert code == 0, f"the benchmark exited with {code}"
    from fusionspec.conformance.perf.document import load_perf

    doc = load_perf(tmp_path / "perf.json").to_json()
    (record,) = doc["workloads"]
    assert record["id"] == "fp.binary_post_ops/resnet50-residual-add-relu", \
        f"--workload selects the workload: {record['id']}"
    assert set(record["timings"]) == {"fused", "opbyop", "reference"}, \
        f"the reference is a side by default: {sorted(record['timings'])}"
    methods = {side: t["method"] for side, t in record["timings"].items()}
    assert methods == {"fused": "events", "opbyop": "events", "reference": "wall"}, \
        f"the kernels are timed by events, the reference by the host's clock: {methods}"
    yard = doc["yardsticks"]
    assert yard["device_copy_gb_s"] > 0 and yard["device_copy_variant"] in ("scalar", "vector"), \
        f"the device's copy yardstick is recorded: {yard}"
    share = record["roofline"]["device_copy_share"]
    assert share == pytest.approx(record["roofline"]["gb_s"] / yard["device_copy_gb_s"]), \
        f"the fused side's share of the device copy: {record['roofline']}"
    assert doc["command"].startswith("python bench/bench_accel.py"), \
        f"the document says how it was made: {doc['command']}"
