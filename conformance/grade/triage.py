"""Who is right: for a numeric mismatch, a third evaluation at higher precision, and known
departures that explain the backend's values.

`who_is_right(graph, inputs, tensor, expected, actual, radius, partitions)` evaluates the graph
with the reference's ops in float64 (`fusionspec.reference.execute.execute_high_precision`: no
rounding between ops) and states, over the failing elements, how far the reference and the
backend each are from that value, and which is closer. It evaluates it a second time with the
partition outputs rounded to their declared types, as the spec rounds them: the bound holds
every value a backend keeping its intermediates exact computes, so where the reference is
further from that value than its own bound allows, the reference is the suspect
(``reference_off``): a bug of the suite, not a finding.

`explain(graph, inputs, partitions, tensor, actual, radius, names)` re-runs the reference under
each named `Substitute` that applies to the graph (an alternative semantics some library has:
`SUBSTITUTES`, by name) and returns the names under which the backend's output is within its
bound. A backend names the substitutes of its numeric departures
(`fusionspec.backend.Departure.substitute`); the departure that names a reproducing substitute
explains the finding, with its source, instead of an unexplained difference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fusionspec.reference import execute
from fusionspec.reference.execute import default_partitioner, execute_high_precision
from fusionspec.reference.registry import REGISTRY, substituted
from fusionspec.spec.graph import Graph, Partition
from fusionspec.spec.types import Array

from .details import Triage

__all__ = ["who_is_right", "explain", "Substitute", "SUBSTITUTES"]


def _failing(expected: Array, actual: Array, radius: Array) -> Array:
    e, a = expected.astype(np.float64), actual.astype(np.float64)
    r = np.broadcast_to(np.asarray(radius, dtype=np.float64), e.shape)
    with np.errstate(invalid="ignore"):
        ok = (np.abs(a - e) <= r) | (np.isnan(e) & np.isnan(a)) | (e == a) | np.isinf(r)
    flags: Array = ~ok
    return flags


def who_is_right(graph: Graph, inputs: Mapping[int, Array], tensor: int, expected: Array,
                 actual: Array, radius: Array,
                 partitions: Sequence[Partition] | None = None) -> tuple[Triage, Array]:
    """How far the reference and the backend are from the float64 evaluation, over the
    elements where they disagree (see the module docstring), and that evaluation's values of
    `tensor`; `partitions` are the reference's (default: the reference partitioner's)."""
    if not graph.finalized:
        graph = graph.finalize()
    parts = partitions if partitions is not None else default_partitioner(graph)
    with np.errstate(all="ignore"):
        high = np.asarray(execute_high_precision(graph, inputs)[tensor], dtype=np.float64)
        spec = np.asarray(execute_high_precision(graph, inputs, parts)[tensor],
                          dtype=np.float64)
        e, a = expected.astype(np.float64), np.asarray(actual).astype(np.float64)
        bad = _failing(expected, np.asarray(actual), radius)
        r = np.broadcast_to(np.asarray(radius, dtype=np.float64), e.shape)
        ref_dev = np.abs(e - high)[bad]
        be_dev = np.abs(a - high)[bad]
        finite = np.isfinite(ref_dev) & np.isfinite(be_dev)
        ref_closer = int((ref_dev[finite] < be_dev[finite]).sum())
        be_closer = int((be_dev[finite] < ref_dev[finite]).sum())
        # The reference rounds inside its partitions where `spec` does not: it may be as far
        # from it as its own bound, plus a rounding step of the output's type; past that it is
        # off.
        step = np.abs(np.spacing(np.abs(e).astype(expected.dtype if expected.dtype.kind == "f"
                                                  else np.float32))).astype(np.float64)
        if expected.dtype.kind in "iu":
            step = np.ones_like(e)
        off = bad & np.isfinite(spec) & (np.abs(e - spec) > r + step) & (
            np.abs(a - spec) < np.abs(e - spec))
    closer = "reference" if ref_closer > be_closer else (
        "backend" if be_closer > ref_closer else "neither")
    triage = Triage(closer=closer, reference_closer=ref_closer, backend_closer=be_closer,
                    failing=int(bad.sum()),
                    max_reference_deviation=_num(float(ref_dev[finite].max()) if finite.any()
                                                 else 0.0),
                    max_backend_deviation=_num(float(be_dev[finite].max()) if finite.any()
                                               else 0.0),
                    reference_off=int(off.sum()))
    return triage, high


def _num(value: float) -> float | str:
    return value if np.isfinite(value) else str(value)


# -- alternative semantics ---------------------------------------------------------------------

@dataclass(frozen=True)
class Substitute:
    """An alternative semantics some library has, named: `applies` says whether the graph can
    show it; `substitutes` are the op implementations that compute it (by kind), or
    `transform` maps the inputs and outputs (for a property of the device, such as flushing
    subnormals)."""

    name: str
    description: str
    applies: Callable[[Graph], bool]
    substitutes: Callable[[], Mapping[str, Callable[..., Any]]] | None = None
    transform: Callable[[Array], Array] | None = None


def _kinds(*kinds: str) -> Callable[[Graph], bool]:
    return lambda graph: any(op.kind in kinds for op in graph.ops)


def _select_max() -> Mapping[str, Callable[..., Any]]:
    def maximum(src_0: Array, src_1: Array, *, auto_broadcast: str) -> Array:
        a, b = np.asarray(src_0), np.asarray(src_1)
        result: Array = np.where(a > b, a, b).astype(np.float32)
        return result

    def minimum(src_0: Array, src_1: Array, *, auto_broadcast: str) -> Array:
        a, b = np.asarray(src_0), np.asarray(src_1)
        result: Array = np.where(a < b, a, b).astype(np.float32)
        return result
    return {"Maximum": maximum, "Minimum": minimum}


def _gelu_erf_only() -> Mapping[str, Callable[..., Any]]:
    gelu = REGISTRY["GELU"].fn

    def erf_only(src: Array, *, mode: str) -> Array:
        result: Array = gelu(src, mode="gelu_erf")
        return result
    return {"GELU": erf_only}


def _maxpool_nan() -> Mapping[str, Callable[..., Any]]:
    maxpool = REGISTRY["MaxPool"].fn

    def propagating(src: Array, **attrs: Any) -> Array:
        result: Array = maxpool(src, **attrs)
        # the window's NaN, if any, wins (a max that propagates NaN)
        nan_windows: Array = maxpool(np.where(np.isnan(src), np.float32(1), np.float32(0)),
                                     **attrs)
        return np.where(nan_windows > 0, np.float32(np.nan), result).astype(np.float32)
    return {"MaxPool": propagating}


def _flush(array: Array) -> Array:
    arr = np.asarray(array)
    if arr.dtype.kind != "f" and str(arr.dtype) != "bfloat16":
        return arr
    wide = arr.astype(np.float32)
    tiny = np.finfo(np.float16).tiny if arr.dtype == np.float16 else np.finfo(np.float32).tiny
    flushed: Array = np.where(np.abs(wide) < tiny, np.copysign(np.float32(0), wide), wide)
    return flushed.astype(arr.dtype)


#: The alternative semantics the suite can evaluate, by name (what a backend's numeric
#: departures name as their substitute).
SUBSTITUTES: dict[str, Substitute] = {sub.name: sub for sub in (
    Substitute("select-max", "Maximum and Minimum compare and select, so a NaN on src_0 is "
               "dropped", _kinds("Maximum", "Minimum"), substitutes=_select_max),
    Substitute("gelu-erf-only", "GELU in the tanh mode is computed as the erf form",
               lambda g: any(op.kind == "GELU" and op.attrs.get("mode") == "gelu_tanh"
                             for op in g.ops), substitutes=_gelu_erf_only),
    Substitute("maxpool-nan", "MaxPool propagates a NaN of its window",
               _kinds("MaxPool"), substitutes=_maxpool_nan),
    Substitute("flush-subnormals", "subnormal inputs and results are flushed to zero",
               lambda g: True, transform=_flush),
)}


def explain(graph: Graph, inputs: Mapping[int, Array], partitions: Sequence[Partition],
            tensor: int, actual: Array, radius: Array, names: Sequence[str]) -> list[str]:
    """The `names` of substitutes under which `actual` is within `radius` of the reference's
    value of `tensor` (see the module docstring); a name the suite does not know explains
    nothing."""
    found = []
    for name in names:
        departure = SUBSTITUTES.get(name)
        if departure is None or not departure.applies(graph):
            continue
        try:
            with np.errstate(all="ignore"):
                if departure.substitutes is not None:
                    with substituted(departure.substitutes()):
                        value = execute(graph, inputs, partitioner=lambda _: partitions)
                else:
                    assert departure.transform is not None
                    flushed = {k: departure.transform(v) for k, v in inputs.items()}
                    value = {k: departure.transform(v) for k, v in execute(
                        graph, flushed, partitioner=lambda _: partitions).items()}
        except Exception:  # a departure that cannot run on this graph explains nothing
            continue
        if tensor in value and not _failing(np.asarray(value[tensor]), np.asarray(actual),
                                            radius).any():
            found.append(name)
    return found
