"""``fusionspec bench --help`` speaks of timing workloads, not of grading conformance cases."""

from __future__ import annotations

import argparse

import pytest

from fusionspec.cli.bench import BENCH_HELP
from fusionspec.cli.main import build_parser, main


def _commands() -> dict[str, argparse.ArgumentParser]:
    found = next(a for a in build_parser()._actions
                 if isinstance(a, argparse._SubParsersAction))
    return dict(found.choices)


def _helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    return {a.dest: a.help or "" for a in parser._actions}


def test_bench_help_describes_bench(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["bench", "--help"])
    assert stopped.value.code == 0, "--help exits 0"
    text = capsys.readouterr().out
    for wanted in ("op by op", "perf.json", "fusionspec diff", "Exit codes", "unsupported"):
        assert wanted in text, f"bench's help mentions {wanted!r}: {text}"
    for conform_words in ("grade", "--replay", "drawn cases", "judge shard"):
        assert conform_words not in text, \
            f"bench's help has no words of conform's ({conform_words!r}): {text}"


def test_every_shared_option_has_help_of_its_own() -> None:
    commands = _commands()
    bench, conform = _helps(commands["bench"]), _helps(commands["conform"])
    assert set(BENCH_HELP) <= set(bench), f"bench takes every option it words: {sorted(bench)}"
    for dest in BENCH_HELP:
        assert bench[dest] != conform[dest], \
            f"--{dest}: bench's help is not conform's: {bench[dest]!r}"
    assert commands["bench"].description != commands["conform"].description, \
        "the two commands describe themselves differently"
