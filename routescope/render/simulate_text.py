"""SimReport -> a rich table for the terminal (colour rules from render.style)."""

from __future__ import annotations

from rich.table import Table

from routescope.oea.report import SimReport


def _num(v: float | None, fmt: str = "{:.1f}") -> str:
    return "-" if v is None else fmt.format(v)


# (header, the row's cell, priority): columns with the highest numbers leave first when the
# terminal is too narrow; a number is never cut
def _columns(report: SimReport) -> list[tuple[str, list[str], int]]:
    rows = report.rows
    cols = [
        ("B", [str(r.batch) for r in rows], 0),
        ("k0", [str(r.k0) for r in rows], 0),
        ("T base", [_num(r.t_baseline_mean) for r in rows], 0),
        ("T base p95", [_num(r.t_baseline_p95) for r in rows], 3),
        ("T OEA", [_num(r.t_oea_mean) for r in rows], 0),
        ("T OEA p95", [_num(r.t_oea_p95) for r in rows], 3),
        ("T cut", [_num(r.t_reduction, "{:.0%}") for r in rows], 0),
        ("top-k kept", [_num(r.topk_mass_kept, "{:.3f}") for r in rows], 0),
        ("mass used", [_num(r.weight_mass_kept, "{:.3f}") for r in rows], 2),
        ("experts/tok", [_num(r.experts_per_token, "{:.2f}") for r in rows], 2),
        ("µs base", [_num(r.time_baseline_us) for r in rows], 1),
        ("µs OEA", [_num(r.time_oea_us) for r in rows], 1),
    ]
    return cols


def _fits(cols: list[tuple[str, list[str], int]], width: int) -> bool:
    """Does a table of these columns fit `width` with no header wrapped and no number cut
    (each column: its widest text, a space either side, a border)?"""
    need = 1 + sum(3 + max(len(h), *(len(c) for c in cells)) for h, cells, _ in cols)
    return need <= width


def table(report: SimReport, width: int | None = None) -> Table:
    """SimReport -> rich Table, one row per (batch, k0), plus a caption with the sizes. At a
    `width` too narrow for every column, the p95s, then mass used and experts per token, then
    the times leave the table (the caption says which; --format json has them all)."""
    title = (
        f"OEA simulation: {report.model} (N={report.num_experts}, k={report.top_k}, "
        f"{report.scoring}, groups {report.topk_group}/{report.n_group}), source {report.source}, "
        f"seed {report.seed}, {report.gpu} {report.bandwidth_tbps} TB/s"
    )
    cols = _columns(report)
    left_out: list[str] = []
    for level in (3, 2, 1):
        if width is None or _fits(cols, width):
            break
        left_out += [h for h, _, p in cols if p == level]
        cols = [c for c in cols if c[2] != level]
    t = Table(title=title, title_justify="left")
    for header, _, _ in cols:
        t.add_column(header, justify="right", no_wrap=True)
    for i in range(len(report.rows)):
        t.add_row(*(cells[i] for _, cells, _ in cols))
    caption = []
    if report.expert_bytes is not None:
        caption.append(
            f"{report.quant}: {report.expert_bytes / 2**20:.2f} MiB per expert, shared "
            f"{(report.shared_bytes or 0) / 2**20:.2f} MiB per layer (always loaded); "
            "times per MoE layer, memory-bound model"
        )
    else:
        caption.append("no layer sizes (hidden_size, moe_intermediate_size): times omitted")
    for q in report.at_quality():
        if q.k0 is None:
            caption.append(f"B={q.batch}: no swept k0 keeps {report.quality_target:.0%} of the "
                           "tokens' top-k weight mass")  # fmt: skip
        else:
            caption.append(
                f"B={q.batch}: keeping >= {report.quality_target:.0%} of the tokens' top-k "
                f"weight mass, k0={q.k0} cuts T by {_num(q.t_reduction, '{:.0%}')} (the gain at "
                "equal quality)"
            )
    caption.append(
        "top-k kept: share of each token's top-k weight still routed to; mass used: "
        "weight of OEA's final set (piggybacked experts included) over the top-k's"
    )
    caption.extend(report.notes)
    if left_out:
        caption.append(f"left out at this width: {', '.join(left_out)} (--format json has them)")
    t.caption = "\n".join(caption)
    t.caption_justify = "left"
    return t
