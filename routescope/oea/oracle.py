"""The plain-Python oracle: lists and loops, OEA.md's pseudocode line by line.

It takes the scores as Python floats (the unbiased scores P and the selection scores used for
ranking, already computed by the model's scoring function) so that it checks the algorithm, not
float32 arithmetic. Ties rank the lower expert id first, as the vectorised code does.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

from routescope.oea.config import GroupPolicy, RouterConfig

Row = Sequence[float]


def allowed_experts(sel: Row, cfg: RouterConfig, *, biased: bool) -> set[int]:
    """One token's selection scores -> the experts in its topk_group best groups."""
    size = cfg.group_size
    group_scores = []
    for g in range(cfg.n_group):
        members = sorted(sel[g * size : (g + 1) * size], reverse=True)
        group_scores.append(_f32(members[0] + members[1]) if biased and size >= 2 else members[0])
    groups = sorted(range(cfg.n_group), key=lambda g: -group_scores[g])[: cfg.topk_group]
    return {g * size + j for g in groups for j in range(size)}


def order_of(sel: Row, among: set[int]) -> list[int]:
    """Experts in `among`, best selection score first (stable: lower id wins a tie)."""
    return sorted(sorted(among), key=lambda e: -sel[e])


def oracle_oea(
    p: Sequence[Row],
    sel: Sequence[Row],
    cfg: RouterConfig,
    k0: int,
    *,
    policy: GroupPolicy = "free",
    valid: Sequence[bool] | None = None,
    biased: bool = False,
) -> tuple[list[list[int]], list[list[float]]]:
    """Scores P [B][N], selection scores [B][N] -> (kept experts per token, their weights).

    Each token's list is in slot order (Phase 1, then Phase 2 additions); weights are P
    renormalised over the final set when cfg.renormalize, times routed_scaling_factor.
    """
    b, n = len(p), cfg.num_experts
    valid = [True] * b if valid is None else list(valid)
    allowed = [allowed_experts(sel[i], cfg, biased=biased) for i in range(b)]
    # Phase 1: S_i = first k0 of order_i; A = union of S_i over the real (valid) tokens.
    chosen: list[list[int]] = []
    for i in range(b):
        chosen.append(order_of(sel[i], allowed[i])[:k0] if valid[i] else [])
    a: set[int] = set()
    for i in range(b):
        a.update(chosen[i])
    # Phase 2: walk order_i past S_i, add e in A, stop at k_max.
    for i in range(b):
        walk = allowed[i] if policy == "within-selected-groups" else set(range(n))
        for e in order_of(sel[i], walk):
            if len(chosen[i]) == cfg.top_k:
                break
            if e in a and e not in chosen[i]:
                chosen[i].append(e)
    weights = [_weights(p[i], chosen[i], cfg) for i in range(b)]
    return chosen, weights


def oracle_baseline(sel: Sequence[Row], cfg: RouterConfig, *, biased: bool) -> list[list[int]]:
    """The model's own top-k per token, from selection scores [B][N]."""
    return [order_of(s, allowed_experts(s, cfg, biased=biased))[: cfg.top_k] for s in sel]


def _weights(p: Row, chosen: list[int], cfg: RouterConfig) -> list[float]:
    raw = [p[e] for e in chosen]
    total = sum(raw)
    if cfg.renormalize:
        raw = [w / total if total > 0 else 0.0 for w in raw]
    return [w * cfg.routed_scaling_factor for w in raw]


def _f32(x: float) -> float:
    # torch adds the two best scores in float32; round like it so group ties agree.
    value: float = struct.unpack("f", struct.pack("f", x))[0]
    return value


def oracle_route(
    logits: Sequence[Row], cfg: RouterConfig, k0: int, bias: Row | None = None
) -> tuple[list[list[int]], list[list[float]]]:
    """Logits [B][N] -> oracle_oea's result, the scores computed here in plain Python too."""
    p: list[list[float]] = []
    for row in logits:
        if cfg.scoring == "softmax":
            top = max(row)
            ex = [math.exp(v - top) for v in row]
            total = sum(ex)
            p.append([v / total for v in ex])
        elif cfg.scoring == "sigmoid":
            p.append([1.0 / (1.0 + math.exp(-v)) for v in row])
        else:
            p.append([math.sqrt(math.log1p(math.exp(v))) for v in row])
    sel = p if bias is None else [[v + b for v, b in zip(r, bias, strict=True)] for r in p]
    return oracle_oea(p, sel, cfg, k0, biased=bias is not None or cfg.has_correction_bias)
