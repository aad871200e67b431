"""How ``fusionspec conform`` shows a run going: a progress bar on a terminal, plain lines in a
log.

On a terminal (standard error), rich draws one bar for drawing the cases (per draw: pattern ×
kind × rule) and one for judging them, with the number of cases, the elapsed time, an estimate
of the time left and the counts by status so far. Elsewhere (CI logs, files), a plain line is
written when judging starts, then at most every `PLAIN_INTERVAL_S` seconds (or every
``FUSIONSPEC_PROGRESS_INTERVAL`` seconds: 0 writes a line for each case judged), and when it
ends. Nothing goes to standard output, which stays for the summary (or the JSON of ``--json``).
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from fusionspec.conformance.cases import FAILING
from fusionspec.conformance.grade.verdict import Verdict
from fusionspec.conformance.suite import PlannedCase

__all__ = ["RunProgress", "PLAIN_INTERVAL_S"]

#: Seconds between two plain progress lines.
PLAIN_INTERVAL_S = 10.0


def _interval() -> float:
    """``FUSIONSPEC_PROGRESS_INTERVAL`` when it is a number of seconds, else the default."""
    try:
        value = float(os.environ.get("FUSIONSPEC_PROGRESS_INTERVAL", PLAIN_INTERVAL_S))
    except ValueError:
        return PLAIN_INTERVAL_S
    return value if 0 <= value < float("inf") else PLAIN_INTERVAL_S

_STYLES = {"pass": "green", "extension": "cyan", "unsupported": "yellow",
           "expected": "magenta"}


class RunProgress:
    """The suite's `Progress` for the command line (see the module docstring). Use as a
    context manager: the bar is removed when the run ends, however it ends."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None,
                 interval_s: float | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.console = Console(file=self.stream)
        self.live = self.console.is_terminal if live is None else live
        self.interval_s = _interval() if interval_s is None else interval_s
        self.counts: Counter[str] = Counter()
        self.total = 0
        self.done = 0
        self._started = time.monotonic()
        self._last_line = 0.0
        self._bar: Progress | None = None
        self._draw_task: TaskID | None = None
        self._judge_task: TaskID | None = None

    def __enter__(self) -> RunProgress:
        if self.live:
            self._bar = Progress(
                TextColumn("{task.description:<8}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                TextColumn("{task.fields[counts]}"), console=self.console, transient=False)
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    # -- the suite's Progress ----------------------------------------------------------------

    def drawing(self, done: int, total: int) -> None:
        if self._bar is not None:
            if self._draw_task is None:
                self._draw_task = self._bar.add_task("drawing", total=total, counts="")
            self._bar.update(self._draw_task, completed=done)
        elif done == total or self._due():
            self._line(f"drawing cases: {done}/{total} draws")

    def judging(self, total: int) -> None:
        self.total = total
        self._started = time.monotonic()
        if self._bar is not None:
            self._judge_task = self._bar.add_task("judging", total=total, counts="")
        else:
            self._line(f"judging {total} case(s)")
            self._last_line = time.monotonic()

    def judged(self, planned: PlannedCase, verdict: Verdict, seconds: float) -> None:
        self.done += 1
        expected = planned.expectation is not None and verdict.status in FAILING
        self.counts["expected" if expected else verdict.status.value] += 1
        if self._bar is not None and self._judge_task is not None:
            self._bar.update(self._judge_task, completed=self.done, counts=self._counts(True))
        elif self.done == self.total or self._due():
            elapsed = time.monotonic() - self._started
            left = elapsed / self.done * (self.total - self.done) if self.done else 0.0
            share = 100 * self.done // max(self.total, 1)
            self._line(f"judged {self.done}/{self.total} ({share} %) in {elapsed:.0f} s, about "
                       f"{left:.0f} s left: {self._counts(False)}")

    # -- helpers -----------------------------------------------------------------------------

    def _due(self) -> bool:
        now = time.monotonic()
        if now - self._last_line >= self.interval_s:
            self._last_line = now
            return True
        return False

    def _counts(self, styled: bool) -> str:
        parts = []
        for status, count in sorted(self.counts.items(), key=lambda kv: -kv[1]):
            style = _STYLES.get(status, "bold red")
            parts.append(f"[{style}]{count} {status}[/]" if styled else f"{count} {status}")
        return ", ".join(parts)

    def _line(self, text: str) -> None:
        self.stream.write(f"fusionspec conform: {text}\n")
        self.stream.flush()
