"""The inserted call as text, shaped by this path's constraints."""

from __future__ import annotations

from typing import Any


def sketch(
    indent: str,
    k: int | None,
    shared: int,
    biased: bool,
    score: str,
    renorm: bool | None,
    scale: bool | None,
    grouped: bool,
    pad: str | None,
    logits: str,
    names: dict[str, str] | None = None,
) -> str:
    """A short code sketch of `topk_weights, topk_ids = oea(...)` at the insertion point.
    `names`: each runtime value as source text at the point (the router call's argument, the
    name in scope, the router's attribute); `decode`, the framework's decode test."""
    name = {**NAMES, **(names or {})}
    ids, weights = name["ids"], name["weights"]
    routed = f"k - {shared}" if shared else "k"
    cols = f"[:, :{routed}]" if shared else ""
    unscoped = (
        "  # not in scope at the point (OEA108)" if name.get("logits_in_scope") == "no" else ""
    )
    lines = [
        "# OEA on decode steps only; shapes stay static (CUDA-graph safe)",
        f"if decode_step():  # {name['decode']}",
        f"    s = {_score_expr(score, logits)}{unscoped}",
        f"    rank = s + {name['correction_bias']}" if biased else "    rank = s",
        f"    k = {ids}.shape[1]  # {k} here" if k else f"    k = {ids}.shape[1]",
        f"    routed_ids = {ids}{cols}",
        "    new_ids, new_w = oea_piggyback(",
        f"        rank, s, routed_ids, k0=K0, k_max={routed},",
        f"        valid_rows={pad},  # rows past it stay -1"
        if pad
        else "        valid_rows=None,  # rows the router marked -1 stay -1",
        "        group_mask=token_group_mask," if grouped else "",
        f"        renormalize={renorm},",
        "    )",
    ]
    if scale:
        lines.append(
            f"    new_w = new_w * {name['routed_scaling_factor']}"
            "  # the router folded it into the weights"
        )
    elif scale is None:
        lines += [
            f"    if {name['apply_routed_scaling_factor_on_output']}:  # not decided statically",
            f"        new_w = new_w * {name['routed_scaling_factor']}",
        ]
    if shared:
        lines += [
            f"    {ids}{cols} = new_ids",
            f"    {weights}{cols} = new_w  # shared slot untouched",
        ]
    else:
        lines += [f"    {ids}, {weights} = new_ids, new_w"]
    return "\n".join(indent + line for line in lines if line)


# what the sketch calls each value where nothing says how the point reaches it
NAMES = {
    "ids": "topk_ids",
    "weights": "topk_weights",
    "decode": "the framework's decode test (routescope patch writes it)",
    "correction_bias": "correction_bias",
    "routed_scaling_factor": "routed_scaling_factor",
    "apply_routed_scaling_factor_on_output": "apply_routed_scaling_factor_on_output",
}


def from_constraints(
    doc: dict[str, Any],
    indent: str,
    pad: str | None,
    logits: str,
    names: dict[str, str] | None = None,
) -> str:
    from routescope.verdict.facts import setting

    k, _, _ = setting(doc, "top_k")
    s, _, _ = setting(doc, "num_fused_shared_experts")
    _, bias_raw, _ = setting(doc, "correction_bias")
    r, _, _ = setting(doc, "renormalize")
    on, _, _ = setting(doc, "apply_routed_scaling_factor_on_output")
    factor, factor_raw, _ = setting(doc, "routed_scaling_factor")
    if factor_raw in ("None", "absent") or factor == 1:  # nothing to scale the weights by
        on = False
    g, _, _ = setting(doc, "num_expert_group")
    func = ((doc.get("routing") or {}).get("scoring_func") or {}).get("value") or "softmax"
    biased = bias_raw not in ("None", "absent") and not bias_raw.startswith("unknown")
    return sketch(
        indent,
        k if isinstance(k, int) else None,
        s if isinstance(s, int) else 0,
        biased,
        "sqrtsoftplus"
        if func == "sqrtsoftplus"
        else "sigmoid"
        if biased or func == "sigmoid"
        else "softmax",
        r if isinstance(r, bool) else None,
        on if isinstance(on, bool) else None,
        isinstance(g, int) and g > 1,
        pad,
        logits,
        names,
    )


# the router's scores from its logits, by scoring function (sqrtsoftplus: DeepSeek-V4)
_SCORES = {
    "sigmoid": "{}.float().sigmoid()",
    "softmax": "{}.float().softmax(dim=-1)",
    "sqrtsoftplus": "torch.nn.functional.softplus({}.float()).sqrt()",
}


def _score_expr(score: str, logits: str) -> str:
    return _SCORES.get(score, _SCORES["softmax"]).format(logits)
