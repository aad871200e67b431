"""oneDNN's own benchdnn graph inputs: every file loads, round-trips and finalizes, or fails as
recorded in `EXPECTED_FAILURES`.

Point FUSIONSPEC_ONEDNN_INPUTS at oneDNN's ``tests/benchdnn/inputs/graph`` directory; without
it the tests skip (CI has no network to fetch the files). A failure not in the table, and an
entry of the table that no longer fails, both fail the test: the table is the complete list of
the shipped files fusionspec rejects, each with its reason.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest
from testkit.material import missing

from fusionspec.spec import Graph, GraphError, JsonFormatError, OutsideSpecWarning
from fusionspec.spec import onednn_json as oj

ROOT_VAR = "FUSIONSPEC_ONEDNN_INPUTS"
ROOT = Path(os.environ[ROOT_VAR]) if os.environ.get(ROOT_VAR) else None
FILES = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.json")) if ROOT else []



@pytest.fixture(autouse=True)
def _corpus_present() -> None:
    if ROOT is None:
        missing("benchdnn-graphs", f"set {ROOT_VAR} to oneDNN's tests/benchdnn/inputs/graph "
                "folder to run the corpus tests (the files are not shipped with fusionspec)")

_PAGE_ROWS = ("the op page's dtype table has no such row (f32+f32, bf16+bf16, f16+f16 keep "
              "their type; a mix with f32 gives f32); oneDNN's schema accepts any combination "
              "of f32/bf16/f16, so this is a spec-vs-implementation departure, not a broken "
              "file")
_BF16_TO_F32 = f"Multiply bf16 x bf16 -> f32: {_PAGE_ROWS}"

#: file -> (stage, rule id for finalize or JSON path for load, reason).
EXPECTED_FAILURES: dict[str, tuple[str, str, str]] = {
    "op/f32/biasadd_bwd.json": (
        "finalize", "schema.kind",
        "kind 'BiasAddBackprop' does not exist (oneDNN's op is BiasAddBackward); oneDNN "
        "rejects it too"),
    "pattern/f32/avgpool_3d_chain_fusion.json": (
        "finalize", "schema.attr.pads_non_negative",
        "pads_end [-1, 1, 0] as shipped; oneDNN's check_pads rejects it too (benchdnn's "
        "harness always overrides the pads with --op-attrs)"),
    "pattern/int8/int8_convtranspose_post_ops_add_fusion.json": (
        "finalize", "schema.shape.infer",
        "a per-channel Dequantize of grouped ConvTranspose weights [16, 1, 3, 3] along axis 1 "
        "(one element) with 16 scales: the op definition takes one scale per element of the "
        "axis, and the reference cannot run it; oneDNN scales such weights per output channel "
        "(groups x OC/G) instead, a departure of the library from its op page"),
    "pattern/int8/int8_maxpool_add_mul_fusion.json": (
        "finalize", "graph.tensor.consistent",
        "tensor 4257 is [1, 64, 300, 300] at its producer and [1, 64, 1, 1] at its consumer; "
        "oneDNN's graph finalize rejects two different tensors with one id too (the harness "
        "rewrites the shapes with --in-shapes)"),
    "complex_fusion/mha/sdpa-compressed-k-int8-gs32.json": (
        "load", "$.input_ports[6]",
        "input_ports lists tensors 6, 7 and 8, which no op uses (left over from an edit); "
        "benchdnn ignores input_ports, oneDNN's serializer never writes such a file"),
    "pattern/int8/int8_softmax_add.json": (
        "load", "$.output_ports[0]",
        "output_ports names tensor 5, which no op uses (the graph ends at tensor 4); benchdnn "
        "ignores output_ports, oneDNN's serializer never writes such a file"),
    "complex_fusion/mha/MHA-bert_large-inf-int8-bs1.json": (
        "finalize", "schema.dtype.row", f"Divide bf16 / f32 -> bf16: {_PAGE_ROWS}"),
    **{f"complex_fusion/{name}.json": ("finalize", "schema.dtype.row", _BF16_TO_F32) for name in (
        "bmb/binary-matmul-binary-bf16",
        "mha/gqa-plain-training-backward-bf16-f32",
        "mha/gqa-plain-training-backward-w-dmask-bf16-f32",
        "mha/gqa-plain-training-bwd-w-dropout-bf16-f32",
        "mha/hf-sdpa-bwd-implicit-mask-bf16-f32",
        "mha/hf-sdpa-bwd-no-mask-bf16-f32",
        "mha/hf-sdpa-bwd-w-mask-bf16-f32",
        "mha/sdpa-plain-training-backward-bf16-f32",
        "mha/sdpa-plain-training-backward-w-dmask-bf16-f32",
        "mha/timms-sdpa-bwd-no-mask-bf16-f32",
        "mha/torchbench-sdpa-bwd-bf16-f32",
        "mha/torchbench-sdpa-bwd-implicit-mask-bf16-f32",
        "mha/torchbench-sdpa-bwd-w-mask-bf16-f32",
    )},
}


def _finalize(graph: Graph, rel: str) -> Graph:
    """finalize(), allowing only OutsideSpecWarning (ops the pages do not name)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        done = graph.finalize()
    other = [str(w.message) for w in caught if not issubclass(w.category, OutsideSpecWarning)]
    assert not other, f"{rel}: unexpected warnings {other}"
    return done


@pytest.mark.parametrize("rel", FILES or ["(no corpus)"])
def test_corpus_file(rel: str) -> None:
    assert ROOT is not None
    expected = EXPECTED_FAILURES.get(rel)
    try:
        graph = oj.load(ROOT / rel)
    except JsonFormatError as exc:
        assert expected is not None and expected[0] == "load", (
            f"{rel}: unexpected load failure: {exc}")
        assert exc.path == expected[1], f"{rel}: load failed at {exc.path}, expected {expected[1]}"
        return
    assert expected is None or expected[0] != "load", (
        f"{rel}: loads, but the table expects a load failure ({expected})")
    assert oj.loads(oj.dumps(graph)) == graph, f"{rel}: dump -> load changed the graph"
    try:
        done = _finalize(graph, rel)
    except GraphError as exc:
        assert expected is not None, f"{rel}: unexpected rejection: {exc}"
        assert exc.rule == expected[1], f"{rel}: rejected by {exc.rule}, expected {expected[1]}"
        return
    assert expected is None, f"{rel}: finalizes, but the table expects {expected[1]}"
    assert oj.loads(oj.dumps(done)) == done, f"{rel}: the finalized graph does not round-trip"


def test_expected_failures_name_existing_files() -> None:
    stale = sorted(set(EXPECTED_FAILURES) - set(FILES))
    assert not stale, f"expected-failure entries for files not under {ROOT}: {stale}"
