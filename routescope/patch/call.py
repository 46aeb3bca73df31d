"""The guarded call the codemod inserts, built from the verdict's constraints.

Every runtime value comes from a name in scope at the point (checked with ast); only what the
verdict decided statically (scoring, bias, id space) and the group policy are literals.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from routescope.errors import RoutescopeError

ALIAS = "_routescope_oea"
_RUNTIME = (
    "renormalize",
    "routed_scaling_factor",
    "apply_routed_scaling_factor_on_output",
    "num_fused_shared_experts",
    "num_expert_group",
    "topk_group",
    "num_token_non_padded",
)


@dataclass(frozen=True, slots=True)
class CallPlan:
    scoring: str  # OEA102
    biased: bool  # OEA102: rank by score + correction_bias
    physical_ids: bool  # OEA110: ids already remapped -> skip when EPLB remaps them
    policy: str  # OEA105, from --group-policy


def finding(verdict: dict[str, Any], rule_id: str) -> str:
    """The finding of constraint `rule_id` in a verdict ("" when it has none)."""
    for c in verdict["constraints"]:
        if c["id"] == rule_id:
            text: str = c["finding"]
            return text
    return ""


def plan_from(verdict: dict[str, Any], scoring: str, policy: str) -> CallPlan:
    """The literal choices of the call, read from the verdict's constraint findings."""
    scores = finding(verdict, "OEA102")
    if scoring not in scores:
        raise RoutescopeError("OEA102", f"the verdict does not rank by {scoring}: {scores}")
    return CallPlan(
        scoring=scoring,
        biased="correction_bias" in scores,
        physical_ids="already remapped" in finding(verdict, "OEA110"),
        policy=policy,
    )


def names_in_scope(source: str, line: int) -> set[str]:
    """Parameters and names bound before `line` in the innermost function covering it."""
    best: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
            node.lineno <= line <= (node.end_lineno or node.lineno)
        ):
            best = node if best is None or node.lineno > best.lineno else best
    if best is None:
        return set()
    a = best.args
    out = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    for node in ast.walk(best):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.lineno <= line:
            out.add(node.id)
    return out


def needed(plan: CallPlan) -> list[str]:
    """The names the call reads from the point's scope."""
    extra = ["correction_bias"] if plan.biased else []
    extra += ["expert_location_dispatch_info"] if plan.physical_ids else []
    return ["topk_weights", "topk_ids", "router_logits", *extra, *_RUNTIME]


def render_call(plan: CallPlan, scope: set[str], env: str) -> str:
    """The inserted statement's source (a comment line, then one `if`)."""
    missing = [n for n in needed(plan) if n not in scope]
    if missing:
        raise RoutescopeError(
            "insertion point", f"not in scope there: {', '.join(missing)}; cannot wire OEA"
        )
    guard = f"{ALIAS}.active()"
    if plan.physical_ids:  # EPLB turned ids into replica ids; OEA recomputes logical ones
        guard = f"expert_location_dispatch_info is None and {guard}"
    bias = "correction_bias" if plan.biased else "None"
    kw = "".join(f"        {n}={n},\n" for n in _RUNTIME)
    return (
        f"# routescope OEA: off unless {env} is set; decode CUDA-graph capture only\n"
        f"if {guard}:\n"
        f"    topk_weights, topk_ids = {ALIAS}.oea_select(\n"
        f"        topk_weights,\n        topk_ids,\n        router_logits,\n        {bias},\n"
        f"        k0={ALIAS}.configured_k0(),\n"
        f'        scoring="{plan.scoring}",\n        policy="{plan.policy}",\n'
        f"{kw}    )\n"
    )
