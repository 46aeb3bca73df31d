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


def _names(expr: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}


def needed(plan: CallPlan) -> list[str]:
    """The names the call reads from the point's scope."""
    extra = ["correction_bias"] if plan.biased else []
    extra += ["expert_location_dispatch_info"] if plan.physical_ids else []
    return ["topk_weights", "topk_ids", "router_logits", *extra, *_RUNTIME]


def router_arguments(before: str) -> dict[str, str]:
    """The keyword arguments of the router call in the statement before the point, as source
    text: the values the router was given are the ones OEA must use (0.5.23 passes its shared
    slots as `num_fused_shared_experts=num_shared_topk_slots_for_gate`)."""
    try:
        tree = ast.parse(before.strip())
    except SyntaxError:
        return {}
    call = next((n for n in ast.walk(tree) if isinstance(n, ast.Call)), None)
    if call is None:
        return {}
    return {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg}


def render_call(plan: CallPlan, scope: set[str], env: str,
                given: dict[str, str] | None = None) -> str:  # fmt: skip
    """The inserted statement's source (a comment line, then one `if`). A runtime value is
    what the router call at the point was given under that name, else the same name in scope."""
    given = given or {}
    exprs = {n: given.get(n, n) for n in _RUNTIME}
    reads = {n for e in exprs.values() for n in _names(e)}
    missing = [n for n in dict.fromkeys([*needed(plan)[: -len(_RUNTIME)], *sorted(reads)])
               if n not in scope]  # fmt: skip
    if missing:
        raise RoutescopeError(
            "insertion point", f"not in scope there: {', '.join(missing)}; cannot wire OEA"
        )
    guard = f"{ALIAS}.active()"
    if plan.physical_ids:  # EPLB turned ids into replica ids; OEA recomputes logical ones
        guard = f"expert_location_dispatch_info is None and {guard}"
    bias = "correction_bias" if plan.biased else "None"
    kw = "".join(f"        {n}={exprs[n]},\n" for n in _RUNTIME)
    return (
        f"# routescope OEA: off unless {env} is set; decode CUDA-graph capture only\n"
        f"if {guard}:\n"
        f"    topk_weights, topk_ids = {ALIAS}.oea_select(\n"
        f"        topk_weights,\n        topk_ids,\n        router_logits,\n        {bias},\n"
        f"        k0={ALIAS}.configured_k0(),\n"
        f'        scoring="{plan.scoring}",\n        policy="{plan.policy}",\n'
        f"{kw}    )\n"
    )
