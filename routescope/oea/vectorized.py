"""Opportunistic Expert Activation, vectorised: static shapes, no host sync (CUDA-graph safe).

No torch.unique / nonzero / .item() / boolean-mask indexing, no full sort and no loop over
tokens: the batch's expert set A is a scatter-built [N] bitmask, and Phase 2's walk is a top-k
over each token's order keys restricted to A.

Padding convention for unused slots (a token may keep fewer than k experts): the slot repeats
the token's best kept expert with weight 0.0. Why: every id stays a real expert already in A, so
any downstream kernel (Triton fused_moe, cutlass, DeepEP dispatch) indexes in range and loads
nothing new; id -1 is only honoured by some kernels (SGLang's EP path) and is an out-of-bounds
index in others. A zero-weight duplicate adds compute for one row but no weight load.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from routescope.oea.config import GroupPolicy, RouterConfig
from routescope.oea.routing import (
    _biased,
    append_shared,
    finish_weights,
    group_allowed,
    order_key,
    scores,
    selection_scores,
    top_experts,
)

Tensor = Any


@dataclass(frozen=True, slots=True)
class OeaRouting:
    """topk_ids int64 [B, k+s], topk_weights f32 [B, k+s], kept int64 [B] (used routed slots).

    Kept experts fill slots 0..kept-1 (Phase 1 in rank order, then the piggybacked ones in the
    order the token ranks them); later routed slots are padding (see the module docstring).
    """

    topk_ids: Tensor
    topk_weights: Tensor
    kept: Tensor


def oea_topk(
    logits: Tensor,
    cfg: RouterConfig,
    k0: int,
    *,
    policy: GroupPolicy = "free",
    valid: Tensor | None = None,
    correction_bias: Tensor | None = None,
) -> OeaRouting:
    """Router logits [B, N] -> OEA routing (OEA.md) with k_max = cfg.top_k.

    Phase 1: each valid row keeps its k0 best (the model's own group-limited ranking).
    A = union of those. Phase 2: each row walks its order and adds experts in A until k.
    `policy` "free" walks all experts (a piggybacked expert may come from an unselected group);
    "within-selected-groups" walks only the row's selected groups. `valid` bool [B]: rows
    where it is False (CUDA-graph padding) add nothing to A and take only experts in A.
    With k0 == top_k the result equals `baseline_topk` bit for bit.
    """
    import torch

    k = cfg.top_k
    if not 1 <= k0 <= k:
        raise ValueError(f"k0 must be in 1..{k}, got {k0}")
    b, n = logits.shape
    dev = logits.device
    if valid is None:
        valid = torch.ones(b, dtype=torch.bool, device=dev)
    score = scores(logits, cfg)
    sel = selection_scores(score, correction_bias)
    allowed = group_allowed(sel, cfg, biased=_biased(cfg, correction_bias))

    key = order_key(sel)

    # Phase 1 on the model's own group-limited order; invalid rows contribute nothing.
    p1_ids = top_experts(key, k0, allowed)
    p1 = torch.zeros((b, n), dtype=torch.bool, device=dev)
    p1.scatter_(1, p1_ids, valid.view(b, 1).expand(b, k0))
    in_a = p1.any(dim=0)  # [N]: the experts this batch loads anyway

    # Phase 2: walking the order and adding experts in A until k is the same as taking the best
    # experts in A (not yet chosen, in the row's groups under that policy) by the same key.
    ok = in_a.view(1, n).expand(b, n) & ~p1
    if policy == "within-selected-groups" and allowed is not None:
        ok = ok & allowed
    cand = top_experts(key, k, ok)  # padded rows may take up to k, real rows k - k0
    cand_ok = ok.gather(1, cand)
    real_ids = torch.cat([p1_ids, cand[:, : k - k0]], dim=1)
    real_ok = torch.cat([torch.ones_like(p1_ids, dtype=torch.bool), cand_ok[:, : k - k0]], dim=1)
    row_valid = valid.view(b, 1)
    slots = torch.where(row_valid, real_ids, cand)
    used = torch.where(row_valid, real_ok, cand_ok)
    kept = used.long().sum(dim=1)

    # Padding slots repeat the row's best kept expert; a row with none takes A's lowest id.
    first_in_a = torch.argmax(in_a.to(torch.uint8)).view(1).expand(b)
    best = torch.where(kept > 0, slots[:, 0], first_in_a)
    ids = torch.where(used, slots, best.view(b, 1).expand(b, k))
    raw = torch.where(used, score.gather(1, ids), torch.zeros((), device=dev))
    weights = finish_weights(raw, cfg)
    ids, weights = append_shared(ids, weights, cfg)
    return OeaRouting(topk_ids=ids, topk_weights=weights, kept=kept)
