"""report -> report["verdict"]: is OEA insertable on the decode path, where, and under what."""

from __future__ import annotations

import ast
from typing import Any

from routescope.analysis.index import Index
from routescope.errors import RoutescopeError
from routescope.patch.call import names_in_scope, router_call, value_text
from routescope.report import FUSED_MOE_KERNEL, raised_text, sink_args_text
from routescope.verdict import constraints as C
from routescope.verdict.callees import CallSite, find_calls
from routescope.verdict.facts import (
    input_value,
    router_absent,
    router_attribute,
    with_router_fields,
)
from routescope.verdict.point import Point, calls_in, find_point, following
from routescope.verdict.rules import OeaRules, load_oea_rules
from routescope.verdict.sketch import from_constraints
from routescope.verdict.source import FunctionSource, function_at, function_named, open_index
from routescope.verdict.switch import find_switch, returned, switch_from_router, way_out


def build_verdict(doc: dict[str, Any], index: Index | None = None) -> dict[str, Any]:
    """The verdict for a report that has a dispatch; `index` defaults to reopening its source."""
    rules = load_oea_rules()
    dep, disp = doc["deployment"], doc["dispatch"]
    fw = rules.framework(dep["framework"])
    base: dict[str, Any] = {
        "rules": rules.files.get(dep["framework"]),
        "insertable": None,
        "why": "",
        "path": None,
        "insertion_point": None,
        "switch": None,
        "constraints": [],
        "sketch": None,
        "paths": [],
    }
    if fw is None:
        return {**base, "why": f"no OEA rules for {dep['framework']}"}
    doc = with_router_fields(doc, fw, base["rules"])
    if index is None:
        try:
            index = open_index(dep["source"])
        except RoutescopeError as exc:
            return {**base, "why": f"framework source not readable: {exc.message}"}
    if disp["status"] == "blocked":  # nothing runs decode until what stops it is changed
        stop = disp["stops"][0]
        why = (
            f"the deployment stops in {stop['step']} ({stop['exception']} at {stop['file']}:"
            f"{stop['line']}): no decode path runs until what stops it changes (see the blocker)"
        )
        return {**base, "insertable": False, "why": why}
    assessed = [assess(doc, p, index, rules, fw) for p in disp["paths"]]
    if disp["status"] == "selected":
        return {**base, **assessed[0], "path": 0}
    word = "forked" if disp["status"] == "forked" else "unknown"
    said = {True: "insertable", False: "not insertable", None: "not decided"}
    verdicts = [said[v] for v in (True, False, None) if any(a["insertable"] is v for a in assessed)]
    why = (
        f"the dispatch is {word}: {len(assessed)} feasible path(s); "
        f"per path: {', '.join(verdicts)}; "
        "decide the conditions listed under 'would decide' to get one verdict"
    )
    return {**base, "why": why, "paths": assessed}


def assess(
    doc: dict[str, Any], path: dict[str, Any], index: Index, rules: OeaRules, fw: dict[str, Any]
) -> dict[str, Any]:
    """One path's verdict: insertable, why, insertion point, switch, constraints, sketch."""
    out: dict[str, Any] = {
        "insertable": None,
        "why": "",
        "insertion_point": None,
        "switch": None,
        "constraints": [],
        "sketch": None,
    }
    sink = path["sink"]
    fused = sink is not None and sink["kind"] == FUSED_MOE_KERNEL
    if fused or (sink is None and path["outcome"] == "return" and not path["stopped"]):
        handoff = path.get("handoff")
        router_part = {**path, "decisions": path["decisions"][: handoff["decision"]]} \
            if handoff else path  # fmt: skip
        # a trace that starts in the experts layer (no handoff) never calls the router when the
        # kernel routes: the layer hands its logits straight to the kernel
        ret = returned(router_part, index) if handoff or not fused else None
        switch = find_switch(path, index, fw) or switch_from_router(doc, path, index, fw)
        what = (
            f"returns {ret[0]} at {ret[1]}"
            if ret
            else "is never called: the experts layer hands the router logits to the kernel"
            if fused and not handoff
            else "returns without calling a router kernel"
        )
        where = ""
        if fused:
            given = sink_args_text(sink)
            where = f"; {sink['name']} routes inside the expert GEMM launch at " \
                    f"{sink['file']}:{sink['line']}" + (f" ({given})" if given else "")  # fmt: skip
        out.update(
            insertable=False,
            switch=switch,
            why=f"routing is fused into the MoE kernel: the router {what}{where}, so topk_ids "
            "and topk_weights never exist as tensors in Python" + way_out(switch),
        )
        return out
    if sink is None:
        out["why"] = (
            f"the path {raised_text(path)} before a router kernel"
            if path.get("raised")
            else f"the path stopped before a router kernel: {path['stopped'] or path['outcome']}"
        )
        return out
    point = find_point(path, index, fw["tensors"])
    if point is None:  # the routing runs inside a call that never hands its ids back
        switch = find_switch(path, index, fw) or switch_from_router(doc, path, index, fw)
        out.update(
            insertable=False,
            switch=switch,
            why=f"no statement on the path binds {fw['tensors']['ids'][0]} and "
            f"{fw['tensors']['weights'][0]} from the router call ({sink['name']})"
            + way_out(switch),
        )
        return out
    out["insertion_point"] = _point_dict(point, path, fw)
    out["constraints"] = _constraints(doc, path, index, rules, fw, point)
    pad = fw["calls"]["pad_param"] if _takes(point, fw["calls"]["pad_param"]) else None
    scope = _scope(point, point.stmt.lineno)
    logits = next(
        (n for n in fw["tensors"]["logits"] if _takes(point, n) or n in scope),
        fw["tensors"]["logits"][0],
    )
    indent = " " * (point.stmt.col_offset if not point.after else point.after.col_offset)
    out["sketch"] = from_constraints(
        doc, indent, pad, logits, _sketch_names(doc, fw, point, out["insertion_point"])
    )
    fname = point.function.split(":")[-1]
    out.update(
        insertable=True,
        why=f"topk_ids and topk_weights are Python tensors in {fname} right "
        f"after {point.source.module.relpath}:{point.stmt.end_lineno or point.stmt.lineno}, "
        "before any post-processing",
    )
    return out


def _scope(point: Point, line: int) -> set[str]:
    """The names in scope at `line`: searched in the point's function, which the trace has
    parsed already; the whole file only for a line outside it."""
    first, last = point.source.span
    if first <= line <= last:
        return names_in_scope(point.source.node, line)
    return names_in_scope("\n".join(point.source.module.lines), line)


def _takes(point: Point, name: str) -> bool:
    args = point.source.node.args
    return any(a.arg == name for a in (*args.args, *args.kwonlyargs))


def _sketch_names(
    doc: dict[str, Any], fw: dict[str, Any], point: Point, where: dict[str, Any]
) -> dict[str, str]:
    """How the point reaches each value the sketch reads, as `routescope patch` wires it: the
    router call's argument, a name in scope, the router's attribute through the object the
    call is made on, the value the rules declare for a router without one."""
    given, on = router_call(where["before"]["text"], where["router_call"]["through"])
    scope = _scope(point, where["before"]["line"])
    disp = doc["dispatch"]  # the router's own names (OEA's are added for the constraints)
    router = disp.get("router_as_built") or disp.get("router") or {}
    flag = (fw.get("patch") or {}).get("flag") or {}
    out = (
        {"decode": f"decode only, as routescope patch tests it: {flag['function']}()"}
        if flag
        else {}
    )
    bound = {n.id for t in getattr(point.stmt, "targets", []) for n in ast.walk(t)
             if isinstance(n, ast.Name)}  # fmt: skip
    for role in ("ids", "weights"):  # the names the point binds them to (topk_indices)
        found = next((n for n in fw["tensors"][role] if n in bound), None)
        if found is not None:
            out[role] = found
    if not any(n in scope or _takes(point, n) for n in fw["tensors"]["logits"]):
        out["logits_in_scope"] = "no"
    for name in ("correction_bias", "routed_scaling_factor",
                 "apply_routed_scaling_factor_on_output"):  # fmt: skip
        text = value_text(name, scope, given, on,
                          lambda n: router_attribute(router, fw, n),
                          lambda n: router_absent(fw, n)[:2])  # fmt: skip
        if text is not None:
            out[name] = text
    return out


def _point_dict(point: Point, path: dict[str, Any], fw: dict[str, Any]) -> dict[str, Any]:
    src, rel = point.source, point.source.module.relpath
    end = point.stmt.end_lineno or point.stmt.lineno
    after = point.after
    gone = [(s.lineno, s.end_lineno or s.lineno) for s in point.skipped]
    post = [
        (n, ln)
        for n, ln in calls_in(following(point), fw["calls"]["post_process"])
        if not any(a <= ln <= b for a, b in gone)
    ]
    return {
        "file": rel,
        "function": point.function,
        "line": end,
        "insert_after_line": end,
        "before": {
            "line": point.stmt.lineno,
            "end_line": end,
            "text": src.text(point.stmt.lineno, end),
        },
        "after": None
        if after is None
        else {
            "line": after.lineno,
            "end_line": after.end_lineno or after.lineno,
            "text": src.text(after.lineno, after.end_lineno or after.lineno),
        },
        "skipped": [
            {
                "line": s.lineno,
                "text": src.text(s.lineno, s.lineno).strip(),
                "because": "decided false on this path",
            }
            for s in point.skipped
        ],
        "router_call": {"line": point.call_line, "through": list(point.chain)},
        "post_processing": [{"call": n, "line": ln} for n, ln in post],
    }


def _callee_calls(
    path: dict[str, Any], index: Index, point: Point, names: list[str]
) -> list[CallSite]:
    out: list[CallSite] = []
    for qual in point.chain:
        frame = next((f for f in path["frames"] if f["function"] == qual), None)
        fn = function_at(index, frame["file"], frame["line"]) if frame else None
        if fn is not None:
            out += find_calls(fn, qual, names, path["decisions"], traced=True)
    kernel = sink_function(index, path["sink"])
    if kernel is not None:
        out += find_calls(kernel, path["sink"]["name"], names, path["decisions"], traced=False)
    return out


def _constraints(
    doc: dict[str, Any],
    path: dict[str, Any],
    index: Index,
    rules: OeaRules,
    fw: dict[str, Any],
    point: Point,
) -> list[dict[str, Any]]:
    kernel = sink_function(index, path["sink"])
    callers = _callers(path, point)
    remaps = _callee_calls(path, index, point, fw["calls"]["remap"])
    masks = _callee_calls(path, index, point, fw["calls"]["pad_mask"])
    after = [
        CallSite(n, point.function, point.source.module.relpath, ln, "after")
        for n, ln in calls_in(following(point), fw["calls"]["remap"])
    ]
    return [
        C.routed_columns(doc, rules),
        C.scores(
            doc, rules, kernel, fw["tensors"].get("bias", []), _kernel_caller(index, path, point)
        ),
        C.renormalise(doc, rules),
        C.scaling(doc, rules),
        C.groups(doc, rules),
        C.cuda_graph(doc, rules, fw, index),
        C.opaque(doc, rules, fw, point, callers, path["sink"]),
        C.scores_available(doc, rules, point, fw, path["sink"]),
        C.padding(rules, fw, point, masks),
        C.expert_ids(rules, fw, remaps, after, input_value(path, fw["calls"]["remap_info"])),
    ]


def _kernel_caller(index: Index, path: dict[str, Any], point: Point) -> FunctionSource | None:
    """The function on the point's chain that called the routing kernel."""
    sink = path["sink"]["name"]
    caller = next((q for q in reversed(point.chain) if q != sink), None)
    return function_named(index, caller) if caller is not None else None


def _callers(path: dict[str, Any], point: Point) -> list[dict[str, Any]]:
    """The point's frame and every frame that (transitively) called it."""
    by_site = {f["function"]: f for f in path["frames"]}
    out = []
    frame = by_site.get(point.function)
    while frame is not None:
        out.append(frame)
        site = frame["called_at"]
        if not site:
            break
        file, _, line = site.rpartition(":")
        frame = next(
            (
                f
                for f in reversed(path["frames"][: path["frames"].index(frame)])
                if f["file"] == file and f["line"] <= int(line)
            ),
            None,
        )
    return out


def sink_function(index: Index, sink: dict[str, Any]) -> FunctionSource | None:
    """The Python function the routing kernel is: the sink itself when it is a function in the
    tree; for a torch op (torch.topk in a router that is torch ops), the function calling it."""
    found = function_named(index, sink["name"])
    if found is None and sink.get("kind") == "torch" and sink.get("called_from"):
        caller = function_named(index, sink["called_from"])
        # read only where its code computes one score (a function with a sigmoid branch and a
        # softmax branch does not say by its source which this path ran)
        if caller is not None and len({n for n, _ in C.score_calls(caller)}) <= 1:
            found = caller
    return found
