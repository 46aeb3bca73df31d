"""SimReport -> an SVG line plot (written by hand: no plotting dependency).

x: batch size (log2 axis when the sweep spans powers of two), y: mean distinct experts per layer
T; one line for the baseline and one per k0 for OEA.
"""

from __future__ import annotations

import math
from html import escape

from routescope.oea.report import SimReport

W, H = 640, 400
LEFT, RIGHT, TOP, BOTTOM = 60, 150, 40, 50
COLOURS = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def render(report: SimReport) -> str:
    """SimReport -> SVG text (T vs batch size, baseline and OEA per k0)."""
    batches = sorted({r.batch for r in report.rows})
    # k0 = k is the baseline itself (every token keeps its top-k): the dashed line already
    k0s = sorted({r.k0 for r in report.rows if r.k0 < report.top_k})
    series: list[tuple[str, str, list[tuple[int, float]]]] = []
    base = {r.batch: r.t_baseline_mean for r in report.rows}
    series.append((f"baseline top-{report.top_k}", "#333333", sorted(base.items())))
    for i, k0 in enumerate(k0s):
        pts = [
            (r.batch, r.t_oea_mean) for r in report.rows if r.k0 == k0 and r.t_oea_mean is not None
        ]
        if pts:
            series.append((f"OEA k0={k0}", COLOURS[i % len(COLOURS)], sorted(pts)))
    y_max = max([v for _, _, pts in series for _, v in pts] + [1.0])
    y_top = _nice_ceiling(y_max)
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

    def fy(v: float) -> float:
        return H - BOTTOM - v / y_top * (H - TOP - BOTTOM)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{LEFT}" y="22" font-size="14">{escape(_title(report))}</text>',
        f'<line x1="{LEFT}" y1="{H - BOTTOM}" x2="{W - RIGHT}" y2="{H - BOTTOM}" stroke="black"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{H - BOTTOM}" stroke="black"/>',
    ]
    for b in batches:
        x = fx(b)
        out.append(f'<text x="{x:.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">{b}</text>')
    for i in range(5):
        v = y_top * i / 4
        y = fy(v)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{v:g}</text>')
    out.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 12}" text-anchor="middle">'
               "batch size B</text>")  # fmt: skip
    out.append(f'<text transform="translate(16 {(TOP + H - BOTTOM) / 2}) rotate(-90)" '
               'text-anchor="middle">distinct experts per layer T (mean)</text>')  # fmt: skip
    for n, (label, colour, pts) in enumerate(series):
        path = " ".join(f"{fx(b):.1f},{fy(v):.1f}" for b, v in pts)
        dash = ' stroke-dasharray="6 3"' if n == 0 else ""
        out.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>'
        )
        for b, v in pts:
            out.append(f'<circle cx="{fx(b):.1f}" cy="{fy(v):.1f}" r="3" fill="{colour}"/>')
        ly = TOP + 10 + 18 * n
        out.append(f'<line x1="{W - RIGHT + 12}" y1="{ly}" x2="{W - RIGHT + 32}" y2="{ly}" '
                   f'stroke="{colour}" stroke-width="2"{dash}/>')  # fmt: skip
        out.append(f'<text x="{W - RIGHT + 38}" y="{ly + 4}">{escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _title(report: SimReport) -> str:
    return f"{report.model}: N={report.num_experts}, k={report.top_k}, source {report.source}"


def _nice_ceiling(v: float) -> float:
    step = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if m * step >= v:
            return float(m * step)
    return float(10 * step)
