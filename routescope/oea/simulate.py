"""Simulate OEA's benefit: T, kept weight mass and MoE-layer time per batch size and k0."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from routescope.hardware import GpuProfile
from routescope.oea.config import GroupPolicy, RouterConfig
from routescope.oea.cost import MoeSizes
from routescope.oea.report import SimRow

Tensor = Any


@dataclass(frozen=True, slots=True)
class Cell:
    """Raw per-sample numbers of one (batch, k0): T per (layer, batch) sample, per-token stats."""

    t_baseline: Tensor  # float [S]
    t_oea: Tensor | None  # float [S]
    mass_kept: Tensor | None  # float [S * B]: P over OEA's set / P over the top-k
    kept: Tensor | None  # float [S * B]
    topk_mass_kept: Tensor | None = None  # float [S * B]: P over (OEA's set ∩ top-k) / P over top-k


def unique_count(ids: Tensor, num_experts: int) -> Tensor:
    """ids [S, B, k] (-1 = none) -> distinct experts per sample [S], via a scatter bitmask."""
    import torch

    s = ids.shape[0]
    flat = ids.reshape(s, -1)
    seen = torch.zeros((s, num_experts + 1), dtype=torch.bool)
    seen.scatter_(1, torch.where(flat >= 0, flat, num_experts), True)
    return seen[:, :num_experts].sum(dim=1).float()


def simulate_logits(
    batches: Tensor, cfg: RouterConfig, k0: int, policy: GroupPolicy, bias: Tensor | None = None
) -> Cell:
    """Logits [S, B, N] (S decode batches) -> Cell for OEA with this k0 (all rows valid)."""
    import torch

    from routescope.oea.routing import baseline_topk, scores
    from routescope.oea.vectorized import oea_topk

    s, b, n = batches.shape
    k = cfg.top_k
    flat = batches.reshape(s * b, n)
    base_ids = baseline_topk(flat, cfg, bias)[0][:, :k].reshape(s, b, k)
    score = scores(flat, cfg)
    base_mass = score.gather(1, base_ids.reshape(s * b, k)).sum(dim=1)
    oea_ids, kept, mass, own = [], [], [], []
    for i in range(s):  # one decode batch at a time: A is a per-batch set
        r = oea_topk(batches[i], cfg, k0, policy=policy, correction_bias=bias)
        ids = r.topk_ids[:, :k]
        used = torch.arange(k).view(1, k) < r.kept.view(-1, 1)
        oea_ids.append(torch.where(used, ids, -1))
        kept.append(r.kept.float())
        p = score[i * b : (i + 1) * b].gather(1, ids)
        mass.append(torch.where(used, p, 0.0).sum(1))
        # of the experts the token chose itself (its baseline top-k), the ones OEA keeps
        chosen = (ids.unsqueeze(2) == base_ids[i].unsqueeze(1)).any(2) & used
        own.append(torch.where(chosen, p, 0.0).sum(1))
    oea = torch.stack(oea_ids)
    return Cell(
        t_baseline=unique_count(base_ids, n),
        t_oea=unique_count(oea, n),
        mass_kept=torch.cat(mass) / base_mass,
        kept=torch.cat(kept),
        topk_mass_kept=torch.cat(own) / base_mass,
    )


def summarise(
    cell: Cell, batch: int, k0: int, k: int, sizes: MoeSizes | None, gpu: GpuProfile
) -> SimRow:
    """Cell -> SimRow: means, p95s and (when sizes are known) the modelled layer time."""
    import torch

    def p95(x: Tensor) -> float:
        return float(torch.quantile(x, 0.95))

    t_base = float(cell.t_baseline.mean())
    t_oea = None if cell.t_oea is None else float(cell.t_oea.mean())
    per_tok = None if cell.kept is None else float(cell.kept.mean())
    time_base = time_oea = None
    if sizes is not None:
        time_base = sizes.layer_time_us(gpu, t_base, batch, k)
        if t_oea is not None and per_tok is not None:
            time_oea = sizes.layer_time_us(gpu, t_oea, batch, per_tok)
    return SimRow(
        batch=batch,
        k0=k0,
        samples=int(cell.t_baseline.numel()),
        t_baseline_mean=t_base,
        t_baseline_p95=p95(cell.t_baseline),
        t_oea_mean=t_oea,
        t_oea_p95=None if cell.t_oea is None else p95(cell.t_oea),
        weight_mass_kept=None if cell.mass_kept is None else float(cell.mass_kept.mean()),
        topk_mass_kept=None if cell.topk_mass_kept is None else float(cell.topk_mass_kept.mean()),
        experts_per_token=per_tok,
        time_baseline_us=time_base,
        time_oea_us=time_oea,
    )
