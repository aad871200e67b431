"""A bench run: every selected workload's sides timed on one backend and device.

`measure_workload` prepares the sides (`fusionspec.conformance.perf.sides`), checks that the
fused and op-by-op outputs agree, times the sides in alternation (`interleave` of
`fusionspec.backend.timing`, an idle pause before each sample) and turns the figures into the
workload's record: timings, the op-by-op over fused ratio, the verdict
(`fusionspec.conformance.perf.verdicts`) and the roofline figures
(`fusionspec.conformance.perf.roofline`). `run_bench` does that for a selection of workloads
in ``jobs`` worker processes (`fusionspec.conformance.perf.workers`: a backend that crashes
on one workload ends only that workload's measurement), or in the calling process
(``isolate=False``, one job), and returns the performance document
(`fusionspec.conformance.perf.document`).

A workload that one of the backend's declared limitations covers (`declared_limitation`,
matched as `fusionspec conform` matches a case: the workload's pattern, headline dtype, its
tensors' data types, the device kind, a valid graph) is not measured: its record says
``unsupported`` with the limitation's reason, and it is no failure of the run.
"""

from __future__ import annotations

import functools
import os
import platform
import shlex
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fusionspec.backend import Backend, Device, Limitation, load_backend
from fusionspec.backend.registry import select_device
from fusionspec.backend.timing import TimingPolicy, interleave, measure, wall_clock

from ..cases import CaseKind
from ..limitations import check_limitations
from .document import PERF_FORMAT, PERF_VERSION, check_perf
from .roofline import opbyop_bytes, partition_bytes, partition_flops, rate
from .sides import PerfError, Prepared, outputs_agree, prepare, reference_sampler
from .verdicts import verdict
from .workers import Job, run_isolated
from .workloads import Workload, workload

__all__ = ["SMALL_POLICY", "FULL_POLICY", "SETTLE_S", "measure_workload", "run_bench",
           "yardsticks", "rerun_command", "declared_limitation"]

#: Timing of a ``small`` run: quick enough for the whole catalog in minutes on two cores; at
#: least 9 runs, so that the median interval leaves out the slowest and the fastest run.
SMALL_POLICY = TimingPolicy(warmup=1, min_repeats=9, max_repeats=40, budget_s=0.3,
                            target_spread=0.03)
#: Timing of a ``full`` run.
FULL_POLICY = TimingPolicy(warmup=2, min_repeats=7, max_repeats=100, budget_s=2.0,
                           target_spread=0.02)
#: Idle seconds before each sample: NumPy's BLAS and OpenCL runtimes keep worker threads
#: spinning for a while after a call, and a side sampled while they spin shares the cores.
SETTLE_S = 0.01
#: Ops whose rate is compared with the GEMM yardstick.
_GEMM_KINDS = frozenset({"MatMul", "Convolution", "ConvTranspose", "ConvolutionBackwardWeights"})


def rerun_command(backend_spec: str, device_id: str, size: str, workload_id: str) -> str:
    return shlex.join(["fusionspec", "bench", "--backend", backend_spec, "--device", device_id,
                       "--size", size, "--workload", workload_id])


def _header(w: Workload, size: str) -> dict[str, Any]:
    return {"id": w.id, "pattern": w.pattern, "name": w.name, "source": w.source,
            "dtype": w.dtype, "ops": [op.kind for op in w.graph(size).ops]}


def declared_limitation(limitations: Sequence[Limitation], w: Workload, size: str,
                        device: Device) -> Limitation | None:
    """The first of the backend's declared `limitations` that covers workload `w` at `size` on
    `device` (a workload is a valid graph of its pattern), if any."""
    dtypes = w.tensor_dtypes(size)
    for limitation in limitations:
        if limitation.covers(pattern=w.pattern, dtype=w.dtype, device_kind=device.kind,
                             case_kind=CaseKind.valid.value, tensor_dtypes=dtypes):
            return limitation
    return None


def measure_workload(prepared: Prepared, policy: TimingPolicy, *, reference: bool = False,
                     settle_s: float = SETTLE_S, yardstick: dict[str, Any] | None = None
                     ) -> dict[str, Any]:
    """The record of one prepared workload (see the module docstring)."""
    w, size = prepared.workload, prepared.size
    record = _header(w, size)
    record["partitions"] = [[op.kind for op in p.ops] for p in prepared.formed]
    record["fused_whole"] = prepared.fused_whole
    fused_out, opbyop_out = prepared.outputs()
    agree, worst = outputs_agree(fused_out, opbyop_out, prepared.graph.output_tensors)
    record["check"] = {"agree": agree, "max_difference": worst if worst < float("inf")
                       else "inf"}
    if not agree:
        record["error"] = (f"the fused and op-by-op outputs differ (largest difference "
                           f"{worst:.3g}); no timing counts")
        return record
    device_time = prepared.device_time
    sides = {"fused": prepared.fused.sampler(prepared.inputs, device_time),
             "opbyop": prepared.opbyop.sampler(prepared.inputs, device_time)}
    methods = {name: "events" if device_time else "wall" for name in sides}
    if reference:
        sides["reference"] = reference_sampler(prepared)
    times = interleave(sides, policy, methods=methods, settle_s=settle_s)
    fused_s, opbyop_s = times["fused"].median, times["opbyop"].median
    flops = partition_flops(prepared.graph.ops)
    moved = partition_bytes(prepared.reference)
    record.update(
        flops=flops, bytes_fused=moved, bytes_opbyop=opbyop_bytes(prepared.graph.ops),
        timings={name: t.as_dict() for name, t in times.items()},
        ratio=opbyop_s / fused_s if fused_s > 0 else 0.0,
        verdict=verdict(times["fused"].as_dict(), times["opbyop"].as_dict(),
                        formed_whole=prepared.fused_whole))
    roof = {"gflop_s": rate(flops, fused_s), "gb_s": rate(moved, fused_s)}
    if yardstick:
        if yardstick.get("copy_gb_s"):
            roof["copy_share"] = roof["gb_s"] / float(yardstick["copy_gb_s"])
        if yardstick.get("gemm_gflop_s") and _GEMM_KINDS & set(record["ops"]):
            roof["gemm_share"] = roof["gflop_s"] / float(yardstick["gemm_gflop_s"])
    record["roofline"] = roof
    return record


def yardsticks(policy: TimingPolicy, elements: int = 1 << 24, gemm: int = 512
               ) -> dict[str, Any]:
    """NumPy's copy bandwidth (read and write `elements` f32) and sgemm rate (`gemm` cubed)
    on this machine: the ceilings a CPU device's figures are shares of. A ceiling is the
    best the machine did, so each comes from the fastest run: on a shared machine the median
    of a multi-threaded sgemm falls by tens of times when another job takes a core (a
    2-thread BLAS waits on its slower thread), which would put kernels far above their
    roof."""
    rng = np.random.default_rng(0)
    src = rng.standard_normal(elements).astype(np.float32)
    dst = np.empty_like(src)
    a = rng.standard_normal((gemm, gemm)).astype(np.float32)
    out = np.empty_like(a)
    copy = measure(wall_clock(lambda: np.copyto(dst, src)), policy)
    sgemm = measure(wall_clock(lambda: np.matmul(a, a, out=out)), policy)
    return {"copy_gb_s": rate(2 * src.nbytes, copy.minimum),
            "gemm_gflop_s": rate(2 * gemm ** 3, sgemm.minimum), "gemm_shape": [gemm] * 3,
            "copy_median_gb_s": rate(2 * src.nbytes, copy.median),
            "gemm_median_gflop_s": rate(2 * gemm ** 3, sgemm.median)}


def _one(backend: Backend, device: Device, spec: str, w: Workload, size: str, seed: int,
         policy: TimingPolicy, reference: bool, settle_s: float,
         yardstick: dict[str, Any] | None) -> dict[str, Any]:
    try:
        prepared = prepare(w, size, backend, device, seed)
        record = measure_workload(prepared, policy, reference=reference, settle_s=settle_s,
                                  yardstick=yardstick)
    except PerfError as exc:
        record = {**_header(w, size), "error": str(exc)}
    except Exception as exc:  # a backend is trusted code, but one workload must not end a run
        record = {**_header(w, size), "error": f"{type(exc).__name__}: {exc}"}
    record["rerun"] = rerun_command(spec, device.id, size, w.id)
    return record


@functools.cache
def _worker_backend(spec: str, device_id: str | None) -> tuple[Backend, Device]:
    backend = load_backend(spec)
    return backend, select_device(backend, device_id)


def _in_worker(job: Job, ident: str) -> dict[str, Any]:
    """One workload measured in a worker process (`fusionspec.conformance.perf.workers`)."""
    backend, device = _worker_backend(job.spec, job.device_id)
    return _one(backend, device, job.spec, workload(ident), job.size, job.seed, job.policy,
                job.reference, job.settle_s, job.yardstick)


def run_bench(spec: str, workloads: Sequence[Workload], *, device_id: str | None = None,
              size: str = "small", policy: TimingPolicy | None = None, seed: int = 0,
              reference: bool = False, settle_s: float = SETTLE_S, jobs: int = 1,
              shard: str | None = None, measure_yardsticks: bool = True,
              command: str = "", isolate: bool = True,
              progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Measure `workloads` on backend `spec` (a registered name or ``module:attr``) and return
    the performance document; `BackendUnavailableError` when it has no usable device. With
    `isolate` (the default) the workloads are measured in `jobs` worker processes, so that a
    backend's crash costs one workload; ``isolate=False`` with one job measures them in this
    process."""
    policy = policy or (SMALL_POLICY if size == "small" else FULL_POLICY)
    # A library is timed as an application runs it: the oneDNN adapter turns the library's
    # verbose checks on where the user left them unset (the suite wants a refusal's reason),
    # and formatting those messages costs more than a small partition's computation. Set
    # before the backend loads, so that the worker processes inherit it.
    os.environ.setdefault("ONEDNN_VERBOSE", "none")
    # OpenMP workers wait for work by spinning (GNU OpenMP's default), which on a machine
    # shared with other jobs turns each barrier into a wait for a descheduled thread: oneDNN
    # 3.2's 3x3 convolution took a median of 56 ms so under a load average of 5 on 2 cores,
    # 0.42 ms with passive waiting. Timing wants the kernels, not the scheduler.
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    # The yardsticks are measured before the backend loads, so that no runtime's threads
    # (an OpenCL runtime's, oneDNN's) share the cores with NumPy's.
    roofs = yardsticks(policy) if measure_yardsticks else None
    backend = load_backend(spec)
    device = select_device(backend, device_id)
    yardstick = roofs if device.kind == "cpu" else None
    limitations = check_limitations(getattr(backend, "limitations", ()))
    found: dict[str, dict[str, Any]] = {}
    for w in workloads:
        limitation = declared_limitation(limitations, w, size, device)
        if limitation is not None:
            found[w.id] = {**_header(w, size), "unsupported": limitation.reason}
            if progress is not None:
                progress(found[w.id])
    measured = [w for w in workloads if w.id not in found]
    if jobs <= 1 and not isolate:
        for w in measured:
            found[w.id] = _one(backend, device, spec, w, size, seed, policy, reference,
                               settle_s, yardstick)
            if progress is not None:
                progress(found[w.id])
    elif measured:
        def crashed(ident: str, why: str) -> dict[str, Any]:
            return {**_header(workload(ident), size), "error": why,
                    "rerun": rerun_command(spec, device.id, size, ident)}

        job = Job(spec, device.id, size, seed, policy, reference, settle_s, yardstick)
        found.update(run_isolated(job, [w.id for w in measured], _in_worker, jobs, crashed,
                                  progress or (lambda record: None)))
    records = [found[w.id] for w in workloads]
    document: dict[str, Any] = {
        "format": PERF_FORMAT, "version": PERF_VERSION, "backend": backend.name,
        "backend_spec": spec,
        "device": {"id": device.id, "kind": device.kind, "name": device.name,
                   "driver": device.driver, "runtime": device.runtime},
        "size": size, "seed": seed, "shard": shard, "command": command,
        "policy": {"warmup": policy.warmup, "min_repeats": policy.min_repeats,
                   "max_repeats": policy.max_repeats, "budget_s": policy.budget_s,
                   "target_spread": policy.target_spread, "confidence": policy.confidence,
                   "settle_s": settle_s, "jobs": jobs},
        "environment": {"python": platform.python_version(), "numpy": np.__version__,
                        "machine": platform.machine(), "cpus": os.cpu_count(),
                        "load_average": list(os.getloadavg()),
                        "settings": {name: os.environ.get(name, "") for name in
                                     ("ONEDNN_VERBOSE", "OMP_WAIT_POLICY", "OMP_NUM_THREADS")}},
        "workloads": records}
    if yardstick is not None:
        document["yardsticks"] = yardstick
    return check_perf(document)
