"""The guarded call the codemod inserts, built from the verdict's constraints.

Every runtime value comes from a name in scope at the point (checked with ast); only what the
verdict decided statically (scoring, bias, id space) and the group policy are literals.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from routescope.analysis.walked import walked
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


def names_in_scope(source: str | ast.AST, line: int) -> set[str]:
    """Parameters and names bound before `line` in the innermost function covering it, in a
    file's text or a tree already parsed (a function's: its own defs are searched, not the
    whole file's, which a report would parse again for this alone)."""
    best: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for node in ast.walk(ast.parse(source)) if isinstance(source, str) else walked(source):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
            node.lineno <= line <= (node.end_lineno or node.lineno)
        ):
            best = node if best is None or node.lineno > best.lineno else best
    if best is None:
        return set()
    a = best.args
    out = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    for node in walked(best):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.lineno <= line:
            out.add(node.id)
    return out


def _names(expr: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}


def needed(plan: CallPlan) -> list[str]:
    """The values the call reads at the point (OEA's names for them)."""
    extra = ["correction_bias"] if plan.biased else []
    return ["topk_weights", "topk_ids", "router_logits", *extra, *_RUNTIME]


def router_call(before: str, through: Sequence[str] = ()) -> tuple[dict[str, str], str | None]:
    """The router call in the statement before the point: its keyword arguments as source text
    (the values the router was given are the ones OEA must use: 0.5.23 passes its shared slots
    as `num_fused_shared_experts=num_shared_topk_slots_for_gate`), and the object it is called
    on (`self.router` in `self.router.select_experts(...)`; None for a plain function)."""
    try:
        tree = ast.parse(before.strip())
    except SyntaxError:
        return {}, None
    call = next((n for n in ast.walk(tree) if isinstance(n, ast.Call)), None)
    if call is None:
        return {}, None
    on = ast.unparse(call.func.value) if isinstance(call.func, ast.Attribute) else None
    # `through`: the functions the call enters. A call that is the object's own (`self.gate(x)`
    # runs Dots1TopkRouter.forward) is made on `self.gate`, not on `self`
    method = through[0].rpartition(".")[2] if through else ""
    if isinstance(call.func, ast.Attribute) and method in ("forward", "__call__"):
        on = ast.unparse(call.func) if call.func.attr != method else on
    return {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg}, on


def value_text(
    name: str,
    scope: set[str],
    given: dict[str, str],
    on: str | None,
    attribute: Callable[[str], str | None],
    absent: Callable[[str], tuple[bool, Any]],
) -> str | None:
    """One value as source text at the point (see runtime_values); None: found nowhere."""
    attr = attribute(name)
    declared, value = absent(name)
    if name in given:
        return given[name]
    if attr is not None and attr in given:  # handed to the router call under its own name
        return given[attr]
    if name in scope:
        return name
    if on is not None and attr is not None:
        return f"{on}.{attr}"
    return repr(value) if declared else None


def runtime_values(
    names: list[str],
    scope: set[str],
    given: dict[str, str],
    on: str | None,
    attribute: Callable[[str], str | None],
    absent: Callable[[str], tuple[bool, Any]],
) -> dict[str, str]:
    """Each value as source text at the point: what the router call was given under that name,
    else the name in scope, else the router's attribute for it through the object the call is
    made on, else the value the rules declare for a router without one; RoutescopeError naming
    what is found nowhere."""
    out: dict[str, str] = {}
    missing = []
    for name in names:
        text = value_text(name, scope, given, on, attribute, absent)
        if text is None:
            missing.append(name)
        else:
            out[name] = text
    reads = {n for e in out.values() for n in _names(e)}
    missing += sorted(n for n in reads - scope if n not in missing)
    if missing:
        raise RoutescopeError(
            "insertion point", f"not in scope there: {', '.join(missing)}; cannot wire OEA"
        )
    return out


def render_call(plan: CallPlan, values: dict[str, str], env: str, remap_off: str | None) -> str:
    """The inserted statement's source (a comment line, then one `if`), each runtime value the
    expression `values` gives for it at the point; `remap_off` (an expression true when EPLB
    leaves ids logical) guards a path whose ids may be physical."""
    guard = f"{ALIAS}.active()"
    if plan.physical_ids:  # EPLB turned ids into replica ids; OEA recomputes logical ones
        guard = f"{remap_off} and {guard}"
    bias = values["correction_bias"] if plan.biased else "None"
    kw = "".join(f"        {n}={values[n]},\n" for n in _RUNTIME)
    return (
        f"# routescope OEA: off unless {env} is set; decode steps only\n"
        f"if {guard}:\n"
        f"    topk_weights, topk_ids = {ALIAS}.oea_select(\n"
        f"        topk_weights,\n        topk_ids,\n        {values['router_logits']},\n"
        f"        {bias},\n"
        f"        k0={ALIAS}.configured_k0(),\n"
        f'        scoring="{plan.scoring}",\n        policy="{plan.policy}",\n'
        f"{kw}    )\n"
    )
