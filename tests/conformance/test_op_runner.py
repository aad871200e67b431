"""`OpRunner(op)(args)` is `run_op(op, args)` bit for bit, in f32 and under `high_precision`,
and raises the errors `run_op` raises, while checking the op against its schema only once."""

from __future__ import annotations

import numpy as np
import pytest

from fusionspec.conformance.grade import op_runner
from fusionspec.conformance.grade.op_runner import OpRunner
from fusionspec.reference.dtypes import high_precision
from fusionspec.reference.errors import OpInputError, UnsupportedOpError
from fusionspec.reference.execute import run_op
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.ir import LogicalTensor, Op
from fusionspec.spec.types import Array


def _t(tid: int, shape: tuple[int, ...], dtype: DataType = DataType.f32) -> LogicalTensor:
    return LogicalTensor(tid, dtype, shape)


def _same(a: Array, b: Array) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


OPS = [
    (Op(0, "GELU", [_t(0, (2, 3))], [_t(1, (2, 3))]), [(2, 3)]),
    (Op(0, "Divide", [_t(0, (2, 3)), _t(1, (3,))], [_t(2, (2, 3))]), [(2, 3), (3,)]),
    (Op(0, "BiasAdd", [_t(0, (1, 3, 2)), _t(1, (3,))], [_t(2, (1, 3, 2))],
        {"data_format": "NCX"}), [(1, 3, 2), (3,)]),
    (Op(0, "MatMul", [_t(0, (2, 4)), _t(1, (4, 3))], [_t(2, (2, 3))]), [(2, 4), (4, 3)]),
]


@pytest.mark.parametrize(("op", "shapes"), OPS, ids=[op.kind for op, _ in OPS])
def test_a_runner_gives_what_run_op_gives(op: Op, shapes: list[tuple[int, ...]]) -> None:
    rng = np.random.default_rng(1)
    runner = OpRunner(op)
    for precise in (False, True):
        args = [rng.normal(size=s).astype(np.float64 if precise else np.float32)
                for s in shapes]
        args[0].flat[0] = np.inf  # special values take the same path too
        with high_precision() if precise else np.errstate():
            want, got = run_op(op, args), runner(args)
        assert len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want)), \
            f"{op.kind} (float64: {precise}): the runner's results are run_op's, bit for bit"


def test_a_runner_checks_its_op_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    checked = op_runner.validate_op

    def counting(op: Op) -> Op:
        calls.append(op.id)
        return checked(op)

    monkeypatch.setattr(op_runner, "validate_op", counting)
    op, shapes = OPS[0]
    runner = OpRunner(op)
    for _ in range(3):
        runner([np.ones(s, np.float32) for s in shapes])
    assert calls == [op.id], f"the op is checked once for three evaluations, not {len(calls)}"


@pytest.mark.parametrize(("op", "error"), [
    (Op(0, "Wildcard", [_t(0, (2,))], [_t(1, (2,))]), UnsupportedOpError),
    (Op(0, "ReLU", [_t(0, (2,)), _t(1, (2,))], [_t(2, (2,))]), FusionspecError),
    (Op(0, "Add", [_t(0, (2,)), _t(1, (3,))], [_t(2, (2,))],
        {"auto_broadcast": "none"}), OpInputError),
], ids=["outside the spec", "malformed", "inputs that do not fit"])
def test_a_runner_raises_what_run_op_raises(op: Op, error: type[Exception]) -> None:
    args = [np.ones(t.shape or (), np.float32) for t in op.inputs]
    with pytest.raises(error) as expected:
        run_op(op, args)
    with pytest.raises(type(expected.value)) as found:
        OpRunner(op)(args)
    assert str(found.value) == str(expected.value), \
        f"the runner's error is run_op's: {found.value} != {expected.value}"
