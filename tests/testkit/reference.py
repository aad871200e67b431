"""Shared helpers of the reference tests: calling an op's function, building one-op graphs, and
comparing float32 results with a float64 oracle in units in the last place (ulp)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from fusionspec.reference.execute import execute
from fusionspec.reference.registry import implementation
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op
from fusionspec.spec.opschemas import SCHEMAS
from fusionspec.spec.types import Array
from fusionspec.spec.validate import validate_op

D = DataType


def op_fn(kind: str) -> Callable[..., Any]:
    """The registered reference function of `kind` (fails the test if there is none), called as
    the executor calls it: attributes not given take their schema defaults."""
    impl = implementation(kind)
    assert impl is not None, f"no reference implementation is registered for {kind}"
    defaults = {a.name: a.default for a in SCHEMAS[kind].attrs if a.default is not None}
    return functools.partial(impl.fn, **defaults)


def f32(values: object) -> Array:
    return np.asarray(values, dtype=np.float32)


def need_torch() -> ModuleType:
    """PyTorch, or skip the calling test when it is not installed."""
    return pytest.importorskip("torch")


def ulp_error(got: Array, want: Array) -> Array:
    """|got - want| in float32 ulps at `want` (float64 oracle). NaN where exactly one side is
    NaN, 0 where both are NaN or both are the same infinity."""
    g = np.asarray(got, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    spacing = np.spacing(np.abs(w).astype(np.float32)).astype(np.float64)
    with np.errstate(invalid="ignore"):
        err = np.abs(g - w) / spacing
    same_special = (np.isnan(g) & np.isnan(w)) | (np.isinf(g) & (g == w))
    return np.where(same_special, 0.0, err)


def assert_ulp(got: Array, want: Array, max_ulp: float, what: str) -> None:
    """Every element of the float32 `got` within `max_ulp` ulps of the float64 `want`."""
    got = np.asarray(got)
    assert got.shape == np.shape(want), f"shape {got.shape}, expected {np.shape(want)} [{what}]"
    err = ulp_error(got, want)
    bad = ~(err <= max_ulp)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AssertionError(
            f"{int(bad.sum())} of {bad.size} elements off by more than {max_ulp} ulp [{what}]; "
            f"first: got {got.reshape(-1)[i]!r}, want {np.asarray(want).reshape(-1)[i]!r} "
            f"({err.reshape(-1)[i]:.3g} ulp)")


def same_bits(got: Array, want: Array) -> bool:
    """Equal values, NaN equal to NaN and -0.0 distinct from +0.0."""
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape or g.dtype != w.dtype:
        return False
    if np.issubdtype(g.dtype, np.floating):
        both_nan = np.isnan(g) & np.isnan(w)
        return bool(np.all(both_nan | ((g == w) & (np.signbit(g) == np.signbit(w)))))
    return bool(np.array_equal(g, w))


def tensor(tid: int, dtype: DataType, shape: Sequence[int] | None,
           strides: Sequence[int] | None = None) -> LogicalTensor:
    return LogicalTensor(tid, dtype, None if shape is None else tuple(shape),
                         None if strides is None else tuple(strides))


def one_op_graph(kind: str, inputs: Sequence[LogicalTensor], outputs: Sequence[LogicalTensor],
                 **attrs: Any) -> Graph:
    return Graph([Op(0, kind, tuple(inputs), tuple(outputs), attrs)])


def run_one(kind: str, arrays: Sequence[Array], out_dtypes: Sequence[DataType],
            **attrs: Any) -> list[Array]:
    """Run `kind` through the executor on a finalized one-op graph; input i gets id i, output
    j gets id 100 + j with the declared dtype and the shape inference fills in."""
    from fusionspec.reference.dtypes import data_type_of

    ins = [tensor(i, data_type_of(a.dtype), a.shape) for i, a in enumerate(arrays)]
    outs = [LogicalTensor(100 + j, dt) for j, dt in enumerate(out_dtypes)]
    graph = one_op_graph(kind, ins, outs, **attrs).finalize()
    result = execute(graph, {i: a for i, a in enumerate(arrays)})
    return [result[100 + j] for j in range(len(out_dtypes))]


# -- convolution-like ops (shared by the conv, pool, interpolate and matmul tests) -------------

EPS32 = 2.0**-24


def call(kind: str, *arrays: Array, **attrs: Any) -> Array:
    """Validate a one-op `kind` (schema defaults filled in) and call its reference function."""
    ins = tuple(LogicalTensor(i, D.s32 if a.dtype == np.int32 else D.f32, a.shape)
                for i, a in enumerate(arrays))
    op = validate_op(Op(0, kind, ins, (LogicalTensor(99, D.f32),), attrs))
    return np.asarray(op_fn(kind)(*arrays, **op.attrs))


def assert_dot_bound(got: Array, want: Array, scale: Array, terms: int, what: str) -> None:
    """|got - want| within the classic bound for a float32 sum of `terms` products,
    (terms + 1) * eps * sum|x*w| (`scale`), plus the final rounding."""
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape} [{what}]"
    assert got.dtype == np.float32, f"dtype {got.dtype}, expected float32 [{what}]"
    bound = (terms + 2) * EPS32 * scale + 1e-30
    err = np.abs(got.astype(np.float64) - want)
    worst = int(np.argmax(err - bound))
    assert np.all(err <= bound), (
        f"{int((err > bound).sum())} of {err.size} elements outside the f32 dot-product bound "
        f"[{what}]; worst: got {got.reshape(-1)[worst]}, want {want.reshape(-1)[worst]}, "
        f"bound {bound.reshape(-1)[worst]:.3g}")


def auto_pads(mode: str, size: int, k: int, s: int, d: int, pb: int, pe: int,
              transposed: bool = False) -> tuple[int, int]:
    """The auto_pad rule of docs/semantics.md, restated independently of the implementation."""
    if mode == "None":
        return pb, pe
    if mode == "VALID":
        return 0, 0
    eff = (k - 1) * d + 1
    total = max(eff - s if transposed or size % s == 0 else eff - size % s, 0)
    begin = (total + 1) // 2 if mode == "SAME_LOWER" else total // 2
    return begin, total - begin


def to_ncx(x: Array, fmt: str) -> Array:
    return x if fmt == "NCX" else np.moveaxis(x, -1, 1)


def from_ncx(x: Array, fmt: str) -> Array:
    return x if fmt == "NCX" else np.moveaxis(x, 1, -1)
