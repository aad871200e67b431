"""Performance findings: the fusions that do not pay and the fusions a backend does not form.

`perf_findings(section)` reads the performance section of the report
(`fusionspec.reports.perf.perf_section`, one run per performance document) and returns, per run,
the workloads whose verdict is ``fusion does not pay`` or ``not fused``; `perf_findings_markdown`
writes them as Markdown, each with the figures and the command that reproduces them, and counts
the workloads that were not measured and those the backend declared unsupported.

For a fusion the backend does not form, what forming it would buy is given where it can be
measured: where another run of the same document set (another version of the backend, another
device) forms that workload's partition and it pays, its measured ratio; and, where the run
recorded the device's copy bandwidth, the time the intermediates' round trip through memory
takes at that bandwidth, against the op-by-op time (an estimate of what fusing saves in traffic,
not a measurement).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .markdown import code, text
from .perf import PerfRow, PerfRunView, PerfSection

__all__ = ["PerfFinding", "perf_findings", "perf_findings_markdown"]

DOES_NOT_PAY = "fusion does not pay"
NOT_FUSED = "not fused"
#: The report's word for a workload a declared limitation kept from being measured.
UNSUPPORTED = "unsupported"


@dataclass(frozen=True)
class PerfFinding:
    run: str
    row: PerfRow
    #: What forming the fusion would buy (``not fused`` only), one sentence per measure.
    gains: tuple[str, ...] = ()


def _gains(row: PerfRow, run: PerfRunView, runs: Sequence[PerfRunView]) -> tuple[str, ...]:
    found = []
    for other in runs:
        if other is run:
            continue
        for o in other.rows:
            if o.id == row.id and o.verdict == "fusion pays" and o.ratio:
                found.append(f"{other.label} forms it, and there fusing makes it "
                             f"{o.ratio:.2f}x faster than op by op ({o.ratio_text})")
    if run.copy_gb_s and row.bytes_saved and row.opbyop is not None and row.opbyop.median:
        traffic_ms = row.bytes_saved / (run.copy_gb_s * 1e9) * 1e3
        found.append(f"op by op writes and reads back {row.bytes_saved / 1e6:.3g} MB of "
                     f"intermediates: {traffic_ms:.3g} ms at the measured copy bandwidth "
                     f"({run.copy_gb_s:.3g} GB/s), {traffic_ms / row.opbyop.median:.0%} of the "
                     f"op-by-op time (an estimate of the traffic fusing saves)")
    return tuple(found)


def perf_findings(section: PerfSection) -> dict[str, list[PerfFinding]]:
    """Per run label, its findings: fusions that do not pay, then fusions not formed."""
    found: dict[str, list[PerfFinding]] = {}
    for run in section.runs:
        items = [PerfFinding(run.label, r) for r in run.rows if r.verdict == DOES_NOT_PAY]
        items += [PerfFinding(run.label, r, _gains(r, run, section.runs))
                  for r in run.rows if r.verdict == NOT_FUSED]
        found[run.label] = items
    return found


def _entry(f: PerfFinding) -> list[str]:
    r = f.row
    sides = (f"fused {r.fused.describe() if r.fused else '—'}, op by op "
             f"{r.opbyop.describe() if r.opbyop else '—'}, ratio {r.ratio_text}")
    lines = [f"- **{text(r.id)}** ({text(r.pattern)}; {text(r.source)}): {text(r.verdict)}.",
             f"  Partitions formed: {code(r.partitions or '?')}; {text(sides)}."]
    lines += [f"  What fusing would buy: {text(g)}." for g in f.gains]
    if r.verdict == NOT_FUSED and not f.gains:
        lines.append("  What fusing would buy is not measurable from these documents (no run "
                     "forms this partition, and no copy bandwidth was recorded).")
    if r.rerun:
        lines.append(f"  Reproduce: {code(r.rerun)}")
    return lines


def perf_findings_markdown(section: PerfSection, *, heading: str = "##") -> str:
    """The findings of `section` as Markdown, one section per run (`heading` its level)."""
    lines: list[str] = []
    for run in section.runs:
        items = perf_findings(section)[run.label]
        pays = sum(1 for r in run.rows if r.verdict == "fusion pays")
        failed = [r for r in run.rows if r.error]
        unsupported = sum(1 for r in run.rows if r.verdict == UNSUPPORTED)
        lines += [f"{heading} Performance: {text(run.label)}", "",
                  f"{len(run.rows)} workload(s) at size {text(run.size)} from "
                  f"{code(run.source)}: {pays} where fusion pays, "
                  f"{sum(1 for f in items if f.row.verdict == DOES_NOT_PAY)} where it does not, "
                  f"{sum(1 for f in items if f.row.verdict == NOT_FUSED)} not fused, "
                  f"{len(failed)} not measured"
                  + (f", {unsupported} declared unsupported by the backend." if unsupported
                     else "."), ""]
        if run.command:
            lines += [f"The run: {code(run.command)}", ""]
        for title, verdict in (("Fusions that do not pay", DOES_NOT_PAY),
                               ("Fusions the backend does not form", NOT_FUSED)):
            chosen = [f for f in items if f.row.verdict == verdict]
            lines += [f"{heading}# {title}", ""]
            for f in chosen:
                lines += _entry(f)
            lines += ["", ] if chosen else ["None.", ""]
        if failed:
            lines += [f"{heading}# Not measured", ""]
            lines += [f"- **{text(r.id)}**: {text(r.error)}" +
                      (f" Reproduce: {code(r.rerun)}" if r.rerun else "") for r in failed]
            lines.append("")
    return "\n".join(lines)
