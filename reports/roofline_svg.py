"""A roofline chart as inline SVG: achieved GFLOP/s against arithmetic intensity, log-log.

Each workload is a point at its intensity (FLOPs per byte its fused side moves) and the rate
its fused side achieved; its op-by-op side, which moves the intermediates too, is a hollow point
further left. The roofs are the device's measured ceilings where the document records them: the
copy bandwidth (GB/s, a diagonal: bandwidth × intensity) and the GEMM yardstick (GFLOP/s, a
horizontal line); the lower of the two is what the device can reach at an intensity.

Text inside (workload ids) comes from documents, so it is escaped; no ids are defined, so any
number of charts can share one page.

>>> svg = roofline_chart([RooflinePoint("w", 2.0, 5.0, "pays")], copy_gb_s=10.0,
...                      gemm_gflop_s=100.0, title="t")
>>> svg.startswith("<svg") and "copy 10 GB/s" in svg
True
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["RooflinePoint", "roofline_chart"]

_W, _H = 640, 380
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 150, 28, 46
_FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif"
#: Fill per point class (the verdict's CSS class, or ``opbyop`` for the op-by-op side).
_COLOURS = {"pays": "#2da44e", "nopay": "#cf222e", "notfused": "#9a6700", "opbyop": "#57606a"}
_LEGEND = (("pays", "fusion pays"), ("nopay", "fusion does not pay"),
           ("notfused", "not fused"), ("opbyop", "same ops, op by op"))


@dataclass(frozen=True)
class RooflinePoint:
    """One side of one workload: `intensity` in FLOP/byte, `gflop_s` achieved, `kind` the
    class that colours it."""

    label: str
    intensity: float
    gflop_s: float
    kind: str


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _n(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _decade(value: float) -> str:
    """A power of ten as a short label (0.01, 1, 1000, 1e+06)."""
    return f"{value:g}"


def _span(values: Sequence[float]) -> tuple[int, int]:
    """Whole decades covering `values` (at least one decade wide)."""
    lo = math.floor(math.log10(min(values)))
    hi = math.ceil(math.log10(max(values)))
    return lo, max(hi, lo + 1)


def roofline_chart(points: Sequence[RooflinePoint], *, copy_gb_s: float | None = None,
                   gemm_gflop_s: float | None = None, title: str = "roofline") -> str:
    """The chart (see the module docstring); without a point it says so."""
    shown = [p for p in points if p.intensity > 0 and p.gflop_s > 0
             and math.isfinite(p.intensity) and math.isfinite(p.gflop_s)]
    xs = [p.intensity for p in shown] or [0.1, 10.0]
    ys = [p.gflop_s for p in shown] or [0.1, 10.0]
    if gemm_gflop_s and gemm_gflop_s > 0:
        ys.append(gemm_gflop_s)
        if copy_gb_s and copy_gb_s > 0:
            xs.append(2 * gemm_gflop_s / copy_gb_s)  # the ridge, and room right of it
    x_lo, x_hi = _span(xs)
    y_lo, y_hi = _span(ys)
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def px(x: float) -> float:
        return _LEFT + (math.log10(x) - x_lo) / (x_hi - x_lo) * plot_w

    def py(y: float) -> float:
        return _TOP + plot_h - (math.log10(y) - y_lo) / (y_hi - y_lo) * plot_h

    parts = [f'<svg class="roofline" xmlns="http://www.w3.org/2000/svg" role="img" '
             f'width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" style="{_FONT};'
             f'font-size:11px"><title>{_e(title)}</title>',
             f'<rect x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}" fill="#fff" '
             'stroke="#d0d7de"/>']
    for k in range(x_lo, x_hi + 1):
        x = px(10.0 ** k)
        parts.append(f'<line x1="{_n(x)}" y1="{_TOP}" x2="{_n(x)}" y2="{_TOP + plot_h}" '
                     'stroke="#eaeef2"/>')
        parts.append(f'<text x="{_n(x)}" y="{_TOP + plot_h + 15}" text-anchor="middle">'
                     f'{_decade(10.0 ** k)}</text>')
    for k in range(y_lo, y_hi + 1):
        y = py(10.0 ** k)
        parts.append(f'<line x1="{_LEFT}" y1="{_n(y)}" x2="{_LEFT + plot_w}" y2="{_n(y)}" '
                     'stroke="#eaeef2"/>')
        parts.append(f'<text x="{_LEFT - 6}" y="{_n(y + 4)}" text-anchor="end">'
                     f'{_decade(10.0 ** k)}</text>')
    parts.append(f'<text x="{_n(_LEFT + plot_w / 2)}" y="{_H - 8}" text-anchor="middle">'
                 'arithmetic intensity (FLOP per byte moved)</text>')
    parts.append(f'<text transform="translate(14 {_n(_TOP + plot_h / 2)}) rotate(-90)" '
                 'text-anchor="middle">achieved GFLOP/s</text>')
    parts += _roofs(copy_gb_s, gemm_gflop_s, (10.0 ** x_lo, 10.0 ** x_hi),
                    (10.0 ** y_lo, 10.0 ** y_hi), px, py)
    for p in shown:
        colour = _COLOURS.get(p.kind, "#8c959f")
        fill = "#fff" if p.kind == "opbyop" else colour
        parts.append(f'<circle cx="{_n(px(p.intensity))}" cy="{_n(py(p.gflop_s))}" r="4.5" '
                     f'fill="{fill}" stroke="{colour}" stroke-width="1.5"><title>'
                     f'{_e(p.label)}: {p.gflop_s:.3g} GFLOP/s at {p.intensity:.3g} FLOP/byte'
                     '</title></circle>')
    if not shown:
        parts.append(f'<text x="{_n(_LEFT + plot_w / 2)}" y="{_n(_TOP + plot_h / 2)}" '
                     'text-anchor="middle">no measured workload</text>')
    for i, (kind, text) in enumerate(_LEGEND):
        y = _TOP + 10 + 18 * i
        colour = _COLOURS[kind]
        fill = "#fff" if kind == "opbyop" else colour
        parts.append(f'<circle cx="{_W - _RIGHT + 16}" cy="{y}" r="4.5" fill="{fill}" '
                     f'stroke="{colour}" stroke-width="1.5"/><text x="{_W - _RIGHT + 26}" '
                     f'y="{y + 4}">{text}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _roofs(copy_gb_s: float | None, gemm_gflop_s: float | None, x_range: tuple[float, float],
           y_range: tuple[float, float], px: Callable[[float], float],
           py: Callable[[float], float]) -> list[str]:
    """The roof lines, clipped to the plot, each with its label."""
    (x0, x1), (y0, y1) = x_range, y_range
    parts = []
    ceiling = gemm_gflop_s if gemm_gflop_s and gemm_gflop_s > 0 else math.inf
    if copy_gb_s and copy_gb_s > 0:
        # The diagonal y = bw * x, from where it enters the plot to the ridge (or the edge).
        a = max(x0, y0 / copy_gb_s)
        b = min(x1, min(ceiling, y1) / copy_gb_s)
        if a < b:
            parts.append(f'<line x1="{_n(px(a))}" y1="{_n(py(copy_gb_s * a))}" '
                         f'x2="{_n(px(b))}" y2="{_n(py(copy_gb_s * b))}" stroke="#0969da" '
                         'stroke-width="2"/>')
            parts.append(f'<text x="{_n(px(a) + 6)}" y="{_n(py(copy_gb_s * a) - 6)}" '
                         f'fill="#0969da">copy {copy_gb_s:.3g} GB/s</text>')
    if math.isfinite(ceiling) and y0 <= ceiling <= y1:
        start = max(x0, ceiling / copy_gb_s) if copy_gb_s and copy_gb_s > 0 else x0
        if start < x1:
            parts.append(f'<line x1="{_n(px(start))}" y1="{_n(py(ceiling))}" x2="{_n(px(x1))}" '
                         f'y2="{_n(py(ceiling))}" stroke="#8250df" stroke-width="2"/>')
            parts.append(f'<text x="{_n(px(x1) - 4)}" y="{_n(py(ceiling) - 6)}" '
                         f'text-anchor="end" fill="#8250df">GEMM {ceiling:.3g} GFLOP/s</text>')
    return parts
