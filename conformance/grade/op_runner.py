"""One op evaluated many times over: `OpRunner(op)(args)` is `run_op(op, args)`, bit for bit.

Bounding an op's error evaluates it at several points (`fusionspec.conformance.grade.bounds`:
its reference value, then in float64 at its value, at every corner of its inputs' intervals, on
its radii and magnitudes). `run_op` checks the op against its schema and fills its default
attributes at every call, which on the small tensors of most cases costs more than the op
itself; a runner does so once, then evaluates the op through the executor's own `evaluate_op`,
the part of `run_op` past its checks: the same arguments, compute dtype, typed errors and checks
of the results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fusionspec.reference.execute import evaluate_op, run_op
from fusionspec.reference.registry import OpImpl, implementation
from fusionspec.spec.graph import Op
from fusionspec.spec.opschemas import OPAQUE_KINDS, SCHEMAS
from fusionspec.spec.types import Array
from fusionspec.spec.validate import validate_op

__all__ = ["OpRunner"]


class OpRunner:
    """`run_op(op, ·)` with the op checked once (see the module docstring). An op `run_op`
    refuses (a kind outside the spec pages, one without an implementation, a malformed op) is
    left to `run_op` at every call, so that each call raises its error."""

    def __init__(self, op: Op) -> None:
        self.op = op
        impl = implementation(op.kind)
        self._impl: OpImpl | None = None
        self._kwargs: dict[str, Any] = {}
        if op.kind in OPAQUE_KINDS or op.kind not in SCHEMAS or impl is None:
            return
        try:
            checked = validate_op(op)
        except Exception:  # run_op raises it, naming the op, at each call
            return
        self._impl = impl
        self._kwargs = dict(checked.attrs)
        if impl.wants_dst_dtype:
            self._kwargs["dst_dtype"] = op.outputs[0].dtype

    def __call__(self, args: Sequence[Array]) -> list[Array]:
        if self._impl is None:
            return run_op(self.op, args)
        return evaluate_op(self.op, self._impl, self._kwargs, args)
