"""Decisions recorded where the pages are ambiguous, silent, or at odds with the op definitions.

Each `Decision` says what fusionspec reads the page to mean and why. The catalog attaches them to
the entries they concern; the reference and the suite follow them. Facts about how oneDNN itself
behaves appear in the reasons as *findings about a backend*: they never change what the catalog
says, which is what the pages say.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Decision"]


@dataclass(frozen=True)
class Decision:
    """A reading of the pages: `text` is the decision, `reason` why it is the right one."""

    id: str
    text: str
    reason: str


# -- decisions shared by several entries (the catalog attaches them where they apply) --------

POW_IN_UNARY = Decision(
    "dec.pow_in_unary",
    "Pow is a member of the Unary category.",
    "Page 001 lists it. oneDNN neither fuses Pow nor runs it as a single op, and its later pages "
    "drop it from the list: a finding about that backend, not a change to the spec.")

CHAIN_OPERAND = Decision(
    "dec.chain_operand",
    "'+' feeds the next op's first operand (src_0); Add, Multiply, Maximum and Minimum may take "
    "the chain on either operand, Subtract and Divide on src_0 only.",
    "Page 001 says 'first operand'. The four binaries are commutative, so entering on src_1 "
    "computes the same chain (oneDNN's matcher accepts it the same way); Subtract and Divide "
    "are not commutative.")

OPTIONAL_OUT = Decision(
    "dec.optional_out",
    "'>out' on an optional or repeated item marks the output of the last op it matched; when it "
    "matched no op, the output of the op before it is the partition output.",
    "The pages put '>out' on items such as '[Unary | Binary]^{0-3}' and 'Quantize^?' whose "
    "instances may have no such op, and the partition still has an output: its chain's last.")

BOUND_0_3 = Decision(
    "dec.post_op_bound_0_3",
    "The unary/binary post-op bound is 0-3, as written.",
    "oneDNN fuses longer chains (up to 4 from v3.3, up to 19 from v3.10); a backend that fuses "
    "more ops than the bound is reported as an extension, not as a failure.")

ZERO_POST_OPS = Decision(
    "dec.zero_post_ops",
    "The lower bound 0 stays: the head op alone is an instance of the pattern.",
    "The page writes 0-3. oneDNN needs at least one post-op for this head and leaves a lone head "
    "to a single-op partition, which computes the same result.")

INT8_TYPES = Decision(
    "dec.int8_types",
    "Quantize and Dequantize take every type their op definitions allow (s8, u8, f8_e4m3, "
    "f8_e5m2); page 001 names no narrower set for its quantized rows.",
    "Page 001 gives no dtype table for quantized patterns. oneDNN checks int8 in some of them "
    "(pooling, reorder) and s8 weights for convolution: findings, not spec.")

INT8_WEIGHTS_T1 = Decision(
    "dec.int8_weights_t1",
    "The first subgraph 'Quantize^? + Dequantize_{>t1}' is the weights path: t1 is the base "
    "op's second input (weights), and the main chain's Dequantize gives its src.",
    "'+' supplies the first operand, so a marked t1 must be another input, and Convolution, "
    "ConvTranspose and MatMul take weights second. The optional Quantize converts f32 weights.")

INT8_BINARY_T2 = Decision(
    "dec.int8_binary_t2",
    "Each Dequantize of 'Dequantize_{>t2}^{0-3}' feeds the second operand of one Binary post-op; "
    "a Binary post-op may also take a plain partition input there.",
    "The t2 subgraph repeats 0-3 times and the Binary post-ops number 0-3 independently, so a "
    "Binary without a t2 producer must be allowed. oneDNN absorbs only the Dequantize of the "
    "first Add after the base op: a finding about that backend.")

ADD_T1 = Decision(
    "dec.add_t1",
    "In 'Add_{<t1}', the Dequantize subgraph's t1 is the Add's second operand.",
    "'+' gives the Add its first operand from the op before it.")

ADD_BROADCAST = Decision(
    "dec.add_broadcast",
    "The Add may use either auto_broadcast value.",
    "The page sets no condition. oneDNN fuses only an Add with auto_broadcast='none': a finding.")

WRITTEN_BY_FUSIONSPEC = Decision(
    "dec.written_in_notation",
    "This pattern is written by fusionspec in page 001's notation.",
    "The page gives the pattern as a list of subgraphs with diagrams; one notation for every "
    "entry lets one matcher, one generator and one report serve the whole catalog.")

# -- page 001, single rows ------------------------------------------------------------------

POOL_BINARY_ONLY = Decision(
    "dec.pool_binary_only",
    "Only Binary post-ops follow the pooling op, as written.",
    "oneDNN also fuses unary post-ops here; a backend that does is reported as an extension.")

UNARY_BINARY_ONLY = Decision(
    "dec.unary_binary_only",
    "Only Binary ops follow the Unary head; a Unary after a Unary is not this pattern.",
    "As written; 'Binary + [Unary | Binary]^{0-3}' is the row that mixes unary ops in.")

BN_RELU = Decision(
    "dec.bn_relu",
    "Exactly one ReLU follows; BatchNormInference's gamma, beta, mean and variance may be f32 or "
    "bf16 as its op definition allows.",
    "As written. oneDNN requires f32 statistics for this fusion: a finding.")

CBW_CHAIN = Decision(
    "dec.conv_bwd_weights_chain",
    "Read as written: ConvolutionBackwardWeights' output (diff_weights) is BiasAddBackward's "
    "input.",
    "'+' is defined as output-to-first-operand and the pair is well-formed under the op "
    "definitions. Those name BiasAddBackward's input diff_dst, and oneDNN's own (disabled) "
    "pattern shares one diff_dst between the two ops instead, which this notation cannot say "
    "with '+'; oneDNN never fuses the pair and has no BiasAddBackward kernel.")

RELU_BWD_BN_BWD = Decision(
    "dec.relu_bwd_bn_bwd",
    "ReLUBackward's output enters BatchNormTrainingBackward's src (input 0); '>out' marks every "
    "output of the latter (1 or 3).",
    "'+' gives the first operand, which is src; oneDNN wires the fusion the same way.")

# -- page 000 --------------------------------------------------------------------------------

CT_Q2F = Decision(
    "dec.ct_q2f",
    "Q2F: src takes a Dequantize; weights take a Dequantize or a Quantize + Dequantize, written "
    "'Quantize^? + Dequantize_{>t1}' as in page 001's quantized rows.",
    "The page offers both subgraphs and says the second applies only to weights.")

CT_F2Q_OPTIONAL = Decision(
    "dec.ct_f2q_optional",
    "The F2Q Quantize is optional.",
    "The dtype table lists bf16, f16 and f32 dst, which only an instance without the final "
    "Quantize can have.")

CT_BOUND = Decision(
    "dec.ct_post_op_bound",
    "The epilogue bound is 0-4, as written.",
    "oneDNN from v3.10 fuses up to 19 post-ops; more than 4 fused is reported as an extension.")

CT_PLAIN_BINARY = Decision(
    "dec.ct_plain_binary",
    "The epilogue's binary ops take plain second operands: no Q2F subgraph feeds them.",
    "The page's epilogue names BiasAdd, unary and binary ops only; page 001's quantized "
    "ConvTranspose row covers dequantized binary operands. Where both entries match, the "
    "partitioner's order decides (larger match, then catalog order).")

CT_UNREACHABLE = Decision(
    "dec.ct_table_unreachable",
    "The dtype table is kept as the page gives it; its bf16/f16 bias and bf16/f16 dst values are "
    "unreachable.",
    "Dequantize outputs f32 only and ConvTranspose gives src, weights, bias and dst one type, so "
    "a well-formed instance has an f32 bias and an f32 ConvTranspose dst, and the pattern has no "
    "TypeCast. The suite reports those values as unreachable, not as failures.")

CT_BIAS = Decision(
    "dec.ct_bias_sources",
    "The table's bias column covers ConvTranspose's own bias input and a BiasAdd's bias; both "
    "may be present.",
    "The page calls the bias input optional and allows a BiasAdd, without excluding either.")

CT_GPU = Decision(
    "dec.ct_gpu_scope",
    "On GPU the zps rule covers every Dequantize and Quantize of the Q2F subgraphs, the weights "
    "Quantize included, and the F2Q Quantize; Dequantize ops elsewhere are not concerned.",
    "The page says 'Dequantize and Quantize in Q2F and F2Q Conversion Subgraphs'.")

CT_RULES_ON_001 = Decision(
    "dec.ct_rules_on_001",
    "Page 000's dtype table, its BiasAdd and Q2F structure rules and its GPU limitations also "
    "apply to page 001's quantized ConvTranspose row.",
    "Page 000 is the detailed page for exactly these patterns and states its table for 'the "
    "quantized ConvTranspose fusion patterns'; without it a graph outside the table would still "
    "fuse through page 001's summary row, and the table would never bind.")

# -- page 003 --------------------------------------------------------------------------------

SM_BOUND = Decision(
    "dec.softmax_post_op_bound",
    "The epilogue bound is 0-20, as the page says ('N=20').",
    "oneDNN's code fuses at most 19 (its repetition bound is half-open): with 20 post-ops it "
    "splits the chain. That is a finding about the backend; the catalog keeps 20.")

SM_F2F_AND_F2Q = Decision(
    "dec.softmax_f2f_and_f2q",
    "TypeCast and Quantize are each optional, in that order, but no well-formed instance has "
    "both.",
    "F2F produces f16 or bf16 and Quantize accepts only an f32 input (its op definition), so an "
    "F2Q after an F2F cannot be typed.")

SM_F32 = Decision(
    "dec.softmax_f32",
    "When any optional subgraph follows, SoftMax's dst is f32 and the F2F or F2Q input is f32.",
    "The page: 'the output data type of SoftMax must be f32', F2F converts 'from f32' and F2Q "
    "quantizes 'from f32'. Unary and binary ops on an f32 chain keep it f32.")

SM_INT8 = Decision(
    "dec.softmax_int8",
    "'int8' means s8 or u8; a Quantize to an f8 type is outside the pattern.",
    "The page says int8; Quantize's op definition also allows f8 types, which the page does not "
    "name.")

SM_INPLACE = Decision(
    "dec.softmax_inplace",
    "The in-place note is data, not a requirement: a backend may overwrite the last Add's other "
    "input, and the suite neither requires nor forbids it.",
    "The page allows it as an optimisation. oneDNN does not compute in place after a SoftMax, so "
    "tests must tolerate the overwrite without relying on it.")
