"""Opportunistic Expert Activation, vectorised: static shapes, no host sync (CUDA-graph safe).

No torch.unique / nonzero / .item() / boolean-mask indexing, no full sort and no loop over
tokens: the batch's expert set A is a scatter-built [N] key cap (a bitmask in key form), and
Phase 2's walk is a top-k over each token's order keys restricted to A.

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
    ANY_KEY,
    NO_KEY,
    _biased,
    append_shared,
    finish_weights,
    group_allowed,
    only,
    order_key,
    scores,
    selection_scores,
    take_best,
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
    score = scores(logits, cfg)
    sel = selection_scores(score, correction_bias)
    allowed = group_allowed(sel, cfg, biased=_biased(cfg, correction_bias))
    key = order_key(sel)
    own = key if allowed is None else only(key, allowed)  # the model's group-limited order
    walk = key if policy == "free" and allowed is not None else own  # phase 2's order

    # Phase 1 on the model's own group-limited order. take_best consumes keys (taken -> NO_KEY),
    # which is what phase 2 must skip when it walks the same keys and every row is real.
    p1_ids = take_best(own.clone() if walk is own and valid is not None else own, k0)[1]
    # A as a key cap per expert: ANY_KEY in A, NO_KEY outside, built by one scatter of p1 into
    # N+1 slots (invalid rows write the spare last one). min(key, cap) masks a whole row.
    to_a = p1_ids if valid is None else torch.where(valid.view(b, 1), p1_ids, n)
    cap = torch.full((n + 1,), NO_KEY, dtype=torch.long, device=dev)
    cap = cap.scatter_(0, to_a.view(-1), ANY_KEY)[:n]

    # Phase 2: walking the order and adding experts in A until k is the same as taking the best
    # experts in A not yet chosen (in the row's groups under that policy) by the same key.
    work = torch.minimum(walk, cap.view(1, n), out=walk)
    if valid is None:  # every row is real: it keeps p1 and takes k - k0 more
        if walk is not own:
            work.scatter_(1, p1_ids, NO_KEY)
        ids, used, kept = _all_valid(work, p1_ids, k, k0)
    else:  # a padded row (CUDA-graph padding) takes its k best experts of A
        ids, used, kept = _some_padded(work, p1_ids, valid, cap, k, k0)
    raw = torch.where(used, score.gather(1, ids), torch.zeros((), device=dev))
    weights = finish_weights(raw, cfg)
    ids, weights = append_shared(ids, weights, cfg)
    return OeaRouting(topk_ids=ids, topk_weights=weights, kept=kept)


def _all_valid(work: Tensor, p1_ids: Tensor, k: int, k0: int) -> tuple[Tensor, Tensor, Tensor]:
    """Keys of A minus p1 [B, N] -> routed ids [B, k] (padding filled), used [B, k], kept [B]."""
    import torch

    b = p1_ids.shape[0]
    if k0 == k:
        return p1_ids, torch.ones_like(p1_ids, dtype=torch.bool), p1_ids.new_full((b,), k)
    vals, cand = take_best(work, k - k0)
    ok = vals != NO_KEY
    # Padding slots repeat the row's best expert (slot 0), already loaded, weight 0.
    cand = torch.where(ok, cand, p1_ids[:, :1])
    used = torch.cat([torch.ones_like(p1_ids, dtype=torch.bool), ok], dim=1)
    return torch.cat([p1_ids, cand], dim=1), used, ok.sum(dim=1) + k0


def _some_padded(
    work: Tensor, p1_ids: Tensor, valid: Tensor, cap: Tensor, k: int, k0: int
) -> tuple[Tensor, Tensor, Tensor]:
    import torch

    b = p1_ids.shape[0]
    row_valid = valid.view(b, 1)
    # Real rows must not retake their p1 experts; padded rows keep them as candidates.
    own_keys = work.gather(1, p1_ids)
    work.scatter_(1, p1_ids, torch.where(row_valid, NO_KEY, own_keys))
    vals, cand = take_best(work, k)
    cand_ok = vals != NO_KEY
    real_ids = torch.cat([p1_ids, cand[:, : k - k0]], dim=1)
    real_ok = torch.cat([torch.ones_like(p1_ids, dtype=torch.bool), cand_ok[:, : k - k0]], dim=1)
    slots = torch.where(row_valid, real_ids, cand)
    used = torch.where(row_valid, real_ok, cand_ok)
    kept = used.long().sum(dim=1)
    # Padding slots repeat the row's best kept expert; a row with none takes A's lowest id.
    first_in_a = torch.argmax(cap).view(1).expand(b)  # argmax returns the first maximum
    best = torch.where(kept > 0, slots[:, 0], first_in_a)
    return torch.where(used, slots, best.view(b, 1).expand(b, k)), used, kept
