"""Inline SVG for the report: a graph's chain diagram and a pattern's grammar-coverage chart.

Both return an SVG element as a string, ready to be placed in the HTML as it is. Every piece of
text inside (op kinds and names, tensor ids, feature values) comes from results files and graph
files, so all of it goes through `_e` (HTML escaping, quotes included); numbers are formatted
by this module. No ids are defined, so any number of drawings can share one page.

`chain_diagram` lays a graph out in topological layers, left to right, each op a box; layers
wrap onto a new row after `per_row` columns, which keeps a 30-op softmax chain readable. An
edge joins the producer of a tensor to each consumer; a graph output leaves its op as a short
arrow. A cycle (ill-formed graphs may have one) is drawn too: its ops are appended in file order
and marked.

>>> svg = chain_diagram([DiagramOp(0, "ReLU", outputs=(TensorRef("1", "f32", "2x3"),))])
>>> svg.startswith("<svg") and "ReLU" in svg
True
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["TensorRef", "DiagramOp", "chain_diagram", "CoverageCell", "CoverageRow",
           "coverage_chart", "MAX_DIAGRAM_OPS"]

#: Above this many ops a diagram is not drawn (the JSON is still shown).
MAX_DIAGRAM_OPS = 64

_BOX_W, _BOX_H, _BOX_H_NOTE = 136, 42, 56
_GAP_X, _GAP_Y, _ROW_GAP, _PAD = 52, 18, 40, 14
_FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif"
_MONO = "font-family:ui-monospace,'SFMono-Regular',Menlo,Consolas,'DejaVu Sans Mono',monospace"


def _e(text: object) -> str:
    """`text` escaped for SVG text content and attribute values."""
    return html.escape(str(text), quote=True)


def _n(value: float) -> str:
    """A coordinate, briefly."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class TensorRef:
    """A tensor as the diagram shows it: id, data type and shape, as text."""

    id: str
    dtype: str = ""
    shape: str = ""

    def describe(self) -> str:
        parts = [f"t{self.id}", self.dtype, f"[{self.shape}]" if self.shape else ""]
        return " ".join(p for p in parts if p)


@dataclass(frozen=True)
class DiagramOp:
    """One op box: `note` is a third line (e.g. partition membership); `flagged` draws the box
    highlighted (an op the backend partitioned differently than the spec requires)."""

    id: int
    kind: str
    name: str = ""
    inputs: tuple[TensorRef, ...] = ()
    outputs: tuple[TensorRef, ...] = ()
    note: str = ""
    flagged: bool = False


@dataclass
class _Placed:
    op: DiagramOp
    layer: int
    in_cycle: bool = False
    row: int = 0
    x: float = 0.0
    y: float = 0.0


def _layers(ops: Sequence[DiagramOp]) -> list[_Placed]:
    """Each op's layer: one more than its deepest producer's (Kahn's algorithm, file order
    among equals), an op without producers just before its first consumer; ops on a cycle
    follow the rest, one layer each."""
    producer: dict[str, int] = {}
    for index, op in enumerate(ops):
        for tensor in op.outputs:
            producer.setdefault(tensor.id, index)
    deps = [{producer[t.id] for t in op.inputs if t.id in producer} - {i}
            for i, op in enumerate(ops)]
    layer: dict[int, int] = {}
    pending = list(range(len(ops)))
    while pending:
        ready = [i for i in pending if deps[i] <= layer.keys()]
        if not ready:
            break
        for i in ready:
            layer[i] = 1 + max((layer[d] for d in deps[i]), default=-1)
        pending = [i for i in pending if i not in layer]
    # An op fed only from outside (a Dequantize of a binary's second operand) sits just before
    # its first consumer rather than at the far left, so its edge stays short.
    consumers: dict[int, list[int]] = {}
    for i, needed in enumerate(deps):
        for d in needed:
            consumers.setdefault(d, []).append(i)
    for i in sorted(layer, key=lambda k: -layer[k]):
        if not deps[i] and consumers.get(i) and all(c in layer for c in consumers[i]):
            layer[i] = min(layer[c] for c in consumers[i]) - 1
    placed = [_Placed(op, layer.get(i, 0)) for i, op in enumerate(ops)]
    next_layer = 1 + max(layer.values(), default=-1)
    for i in pending:
        placed[i].layer, placed[i].in_cycle = next_layer, True
        next_layer += 1
    return placed


def _box_height(ops: Sequence[DiagramOp]) -> int:
    return _BOX_H_NOTE if any(op.note for op in ops) else _BOX_H


def _arrow(x: float, y: float, direction: str) -> str:
    """A filled arrowhead with its tip at (x, y), pointing right or down."""
    if direction == "right":
        points = f"{_n(x)},{_n(y)} {_n(x - 7)},{_n(y - 4)} {_n(x - 7)},{_n(y + 4)}"
    else:
        points = f"{_n(x)},{_n(y)} {_n(x - 4)},{_n(y - 7)} {_n(x + 4)},{_n(y - 7)}"
    return f'<polygon class="dg-arrow" points="{points}"/>'


def _bezier_mid(p0: tuple[float, float], p1: tuple[float, float], p2: tuple[float, float],
                p3: tuple[float, float]) -> tuple[float, float]:
    return ((p0[0] + 3 * p1[0] + 3 * p2[0] + p3[0]) / 8,
            (p0[1] + 3 * p1[1] + 3 * p2[1] + p3[1]) / 8)


def _edge(src: _Placed, dst: _Placed, label: str, height: float) -> str:
    """A producer -> consumer edge: sideways within a row, downwards from row to row."""
    if src.row == dst.row and dst.x > src.x:
        p0 = (src.x + _BOX_W, src.y + height / 2)
        p3 = (dst.x - 1, dst.y + height / 2)
        bend = max(18.0, (p3[0] - p0[0]) / 2)
        p1, p2, head = (p0[0] + bend, p0[1]), (p3[0] - bend, p3[1]), "right"
    else:
        p0 = (src.x + _BOX_W / 2, src.y + height)
        p3 = (dst.x + _BOX_W / 2, dst.y - 1)
        bend = max(18.0, (p3[1] - p0[1]) / 2)
        p1, p2, head = (p0[0], p0[1] + bend), (p3[0], p3[1] - bend), "down"
    path = (f'<path class="dg-edge" d="M{_n(p0[0])},{_n(p0[1])} C{_n(p1[0])},{_n(p1[1])} '
            f'{_n(p2[0])},{_n(p2[1])} {_n(p3[0])},{_n(p3[1])}"/>')
    mx, my = _bezier_mid(p0, p1, p2, p3)
    text = (f'<text class="dg-edge-label" x="{_n(mx)}" y="{_n(my - 4)}" '
            f'text-anchor="middle">{_e(label)}</text>')
    return path + _arrow(p3[0], p3[1], head) + text


def _fit(text: str, limit: int, size: int) -> str:
    """Attributes that squeeze `text` into the box when it is longer than `limit` chars."""
    if len(text) <= limit:
        return ""
    return f' textLength="{_BOX_W - 12}" lengthAdjust="spacingAndGlyphs" font-size="{size - 1}"'


def _box(placed: _Placed, height: float) -> str:
    op = placed.op
    classes = "dg-op" + (" dg-flagged" if op.flagged else "") + \
        (" dg-cycle" if placed.in_cycle else "")
    tip = [f"op {op.id}: {op.kind}" + (f" ({op.name})" if op.name else "")]
    tip += [f"in  {t.describe()}" for t in op.inputs]
    tip += [f"out {t.describe()}" for t in op.outputs]
    if op.note:
        tip.append(op.note)
    if placed.in_cycle:
        tip.append("on a cycle of the graph: no topological position")
    out_dtype = op.outputs[0].dtype if op.outputs else ""
    second = f"#{op.id}" + (f" · {out_dtype}" if out_dtype else "")
    cx = placed.x + _BOX_W / 2
    parts = [f'<g class="{classes}"><title>{_e(chr(10).join(tip))}</title>',
             f'<rect x="{_n(placed.x)}" y="{_n(placed.y)}" width="{_BOX_W}" '
             f'height="{_n(height)}" rx="6"/>',
             f'<text class="dg-kind" x="{_n(cx)}" y="{_n(placed.y + 18)}" '
             f'text-anchor="middle"{_fit(op.kind, 16, 13)}>{_e(op.kind)}</text>',
             f'<text class="dg-sub" x="{_n(cx)}" y="{_n(placed.y + 33)}" '
             f'text-anchor="middle"{_fit(second, 20, 11)}>{_e(second)}</text>']
    if op.note:
        parts.append(f'<text class="dg-note" x="{_n(cx)}" y="{_n(placed.y + 48)}" '
                     f'text-anchor="middle"{_fit(op.note, 22, 11)}>{_e(op.note)}</text>')
    parts.append("</g>")
    return "".join(parts)


def chain_diagram(ops: Sequence[DiagramOp], *, per_row: int = 6, title: str = "") -> str:
    """The graph of `ops` as an SVG chain diagram (see the module docstring)."""
    placed = _layers(ops)
    height = _box_height(ops)
    columns: dict[int, list[_Placed]] = {}
    for item in placed:
        columns.setdefault(item.layer, []).append(item)
    layer_ids = sorted(columns)
    rows = [layer_ids[i:i + per_row] for i in range(0, len(layer_ids), per_row)]
    y = float(_PAD)
    width = _PAD * 2 + _BOX_W
    for row_index, row in enumerate(rows):
        tallest = max(len(columns[layer]) for layer in row)
        for col, layer in enumerate(row):
            for stack, item in enumerate(columns[layer]):
                item.row = row_index
                item.x = _PAD + col * (_BOX_W + _GAP_X)
                item.y = y + stack * (height + _GAP_Y)
        width = max(width, _PAD * 2 + len(row) * (_BOX_W + _GAP_X))
        y += tallest * (height + _GAP_Y) - _GAP_Y + _ROW_GAP
    total_h = y - _ROW_GAP + _PAD + 4
    by_tensor: dict[str, _Placed] = {}
    for item in placed:
        for tensor in item.op.outputs:
            by_tensor.setdefault(tensor.id, item)
    consumed = {t.id for item in placed for t in item.op.inputs}
    edges: list[str] = []
    for item in placed:
        for tensor in item.op.inputs:
            src = by_tensor.get(tensor.id)
            if src is not None and src is not item:
                edges.append(_edge(src, item, f"t{tensor.id}", height))
        for tensor in item.op.outputs:
            if tensor.id not in consumed:
                x0, yy = item.x + _BOX_W, item.y + height / 2
                edges.append(f'<line class="dg-edge dg-out" x1="{_n(x0)}" y1="{_n(yy)}" '
                             f'x2="{_n(x0 + _GAP_X - 16)}" y2="{_n(yy)}"/>'
                             + _arrow(x0 + _GAP_X - 14, yy, "right")
                             + f'<text class="dg-edge-label" x="{_n(x0 + 4)}" '
                               f'y="{_n(yy - 5)}">{_e("t" + tensor.id)}</text>')
    label = title or f"graph of {len(ops)} op(s)"
    return (f'<svg class="diagram" role="img" aria-label="{_e(label)}" '
            f'viewBox="0 0 {_n(width)} {_n(total_h)}" width="{_n(width)}" '
            f'height="{_n(total_h)}" style="{_FONT}">'
            f'<title>{_e(label)}</title>' + "".join(edges)
            + "".join(_box(item, height) for item in placed) + "</svg>")


# -- grammar coverage -------------------------------------------------------------------------

@dataclass(frozen=True)
class CoverageCell:
    """One value of a feature: how many cases exercised it, and whether the grammar requires
    it (a required value no case reached is drawn as a gap)."""

    value: str
    count: int
    required: bool = True


@dataclass(frozen=True)
class CoverageRow:
    """One feature of a pattern (a repetition, an alternation, a category, the dtype row, an
    attribute variant) and its values."""

    key: str
    cells: tuple[CoverageCell, ...] = field(default_factory=tuple)


_CELL_W, _CELL_H, _CELL_GAP, _LABEL_W, _PER_LINE = 66, 28, 3, 196, 14


def _shade(count: int, most: int) -> tuple[str, str]:
    """Fill and text colour for a cell: deeper blue for more cases (log scale)."""
    if count <= 0:
        return "#ffffff", "#b3261e"
    share = math.log1p(count) / math.log1p(max(most, 1))
    light, deep = (232, 240, 254), (26, 84, 168)
    rgb = tuple(round(a + (b - a) * (0.15 + 0.85 * share)) for a, b in zip(light, deep))
    fill = "#{:02x}{:02x}{:02x}".format(*rgb)
    return fill, "#ffffff" if share > 0.55 else "#0b2a55"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def coverage_chart(rows: Sequence[CoverageRow], *, title: str = "grammar coverage") -> str:
    """Features as rows of cells, each cell a value with its case count (see `CoverageRow`)."""
    parts: list[str] = []
    y = float(_PAD)
    for row in rows:
        most = max((c.count for c in row.cells), default=0)
        lines = max(1, math.ceil(len(row.cells) / _PER_LINE))
        parts.append(f'<g class="cv-row"><title>{_e(row.key)}</title>'
                     f'<text class="cv-key m" x="{_PAD}" y="{_n(y + 18)}">'
                     f'{_e(_short(row.key, 28))}</text></g>')
        for index, cell in enumerate(row.cells):
            line, col = divmod(index, _PER_LINE)
            x = _PAD + _LABEL_W + col * (_CELL_W + _CELL_GAP)
            cy = y + line * (_CELL_H + _CELL_GAP)
            fill, ink = _shade(cell.count, most)
            missing = cell.required and cell.count == 0
            cls = "cv-cell cv-missing" if missing else (
                "cv-cell" if cell.required else "cv-cell cv-extra")
            state = "required, not exercised" if missing else (
                "required" if cell.required else "not in the required set")
            tip = f"{row.key} = {cell.value}: {cell.count} case(s) ({state})"
            parts.append(
                f'<g class="{cls}"><title>{_e(tip)}</title>'
                f'<rect x="{_n(x)}" y="{_n(cy)}" width="{_CELL_W}" height="{_CELL_H}" rx="4" '
                f'fill="{fill}"/>'
                f'<text class="m" x="{_n(x + _CELL_W / 2)}" y="{_n(cy + 11)}" '
                f'text-anchor="middle" fill="{ink}" font-size="9">{_e(_short(cell.value, 11))}'
                f'</text>'
                f'<text x="{_n(x + _CELL_W / 2)}" y="{_n(cy + 23)}" text-anchor="middle" '
                f'fill="{ink}" font-size="11" font-weight="600">{cell.count}</text></g>')
        y += lines * (_CELL_H + _CELL_GAP) + 5
    width = _PAD * 2 + _LABEL_W + _PER_LINE * (_CELL_W + _CELL_GAP)
    height = y + _PAD - 5
    return (f'<svg class="coverage" role="img" aria-label="{_e(title)}" '
            f'viewBox="0 0 {width} {_n(height)}" width="{width}" height="{_n(height)}" '
            f'style="{_FONT}"><title>{_e(title)}</title>'
            # The monospace font once per drawing, not once per label (the drawing holds
            # hundreds): a class its own style sheet defines, inline or standalone.
            f'<style>.m{{{_MONO}}}</style>' + "".join(parts) + "</svg>")
