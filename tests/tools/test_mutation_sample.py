"""The pieces of the sampled mutation score (tools/mutation): the shadow reference, which
mutants count, which cases a mutant runs, and the score's arithmetic."""

from __future__ import annotations

import math
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "mutation"
sys.path.insert(0, str(TOOLS))
pytest.importorskip("cosmic_ray", reason="the mutation extra (cosmic-ray) is not installed")

import kill  # noqa: E402
import sample  # noqa: E402
import score  # noqa: E402
import shadow  # noqa: E402


@pytest.fixture(scope="module")
def shadow_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shadow")
    shadow.build(root)
    return root


def test_the_shadow_loads_as_its_own_package_with_its_own_validator(shadow_root: Path) -> None:
    probe = ("import fusionspec_shadow, fusionspec.spec.graph as g, fusionspec.reference as r;"
             "from fusionspec_shadow.backend import ReferenceBackend as B;"
             "print(g.finalize_ops.__module__, B.__module__, r.__name__)")
    out = subprocess.run([sys.executable, "-c", probe], env={"PYTHONPATH": str(shadow_root)},
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, f"the shadow package does not import: {out.stderr[-800:]}"
    assert out.stdout.split() == ["fusionspec_shadow.validate", "fusionspec_shadow.backend",
                                  "fusionspec.reference"], (
        f"graphs finalized in the shadow's process must go through the shadow's validator, "
        f"and the real reference must stay itself; got {out.stdout!r}")


def test_annotations_and_messages_are_inert_code_is_not(shadow_root: Path) -> None:
    module = "fusionspec_shadow/validate.py"
    lines = (shadow_root / module).read_text().splitlines()
    raise_line = next(n for n, t in enumerate(lines, 1) if 'raise TopologyError(f"op id' in t)
    col = lines[raise_line - 1].index("op id")
    assert sample.inert(shadow_root, module, (raise_line, col), (raise_line, col + 2)), (
        "a mutation inside a raised exception's message cannot change a verdict")
    check_line = raise_line - 1
    assert "if not _is_int(op.id)" in lines[check_line - 1], "the probe lines moved"
    col = lines[check_line - 1].index("not")
    assert not sample.inert(shadow_root, module, (check_line, col), (check_line, col + 3)), (
        "the condition that decides whether to raise is behaviour, not a message")


def test_area_of_each_file() -> None:
    assert sample.area_of("fusionspec_shadow/ops/conv.py") == "op functions"
    assert sample.area_of("fusionspec_shadow/matcher.py") == "partitioner"
    assert sample.area_of("fusionspec_shadow/validate.py") == "validator"
    assert sample.area_of("fusionspec_shadow/execute.py") == "executor"
    assert sample.area_of("fusionspec_shadow/filling.py") is None, (
        "input filling is the suite's side, never the backend's: it is not mutated")
    assert math.isclose(sum(sample.SHARES.values()), 1.0), "the area shares must add up to 1"


def test_a_continuation_line_maps_to_its_statement() -> None:
    source = "x = 1\nif (x > 0 and\n        x < 2):\n    y = 3\n"
    assert kill.statement_lines(source, range(3, 4)) == range(2, 4), (
        "coverage records a statement by its first line: a mutation on its second line must "
        "be reached by the cases that run the first")


def test_rare_nearby_cases_come_first_then_a_spread() -> None:
    common = [f"p{n % 5}.x/valid/{n:04x}" for n in range(50)]
    rare = ["p9.y/ill-formed/graph.rule/0001"]
    lines_map = {"m.py": {"10": common + rare, "11": rare, "12": common}}
    picked = kill.chosen(lines_map, "m.py", range(10, 11), 8)
    assert picked[0] == rare[0], (
        f"the case that also runs the guarded line 11 must come first; picked {picked}")
    assert len(picked) == 8 and len(set(picked)) == 8, f"the cap is 8 distinct cases: {picked}"
    groups = {"/".join(c.split("/")[:2]) for c in picked[1:]}
    assert len(groups) >= 5, f"the rest must spread over patterns: {sorted(groups)}"


def test_cases_with_an_unusual_path_through_the_file_come_next() -> None:
    common = [f"p{n % 5}.x/valid/{n:04x}" for n in range(60)]
    odd = ["p3.x/valid/unknown-rank"]
    # Line 10 is mutated; line 40, far from it, is a branch only the odd case takes (an
    # unknown rank, say): the nearby lines cannot tell it from the others, the file can.
    lines_map = {"m.py": {"10": common + odd, "11": common + odd, "40": odd}}
    picked = kill.chosen(lines_map, "m.py", range(10, 11), 9)
    assert odd[0] in picked[:4], (
        f"the case with the file's rarest path must be among the first third; picked {picked}")


def test_wilson_interval() -> None:
    low, high = score.wilson(90, 100)
    assert 0.82 < low < 0.83 and 0.94 < high < 0.95, f"Wilson 95% of 90/100 is [0.826, 0.945]: " \
        f"got [{low:.3f}, {high:.3f}]"
    assert score.wilson(0, 0) == (0.0, 1.0), "nothing tested says nothing"
    assert score.wilson(10, 10)[1] == 1.0, "the interval stays inside [0, 1]"


def test_survivor_keys_name_file_function_operator_and_change() -> None:
    diff = ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-    if first_value < second_value:\n"
            "+    if first_value <= second_value:\n")
    key = score.survivor_key("fusionspec_shadow/ops/unary.py", "relu",
                             "core/ReplaceComparisonOperator_Lt_LtE", diff)
    assert key == "ops/unary.py :: relu :: ReplaceComparisonOperator_Lt_LtE :: " \
                  "if first_value < second_value: => if first_value <= second_value:", \
        f"the key names file, function, operator and change: {key!r}"
    other = score.survivor_key("fusionspec_shadow/ops/unary.py", "elu",
                               "core/ReplaceComparisonOperator_Lt_LtE", diff)
    assert other != key, "the same change in two functions of one file gets two keys"


def test_a_short_change_is_named_with_the_line_before_it() -> None:
    keys = {score.survivor_key("fusionspec_shadow/matcher.py", "_leaf",
                               "core/ReplaceContinueWithBreak",
                               f"--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n     {before}\n\n"
                               "-        continue\n+        break\n")
            for before in ("if op.kind not in kinds:", "yield st2, ()")}
    assert keys == {"matcher.py :: _leaf :: ReplaceContinueWithBreak :: "
                    "if op.kind not in kinds: | continue => break",
                    "matcher.py :: _leaf :: ReplaceContinueWithBreak :: "
                    "yield st2, () | continue => break"}, \
        f"two `continue`s of one function get two keys, each with the line before it: {keys}"


def test_every_triage_entry_is_well_formed() -> None:
    entries = tomllib.loads((TOOLS / "triage.toml").read_text()).get("survivor", [])
    for entry in entries:
        key = entry.get("key", "")
        assert key.count(" :: ") >= 3, \
            f"a triage key is 'file :: function :: operator :: change': {key!r}"
        verdict = entry.get("verdict")
        assert verdict in ("equivalent", "missed"), f"{key}: verdict {verdict!r}"
        reason = entry.get("why") if verdict == "equivalent" else entry.get("corner")
        assert isinstance(reason, str) and len(reason) > 15, (
            f"{key}: an {verdict} survivor needs its one-line "
            f"{'argument' if verdict == 'equivalent' else 'corner'}")
    keys = [e.get("key") for e in entries]
    assert len(keys) == len(set(keys)), "a survivor is triaged once"


def test_a_mutant_keeps_its_rank_when_code_above_it_moves(tmp_path: Path) -> None:
    body = "def relu(x):\n    return max(x, 0)\n"
    before, after = tmp_path / "a", tmp_path / "b"
    for root, text in ((before, body), (after, "import math\n\n\n" + body)):
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "m.py").write_text(text)
    shift = 3
    names = [sample.identity(root, "pkg/m.py", "relu", "core/NumberReplacer",
                             (2 + lines, 18), (2 + lines, 19))
             for root, lines in ((before, 0), (after, shift))]
    assert names[0] == names[1], f"three lines added above must not rename the mutant: {names}"
    assert sample.rank(0, names[0]) == sample.rank(0, names[1]), "same name, same place in order"
    assert sample.rank(0, names[0]) != sample.rank(1, names[0]), "another seed, another order"
