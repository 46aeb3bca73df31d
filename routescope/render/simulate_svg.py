"""SimReport -> an SVG plot in two panels (written by hand: no plotting dependency).

x: batch size (log2 axis when the sweep spans powers of two), shared by both panels.
Top: mean distinct experts per layer T, one line for the baseline and one per k0 for OEA; the
axis stops at N (T can never pass it). Bottom: what OEA costs, the share of the tokens' own
top-k weight mass each k0 keeps (topk_mass_kept), with the quality target as a dashed line.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from html import escape

from routescope.oea.report import SimReport

W = 640
LEFT, RIGHT, TOP = 60, 150, 40
PANEL_T = (TOP, 330)  # y range of the T panel (top, bottom)
PANEL_Q = (380, 540)  # y range of the quality panel
H = 590
COLOURS = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
Series = list[tuple[str, str, list[tuple[int, float]]]]


def render(report: SimReport) -> str:
    """SimReport -> SVG text (T and top-k mass kept vs batch size, baseline and OEA per k0)."""
    batches = sorted({r.batch for r in report.rows})
    # k0 = k is the baseline itself (every token keeps its top-k): the dashed line already
    k0s = sorted({r.k0 for r in report.rows if r.k0 < report.top_k})
    colour = {k0: COLOURS[i % len(COLOURS)] for i, k0 in enumerate(k0s)}
    base = {r.batch: r.t_baseline_mean for r in report.rows}
    t_series: Series = [(f"baseline top-{report.top_k}", "#333333", sorted(base.items()))]
    q_series: Series = []
    for k0 in k0s:
        rows = [r for r in report.rows if r.k0 == k0]
        pts = sorted((r.batch, r.t_oea_mean) for r in rows if r.t_oea_mean is not None)
        if pts:
            t_series.append((f"OEA k0={k0}", colour[k0], pts))
        kept = sorted((r.batch, 100 * r.topk_mass_kept) for r in rows
                      if r.topk_mass_kept is not None)  # fmt: skip
        if kept:
            q_series.append((f"k0={k0}", colour[k0], kept))
    log_x = batches[0] >= 1 and len(batches) > 1 and batches[-1] / batches[0] >= 8

    def fx(b: int) -> float:
        lo, hi = batches[0], batches[-1]
        if hi == lo:
            return LEFT + (W - LEFT - RIGHT) / 2
        t = (
            (math.log2(b) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
            if log_x
            else ((b - lo) / (hi - lo))
        )
        return LEFT + t * (W - LEFT - RIGHT)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{LEFT}" y="22" font-size="14">{escape(_title(report))}</text>',
    ]
    t_max = max([v for _, _, pts in t_series for _, v in pts] + [1.0])
    t_top = min(_nice_ceiling(t_max), float(report.num_experts))  # T <= N: never past it
    out += _panel(PANEL_T, (0.0, t_top), t_series, fx, "experts per layer T (mean)",
                  dashed_first=True)  # fmt: skip
    if t_top == report.num_experts:
        out.append(f'<text x="{LEFT + 4}" y="{PANEL_T[0] - 4}" fill="#666">'
                   f"N = {report.num_experts}: every expert</text>")  # fmt: skip
    target = 100 * report.quality_target
    if q_series:
        q_min = min([v for _, _, pts in q_series for _, v in pts] + [target])
        q_lo = max(0.0, 100 - 20 * math.ceil((101 - q_min) / 20))  # even ticks: 60, 70, ...
        out += _panel(PANEL_Q, (q_lo, 100.0), q_series, fx, "top-k mass kept (%)")
        y = _fy(PANEL_Q, (q_lo, 100.0), target)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" '
                   'stroke="#333" stroke-dasharray="4 3"/>')  # fmt: skip
        ly = PANEL_Q[0] + 10 + 18 * len(q_series)  # its legend entry, below the k0s'
        out.append(f'<line x1="{W - RIGHT + 12}" y1="{ly}" x2="{W - RIGHT + 32}" y2="{ly}" '
                   'stroke="#333" stroke-dasharray="4 3"/>')  # fmt: skip
        out.append(f'<text x="{W - RIGHT + 38}" y="{ly + 4}">target {target:g}%</text>')
    else:
        out.append(f'<text x="{LEFT}" y="{PANEL_Q[0] + 20}">no top-k mass kept in this '
                   "report (an older schema): quality not shown</text>")  # fmt: skip
    for b in batches:
        out.append(f'<text x="{fx(b):.1f}" y="{PANEL_Q[1] + 16}" text-anchor="middle">{b}</text>')
    out.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 12}" text-anchor="middle">'
               "batch size B</text>")  # fmt: skip
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _fy(panel: tuple[int, int], span: tuple[float, float], v: float) -> float:
    top, bottom = panel
    lo, hi = span
    return bottom - (v - lo) / (hi - lo) * (bottom - top)


def _panel(
    panel: tuple[int, int],
    span: tuple[float, float],
    series: Series,
    fx: Callable[[int], float],
    label: str,
    dashed_first: bool = False,
) -> list[str]:
    """Axes, four grid lines with their values, one polyline and legend entry per series."""
    top, bottom = panel
    out = [
        f'<line x1="{LEFT}" y1="{bottom}" x2="{W - RIGHT}" y2="{bottom}" stroke="black"/>',
        f'<line x1="{LEFT}" y1="{top}" x2="{LEFT}" y2="{bottom}" stroke="black"/>',
        f'<text transform="translate(16 {(top + bottom) / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(label)}</text>',
    ]
    lo, hi = span
    for i in range(5):
        v = lo + (hi - lo) * i / 4
        y = _fy(panel, span, v)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{v:g}</text>')
    for n, (name, colour, pts) in enumerate(series):
        path = " ".join(f"{fx(b):.1f},{_fy(panel, span, v):.1f}" for b, v in pts)
        dash = ' stroke-dasharray="6 3"' if dashed_first and n == 0 else ""
        out.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>'
        )
        for b, v in pts:
            out.append(f'<circle cx="{fx(b):.1f}" cy="{_fy(panel, span, v):.1f}" r="3" '
                       f'fill="{colour}"/>')  # fmt: skip
        ly = top + 10 + 18 * n
        out.append(f'<line x1="{W - RIGHT + 12}" y1="{ly}" x2="{W - RIGHT + 32}" y2="{ly}" '
                   f'stroke="{colour}" stroke-width="2"{dash}/>')  # fmt: skip
        out.append(f'<text x="{W - RIGHT + 38}" y="{ly + 4}">{escape(name)}</text>')
    return out


def _title(report: SimReport) -> str:
    return f"{report.model}: N={report.num_experts}, k={report.top_k}, source {report.source}"


def _nice_ceiling(v: float) -> float:
    step = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if m * step >= v:
            return float(m * step)
    return float(10 * step)
