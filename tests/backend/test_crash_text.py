"""A backend's worker that died is reported in one wording by the conformance runner and the
bench alike, with the signal that ended it."""

from __future__ import annotations

import signal

from fusionspec.backend.processes import crash_text


def test_a_crash_names_the_exit_code_and_the_signal() -> None:
    said = crash_text(-int(signal.SIGSEGV), "while measuring this workload")
    assert said == "the backend's process crashed (exit code -11, signal SIGSEGV) while " \
                   "measuring this workload", f"code, signal and what it was doing: {said}"
    assert crash_text(3) == "the backend's process crashed (exit code 3)", \
        "without `during`, nothing follows the exit code"


def test_the_runner_and_the_bench_share_it() -> None:
    from pathlib import Path

    import fusionspec.conformance.perf.workers as bench_workers
    import fusionspec.conformance.workers.runner as runner

    for module in (runner, bench_workers):
        text = Path(module.__file__ or "").read_text(encoding="utf-8")
        assert "crash_text(" in text and "crashed (" not in text.replace(
            "the backend's process crashed (exit code N)", ""), \
            f"{module.__name__} words a crash through crash_text only"
