"""Fuzzing the commands that read a graph (`validate`, `partition`, `explain`, `run`) and the
inputs file of `run`: mutated oneDNN graph JSON and hostile ``.npz`` archives end in an exit
code with a message, never a traceback, a write outside the output folder, or memory past the
budget the command was given."""

from __future__ import annotations

import functools
import io
import json
import tempfile
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from testkit.fuzz import FUZZ, assert_clean, mutated, run_cli, sandbox
from testkit.toy_backends import valid_case

from fusionspec.reference.arrays import write_npz
from fusionspec.reference.filling import fill_inputs
from fusionspec.spec.onednn_json import from_dict, to_dict

#: Seed graphs: one per family of attributes the loader and validator read (convolution
#: windows, Interpolate sizes and scales, MatMul transposes, quantization scales and axes).
SEED_PATTERNS = ("fp.conv_post_ops", "fp.interpolate_post_ops", "fp.matmul_post_ops",
                 "int8.conv_post_ops", "softmax.post_ops")
#: What `run` may use in the fuzz: small, so a graph that asks for more must be refused.
BUDGET_GB = 0.016
#: tracemalloc's peak may exceed the estimate a little (temporaries the estimate folds in).
PEAK_LIMIT = 4 * BUDGET_GB * 2**30
#: Values aimed at the graph format in particular (ids, dtypes, layouts, dims).
GRAPH_VALUES = ("f32", "s8", "bf16", "f64", "strided", "opaque", "any", "Convolution",
                "Wildcard", -2, 2**31, [1, 2**62], [-1], [0, 0, 0, 0], 1e-300)


SEEDS: dict[str, Any] = {pattern: to_dict(valid_case(pattern, 0).graph)
                         for pattern in SEED_PATTERNS}


def _graph_text(data: st.DataObject) -> tuple[str, str]:
    pattern = data.draw(st.sampled_from(SEED_PATTERNS))
    return pattern, data.draw(mutated(SEEDS[pattern], GRAPH_VALUES))


@pytest.mark.parametrize("command", ["validate", "partition", "explain"])
@FUZZ
@given(data=st.data())
def test_reading_commands_survive_mutated_graphs(command: str, data: st.DataObject) -> None:
    pattern, text = _graph_text(data)
    with sandbox() as box:
        graph = box / "in" / "graph.json"
        graph.write_text(text)
        outcome = run_cli(box, [command, graph, "--json"])
    assert_clean(outcome, f"{command} on a mutated {pattern} graph", json_out=True)


@FUZZ
@given(data=st.data())
def test_run_survives_mutated_graphs_within_its_budget(data: st.DataObject) -> None:
    pattern, text = _graph_text(data)
    with sandbox() as box:
        graph = box / "in" / "graph.json"
        graph.write_text(text)
        tracemalloc.start()
        try:
            outcome = run_cli(box, ["run", graph, "--json", "--max-memory", str(BUDGET_GB),
                                    "--out", box / "out" / "outputs.npz",
                                    "--save-inputs", box / "out" / "inputs.npz"])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    what = f"run on a mutated {pattern} graph"
    assert_clean(outcome, what, json_out=True)
    assert peak <= PEAK_LIMIT, f"{what}: peak {peak / 2**20:.0f} MiB past a " \
        f"{BUDGET_GB * 1024:.0f} MiB budget"


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def _claims(shape: tuple[int, ...], descr: str) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buffer, {"descr": descr, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


@functools.cache
def _valid_archive(pattern: str) -> tuple[tuple[str, bytes], ...]:
    graph = from_dict(SEEDS[pattern]).finalize()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "inputs.npz"
        write_npz(path, fill_inputs(graph, 0), graph.tensors)
        with zipfile.ZipFile(path) as archive:
            return tuple((name, archive.read(name)) for name in archive.namelist())


def _correct_members(pattern: str) -> dict[str, bytes]:
    """The members of a valid inputs file for the seed graph of `pattern`."""
    return dict(_valid_archive(pattern))


@st.composite
def _members(draw: st.DrawFn, pattern: str) -> dict[str, bytes]:
    """A valid inputs file with zero to three edits: a member replaced by a hostile body,
    removed, or added under a hostile name."""
    members = _correct_members(pattern)
    names = st.sampled_from([*members, "00.npy", "\u00b2.npy", "../0.npy", "/abs.npy",
                             "x.npy", "dir/", "-1.npy", f"{2**70}.npy"])
    dims = st.lists(st.integers(0, 2**40), max_size=4).map(tuple)
    bodies = st.one_of(
        st.builds(lambda shape: _npy(np.zeros(shape, np.float32)),
                  st.lists(st.integers(0, 8), max_size=4).map(tuple)),
        st.builds(lambda shape: _npy(np.zeros(shape, np.int8)),
                  st.lists(st.integers(0, 8), max_size=4).map(tuple)),
        st.just(_npy(np.array([{"pickled": 1}], dtype=object))),
        st.builds(_claims, dims, st.sampled_from(["<f4", "<f8", "|i1", "|O", "<c8", "V3"])),
        st.builds(lambda body: body[:len(body) // 2], st.sampled_from(sorted(members.values()))),
        st.binary(max_size=64),
    )
    for _ in range(draw(st.integers(0, 3))):
        name = draw(names)
        if name in members and draw(st.booleans()):
            del members[name]
        else:
            members[name] = draw(bodies)
    return members


@FUZZ
@given(data=st.data())
def test_run_survives_hostile_input_archives(data: st.DataObject) -> None:
    pattern = data.draw(st.sampled_from(SEED_PATTERNS))
    seed = SEEDS[pattern]
    members = data.draw(_members(pattern))
    with sandbox() as box:
        graph = box / "in" / "graph.json"
        graph.write_text(json.dumps(seed))
        archive = box / "in" / "inputs.npz"
        with zipfile.ZipFile(archive, "w") as zipped:
            for name, body in members.items():
                zipped.writestr(name, body)
        tracemalloc.start()
        try:
            outcome = run_cli(box, ["run", graph, "--inputs", archive, "--json", "--max-memory",
                                    str(BUDGET_GB), "--out", box / "out" / "outputs.npz"])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    what = f"run {pattern} with archive members {sorted(members)}"
    assert_clean(outcome, what, json_out=True)
    assert peak <= PEAK_LIMIT, f"{what}: peak {peak / 2**20:.0f} MiB past the budget"
