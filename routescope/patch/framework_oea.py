"""Opportunistic Expert Activation for one router call: static shapes, no host sync.

Self-contained (torch only): routescope copies this file into the framework tree as the module
the patch adds. Ported from routescope.oea.vectorized; tests check it equals that reference.
"""

from __future__ import annotations

import os
from typing import Any

import torch

Tensor = Any
# what the patch builder writes in for the framework (rules/oea/<framework>.toml [patch]): the
# variable that turns OEA on, and the environment the decode flag needs
ENV = "SGLANG_OEA_K0"
RUN_WITH: dict[str, str] = {}
_NO_KEY = -(2**63)  # below every order key: an expert the walk may not take
_ANY_KEY = 2**63 - 1  # above every order key: min(key, _ANY_KEY) keeps the key
_EPS = 1e-20  # SGLang's renormalising epsilon (topk.py)


def configured_k0() -> int:
    """The k0 in the ENV variable, or 0 (off) when it is unset or empty."""
    value = os.environ.get(ENV, "").strip()
    return int(value) if value else 0


# >>> decode flag (the patch builder writes the framework's in here)
def decode_step() -> bool:
    from sglang.srt.model_executor.cuda_graph_runner import (  # type: ignore[import-not-found]
        get_is_capture_mode,
    )

    return bool(get_is_capture_mode())


# <<< decode flag

_warned: list[str] = []


def active() -> bool:
    """True only when ENV is set and the framework's decode flag says this is a decode step.

    The flag is host-side and static per captured CUDA graph, so a graph captured for decode
    holds the OEA branch and every other batch keeps the router's own routing. When the
    framework needs more environment for the flag to be true at all (RUN_WITH), a warning says
    so once instead of OEA silently staying off.
    """
    if configured_k0() <= 0:
        return False
    missing = [f"{k}={v}" for k, v in RUN_WITH.items() if os.environ.get(k, "").strip() != v]
    if missing and not _warned:
        _warned.append(ENV)
        import warnings

        warnings.warn(f"{ENV} is set, but OEA needs {' '.join(missing)} to run", stacklevel=2)
    return decode_step()


def _order_key(sel: Tensor) -> Tensor:
    # Float bits made monotonic, shifted, OR (N-1-id): distinct keys, ties -> lower id first.
    n = sel.shape[-1]
    bits = (sel.float() + 0.0).view(torch.int32)
    mono = bits ^ ((bits >> 31) & 0x7FFFFFFF)
    ids = torch.arange(n - 1, -1, -1, device=sel.device, dtype=torch.long)
    return (mono.long() << max(1, (n - 1).bit_length())) | ids.view(1, n)


def _group_allowed(sel: Tensor, n_group: int, topk_group: int, biased: bool) -> Tensor | None:
    b, n = sel.shape
    if n_group <= 1 or topk_group >= n_group:
        return None
    grouped = sel.view(b, n_group, n // n_group)
    if biased and n // n_group >= 2:
        group_score = grouped.topk(2, dim=-1)[0].sum(dim=-1)
    else:
        group_score = grouped.max(dim=-1)[0]
    keep = torch.sort(group_score, dim=-1, descending=True, stable=True)[1][:, :topk_group]
    mask = torch.zeros((b, n_group), dtype=torch.bool, device=sel.device)
    mask.scatter_(1, keep, True)
    return mask.unsqueeze(-1).expand(b, n_group, n // n_group).reshape(b, n)


def _take_best(work: Tensor, m: int) -> tuple[Tensor, Tensor]:
    vals, ids = torch.topk(work, m, dim=-1, sorted=True)
    return vals, ids


def oea_select(
    topk_weights: Tensor,
    topk_ids: Tensor,
    router_logits: Tensor,
    correction_bias: Tensor | None,
    *,
    k0: int,
    scoring: str,
    policy: str,
    renormalize: bool,
    routed_scaling_factor: float | None,
    apply_routed_scaling_factor_on_output: bool | None,
    num_fused_shared_experts: int,
    num_expert_group: int | None,
    topk_group: int | None,
    num_token_non_padded: Tensor | None,
) -> tuple[Tensor, Tensor]:
    """The router's (topk_weights, topk_ids) -> OEA's, same shapes and dtypes, new tensors.

    Only the first k - num_fused_shared_experts (routed) columns change; shared columns and
    padded rows (row >= num_token_non_padded, or a row the router marked with a negative id)
    keep the router's values. Ranks by the scores
    (+ correction_bias), weights by the unbiased scores, renormalises over the kept routed
    experts when `renormalize`, and multiplies by routed_scaling_factor when the router did
    (apply_routed_scaling_factor_on_output). A token keeping fewer than k experts repeats its
    best kept expert with weight 0 in the spare slots (in range for every MoE kernel).
    """
    b, n = router_logits.shape
    k = topk_ids.shape[1] - num_fused_shared_experts
    if k0 >= k:
        return topk_weights, topk_ids
    if k0 < 1:
        raise ValueError(f"{ENV} must be in 1..{k}, got {k0}")
    dev = router_logits.device
    x = router_logits.float()
    if scoring == "softmax":
        score = torch.softmax(x, dim=-1)
    elif scoring == "sigmoid":
        score = torch.sigmoid(x)
    else:
        score = torch.sqrt(torch.nn.functional.softplus(x))
    sel = score if correction_bias is None else score + correction_bias.float().view(1, -1)
    allowed = _group_allowed(
        sel, num_expert_group or 1, topk_group or 1, biased=correction_bias is not None
    )
    key = _order_key(sel)
    own = key if allowed is None else torch.where(allowed, key, _NO_KEY)
    walk = key if policy == "free" else own

    p1_ids = _take_best(own.clone(), k0)[1]
    rows = torch.arange(b, device=dev)
    # padded rows: past num_token_non_padded, or marked by the router (an id below 0 in the
    # routed columns: vLLM's -1 under VLLM_MOE_SKIP_PADDING); they keep the router's values
    valid = (topk_ids[:, :k] >= 0).all(dim=-1)
    if num_token_non_padded is not None:
        valid = valid & (rows < num_token_non_padded)
    to_a = torch.where(valid.view(b, 1), p1_ids, n)
    cap = torch.full((n + 1,), _NO_KEY, dtype=torch.long, device=dev)
    cap = cap.scatter_(0, to_a.reshape(-1), _ANY_KEY)[:n]

    work = torch.minimum(walk, cap.view(1, n))
    work.scatter_(1, p1_ids, _NO_KEY)
    vals, cand = _take_best(work, k - k0)
    ok = vals != _NO_KEY
    cand = torch.where(ok, cand, p1_ids[:, :1])
    used = torch.cat([torch.ones_like(p1_ids, dtype=torch.bool), ok], dim=1)
    ids = torch.cat([p1_ids, cand], dim=1)

    w = torch.where(used, score.gather(1, ids), torch.zeros((), device=dev))
    if renormalize:
        w = w / (w.sum(dim=-1, keepdim=True) + _EPS)
    if apply_routed_scaling_factor_on_output and routed_scaling_factor is not None:
        w = w * routed_scaling_factor

    new_ids = topk_ids.clone()
    new_w = topk_weights.clone()
    ids = ids.to(topk_ids.dtype)
    w = w.to(topk_weights.dtype)
    ids = torch.where(valid.view(b, 1), ids, topk_ids[:, :k])
    w = torch.where(valid.view(b, 1), w, topk_weights[:, :k])
    new_ids[:, :k] = ids
    new_w[:, :k] = w
    return new_w, new_ids
