"""Staging a dequantized operand: the ops folded into a main op's source (an int8 input's
Dequantize) computed once per element into a dense f32 scratch buffer, so that the main loop
reads f32 exactly as it does without them.

The GEMM family's register-blocked form stages its A operand inside the launch that packs B
(`fusionspec.accel.families.gemm`): every work-item of that launch first takes its share of
A's elements, so the partition keeps the two launches of an unquantized product and A is read
in runs by the GEMM kernel. Before, a Dequantize folded into A sent a convolution to the
explicit im2col (one more launch, K x M elements written and read) and the int8 DCGAN
ConvTranspose ran at half its op-by-op speed on PoCL and Intel's runtime; reading int8 in the
run loop instead costs a conversion per use and stayed 30% slower. A separate staging launch
would not do: a partition's device time runs from its first launch's start to its last one's
end, and Intel's runtime leaves about 0.1 ms between two launches of a queue.

The statements come from the shared post-op generator over a lazy domain of the operand's
shape (a strided int8 input is read through its runtime strides, a per-channel Dequantize
through its tables), at a linear index ``i`` the host loop supplies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fusionspec.spec.graph import LogicalTensor, Op

from ..codegen.access import Domain, known_shape
from ..codegen.args import KernelArgs
from ..codegen.epilogue import emit_epilogue
from ..codegen.source import Preamble
from ..plan import Scratch, ScratchArg
from .base import BuildContext

__all__ = ["StagedOperand", "stage_operand", "stages", "STAGE_BUDGET"]

#: The largest staged operand (bytes); past it the Dequantize stays folded into the loads.
STAGE_BUDGET = 64 << 20
_FLOAT = 4


@dataclass(frozen=True)
class StagedOperand:
    """A staged operand: `buffer` (the scratch parameter's name, which the operand tensor is
    aliased to, so its dense offsets and strides name the scratch), the scratch buffer, the
    element count (`size`, an argument; `elements` its value) and the statements that compute
    and store element ``i`` (`axes` first, then `body`)."""

    buffer: str
    scratch: Scratch
    size: str
    elements: int
    axes: tuple[str, ...]
    body: str


def stages(chain: list[Op]) -> bool:
    """Whether the output of `chain` fits `STAGE_BUDGET` (`stage_operand` stages it)."""
    return math.prod(known_shape(chain[-1].outputs[0])) * _FLOAT <= STAGE_BUDGET


def stage_operand(chain: list[Op], buffer: str, ctx: BuildContext, preamble: Preamble,
                  args: KernelArgs) -> StagedOperand | None:
    """Stage the output of `chain` (element-wise ops, the last one producing the operand) as
    scratch `buffer`; None when it does not fit `STAGE_BUDGET`. Call before anything names
    the operand tensor (it is aliased to `buffer`)."""
    operand: LogicalTensor = chain[-1].outputs[0]
    shape = known_shape(operand)
    elements = math.prod(shape)
    if not stages(chain):
        return None
    args.alias(operand, buffer)
    name = args.buffer(buffer, "float", ScratchArg(buffer), const=False)
    domain = Domain(shape, args, index="st", linear="i")
    code = emit_epilogue(chain, domain=domain, policy=ctx.policy, preamble=preamble)
    value = code.result.f32 if code.result.f32 is not None else \
        ctx.policy.as_float(code.result.text, code.result.kind)
    body = f"{code.body}\n{name}[i] = {value};"
    size = domain.size_arg()
    return StagedOperand(name, Scratch(buffer, max(elements, 1) * _FLOAT), size, elements,
                         tuple(domain.axis_declarations()), body)
