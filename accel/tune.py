"""Autotuning, bounded: a handful of kernel-shape choices per family, measured once per device.

The families choose good defaults from the device's properties; drivers still differ in what
they make of the same code (PoCL and Intel's CPU runtime compile the same register block to
different instruction streams), so `tune(info)` measures a few alternatives on representative
partitions and keeps the fastest in the tuning cache (`fusionspec.accel.tuning_cache`), which
`BuildContext` hands to the builders from then on:

- gemm: the register block (RM x NV vectors) of the register-blocked form, timed on
  MatMul 512^3 + BiasAdd + GELU (``block``) and on a 3x3 convolution (64 -> 64 channels,
  56x56) + BiasAdd + ReLU reading its windows in runs (``window_block``); then how the
  convolution's A is read ("run", "packed", "element": ``a_mode``). Devices with dedicated
  local memory (the tiled form) have nothing to tune here.

Each candidate is built and checked against the NumPy reference first (a candidate that fails
to build or to match is skipped), then the candidates are timed in alternation,
`repeats` times each, and the fastest by median wins; the default stays unless another one
is faster by more than `MARGIN`. About twenty programs are built: seconds with a warm driver
cache, a minute or two cold.

Tuning never happens on its own during a conformance run. It runs when asked:
``python -m fusionspec.accel.tune [--device ID]``, or with ``FUSIONSPEC_ACCEL_TUNE=1``, which
makes `AccelBackend.compile` tune a device the first time it compiles for it in a process if
the cache holds nothing for it (`tune_if_asked`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fusionspec.backend.agreement import agreement
from fusionspec.reference import execute, fill_inputs
from fusionspec.reference.partitioner import partition as reference_partition
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition

from .compiled import AccelCompiledPartition
from .devices import DeviceInfo, select_device
from .errors import AccelError
from .families import BuildContext, family_for
from .families.gemm_tiles import A_MODES, PLAIN_BLOCK, WINDOW_BLOCK, register_blocked
from .runtime import runtime_for
from .tuning_cache import load_tuning, save_tuning, tuning_path

__all__ = ["TUNE_ENV", "GEMM_BLOCKS", "MARGIN", "tune", "tune_if_asked", "main"]

#: Set to 1 to let the backend tune a device on first use (see the module docstring).
TUNE_ENV = "FUSIONSPEC_ACCEL_TUNE"
#: The register blocks tried (rows, vectors), besides the default.
GEMM_BLOCKS: tuple[tuple[int, int], ...] = ((6, 2), (4, 2), (4, 3), (8, 2), (8, 3))
#: A candidate replaces the default only when its median is this much faster (noise margin).
MARGIN = 0.05

_F32 = DataType.f32
_DONE: set[str] = set()
_LOCK = threading.Lock()


def _t(tid: int, shape: tuple[int, ...]) -> LogicalTensor:
    return LogicalTensor(tid, _F32, shape)


def _matmul() -> Graph:
    m = k = n = 512
    return Graph([Op(0, "MatMul", [_t(0, (m, k)), _t(1, (k, n))], [_t(2, (m, n))]),
                  Op(1, "BiasAdd", [_t(2, (m, n)), _t(3, (n,))], [_t(4, (m, n))]),
                  Op(2, "GELU", [_t(4, (m, n))], [_t(5, (m, n))])])


def _conv() -> Graph:
    shape = (1, 64, 56, 56)
    attrs: dict[str, Any] = {"strides": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1],
                             "dilations": [1, 1], "data_format": "NCX",
                             "weights_format": "OIX", "groups": 1}
    return Graph([Op(0, "Convolution", [_t(0, shape), _t(1, (64, 64, 3, 3))], [_t(2, shape)],
                     attrs),
                  Op(1, "BiasAdd", [_t(2, shape), _t(3, (64,))], [_t(4, shape)],
                     {"data_format": "NCX"}),
                  Op(2, "ReLU", [_t(4, shape)], [_t(5, shape)])])


class _Candidate:
    """One family choice compiled for one partition, checked against the reference."""

    def __init__(self, info: DeviceInfo, part: Partition, inputs: Mapping[int, Any],
                 want: Mapping[int, Any], family: str, choice: Mapping[str, Any]) -> None:
        base = BuildContext.for_device(info)
        ctx = BuildContext(base.device, base.policy, None, {**base.tuning, family: choice})
        plan = family_for(part).build(part, ctx)
        self.compiled = AccelCompiledPartition(part, runtime_for(info), [plan])
        self.inputs = inputs
        got = self.compiled.execute(inputs)
        dtypes = {t.id: t.dtype.value for t in part.outputs}
        for tid, value in want.items():
            if not agreement(got[tid], value, dtypes.get(tid, "f32"))[0]:
                raise AccelError(f"tuning candidate {choice} does not match the reference")

    def sample(self) -> float:
        return self.compiled.time_launches(self.inputs, 1)[0]


def _race(make: Callable[[Mapping[str, Any]], _Candidate], choices: Sequence[Mapping[str, Any]],
          repeats: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The fastest of `choices` (the first is the default) and every candidate's median."""
    built: list[tuple[dict[str, Any], _Candidate]] = []
    report: list[dict[str, Any]] = []
    for choice in choices:
        try:
            built.append((dict(choice), make(choice)))
        except Exception as exc:  # a choice the driver rejects is simply not a candidate
            report.append({"choice": dict(choice), "error": f"{type(exc).__name__}: {exc}"})
    if not built:
        return dict(choices[0]), report
    times: list[list[float]] = [[] for _ in built]
    for _ in range(repeats):
        for index, (_, candidate) in enumerate(built):
            candidate.sample()  # the first run after another candidate warms caches
            times[index].append(candidate.sample())
    medians = [statistics.median(t) for t in times]
    report += [{"choice": c, "median_ms": 1e3 * m} for (c, _), m in zip(built, medians)]
    best = min(range(len(built)), key=lambda i: medians[i])
    if built[0][0] == dict(choices[0]) and medians[best] > (1 - MARGIN) * medians[0]:
        best = 0  # the default stays unless another choice is clearly faster
    return built[best][0], report


def _setup(graph: Graph) -> tuple[Partition, dict[int, Any], dict[int, Any]]:
    final = graph.finalize()
    (part,) = reference_partition(final)
    inputs = fill_inputs(final, seed=0)
    result = execute(final, inputs)
    return part, inputs, {t.id: result[t.id] for t in part.outputs}


def tune(info: DeviceInfo, *, repeats: int = 7) -> dict[str, Any]:
    """Measure the candidate choices on `info` (see the module docstring), save the winners
    in the tuning cache and return {"choices": ..., "measured": ...}."""
    choices: dict[str, dict[str, Any]] = {}
    measured: dict[str, Any] = {}
    if register_blocked(BuildContext.for_device(info)):
        def blocks(default: tuple[int, int]) -> list[dict[str, Any]]:
            ordered = [default, *(b for b in GEMM_BLOCKS if b != default)]
            return [{"rm": rm, "nv": nv} for rm, nv in ordered]

        def race(graph: Graph, family_choices: Callable[[Mapping[str, Any]], dict[str, Any]],
                 candidates: Sequence[Mapping[str, Any]]
                 ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
            part, inputs, want = _setup(graph)
            return _race(lambda c: _Candidate(info, part, inputs, want, "gemm",
                                              family_choices(c)), candidates, repeats)

        plain, report = race(_matmul(), lambda c: {"block": [c["rm"], c["nv"]]},
                             blocks(PLAIN_BLOCK))
        measured["block (MatMul 512^3 + BiasAdd + GELU)"] = report
        window, report = race(_conv(), lambda c: {"window_block": [c["rm"], c["nv"]],
                                                  "a_mode": "run"}, blocks(WINDOW_BLOCK))
        measured["window_block (Convolution 64x56x56 3x3 + BiasAdd + ReLU)"] = report
        chosen = {"block": [plain["rm"], plain["nv"]],
                  "window_block": [window["rm"], window["nv"]]}
        mode, report = race(_conv(), lambda c: {**chosen, **c},
                            [{"a_mode": m} for m in A_MODES])
        measured["a_mode (Convolution 64x56x56 3x3 + BiasAdd + ReLU)"] = report
        choices["gemm"] = {**chosen, **mode}
    save_tuning(info, choices, measured)
    return {"choices": choices, "measured": measured}


def tune_if_asked(info: DeviceInfo) -> None:
    """With ``FUSIONSPEC_ACCEL_TUNE=1``: tune `info` once, unless the cache already holds its
    choices (or it cannot be written: then tuning would repeat in every process)."""
    if os.environ.get(TUNE_ENV, "").strip().lower() not in ("1", "yes", "on", "true"):
        return
    with _LOCK:
        if info.id in _DONE:
            return
        _DONE.add(info.id)
    path = tuning_path(info)
    if path is None or path.is_file() or load_tuning(info):
        return
    tune(info)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fusionspec.accel.tune",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--device", default=None, help="OpenCL device id (default: the first)")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per candidate")
    args = parser.parse_args(argv)
    info = select_device(args.device)
    runtime_for(info)  # open the device before timing anything
    result = tune(info, repeats=args.repeats)
    print(json.dumps({"device": info.id, "path": str(tuning_path(info)), **result}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
