"""Following a router that routes nothing into the layer it hands its result to."""

from __future__ import annotations

import ast
from dataclasses import replace

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.state import Decision, PathState, SinkHit
from routescope.analysis.engine.values import (
    ClassVal,
    Instance,
    Tensor,
    Value,
)
from routescope.analysis.modules import module_name
from routescope.analysis.phases.block import nearest, reached
from routescope.analysis.phases.frameworks import FrameworkRules
from routescope.analysis.phases.runphase import PHASE_STEPS
from routescope.analysis.phases.trace import (
    TracedPath,
    resolve_entry,
    trace_call,
    trace_serving,
)

# the experts a router's result goes on to: its ways join at this many paths (only the kernels
# each launches are read)
EXPERTS_MERGE_AT = 4


def into_consumer(
    engine: Engine,
    rules: FrameworkRules,
    block: Value,
    traced: list[TracedPath],
    notes: list[str],
    hidden: Value | None = None,
) -> list[TracedPath]:
    """A router path that hands its inputs on without routing (no kernel, a returned record of
    the logits) goes on into the layer the block hands the result to, where the
    routing then happens (the fused MoE kernel). When no way through that layer reaches a
    kernel, the router's own path stands (routing is still not done by the router), with a
    note saying why the kernel is not named."""
    rule = rules.data["router"].get("consumer")
    cls = consumer_classes(engine, rules)
    if not rule or not cls or rules.data["router"].get("entry") == "consumer":
        return traced  # (a trace that starts in the consumer went through it)
    out: list[TracedPath] = []
    for p in traced:
        if p.outcome != "return" or p.end is None or p.value is None:
            out.append(p)
            continue
        consumer = nearest(p.end, block, cls)
        if consumer is None:
            out.append(p)
            continue
        fn = engine.attribute(p.end, consumer, rule["call"])[0][1]
        hidden = hidden if hidden is not None else Tensor()
        if p.sink is not None:  # the router routed: what the experts then launch on the GPU
            ways = _experts_launches(engine, fn, p, hidden)
            if ways is None:
                notes.append(
                    f"the experts layer's forward ({rule['call']}) did not finish within its "
                    "budget: the kernels it launches are not checked against the GPU"
                )
            out.append(replace(p, experts=ways or ()))
            continue
        engine.budget.push(PHASE_STEPS["trace"], "the consumer trace exceeded its budget")
        engine.tracing = True
        try:
            more = trace_serving(
                engine,
                fn,
                [hidden, p.value],
                {},
                p.end,
                "the experts layer's decode forward",
                as_served=False,  # weight loading, which routescope does not model, never ran
                # the layer routes, then runs the experts: what it returns is their output (a
                # tensor torch ops made), the routing is the first kernel that routed
                by_kernel=True,
            )
        finally:
            engine.tracing = False
            engine.budget.pop()
        handoff = (getattr(fn, "qualname", rule["call"]), len(p.frames), len(p.decisions))
        if not any(q.sink for q in more):
            why = next((q.stopped or q.result for q in more if q.stopped or q.result), "")
            failed = next((d for q in more if (d := _failed_assert(engine, q)) is not None), None)
            if failed is not None:  # what the trace saw fail, with the layer as it was built
                why = (
                    f"`assert {failed.text}` fails at {failed.file}:{failed.line} with the "
                    "layer as constructed (weight loading, not modelled, may change it)"
                )
            notes.append(
                f"the router hands its result to {handoff[0]}, whose trace reached no "
                f"kernel ({why or 'no kernel call on any path'}): the MoE kernel that "
                "routes is not named"
            )
            out.append(p)
            continue
        raising = [q for q in more if q.outcome == "raise" and not q.sink]
        if raising and len(raising) < len(more):
            # the layer is staged without the tensors weight loading makes: a way that raises
            # where another reaches the kernel rests on what was not loaded, not on the route
            at = raising[0].end.raised_at if raising[0].end is not None else None
            where = f" at {at[0]}:{at[1]}" if at else ""
            notes.append(
                f"{len(raising)} way(s) through {handoff[0]} raise {raising[0].result}{where} "
                "with the layer as constructed (weight loading, not modelled, makes its "
                "tensors): left out"
            )
            more = [q for q in more if q not in raising]
        for q in more:
            out.append(
                TracedPath(
                    (*p.decisions, *q.decisions),
                    (*p.frames, *q.frames),
                    q.sink,
                    q.outcome,
                    q.result,
                    q.stopped,
                    (*p.kernels, *q.kernels),
                    p.setup,
                    handoff,
                    q.end,
                    q.value,
                    (*p.launches, *q.launches),
                    (tuple(dict.fromkeys((*q.kernels, *q.launches))),),
                )
            )
    return out


def consumer_classes(engine: Engine, rules: FrameworkRules) -> tuple[ClassVal, ...]:
    """The classes the rules name as the layer a router hands its result to, that this
    release has."""
    rule = rules.data["router"].get("consumer") or {}
    names = rule.get("class", [])
    found = (resolve_entry(engine, n) for n in ([names] if isinstance(names, str) else names))
    return tuple(c for c in found if isinstance(c, ClassVal))


def decode_entry(
    engine: Engine, rules: FrameworkRules, st: PathState, block: Value, router: Instance,
    hidden: Value, logits: Value,
) -> tuple[Value, list[Value], str]:  # fmt: skip
    """Where the decode trace starts, with what: the router's call on the scores (`entry` =
    router), or the call of the layer the block hands the scores to (`entry` = consumer: a
    layer that decides itself whether the router runs, when its kernel routes inside)."""
    if rules.data["router"].get("entry") == "consumer":
        layer = nearest(st, block, consumer_classes(engine, rules))
        if layer is not None:
            rule = rules.data["router"]["consumer"]
            gate = rule.get("gate")
            if gate:  # what the gate the layer (or a part of it) holds gives: the scores
                gives = engine.evaluate_in(st.fork(), rules.data["package"], gate["returns"],
                                           {"scores": logits})  # fmt: skip
                held = reached(engine, st, layer, gate["attribute"]) if len(gives) == 1 else []
                for gate_obj in held:
                    engine.score_sources[id(gate_obj)] = (gate_obj, gives[0][1])
            fn = engine.attribute(st, layer, rule["call"])[0][1]
            return fn, [hidden, logits], "the experts layer's decode forward"
    fn = engine.attribute(st, router, rules.router_call)[0][1]
    return fn, [Tensor(role="scores"), logits], "the router's decode forward"


def _experts_launches(
    engine: Engine, fn: Value, p: TracedPath, hidden: Value
) -> tuple[tuple[SinkHit, ...], ...] | None:
    """The kernels each way through the experts layer's forward launches, handed the router's
    result (the layer as built: weight loading, which routescope does not model, never ran, so
    a way that raises or stops tells nothing and is left out)."""
    if p.value is None:
        return ()
    engine.budget.push(PHASE_STEPS["experts"], "the experts trace exceeded its budget")
    engine.tracing = True
    # only the kernels each way launches are read here: ways that launched the same ones join
    # early, as in the set-up phases (a join keeps every kernel a way reached)
    merge_at, engine.budget.merge_at = engine.budget.merge_at, EXPERTS_MERGE_AT
    try:
        ways = trace_call(engine, fn, [hidden, p.value], {}, start=p.end)
    finally:
        engine.tracing = False
        engine.budget.merge_at = merge_at
        engine.budget.pop()
    if ways and all(q.stopped for q in ways):
        return None  # over budget on every way: not known
    return tuple(
        tuple(dict.fromkeys((*q.kernels, *q.launches)))
        for q in ways
        if q.outcome == "return" and not q.stopped
    )


def _failed_assert(engine: Engine, path: TracedPath) -> Decision | None:
    """The last assert the path evaluated False (a failed assert raises: the path ends there)."""
    lines: dict[str, set[int]] = {}  # file -> the lines its asserts start on
    for d in reversed(path.decisions):
        if d.value is not False:
            continue
        if d.file not in lines:
            name = module_name(d.file)
            info = engine.index.module(name) if name else None
            tree = info.tree if info is not None else None
            lines[d.file] = (
                {n.lineno for n in ast.walk(tree) if isinstance(n, ast.Assert)}
                if tree is not None
                else set()
            )
        if d.line in lines[d.file]:
            return d
    return None
