"""Text no UTF-8 writer takes (a lone surrogate), noncharacters, control characters, escape
sequences and bidirectional overrides, from a backend's name, device, limitations and
exceptions (`testkit.unfit_backends`) and from a graph file (results documents:
tests/reports/test_unfit_documents.py). Every command ends with its documented exit code,
prints none of them, and writes files that parse (JSON, XML, TOML)."""

from __future__ import annotations

import json
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from testkit.cli import fusionspec, pytest_run
from testkit.unfit_backends import UNFIT

#: What a terminal acts on rather than shows.
CONTROLS = "\x1b\x9b\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "matmul_gelu_add.json"


def _quiet(text: str, what: str) -> None:
    assert "Traceback" not in text and "UnicodeEncodeError" not in text, \
        f"{what}: a traceback:\n{text[-2000:]}"
    shown = sorted({c for c in text if c in CONTROLS})
    assert not shown, f"{what}: terminal controls reached the output: {shown!r}"


def _written(out: Path) -> None:
    """Every file the run wrote parses in its format."""
    if (out / "junit.xml").exists():
        ET.parse(out / "junit.xml")
    if (out / "expect.toml").exists():
        tomllib.loads((out / "expect.toml").read_text(encoding="utf-8"))
    json.loads((out / "results.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("isolate", [True, False], ids=["worker", "in-process"])
@pytest.mark.parametrize(("backend", "codes"), [
    ("UnfitName", (0,)), ("RaisesUnfit", (1,)), ("UnfitFailures", (1,)),
    ("UnavailableUnfit", (3,))])
def test_a_backend_s_unfit_words_end_in_its_exit_code(tmp_path: Path, backend: str,
                                                     codes: tuple[int, ...],
                                                     isolate: bool) -> None:
    done = fusionspec(["conform", "--backend", f"testkit.unfit_backends:{backend}",
                       "--patterns", "fp.bn_relu", "--kinds", "valid",
                       *([] if isolate else ["--no-isolate"]), "--out", "out",
                       "--junit", "out/junit.xml", "--write-expectations", "out/expect.toml"],
                      tmp_path)
    _quiet(done.stdout + done.stderr, backend)
    assert done.returncode in codes, f"{backend}: exit {done.returncode}:\n{done.stderr[-800:]}"
    _written(tmp_path / "out")
    if backend == "UnavailableUnfit":
        return
    results = tmp_path / "out" / "results.json"
    for argv in (["report", results, "-o", "page/index.html"],
                 ["findings", results, "-o", "findings.md"],
                 ["diff", results, results, "--markdown", "diff.md"],
                 ["merge", results, "-o", "merged/results.json"]):
        again = fusionspec([str(a) for a in argv], tmp_path)
        _quiet(again.stdout + again.stderr, f"{backend}: {argv[0]}")
        assert again.returncode in (0, 1), \
            f"{backend}: {argv[0]} exit {again.returncode}:\n{again.stderr[-800:]}"


@pytest.mark.parametrize("xdist", [[], ["-n", "1"]], ids=["one-process", "xdist"])
@pytest.mark.parametrize(("backend", "code"), [("UnfitName", 0), ("UnavailableUnfit", 3)])
def test_the_plugin_takes_unfit_words(tmp_path: Path, xdist: list[str], backend: str,
                                      code: int) -> None:
    done = pytest_run(["-q", "--pyargs", "fusionspec.conformance", "--fs-patterns",
                       "fp.bn_relu", "--fs-kinds", "valid", *xdist, "--fs-backend",
                       f"testkit.unfit_backends:{backend}", "--fs-out", "out"], tmp_path)
    assert "INTERNALERROR" not in done.stdout + done.stderr, \
        f"{backend} {xdist}: {done.stdout[-1500:]}{done.stderr[-800:]}"
    assert done.returncode == code, \
        f"{backend} {xdist}: exit {done.returncode}, not {code}:\n{done.stdout[-1500:]}"
    json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("field", ["kind", "name", "engine_kind", "dtype", "attr"])
@pytest.mark.parametrize("command", ["validate", "partition", "explain", "run"])
def test_a_graph_s_words_reach_no_terminal(tmp_path: Path, field: str, command: str) -> None:
    graph = json.loads(EXAMPLE.read_text())
    if field == "engine_kind":
        graph["engine_kind"] = "c" + UNFIT
    elif field == "dtype":
        graph["graph"][0]["inputs"][0]["dtype"] = "f" + UNFIT
    elif field == "attr":
        graph["graph"][1]["attrs"]["mode"] = {"type": "string", "value": "x" + UNFIT}
    else:
        graph["graph"][0][field] = "Mat\u202eMul" + UNFIT
    (tmp_path / "g.json").write_text(json.dumps(graph))
    for extra in ([], ["--json"]):
        done = fusionspec([command, "g.json", *extra], tmp_path)
        _quiet(done.stdout + done.stderr, f"{command} {extra} ({field})")
        assert done.returncode in (0, 1), \
            f"{command} ({field}): exit {done.returncode}:\n{done.stderr[-600:]}"
        if extra and done.stdout.strip():
            json.loads(done.stdout)
