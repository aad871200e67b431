"""``fusionspec patterns``: the catalog as text and as JSON, filtered by family or id."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fusionspec.cli.main import main
from fusionspec.spec.catalog import CATALOG


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["patterns", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_text_lists_every_entry_with_source_rules_and_decisions(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys)
    assert code == 0, f"exit code {code}, stderr {err!r}"
    blocks = out.strip().split("\n\n")
    assert len(blocks) == len(CATALOG), f"{len(blocks)} blocks for {len(CATALOG)} entries"
    for block, pattern in zip(blocks, CATALOG):
        lines = block.splitlines()
        assert lines[0].startswith(pattern.id + " "), f"block starts {lines[0]!r}, " \
            f"expected {pattern.id}"
        assert f"  {pattern.notation}" in lines, f"{pattern.id}: notation line missing"
        assert f"{pattern.page.file}), {pattern.section}" in block, \
            f"{pattern.id}: source page and section missing"
        for r in pattern.rules:
            assert f"{r.id} ({r.kind.value}" in block and r.statement in block, \
                f"{pattern.id}: rule {r.id} not printed with its statement"
        for d in pattern.decisions:
            assert f"{d.id}: {d.text}" in block, f"{pattern.id}: decision {d.id} not printed"
    assert "convtranspose.int8.gpu_zero_zps (device, gpu only)" in out, \
        "device rules should say which device"


def test_json_is_a_list_of_objects_in_catalog_order(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--json")
    assert code == 0, f"exit code {code}"
    data: list[dict[str, Any]] = json.loads(out)
    assert [d["id"] for d in data] == [e.id for e in CATALOG], "ids out of catalog order"
    keys = {"id", "notation", "family", "page", "title", "section", "description", "rst",
            "min_ops", "max_ops", "rules", "decisions"}
    for item in data:
        assert keys <= set(item), f"{item['id']} lacks {sorted(keys - set(item))}"
    softmax = data[-1]
    assert softmax["notation"].endswith("Quantize^?_{>out}"), softmax["notation"]
    assert [r["id"] for r in softmax["rules"]][:2] == ["softmax.order", "softmax.post_op_count"], \
        f"softmax rules {softmax['rules']}"
    assert all(d["reason"] for d in softmax["decisions"]), "every decision carries its reason"
    conv = data[0]
    assert conv["rst"].startswith("Convolution + BiasAdd :math:`^?`"), f"rst {conv['rst']!r}"


def test_filters(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(capsys, "--json", "--family", "training")
    ids = [d["id"] for d in json.loads(out)]
    assert ids == ["train.conv_bwd_weights_bias_bwd", "train.relu_bwd_bn_bwd"], f"{ids}"
    _, out, _ = _run(capsys, "--json", "softmax.post_ops", "fp.bn_relu")
    ids = [d["id"] for d in json.loads(out)]
    assert ids == ["fp.bn_relu", "softmax.post_ops"], f"ids filter gave {ids} (catalog order)"


def test_unknown_id_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "fp.nope")
    assert code == 1, f"unknown id should exit 1, got {code}"
    assert "no pattern 'fp.nope'" in err and "fp.conv_post_ops" in err, \
        f"stderr should name the id and the known ones: {err!r}"
    assert out == "", f"nothing on stdout for an error, got {out!r}"


def test_unknown_family_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["patterns", "--family", "misc"])
    assert caught.value.code == 2, f"argparse usage error expected, got {caught.value.code}"
    assert "invalid choice" in capsys.readouterr().err, "argparse should name the bad choice"
