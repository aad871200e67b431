"""The progress display of ``fusionspec conform``: a rich bar on a terminal, plain lines
elsewhere, each with the number of cases and the counts by status."""

from __future__ import annotations

import io

from testkit import toy_backends as toy

from fusionspec.cli.progress import RunProgress
from fusionspec.conformance.cases import Status
from fusionspec.conformance.grade.verdict import Verdict
from fusionspec.conformance.suite import PlannedCase

CASE = toy.valid_case("fp.matmul_post_ops", 1)


def _verdict(status: Status) -> Verdict:
    return Verdict(CASE.id, CASE.pattern, CASE.kind, status)


def _feed(progress: RunProgress) -> None:
    progress.drawing(3, 3)
    progress.judging(3)
    for index, status in enumerate((Status.passed, Status.passed, Status.numeric_mismatch)):
        progress.judged(PlannedCase(CASE, index), _verdict(status), 0.01)


def test_plain_lines_say_how_far_and_what_came_out() -> None:
    stream = io.StringIO()
    with RunProgress(stream, live=False, interval_s=3600) as progress:
        _feed(progress)
    lines = stream.getvalue().splitlines()
    assert lines[0].endswith("drawing cases: 3/3 draws"), lines
    assert lines[1].endswith("judging 3 case(s)"), lines
    assert "judged 3/3 (100 %)" in lines[-1] and "2 pass, 1 numeric-mismatch" in lines[-1], \
        f"the last line has the total and the counts: {lines}"
    assert len(lines) == 3, f"no line between the interval's ticks but the last: {lines}"


def test_the_live_bar_shows_the_total_and_the_counts() -> None:
    stream = io.StringIO()
    with RunProgress(stream, live=True) as progress:
        _feed(progress)
    shown = stream.getvalue()
    assert "judging" in shown and "3/3" in shown, f"the bar shows cases done of all: {shown}"
    assert "numeric-mismatch" in shown and "2 pass" in shown, f"counts by status: {shown}"
