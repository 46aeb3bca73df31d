"""The constraints an OEA insertion must respect on one path, each read from the report."""

from __future__ import annotations

import ast
from typing import Any

from routescope.analysis.index import Index
from routescope.analysis.walked import walked
from routescope.report import sink_label
from routescope.verdict.callees import CallSite
from routescope.verdict.facts import cite_setting, known, routing_field, setting, traced_value
from routescope.verdict.point import Point
from routescope.verdict.rules import OeaRules
from routescope.verdict.source import FunctionSource


def _c(rules: OeaRules, name: str, finding: str, evidence: list[str]) -> dict[str, Any]:
    c = rules.constraints[name]
    return {"id": c.id, "name": c.name, "title": c.title, "finding": finding, "evidence": evidence}


def routed_columns(doc: dict[str, Any], rules: OeaRules) -> dict[str, Any]:
    k, k_raw, _ = setting(doc, "top_k")
    s, s_raw, _ = setting(doc, "num_fused_shared_experts")
    n, n_src = routing_field(doc, "num_experts")
    ev = [cite_setting(doc, "top_k"), cite_setting(doc, "num_fused_shared_experts")]
    traced = traced_value(doc, "num_fused_shared_experts") if s_raw == "absent" else None
    if traced is not None and isinstance(traced[0], int):
        s, s_raw = traced[0], str(traced[0])
        ev = [cite_setting(doc, "top_k"), traced[1]]
    if not isinstance(k, int) or not isinstance(s, int):
        return _c(
            rules, "routed-columns", f"unknown: top_k={k_raw}, num_fused_shared_experts={s_raw}", ev
        )
    if s == 0:
        every = (
            "the one column of topk_ids is a routed expert"
            if k == 1
            else f"all {k} columns of topk_ids are routed experts"
        )
        return _c(rules, "routed-columns", every, ev)
    return _c(
        rules,
        "routed-columns",
        f"topk_ids[:, :{k - s}] are routed; the last {s} column(s) hold fused shared-expert "
        f"slots (ids >= {n}); OEA must leave them as they are",
        [*ev, f"num_experts = {n} ({n_src})"],
    )


def scores(
    doc: dict[str, Any],
    rules: OeaRules,
    kernel: FunctionSource | None,
    bias_names: list[str] | tuple[str, ...] = (),
    caller: FunctionSource | None = None,
) -> dict[str, Any]:
    """What to rank and weight by: the score the router's code computes. The kernel's own code
    decides where it computes one score and is not handed the scoring function; a kernel that
    only selects (fast_topk) is scored by its caller, on what it hands the kernel or takes back
    (Llama-4's sigmoid of the top logit); the scoring function as the trace read it decides
    where the kernel is told it or its code says nothing; else the config's."""
    func, func_src = routing_field(doc, "scoring_func")
    _bias_value, bias_raw, _ = setting(doc, "correction_bias")
    has_bias = known(bias_raw) and bias_raw != "None"
    ev = [f"model scoring_func = {func} ({func_src})", cite_setting(doc, "correction_bias")]
    read = _bias_reads(kernel, bias_names) if kernel and bias_raw == "absent" else []
    if read:  # a router that is Python reads its correction bias itself
        has_bias = True
        ev += [f"{kernel.module.relpath}:{line}: {name}" for name, line in read]  # type: ignore[union-attr]
    seen = score_calls(kernel) if kernel else []
    where = kernel.module.relpath if kernel else ""
    who, always = (
        "the kernel",
        {n for n, _ in score_calls(kernel, always=True)} if kernel else set(),
    )
    if kernel is not None and not seen and caller is not None:
        around = scored_around(caller, kernel.node.name)
        if len({name for name, _ in around}) == 1:
            seen, who, where = around, f"{caller.node.name}, which calls the kernel,", ""
            always = {name for name, _ in around}
            ev += [
                f"{caller.module.relpath}:{line}: {name} (in {caller.node.name}, on what it hands "
                f"{kernel.node.name} or takes back from it)"
                for name, line in around
            ]
    kinds = {name for name, _ in seen}
    traced = traced_value(doc, "scoring_func")
    # one score, computed on every run of the code (not a branch of a kernel told which)
    decided = kinds == always and len(kinds) == 1
    decided = decided and not (kernel is not None and takes(kernel, "scoring_func"))
    # a kernel that computes several is told which on this path (0.5.20+'s moe_fused_gate:
    # sigmoid, softmax or DeepSeek-V4's sqrtsoftplus)
    told = traced if traced is not None and isinstance(traced[0], str) and traced[0] else None
    told = None if decided else told
    score: str | None
    if told is not None:
        score, kinds = told[0], {told[0]}
    elif len(kinds) == 1:
        score = next(iter(kinds))
    elif kinds:  # branches the trace did not read: the config's where it is one of them
        score = str(func) if str(func) in kinds else None
    else:  # no score in Python: the config's, softmax by default
        score = str(func or "softmax")
    if where:  # the kernel's own score calls; where it is told, those of the other branches
        other = " (a branch for another scoring_func)"
        ev += [f"{where}:{line}: {name}{other if told and name != score else ''}"
               for name, line in seen]  # fmt: skip
    if told is not None:
        ev.append(told[1])
    if score is None:
        finding = (
            f"undecided: {who} computes {' or '.join(sorted(kinds))} by a branch the trace did "
            "not read; rank and weight by the one this deployment runs"
        )
        return _c(rules, "scores", finding, ev)
    if has_bias:
        finding = (
            f"rank by {score}(router_logits) + correction_bias (as selection does); weight by "
            f"the unbiased {score}(router_logits)"
        )
    else:
        finding = f"rank and weight by {score}(router_logits)"
    if kinds and str(func) not in kinds:
        says = f"the config says {func}" if func else "the config names no scoring_func"
        finding += f" ({who} computes {score}; {says})"
    return _c(rules, "scores", finding, ev)


def _bias_reads(fn: FunctionSource, names: list[str] | tuple[str, ...]) -> list[tuple[str, int]]:
    """Reads of a correction bias (`self.e_score_correction_bias`) in the router's own code."""
    out = {
        (node.attr, node.lineno)
        for node in walked(fn.node)
        if isinstance(node, ast.Attribute) and any(node.attr.endswith(n) for n in names)
    }
    return sorted(out, key=lambda x: x[1])


def takes(fn: FunctionSource, name: str) -> bool:
    """Whether `fn` has a parameter called `name`."""
    a = fn.node.args
    return any(p.arg == name for p in [*a.posonlyargs, *a.args, *a.kwonlyargs])


def scored_around(caller: FunctionSource, kernel: str) -> list[tuple[str, int]]:
    """The score calls `caller` makes on what a call of `kernel` returns (`s, i = kernel(...)`;
    `sigmoid(s)`) or on what it hands that call (`p = softmax(x)`; `kernel(p)`); others (a
    shared-expert gate's sigmoid) are not the router's."""
    back: set[str] = set()  # names bound to the kernel's result
    handed: set[str] = set()  # names read by the kernel's arguments
    scored: dict[str, list[tuple[str, int]]] = {}  # name -> the score calls its value came from
    calls = [n for n in walked(caller.node) if isinstance(n, ast.Call)]
    for node in walked(caller.node):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            bound = {n.id for t in node.targets for n in walked(t) if isinstance(n, ast.Name)}
            if _called(node.value) == kernel:
                back |= bound
            for name, line in _score_calls_in(node.value):
                for b in bound:
                    scored.setdefault(b, []).append((name, line))
    for call in calls:
        if _called(call) == kernel:
            handed |= {a.id for a in walked(call) if isinstance(a, ast.Name)}
    out = {
        (name, call.lineno)
        for call in calls
        if (name := _called(call)) in ("sigmoid", "softmax")
        and any(isinstance(n, ast.Name) and n.id in back for a in call.args for n in walked(a))
    }
    out |= {hit for name in handed & scored.keys() for hit in scored[name]}
    always = set(_score_calls_in(caller.node, always=True))
    return sorted(out & always, key=lambda x: x[1])


def _called(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


# what a function's run may skip: a branch, a loop's body, a handler, a short-circuit, code
# defined for later
_MAYBE = (ast.If, ast.IfExp, ast.While, ast.For, ast.AsyncFor, ast.ExceptHandler, ast.Match,
          ast.BoolOp, ast.comprehension, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
          ast.ClassDef)  # fmt: skip


def _score_calls_in(fn: ast.AST, always: bool = False) -> list[tuple[str, int]]:
    """sigmoid/softmax calls in `fn`; with `always`, only those every run of it makes."""
    out = []
    todo = [(fn, False)]
    while todo:
        node, maybe = todo.pop()
        called = _called(node) if isinstance(node, ast.Call) else ""
        if called in ("sigmoid", "softmax") and not (always and maybe):
            out.append((called, getattr(node, "lineno", 0)))
        under = maybe or (isinstance(node, _MAYBE) and node is not fn)
        todo += [(child, under) for child in ast.iter_child_nodes(node)]
    return out


def score_calls(fn: FunctionSource, always: bool = False) -> list[tuple[str, int]]:
    return sorted(set(_score_calls_in(fn.node, always)), key=lambda x: x[1])


def renormalise(doc: dict[str, Any], rules: OeaRules) -> dict[str, Any]:
    r, raw, _ = setting(doc, "renormalize")
    s, s_raw, _ = setting(doc, "num_fused_shared_experts")
    traced = traced_value(doc, "num_fused_shared_experts") if s_raw == "absent" else None
    s = traced[0] if traced is not None else s
    over = " over the routed columns only" if isinstance(s, int) and s > 0 else ""
    finding = {
        True: f"renormalise the final weights to sum to 1{over}",
        False: "do not renormalise: weights stay the raw scores of the chosen experts",
    }.get(r, f"unknown ({raw})")
    return _c(rules, "renormalise", finding, [cite_setting(doc, "renormalize")])


def scaling(doc: dict[str, Any], rules: OeaRules) -> dict[str, Any]:
    f, f_raw, _ = setting(doc, "routed_scaling_factor")
    on, on_raw, _ = setting(doc, "apply_routed_scaling_factor_on_output")
    ev = [
        cite_setting(doc, "routed_scaling_factor"),
        cite_setting(doc, "apply_routed_scaling_factor_on_output"),
    ]
    if f is None or f == 1 or f == 1.0:
        model, model_src = routing_field(doc, "routed_scaling_factor")
        if isinstance(model, (int, float)) and not isinstance(model, bool) and model != 1:
            # (vLLM's DeepSeek-V3 builds its router with 1.0 and scales the layer's output)
            finding = (
                f"the router does not scale topk_weights (routed_scaling_factor = {f_raw} as "
                f"built); the config's {model}, where the model applies it, is applied outside "
                "it: OEA must not apply it"
            )
            return _c(rules, "scaling-factor", finding,
                      [*ev, f"model routed_scaling_factor = {model} ({model_src})"])  # fmt: skip
        return _c(rules, "scaling-factor", f"no scaling (routed_scaling_factor = {f_raw})", ev)
    if on is True:
        finding = (
            f"the router multiplies topk_weights by {f}: "
            "multiply OEA's renormalised weights by it too"
        )
    elif on is False:
        finding = f"{f} is applied to the MoE output, not to topk_weights: OEA must not apply it"
    else:
        finding = (
            f"undecided: routed_scaling_factor = {f} is either folded into topk_weights or applied "
            f"to the MoE output ({on_raw}); OEA must do what the router did, so read "
            "apply_routed_scaling_factor_on_output at run time"
        )
    return _c(rules, "scaling-factor", finding, ev)


def groups(doc: dict[str, Any], rules: OeaRules) -> dict[str, Any]:
    g, g_raw, _ = setting(doc, "num_expert_group")
    _tg, tg_raw, _ = setting(doc, "topk_group")
    ev = [cite_setting(doc, "num_expert_group"), cite_setting(doc, "topk_group")]
    grouped, _, _ = setting(doc, "use_grouped_topk")
    if grouped is False and isinstance(g, int) and g > 1:
        # (SGLang's DeepSeek-V4 TopK keeps the class's n_group 8 but routes ungrouped: its
        # sqrtsoftplus gate is handed no group count, topk.py:1713-1729)
        finding = (
            f"no group mask: the router selects over all experts (use_grouped_topk = False; "
            f"num_expert_group = {g} is not used): any expert in the batch's set may be piggybacked"
        )
        ev.append(cite_setting(doc, "use_grouped_topk"))
    elif isinstance(g, int) and g > 1:
        finding = (
            f"grouped routing: each token selects {tg_raw} of {g} groups; a piggybacked expert "
            "may lie in a group the token did not select (the paper does not say whether "
            "that is allowed); the conservative choice keeps piggybacking inside the token's groups"
        )
    elif isinstance(g, int) or (g is None and g_raw == "None"):
        finding = (
            f"no group mask (num_expert_group = {g_raw}): "
            "any expert in the batch's set may be piggybacked"
        )
    else:
        finding = f"unknown ({g_raw})"
    return _c(rules, "groups", finding, ev)


def cuda_graph(
    doc: dict[str, Any], rules: OeaRules, fw: dict[str, Any], index: Index
) -> dict[str, Any]:
    arg = fw["graph"]["server_arg"]
    flag = "--" + arg.replace("_", "-")
    given = (doc.get("deployment") or {}).get("server_args", {}).get(arg)
    resolved = ((doc.get("dispatch") or {}).get("server_args") or {}).get(arg)
    value: bool | None
    # what the server ends with (a --set value typed as the field declares it, then the server's
    # own post-processing) before the flag as given
    if resolved is not None and isinstance(resolved["value"], bool):
        value = resolved["value"]
        said = "; ".join(resolved["origins"]) or "the server's resolved arguments"
        ev = [f"server argument {arg} = {resolved['repr']} as the server resolved it ({said})"]
    elif isinstance(given, bool):
        value, ev = given, [f"server argument {arg} = {given} (--set)"]
    else:
        value_or_none, where = _field_default(index, fw["graph"]["server_args_class"], arg)
        value = bool(value_or_none) if value_or_none is not None else None
        ev = [f"{where}: {arg} default {value_or_none}"] if where else [f"{arg}: default not found"]
    if value is False:
        finding = (
            f"decode runs inside a captured CUDA graph ({flag} not given): static shapes, no "
            "torch.unique, nonzero or .item(); build the batch's expert set with scatter_ into "
            "a fixed [num_experts] mask"
        )
    elif value is True:
        finding = f"{flag} is set: decode is not captured (dynamic ops allowed, decode is slower)"
    else:
        finding = "unknown whether decode is captured; write it capture-safe"
    return _c(rules, "cuda-graph", finding, ev)


def _field_default(index: Index, qualname: str, field: str) -> tuple[Any, str | None]:
    sym = index.find(qualname)
    info = index.module(sym.module) if sym is not None else None
    if sym is None or info is None or not isinstance(sym.node, ast.ClassDef):
        return None, None
    for stmt in sym.node.body:
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.target.id == field
            and stmt.value is not None
        ):
            try:
                return ast.literal_eval(stmt.value), f"{info.relpath}:{stmt.lineno}"
            except ValueError:
                return None, f"{info.relpath}:{stmt.lineno}"
    return None, None


def opaque(
    doc: dict[str, Any],
    rules: OeaRules,
    fw: dict[str, Any],
    point: Point,
    callers: list[dict[str, Any]],
    sink: dict[str, Any],
) -> dict[str, Any]:
    marks = [*fw["opaque"]["compile"], *fw["opaque"]["custom_op"]]
    hits = [
        (f["function"], d)
        for f in callers
        for d in f["decorators"]
        if any(
            d.lstrip("@").startswith(m) or d.lstrip("@").split("(")[0].endswith(m) for m in marks
        )
    ]
    names = ", ".join(f["function"].split(":")[-1] for f in callers)
    ev = [
        f"decorators of {f['function'].split(':')[-1]} ({f['file']}:{f['line']}): "
        f"{', '.join(f['decorators']) or 'none'}"
        for f in callers
    ]
    ev.append(
        f"router kernel {sink['name']} [{sink_label(sink)}] called at {sink['file']}:{sink['line']}"
    )
    if hits:
        finding = "inside " + "; ".join(f"{fn.split(':')[-1]} ({d})" for fn, d in hits)
    else:
        finding = (
            f"plain eager Python: no torch.compile or custom-op decorator on {names}; the router "
            f"kernel ({sink_label(sink)}) has returned before the point"
        )
    return _c(rules, "opaque", finding, ev)


def scores_available(
    doc: dict[str, Any], rules: OeaRules, point: Point, fw: dict[str, Any], sink: dict[str, Any]
) -> dict[str, Any]:
    params = {a.arg for a in (*point.source.node.args.args, *point.source.node.args.kwonlyargs)}
    logits = [n for n in fw["tensors"]["logits"] if n in params]
    _value, bias_raw, _ = setting(doc, "correction_bias")
    has_bias = known(bias_raw) and bias_raw != "None"  # a router with a correction bias
    bias = [n for n in fw["tensors"]["bias"]
            if has_bias and (_assigned(point.source, n) or n in params)]  # fmt: skip
    targets = point.source.module.segment(point.stmt.targets[0])  # type: ignore[attr-defined]
    ev = [
        f"{point.source.module.relpath}:{point.stmt.lineno}: {targets} = ... (no scores returned)",
        f"router kernel {sink['name']} [{sink_label(sink)}]",
    ]
    if logits:
        finding = (
            f"the router returns only {targets}: recompute scores from `{logits[0]}`"
            + (f" and `{bias[0]}`" if bias else "")
            + f", {'both ' if bias else ''}in scope in {point.function.split(':')[-1]}"
        )
    else:
        finding = (
            f"the router returns only {targets}, and no router logits are in scope at the point"
        )
    return _c(rules, "scores-available", finding, ev)


def _assigned(fn: FunctionSource, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for n in walked(fn.node)
    )


def padding(
    rules: OeaRules, fw: dict[str, Any], point: Point, masks: list[CallSite]
) -> dict[str, Any]:
    param = fw["calls"]["pad_param"]
    params = {a.arg for a in (*point.source.node.args.args, *point.source.node.args.kwonlyargs)}
    live = [m for m in masks if m.runs != "not on this path"]
    ev = [f"{m.file}:{m.line}: {m.name} in {m.function.split(':')[-1]} ({m.runs})" for m in live]
    if param in params:
        ev.append(f"{point.function.split(':')[-1]} takes {param}")
    if live:
        finding = (
            f"the router marks padded rows ({param}) with topk_ids = -1; OEA must exclude "
            "them from the batch's expert set and leave them -1"
        )
    elif param in params:
        finding = (
            f"padded rows are not masked before the point: use {param} to exclude rows past it"
        )
    else:
        finding = (
            "no padding count reaches the point: padded rows of a captured batch count toward T"
        )
    return _c(rules, "padding", finding, ev)


def expert_ids(
    rules: OeaRules,
    fw: dict[str, Any],
    remaps: list[CallSite],
    after: list[CallSite],
    info: tuple[str, list[str]] | None,
) -> dict[str, Any]:
    name = fw["calls"]["remap_info"]
    live = [r for r in remaps if r.runs != "not on this path"]
    ev = [f"{r.file}:{r.line}: {r.name} in {r.function.split(':')[-1]} ({r.runs})" for r in live]
    ev += [f"{a.file}:{a.line}: {a.name} after the point" for a in after]
    if info is not None:
        ev.append(f"{name} on the traced path = {info[0]} ({'; '.join(info[1]) or 'traced'})")
    if live:
        finding = (
            f"already remapped: {live[0].name} runs inside the router call before it returns, so "
            f"topk_ids are physical (replica) ids whenever {name} is given (EPLB); with it None "
            "the remap is the identity and ids are logical"
        )
    elif after:
        finding = f"logical expert ids; the remap ({after[0].name}) runs after the point"
    else:
        finding = "logical expert ids; no remap call on the path"
    return _c(rules, "expert-ids", finding, ev)
