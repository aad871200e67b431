"""One op evaluated many times over: `OpRunner(op)(args)` is `run_op(op, args)`, bit for bit.

Bounding an op's error evaluates it at several points (`fusionspec.conformance.grade.bounds`:
its reference value, then in float64 at its value, at every corner of its inputs' intervals, on
its radii and magnitudes). `run_op` checks the op against its schema and fills its default
attributes at every call, which on the small tensors of most cases costs more than the op
itself; a runner does so once, then calls the op's implementation as `run_op` does: the same
arguments, the same compute dtype (read at each call: float64 inside `high_precision`), the same
typed errors and the same checks of the results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fusionspec.reference.dtypes import compute_dtype, is_float_dtype
from fusionspec.reference.errors import ExecutionError, OpInputError
from fusionspec.reference.execute import run_op
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
        op, impl = self.op, self._impl
        if impl is None:
            return run_op(op, args)
        try:
            with np.errstate(all="ignore"):
                result = impl.fn(*args, **self._kwargs)
        except ExecutionError as exc:
            raise exc.at_op(op.id, op.kind) from exc
        except (ValueError, IndexError, TypeError) as exc:
            raise OpInputError(f"cannot evaluate: {exc}", op_id=op.id, op_kind=op.kind) from exc
        results = list(result) if isinstance(result, tuple) else [result]
        if len(results) < len(op.outputs):
            raise ExecutionError(f"the implementation returned {len(results)} output(s) for "
                                 f"{len(op.outputs)} declared", op_id=op.id, op_kind=op.kind)
        wanted = compute_dtype()
        out: list[Array] = []
        for tensor, value in zip(op.outputs, results):
            arr = np.asarray(value)
            if is_float_dtype(arr.dtype) and arr.dtype != wanted:
                arr = arr.astype(wanted)
            shape = tensor.shape
            if shape is not None and not (len(shape) == arr.ndim and all(
                    d < 0 or d == a for d, a in zip(shape, arr.shape))):
                # run_op words this error; it raises it here as well
                return run_op(op, args)
            out.append(arr)
        return out
