"""The model's own (baseline) top-k routing in torch, and the pieces OEA shares with it.

Every function takes router logits [B, N] (any float dtype; computed in float32) and a
RouterConfig. Order is decided by `order_key` everywhere (ties -> lower expert id first), so the
baseline, the vectorised OEA and the plain-Python oracle agree on ties.
torch is imported lazily: routescope.oea.* must stay importable without the `sim` extra.
"""

from __future__ import annotations

from typing import Any

from routescope.oea.config import RouterConfig

Tensor = Any  # torch.Tensor; torch is optional (the `sim` extra)

# SGLang adds this to the renormalising sum (topk.py, _RENORMALIZE_SUM_EPSILON).
RENORMALIZE_EPSILON = 1e-20


def scores(logits: Tensor, cfg: RouterConfig) -> Tensor:
    """Logits [B, N] -> the scores the model weights by, float32 [B, N]."""
    import torch

    x = logits.float()
    if cfg.scoring == "softmax":
        return torch.softmax(x, dim=-1)
    if cfg.scoring == "sigmoid":
        return torch.sigmoid(x)
    return torch.sqrt(torch.nn.functional.softplus(x))


def selection_scores(score: Tensor, bias: Tensor | None) -> Tensor:
    """Scores [B, N] + optional correction bias [N] -> the scores experts are ranked by."""
    return score if bias is None else score + bias.float().view(1, -1)


def group_allowed(sel: Tensor, cfg: RouterConfig, *, biased: bool) -> Tensor | None:
    """Selection scores [B, N] -> bool [B, N]: True where the expert's group was selected;
    None when routing is not group-limited (every expert allowed).

    DeepSeek-V3 style: a group's score is the sum of its top-2 biased scores when a correction
    bias exists, else its max; the topk_group best groups are kept.
    """
    import torch

    b, n = sel.shape
    if cfg.n_group == 1 or cfg.topk_group == cfg.n_group:
        return None
    grouped = sel.view(b, cfg.n_group, cfg.group_size)
    if biased and cfg.group_size >= 2:
        group_score = grouped.topk(2, dim=-1)[0].sum(dim=-1)
    else:
        group_score = grouped.max(dim=-1)[0]
    keep = torch.sort(group_score, dim=-1, descending=True, stable=True)[1][:, : cfg.topk_group]
    mask = torch.zeros((b, cfg.n_group), dtype=torch.bool, device=sel.device)
    mask.scatter_(1, keep, True)
    return mask.unsqueeze(-1).expand(b, cfg.n_group, cfg.group_size).reshape(b, n)


def order_key(sel: Tensor) -> Tensor:
    """Selection scores f32 [B, N] -> int64 keys [B, N], distinct within a row, larger = better.

    The float's bits made monotonic, shifted left, OR (N-1-id) in the low bits: equal scores
    rank the lower id first, and torch.topk on distinct keys is deterministic (no full sort, no
    tie ambiguity). Shift and OR, not multiply and add: int64 add/mul is about 3x slower on CPU.
    """
    import torch

    n = sel.shape[-1]
    bits = (sel.float() + 0.0).view(torch.int32)  # + 0.0 turns -0.0 into +0.0
    mono = bits ^ ((bits >> 31) & 0x7FFFFFFF)  # negative floats: flip all but the sign bit
    ids = torch.arange(n - 1, -1, -1, device=sel.device, dtype=torch.long)
    return mono.long().__ilshift__(max(1, (n - 1).bit_length())).bitwise_or_(ids.view(1, n))


NO_KEY = -(2**63)  # below every order_key: marks experts a walk may not take
ANY_KEY = 2**63 - 1  # above every order_key: min(key, ANY_KEY) keeps the key


def only(key: Tensor, allowed: Tensor) -> Tensor:
    """Keys [B, N] with NO_KEY where `allowed` (bool, [B, N]) is False; a new tensor."""
    import torch

    return torch.where(allowed, key, NO_KEY)


def take_best(work: Tensor, m: int) -> tuple[Tensor, Tensor]:
    """Distinct keys [B, N] -> the m best (keys, ids) [B, m], best first. `work` is consumed:
    taken entries become NO_KEY. Keys still NO_KEY mark "nothing left" (their ids repeat).

    Why rounds: CPU torch.topk takes a fast partial sort only while m * 64 <= N and a full
    nth_element pass otherwise (about 3x slower at N=256, m=8); rounds of width N // 64 stay on
    the fast path. Any other device takes one topk.
    """
    import torch

    n = work.shape[-1]
    width = m if work.device.type != "cpu" else max(1, n // 64)
    if m > 4 * width:
        width = m
    parts_v, parts_i = [], []
    left = m
    while left:  # at most 4 rounds, a static count: no host sync
        vals, ids = torch.topk(work, min(width, left), dim=-1, sorted=True)
        work.scatter_(1, ids, NO_KEY)
        parts_v.append(vals)
        parts_i.append(ids)
        left -= ids.shape[1]
    if len(parts_i) == 1:
        return parts_v[0], parts_i[0]
    return torch.cat(parts_v, dim=1), torch.cat(parts_i, dim=1)


def finish_weights(raw: Tensor, cfg: RouterConfig) -> Tensor:
    """Unbiased scores of the chosen slots [B, k] (0 in unused slots) -> topk_weights [B, k]."""
    w = raw
    if cfg.renormalize:
        w = w / (w.sum(dim=-1, keepdim=True) + RENORMALIZE_EPSILON)
    return w * cfg.routed_scaling_factor if cfg.routed_scaling_factor != 1.0 else w


def append_shared(ids: Tensor, weights: Tensor, cfg: RouterConfig) -> tuple[Tensor, Tensor]:
    """Append the fused shared-expert columns (ids N..N+s-1, weight 1.0); OEA never touches
    them. Weight 1.0 because routed_scaling_factor was applied in the router."""
    import torch

    s = cfg.num_fused_shared_experts
    if s == 0:
        return ids, weights
    b = ids.shape[0]
    shared = torch.arange(cfg.num_experts, cfg.num_experts + s, device=ids.device)
    ids = torch.cat([ids, shared.to(ids.dtype).expand(b, s)], dim=1)
    weights = torch.cat([weights, weights.new_ones((b, s))], dim=1)
    return ids, weights


def baseline_topk(
    logits: Tensor, cfg: RouterConfig, correction_bias: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """The model's own routing: logits [B, N] -> (topk_ids int64 [B, k+s], weights f32 [B, k+s]).

    The bias (if any) only ranks; weights come from the unbiased scores. Routed ids are best
    first; s fused shared columns follow.
    """
    score = scores(logits, cfg)
    sel = selection_scores(score, correction_bias)
    allowed = group_allowed(sel, cfg, biased=_biased(cfg, correction_bias))
    key = order_key(sel)
    ids = take_best(key if allowed is None else only(key, allowed), cfg.top_k)[1]
    weights = finish_weights(score.gather(1, ids), cfg)
    return append_shared(ids, weights, cfg)


def _biased(cfg: RouterConfig, bias: Tensor | None) -> bool:
    # A model with a correction bias scores groups by top-2 sums even if the bias is all zero.
    return cfg.has_correction_bias or bias is not None
