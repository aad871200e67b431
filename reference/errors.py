"""Typed errors of the reference executor.

They all derive from `ExecutionError` (itself a `FusionspecError`), so a caller can catch "the
reference could not run this" in one place, while tests can check the precise reason:

- `InputMismatchError`: an input array does not fit its logical tensor (missing, wrong dtype,
  wrong shape, a buffer too short for the tensor's strides); `tensor_id` names the tensor.
- `UnsupportedOpError`: an op the reference does not execute (a kind outside the spec pages, or
  one without an implementation); `op_id` and `op_kind` name it.
- `OpInputError`: an op's inputs or attributes cannot be evaluated (shapes that do not broadcast
  under ``auto_broadcast="none"``, an axis out of range, a scale list of the wrong length).
"""

from __future__ import annotations

from fusionspec.spec.errors import FusionspecError

__all__ = ["ExecutionError", "InputMismatchError", "UnsupportedOpError", "OpInputError",
           "MemoryBudgetError", "OutputShapeError"]


class ExecutionError(FusionspecError):
    """The reference could not execute a partition or graph.

    `op_id`/`op_kind` name the op involved and `tensor_id` the tensor, when there is one.
    """

    def __init__(self, message: str, *, op_id: int | None = None, op_kind: str | None = None,
                 tensor_id: int | None = None) -> None:
        self.detail = message
        self.op_id = op_id
        self.op_kind = op_kind
        self.tensor_id = tensor_id
        parts: list[str] = []
        if op_id is not None:
            parts.append(f"op {op_id}" + (f" ({op_kind})" if op_kind else ""))
        elif op_kind is not None:
            parts.append(op_kind)
        if tensor_id is not None:
            parts.append(f"tensor {tensor_id}")
        prefix = ", ".join(parts)
        super().__init__(f"{prefix}: {message}" if prefix else message)

    def at_op(self, op_id: int, op_kind: str) -> ExecutionError:
        """The same error, with the op that raised it named (used by the executor)."""
        if self.op_id is not None:
            return self
        again = type(self)(self.detail, op_id=op_id, op_kind=op_kind, tensor_id=self.tensor_id)
        again.__cause__ = self.__cause__
        return again


class InputMismatchError(ExecutionError):
    """An input array is missing or does not match its logical tensor."""


class UnsupportedOpError(ExecutionError):
    """An op kind the reference cannot execute."""


class OpInputError(ExecutionError):
    """An op's input values, shapes or attributes that its semantics cannot evaluate."""


class MemoryBudgetError(ExecutionError):
    """Running a graph would need more memory than the budget allows (the estimate and the
    budget are in the message)."""


class OutputShapeError(ExecutionError):
    """An op computed an output of another shape than its tensor declares: a wrong result, not
    a failure to run. `fields` carries the tensor and both shapes, so that a suite grading a
    backend built on this executor reports the wrong values it computed."""

    @property
    def fields(self) -> dict[str, str]:
        return {"problem": "output-shape", "tensor": str(self.tensor_id),
                "detail": self.detail}
