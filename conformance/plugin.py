"""pytest plugin: run the conformance suite as pytest tests.

    pytest --pyargs fusionspec.conformance --backend reference
    pytest --pyargs fusionspec.conformance --backend accel --device pocl-cpu \\
        --patterns fp.conv_post_ops,softmax.post_ops --profile thorough

One test per catalog pattern and case kind (``test_conformance[fp.conv_post_ops-valid]``);
each draws that pattern's cases with hypothesis and fails listing its failing cases. The
results document and the failure folders go to ``--conformance-out`` (default
``results/conformance/<backend>-<device>``). Without ``--backend`` the conformance tests are
skipped, so installing fusionspec does not change other projects' test runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .cases import CaseKind
from .grade.results import ResultsCollector
from .runner import Runner
from .suite import PROFILES, Profile, run_pattern, select_patterns

_RESULTS = pytest.StashKey[ResultsCollector]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fusionspec", "fusionspec conformance suite")
    group.addoption("--backend", help="backend to grade (registered name or module:attr)")
    group.addoption("--device", help="device id of the backend (default: its first device)")
    group.addoption("--patterns", help="comma-separated catalog pattern ids (default: all)")
    group.addoption("--profile", choices=sorted(PROFILES), default="ci",
                    help="hypothesis profile: ci (derandomized, bounded) or thorough")
    group.addoption("--case-kinds", default="valid,near-miss,ill-formed",
                    help="comma-separated case kinds to run")
    group.addoption("--conformance-out", type=Path,
                    help="folder for results.json and failure folders")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "conformance_target" not in metafunc.fixturenames:
        return
    config = metafunc.config
    ids = config.getoption("--patterns")
    kinds = [CaseKind(k.strip()) for k in config.getoption("--case-kinds").split(",")
             if k.strip()]
    entries = select_patterns(ids.split(",") if ids else None)
    targets = [(e.id, k) for e in entries for k in kinds]
    metafunc.parametrize("conformance_target", targets,
                         ids=[f"{p}-{k.value}" for p, k in targets])


@pytest.fixture(scope="session")
def conformance_profile(pytestconfig: pytest.Config) -> Profile:
    return PROFILES[pytestconfig.getoption("--profile")]


@pytest.fixture(scope="session")
def conformance_runner(pytestconfig: pytest.Config,
                       conformance_profile: Profile) -> Iterator[Runner]:
    backend = pytestconfig.getoption("--backend")
    if not backend:
        pytest.skip("the conformance tests grade a backend: pass --backend NAME")
    with Runner(backend, pytestconfig.getoption("--device"),
                conformance_profile.timeout_s) as runner:
        out = pytestconfig.getoption("--conformance-out") or Path(
            "results", "conformance", f"{runner.backend_name}-{runner.device.id}")
        collector = ResultsCollector(runner.backend_name, runner.device, out_dir=out)
        pytestconfig.stash[_RESULTS] = collector
        yield runner
        collector.finish()
        path = collector.write(out / "results.json")
        pytestconfig.stash[_RESULTS] = collector
        print(f"\nfusionspec conformance results: {path}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    collector = terminalreporter.config.stash.get(_RESULTS, None)
    if collector is None:
        return
    totals = ", ".join(f"{n} {s}" for s, n in sorted(collector.totals.items()))
    terminalreporter.write_sep("=", "fusionspec conformance")
    terminalreporter.write_line(f"{collector.backend} on {collector.device.id}: {totals}")


def conformance_case_run(target: tuple[str, CaseKind], runner: Runner,
                         config: pytest.Config, profile: Profile) -> None:
    """The body of one conformance test: draw, judge and record; fail on failing cases."""
    pattern_id, kind = target
    collector = config.stash[_RESULTS]
    (entry,) = select_patterns([pattern_id])
    failing = run_pattern(entry, kind, runner, collector, profile)
    if failing:
        lines = [f"{len(failing)} failing {kind.value} case(s) of {pattern_id}:"]
        for case, verdict in failing[:10]:
            lines.append(f"  {verdict.status.value}: {case.description or case.id}: "
                         f"{verdict.reason}")
        pytest.fail("\n".join(lines), pytrace=False)
