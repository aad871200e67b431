"""A bench run: every selected workload's sides timed on one backend and device.

`run_bench` measures a selection of workloads in ``jobs`` worker processes
(`fusionspec.conformance.perf.workers`: the backend runs there, under a time limit per
workload, its output sent to a log, its answers read through an allowlist; a backend that
crashes, hangs or answers garbage costs only that workload, whose record says ``backend
error``), or in the calling process (``isolate=False``, one job, none of those protections),
and returns the performance document (`fusionspec.conformance.perf.document`). The backend's
process only partitions, compiles, runs and times; this process checks the outputs against
fusionspec's reference, checks the samples and computes each workload's record (timings, the
op-by-op over fused ratio, the verdict, the roofline figures; `fusionspec.conformance.perf.judge`).

A workload that one of the backend's declared limitations covers (`declared_limitation`,
matched as `fusionspec conform` matches a case: the workload's pattern, headline dtype, its
tensors' data types, the device kind, a valid graph) is not measured: its record says
``unsupported`` with the limitation's reason, and it is no failure of the run.

The document records the selection the run was given (``selection``: how many workloads and a
digest of their ids, before ``--shard``), so that `merge` can tell the shards of one run apart
from others and see that none is missing.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import platform
from collections.abc import Callable, Sequence

import numpy as np

from fusionspec.backend import Device, Limitation
from fusionspec.backend.timing import TimingPolicy, measure, wall_clock

from ..cases import CaseKind
from . import records as perf_records
from .document import read_perf
from .judge import BenchJob, conversation, header, rerun_command
from .records import (
    Environment,
    PerfDocument,
    Policy,
    Selection,
    WorkloadRecord,
    Yardsticks,
)
from .roofline import rate
from .workers import BACKEND_ERROR, DEFAULT_TIMEOUT_S, BenchWorkers, InProcess
from .workloads import Workload, workload

__all__ = ["SMALL_POLICY", "FULL_POLICY", "SETTLE_S", "run_bench", "yardsticks",
           "rerun_command", "declared_limitation", "selection_digest"]

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


def selection_digest(idents: Sequence[str]) -> Selection:
    """How many workloads a run was given and a digest of their ids (in any order)."""
    text = "\n".join(sorted(idents))
    return Selection(workloads=len(idents), sha256=hashlib.sha256(text.encode()).hexdigest())


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


def yardsticks(policy: TimingPolicy, elements: int = 1 << 24, gemm: int = 512
               ) -> Yardsticks:
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
    return Yardsticks(copy_gb_s=rate(2 * src.nbytes, copy.minimum),
                      gemm_gflop_s=rate(2 * gemm ** 3, sgemm.minimum), gemm_shape=(gemm,) * 3,
                      copy_median_gb_s=rate(2 * src.nbytes, copy.median),
                      gemm_median_gflop_s=rate(2 * gemm ** 3, sgemm.median))


def run_bench(spec: str, workloads: Sequence[Workload], *, device_id: str | None = None,
              size: str = "small", policy: TimingPolicy | None = None, seed: int = 0,
              reference: bool = False, settle_s: float = SETTLE_S, jobs: int = 1,
              shard: str | None = None, measure_yardsticks: bool = True,
              command: str = "", isolate: bool = True, timeout_s: float = DEFAULT_TIMEOUT_S,
              memory_limit: int | None = None, selected: Sequence[str] | None = None,
              progress: Callable[[WorkloadRecord], None] | None = None) -> PerfDocument:
    """Measure `workloads` on backend `spec` (a registered name or ``module:attr``) and return
    the performance document; `BackendError` when the backend cannot load
    (`BackendUnavailableError` when it has no usable device). With `isolate` (the default) the
    workloads are measured in `jobs` worker processes, each workload within `timeout_s`, each
    process's address space capped at `memory_limit` bytes (default: half the machine's
    memory; 0: no cap); ``isolate=False`` with one job measures them in this process.
    `selected` names the workloads the run was given before `shard` split them (default:
    `workloads`)."""
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
    workers: BenchWorkers | InProcess = (
        InProcess(spec, device_id) if jobs <= 1 and not isolate else
        BenchWorkers(spec, device_id, jobs=jobs, timeout_s=timeout_s, memory_limit=memory_limit))
    with workers:
        identity = workers.identity
        device = identity.device
        yardstick = roofs if device.kind == "cpu" else None
        found: dict[str, WorkloadRecord] = {}
        for w in workloads:
            limitation = declared_limitation(identity.limitations, w, size, device)
            if limitation is not None:
                found[w.id] = dataclasses.replace(header(w, size),
                                                  unsupported=limitation.reason)
                if progress is not None:
                    progress(found[w.id])
        measured = [w.id for w in workloads if w.id not in found]
        job = BenchJob(spec, device.id, size, seed, policy, reference, settle_s, yardstick)

        def failed(ident: str, why: str) -> WorkloadRecord:
            return dataclasses.replace(header(workload(ident), size),
                                       error=f"{BACKEND_ERROR}: {why}",
                                       rerun=rerun_command(spec, device.id, size, ident))

        found.update(workers.run(measured, functools.partial(conversation, job), failed,
                                 progress or (lambda record: None)))
    records = tuple(found[w.id] for w in workloads)
    document = PerfDocument(
        backend=identity.name, backend_spec=spec,
        device=perf_records.Device(id=device.id, kind=device.kind, name=device.name,
                                   driver=device.driver, runtime=device.runtime),
        size=size, seed=seed, shard=shard, command=command,
        selection=selection_digest(list(selected) if selected is not None
                                   else [w.id for w in workloads]),
        policy=Policy(warmup=policy.warmup, min_repeats=policy.min_repeats,
                      max_repeats=policy.max_repeats, budget_s=policy.budget_s,
                      target_spread=policy.target_spread, confidence=policy.confidence,
                      settle_s=settle_s, jobs=jobs, timeout_s=timeout_s),
        environment=Environment(
            python=platform.python_version(), numpy=np.__version__,
            machine=platform.machine(), cpus=os.cpu_count(),
            load_average=tuple(os.getloadavg()),
            settings={name: os.environ.get(name, "") for name in
                      ("ONEDNN_VERBOSE", "OMP_WAIT_POLICY", "OMP_NUM_THREADS")}),
        workloads=records, yardsticks=yardstick)
    # Checked as it will be written: what the schema says and what it cannot.
    return read_perf(document.to_json())
