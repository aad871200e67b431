"""The command's side of one workload of a bench run: what it asks the backend's process, and
how it judges the answers.

`conversation` is one workload's exchange with a bench worker
(`fusionspec.conformance.perf.workers`; the worker's side is
`fusionspec.conformance.perf.server`). The worker only runs the backend and reports what it
saw; everything that decides a record is computed here, in the command's process:

1. **The partitions.** The worker names the ops of each partition the backend formed; every op
   of the workload's graph must be in exactly one. Whether the fusion was formed
   (``fused_whole``) follows from them.
2. **The outputs.** The worker sends each side's graph outputs. They are checked against
   fusionspec's reference, computed here from the same seeded inputs (a side that is fast
   because it computes something else must not win, even when the other side agrees with it:
   `REFERENCE_SLACK`), and against each other (`fusionspec.backend.agreement`).
   Only then is the workload timed.
3. **The timings.** The worker sends each side's raw samples in seconds. Each must be a finite
   number, 0 or more, and there must be as many as the timing policy allows; a side whose
   median interval starts at 0 s measured nothing (a timer that reads 0). The figures, the
   op-by-op over fused ratio, the verdict (`fusionspec.conformance.perf.verdicts`) and the
   roofline figures are computed from the samples.

A backend's failure, a sample that is no duration and a timer that reads 0 s end the record
with an ``error`` that begins with ``backend error``; an answer that is not what was asked
raises `BadAnswer`, which replaces the worker too.
"""

from __future__ import annotations

import dataclasses
import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fusionspec.backend.timing import Timing, TimingPolicy
from fusionspec.reference import execute, fill_inputs
from fusionspec.reference.partitioner import partition as reference_partition
from fusionspec.spec.graph import Graph, LogicalTensor
from fusionspec.spec.types import Array

from ..workers.transport import Reply
from .records import OutputCheck, Roofline, SideTiming, WorkloadRecord, Yardsticks
from .roofline import opbyop_bytes, partition_bytes, partition_flops, rate
from .sides import REFERENCE_SLACK, outputs_agree
from .verdicts import verdict
from .workers import BACKEND_ERROR, BadAnswer, Conversation, failure_text
from .workloads import Workload, workload

__all__ = ["BenchJob", "conversation", "header", "rerun_command", "GEMM_KINDS", "STOPS"]

#: Ops whose rate is compared with the GEMM yardstick.
GEMM_KINDS = frozenset({"MatMul", "Convolution", "ConvTranspose",
                        "ConvolutionBackwardWeights"})
#: Why a side's sampling may stop (`fusionspec.backend.timing.Measurement.stop_reason`).
STOPS = frozenset({"spread", "budget", "repeats"})
_MAX_REPR = 80


@dataclass(frozen=True)
class BenchJob:
    """What every workload of one run is measured with."""

    spec: str
    device_id: str
    size: str
    seed: int
    policy: TimingPolicy
    reference: bool
    settle_s: float
    yardstick: Yardsticks | None


def rerun_command(backend_spec: str, device_id: str, size: str, workload_id: str) -> str:
    """The command that measures one workload again, quoted for a POSIX shell."""
    return shlex.join(["fusionspec", "bench", "--backend", backend_spec, "--device", device_id,
                       "--size", size, "--workload", workload_id])


def header(w: Workload, size: str) -> WorkloadRecord:
    """The record of workload `w` at `size` with the fields every record begins with."""
    return WorkloadRecord(id=w.id, pattern=w.pattern, name=w.name, source=w.source,
                          dtype=w.dtype, ops=tuple(op.kind for op in w.graph(size).ops))


def _answer(reply: Reply, ident: str, keys: Sequence[str]) -> dict[str, Any]:
    """The value of `reply` when it is the mapping asked for, about `ident`."""
    value = reply.value
    if not isinstance(value, dict) or set(value) != {"id", *keys}:
        raise BadAnswer(f"the backend's process answered a {type(value).__name__} that is not "
                        "the measurement asked for")
    if not isinstance(value["id"], str) or value["id"] != ident:
        raise BadAnswer("the backend's process answered about another workload")
    return value


def _formed(graph: Graph, parts: object) -> list[list[int]]:
    """The partitions as op ids, when every op of `graph` is in exactly one."""
    ops = sorted(op.id for op in graph.ops)
    if not isinstance(parts, list) or not all(
            isinstance(p, list) and p and all(type(i) is int for i in p) for p in parts):
        raise BadAnswer("the backend's process named its partitions in a form fusionspec "
                        "does not read")
    if sorted(i for p in parts for i in p) != ops:
        raise BadAnswer("the backend's process named partitions that do not hold each op of "
                        "the workload once")
    return parts


def _outputs(found: object, tensors: Sequence[LogicalTensor], side: str
             ) -> dict[int, Array]:
    """`found` when it holds a numeric array for each of `tensors` and nothing else."""
    wanted = {t.id for t in tensors}
    if not isinstance(found, dict) or set(found) != wanted:
        raise BadAnswer(f"the backend's process sent the {side} side's outputs for other "
                        "tensors than the workload's outputs")
    for value in found.values():
        if not isinstance(value, np.ndarray):
            raise BadAnswer(f"the backend's process sent a {side} output that is no array")
        try:
            np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            raise BadAnswer(f"the backend's process sent a {side} output of dtype "
                            f"{str(value.dtype)[:_MAX_REPR]}, not numbers") from None
    return found


def _timing(job: BenchJob, side: str, samples: object, stopped: object, method: str
            ) -> Timing | str:
    """The `Timing` of one side from its raw samples, or the error that they are not one."""
    policy = job.policy
    if not isinstance(samples, list) or not policy.min_repeats <= len(samples) \
            <= policy.max_repeats or not isinstance(stopped, str) or stopped not in STOPS:
        raise BadAnswer(f"the backend's process sent the {side} side's samples in a form "
                        "fusionspec does not read")
    for value in samples:
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value < 0:
            return (f"{BACKEND_ERROR}: the {side} side's timer gave "
                    f"{repr(value)[:_MAX_REPR]} s; a duration is a finite number of seconds, "
                    "0 or more")
    return Timing(tuple(float(v) for v in samples), method, policy.confidence, str(stopped))


def conversation(job: BenchJob, ident: str) -> Conversation:
    """The exchange that measures workload `ident` and returns its record (module
    docstring)."""
    w = workload(ident)
    record = header(w, job.size)
    rerun = rerun_command(job.spec, job.device_id, job.size, ident)
    replace = dataclasses.replace
    reply = yield ("prepare", ident, job.size, job.seed)
    if reply.failure is not None:
        return replace(record, error=failure_text(reply.failure), rerun=rerun)
    answer = _answer(reply, ident, ("partitions", "device_time", "fused", "opbyop"))
    graph = w.graph(job.size)
    formed = _formed(graph, answer["partitions"])
    kinds = {op.id: op.kind for op in graph.ops}
    record = replace(record, partitions=tuple(tuple(kinds[i] for i in p) for p in formed),
                     fused_whole=len(formed) == 1)
    outputs = graph.output_tensors
    fused = _outputs(answer["fused"], outputs, "fused")
    opbyop = _outputs(answer["opbyop"], outputs, "op-by-op")
    device_time = answer["device_time"]
    if not isinstance(device_time, bool):
        raise BadAnswer("the backend's process did not say whether its sides are device-timed")
    (part,) = reference_partition(graph)
    computed = execute(part, fill_inputs(graph, job.seed))
    expected = {t.id: computed[t.id] for t in outputs}
    agree, worst = outputs_agree(fused, opbyop, outputs)
    off, wrong = 0.0, []
    for side, found in (("fused", fused), ("op-by-op", opbyop)):
        right, far = outputs_agree(found, expected, outputs, slack=REFERENCE_SLACK)
        off = max(off, far)
        if not right:
            wrong.append(side)
    record = replace(record, check=OutputCheck(agree=agree and not wrong,
                                               max_difference=_number(worst),
                                               reference_difference=_number(off)))
    if wrong:
        return replace(record, error=f"the {' and the '.join(wrong)} side's outputs differ "
                                     f"from fusionspec's reference (largest difference "
                                     f"{off:.3g}); no timing counts", rerun=rerun)
    if not agree:
        return replace(record, error=f"the fused and op-by-op outputs differ (largest "
                                     f"difference {worst:.3g}); no timing counts", rerun=rerun)
    reply = yield ("time", ident, job.policy, job.reference, job.settle_s)
    if reply.failure is not None:
        return replace(record, error=failure_text(reply.failure), rerun=rerun)
    answer = _answer(reply, ident, ("samples", "stopped"))
    samples, stopped = answer["samples"], answer["stopped"]
    sides = ["fused", "opbyop"] + (["reference"] if job.reference else [])
    if not isinstance(samples, dict) or not isinstance(stopped, dict) \
            or set(samples) != set(sides) or set(stopped) != set(sides):
        raise BadAnswer("the backend's process sent samples of other sides than were asked")
    times: dict[str, Timing] = {}
    for side in sides:
        method = "events" if device_time and side != "reference" else "wall"
        found_time = _timing(job, side, samples[side], stopped[side], method)
        if isinstance(found_time, str):
            return replace(record, error=found_time, rerun=rerun)
        times[side] = found_time
    for side in ("fused", "opbyop"):
        if times[side].interval[0] <= 0:
            return replace(record, error=f"{BACKEND_ERROR}: the {side} side's timer read 0 s "
                                         "(its median interval starts at 0): no measurement",
                           rerun=rerun)
    return replace(_figures(job, graph, part, times, record), rerun=rerun)


def _number(value: float) -> float | str:
    return value if math.isfinite(value) else "inf"


def _figures(job: BenchJob, graph: Graph, part: Any, times: Mapping[str, Timing],
             record: WorkloadRecord) -> WorkloadRecord:
    """`record` with the timings in ms, the ratio, the verdict and the roofline figures."""
    fused_s, opbyop_s = times["fused"].median, times["opbyop"].median
    flops = partition_flops(graph.ops)
    moved = partition_bytes(part)
    timings = {name: SideTiming.from_json(t.as_dict(), f"the {name} side's timing")
               for name, t in times.items()}
    gflop_s, gb_s = rate(flops, fused_s), rate(moved, fused_s)
    copy_share = gemm_share = None
    yardstick = job.yardstick
    if yardstick is not None:
        if yardstick.copy_gb_s:
            copy_share = gb_s / float(yardstick.copy_gb_s)
        if yardstick.gemm_gflop_s and GEMM_KINDS & set(record.ops):
            gemm_share = gflop_s / float(yardstick.gemm_gflop_s)
    return dataclasses.replace(
        record, flops=flops, bytes_fused=moved, bytes_opbyop=opbyop_bytes(graph.ops),
        timings=timings, ratio=opbyop_s / fused_s,
        verdict=verdict(timings["fused"], timings["opbyop"],
                        formed_whole=bool(record.fused_whole)),
        roofline=Roofline(gflop_s=gflop_s, gb_s=gb_s, copy_share=copy_share,
                          gemm_share=gemm_share))
