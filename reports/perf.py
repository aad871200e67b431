"""The report's performance section: what ``fusionspec bench`` measured, per backend and device.

`perf_section(documents, sources)` turns performance documents (``format`` ``fusionspec-perf``;
the command line checks their schema before handing them over) into a `PerfSection`: one
`PerfRunView` per document, with a row per workload (pattern, the partitions the backend formed,
the fused and op-by-op medians with their intervals, the op-by-op over fused ratio with the
interval the two sides' intervals give it, the verdict) and a roofline chart
(`fusionspec.reports.roofline_svg`).

A performance document is untrusted input: the command line reads it to records
(`fusionspec.conformance.perf.records`), which refuse a member of the wrong type with an error
naming the file and the member; the section reads their attributes. Every text is cleaned of
control and bidirectional characters and clipped (`fusionspec.spec.text.clean_text`), and the
commands a document carries (the run's ``command``, each workload's ``rerun``) are shown only
when they have the shape ``fusionspec bench`` writes, re-quoted
(`fusionspec.reports.perf_replay`). The report never imports the bench's running code; it reads
the documents only.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fusionspec.conformance.perf.records import PerfDocument, SideTiming, WorkloadRecord
from fusionspec.spec.text import clean_text

from .document import ReportError
from .labels import run_names
from .perf_replay import rebuilt_bench
from .roofline_svg import RooflinePoint, roofline_chart

__all__ = ["PerfRow", "PerfRunView", "PerfSection", "perf_section", "side_figure", "number",
           "text", "ratio_interval", "VERDICT_CLASSES", "TEXT_LIMIT"]

#: The verdicts a bench gives, in the order the report counts them, with their CSS class.
VERDICT_CLASSES = {"fusion pays": "pays", "fusion does not pay": "nopay",
                   "not fused": "notfused"}


#: The longest text the section keeps from a document (characters; ids, names, errors).
TEXT_LIMIT = 2000


def text(value: str | None) -> str:
    """A document's string ("" when absent), cleaned and clipped."""
    return clean_text(value or "", TEXT_LIMIT)


def number(value: float | None) -> float | None:
    """A document's figure as a float (None when absent)."""
    return None if value is None else float(value)


@dataclass(frozen=True)
class SideFigure:
    """One side's timing in milliseconds: median and its confidence interval."""

    median: float
    low: float
    high: float
    method: str
    repeats: int

    def describe(self) -> str:
        return f"{self.median:.3g} ms [{self.low:.3g}, {self.high:.3g}]"


def side_figure(timings: Mapping[str, SideTiming] | None, side: str) -> SideFigure | None:
    """The figure of `side` (``fused``, ``opbyop``, ``reference``) or None when not timed."""
    t = None if timings is None else timings.get(side)
    if t is None:
        return None
    return SideFigure(float(t.median), float(t.ci_low), float(t.ci_high), text(t.method),
                      int(t.repeats))


def ratio_interval(fused: SideFigure, opbyop: SideFigure) -> tuple[float, float]:
    """The op-by-op over fused ratio's range that both sides' intervals allow."""
    low = opbyop.low / fused.high if fused.high > 0 else 0.0
    high = opbyop.high / fused.low if fused.low > 0 else math.inf
    return low, high


@dataclass(frozen=True)
class PerfRow:
    """One workload of one run, as the table shows it."""

    id: str
    pattern: str
    name: str
    source: str
    partitions: str
    fused: SideFigure | None
    opbyop: SideFigure | None
    reference: SideFigure | None
    ratio: float | None
    ratio_low: float | None
    ratio_high: float | None
    verdict: str
    verdict_class: str
    gflop_s: float | None
    gb_s: float | None
    intensity: float | None
    #: Bytes op by op moves beyond the fused side: the intermediates written and read back.
    bytes_saved: float | None
    error: str
    rerun: str

    @property
    def ratio_text(self) -> str:
        if self.ratio is None or self.ratio_low is None or self.ratio_high is None:
            return "—"
        high = "∞" if math.isinf(self.ratio_high) else f"{self.ratio_high:.2f}"
        return f"{self.ratio:.2f}× [{self.ratio_low:.2f}, {high}]"


@dataclass(frozen=True)
class PerfRunView:
    """One performance document: its header, rows and roofline chart."""

    key: str
    label: str
    backend: str
    device_id: str
    device_name: str
    driver: str
    size: str
    source: str
    command: str
    copy_gb_s: float | None
    gemm_gflop_s: float | None
    rows: tuple[PerfRow, ...]
    counts: tuple[tuple[str, str, int], ...]
    chart: str

    @property
    def failed(self) -> int:
        return sum(1 for r in self.rows if r.error)


@dataclass(frozen=True)
class PerfSection:
    runs: tuple[PerfRunView, ...]


def _partitions(record: WorkloadRecord) -> str:
    if record.partitions is None:
        return ""
    return clean_text(" | ".join("+".join(p) for p in record.partitions), TEXT_LIMIT)


def _row(record: WorkloadRecord) -> PerfRow:
    timings = record.timings
    fused, opbyop = side_figure(timings, "fused"), side_figure(timings, "opbyop")
    low = high = None
    if fused is not None and opbyop is not None:
        low, high = ratio_interval(fused, opbyop)
    roof = record.roofline
    flops, moved = number(record.flops), number(record.bytes_fused)
    opbyop_moved = number(record.bytes_opbyop)
    verdict = record.verdict or ""
    error = text(record.error)
    return PerfRow(
        id=text(record.id), pattern=text(record.pattern), name=text(record.name),
        source=text(record.source), partitions=_partitions(record), fused=fused,
        opbyop=opbyop, reference=side_figure(timings, "reference"),
        ratio=number(record.ratio), ratio_low=low, ratio_high=high,
        verdict=verdict or ("not measured" if error else
                            "unsupported" if text(record.unsupported) else ""),
        verdict_class=VERDICT_CLASSES.get(verdict, "error"),
        gflop_s=number(roof.gflop_s) if roof is not None else None,
        gb_s=number(roof.gb_s) if roof is not None else None,
        intensity=flops / moved if flops is not None and moved else None,
        bytes_saved=opbyop_moved - moved if opbyop_moved is not None and moved is not None
        else None,
        error=error, rerun=rebuilt_bench(record.rerun or ""))


def _points(rows: Sequence[PerfRow], records: Sequence[WorkloadRecord]
            ) -> list[RooflinePoint]:
    """The fused side of every measured workload, and its op-by-op side where both have a
    positive intensity (op by op moves the intermediates too, so it sits further left)."""
    points = []
    for row, record in zip(rows, records):
        if row.error or row.fused is None or row.gflop_s is None or not row.intensity:
            continue
        points.append(RooflinePoint(row.id, row.intensity, row.gflop_s, row.verdict_class))
        flops, moved = number(record.flops), number(record.bytes_opbyop)
        if row.opbyop is not None and flops and moved and row.opbyop.median > 0:
            points.append(RooflinePoint(row.id + " (op by op)", flops / moved,
                                        flops / (row.opbyop.median * 1e-3) / 1e9, "opbyop"))
    return points


def _labels(docs: Sequence[PerfDocument]) -> list[str]:
    """Each document's run name (`fusionspec.reports.labels.run_names`)."""
    return run_names([(text(d.backend), text(d.device.id)) for d in docs],
                     [text(d.device.driver) for d in docs])


def perf_section(documents: Sequence[PerfDocument], sources: Sequence[str]) -> PerfSection:
    """The performance section of `documents` (see the module docstring)."""
    if len(documents) != len(sources):
        raise ReportError("one source name per performance document")
    runs = []
    for index, (doc, source, label) in enumerate(zip(documents, sources, _labels(documents))):
        rows = tuple(_row(r) for r in doc.workloads)
        device, yard = doc.device, doc.yardsticks
        copy_bw = number(yard.copy_gb_s) if yard is not None else None
        gemm = number(yard.gemm_gflop_s) if yard is not None else None
        counted = Counter(r.verdict for r in rows)
        counts = tuple((v, c, counted[v]) for v, c in VERDICT_CLASSES.items() if counted[v])
        if counted["not measured"]:
            counts += (("not measured", "error", counted["not measured"]),)
        runs.append(PerfRunView(
            key=f"perf-{index + 1}", label=label, backend=text(doc.backend),
            device_id=text(device.id), device_name=text(device.name),
            driver=text(device.driver), size=text(doc.size),
            source=clean_text(source, TEXT_LIMIT),
            command=rebuilt_bench(doc.command or ""), copy_gb_s=copy_bw, gemm_gflop_s=gemm,
            rows=rows,
            counts=counts,
            chart=roofline_chart(_points(rows, doc.workloads), copy_gb_s=copy_bw,
                                 gemm_gflop_s=gemm, title=f"roofline of {label}")))
    return PerfSection(tuple(runs))
