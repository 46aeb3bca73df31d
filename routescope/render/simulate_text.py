"""SimReport -> a rich table for the terminal (colour rules from render.style)."""

from __future__ import annotations

from rich.table import Table

from routescope.oea.report import SimReport


def _num(v: float | None, fmt: str = "{:.1f}") -> str:
    return "-" if v is None else fmt.format(v)


def table(report: SimReport) -> Table:
    """SimReport -> rich Table, one row per (batch, k0), plus a caption with the sizes."""
    title = (
        f"OEA simulation: {report.model} (N={report.num_experts}, k={report.top_k}, "
        f"{report.scoring}, groups {report.topk_group}/{report.n_group}), source {report.source}, "
        f"seed {report.seed}, {report.gpu} {report.bandwidth_tbps} TB/s"
    )
    t = Table(title=title, title_justify="left")
    for col in ("B", "k0", "T base", "T base p95", "T OEA", "T OEA p95", "T cut",
                "top-k kept", "mass used", "experts/tok", "µs base", "µs OEA"):  # fmt: skip
        t.add_column(col, justify="right")
    for r in report.rows:
        t.add_row(
            str(r.batch), str(r.k0), _num(r.t_baseline_mean), _num(r.t_baseline_p95),
            _num(r.t_oea_mean), _num(r.t_oea_p95), _num(r.t_reduction, "{:.0%}"),
            _num(r.topk_mass_kept, "{:.3f}"), _num(r.weight_mass_kept, "{:.3f}"),
            _num(r.experts_per_token, "{:.2f}"),
            _num(r.time_baseline_us), _num(r.time_oea_us),
        )  # fmt: skip
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
    t.caption = "\n".join(caption)
    t.caption_justify = "left"
    return t
