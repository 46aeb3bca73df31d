"""The server-argument phase: the framework's own argument object, resolved as at start-up;
and the budgeted phases every set-up step runs in."""

from __future__ import annotations

from typing import Any

from routescope.analysis.engine.budget import BudgetExceeded
from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.join import commit_agreed
from routescope.analysis.engine.state import Decision, PathState
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    FunctionVal,
    Instance,
    Unknown,
    UnknownKind,
    Value,
)
from routescope.analysis.phases.deployment import Deployment
from routescope.analysis.phases.frameworks import FrameworkRules
from routescope.analysis.phases.trace import resolve_entry
from routescope.errors import RoutescopeError


def server_arguments(
    engine: Engine, rules: FrameworkRules, dep: Deployment, notes: list[str], forks: list[Decision]
) -> Value:
    """The framework's server-argument object: its defaults, --set, --tp, then its own
    post-processing (per-GPU and per-model overrides), then the start-up install steps.
    Conditions a step could not decide (its paths were joined) go to `forks`."""
    sa_rules = rules.data.get("server_args", {})
    checkpoint = engine.facts.checkpoint
    for candidate in sa_rules.get("class", []):
        cls = resolve_entry(engine, candidate)
        if not isinstance(cls, ClassVal):
            continue
        inst = Instance(cls, {}, "server_args")
        engine.dataclass_init(cls, inst, [], {})
        fields = {k[9:] for c in cls.mro() for k in c.attrs if k.startswith("__field__")}
        for field_name, v in list(inst.fields.items()):
            if isinstance(v, Const) and not v.origins:
                inst.fields[field_name] = Const(v.value, (f"{cls.qualname} default",))
        root = checkpoint.root if checkpoint else None
        given: dict[str, Value] = {
            "model_path": Const(root, ("the model",)),
            "tp_size": Const(dep.tp, ("--tp",)),
        }
        if dep.quant and dep.quant != "bf16":
            given["quantization"] = Const(dep.quant, ("--quant",))
        for key, value in dep.server_args.items():
            if key not in fields:
                raise RoutescopeError(f"--set {key}", f"{cls.qualname} has no such field")
            given[key] = Const(value, (f"--set {key}",))
        inst.fields.update({k: v for k, v in given.items() if k in fields})
        unsettled = False
        for step in sa_rules.get("post_init", []):
            method = cls.lookup(step)
            if not isinstance(method, FunctionVal):
                continue  # the rules list every release's steps; each release has some
            outs = run_phase(
                engine,
                PHASE_STEPS["server_args"],
                f"server-argument step {step}",
                lambda m=method, i=inst: engine.call(PathState(envs=[{}]), m.bind(i), [], {}, None),
                merge_at=4,
            )
            stopped = next((s.stopped for s, _ in outs if s.stopped), "")
            if stopped:
                notes.append(f"server-argument step {step} did not finish: {stopped}")
                unsettled = True
            if len(outs) > 1:  # the roots: not undecided by a join
                forks.extend(
                    d
                    for s, _ in outs
                    for d in s.decisions
                    if d.value is None and d.kind is not UnknownKind.JOINED
                )
            commit_agreed([s for s, _ in outs], inst)  # what the step wrote on other objects
            inst = settle(inst, [s for s, _ in outs], notes, step)
        for fn_name in sa_rules.get("install", []):
            if unsettled:  # publishing half-resolved arguments would resolve them again
                notes.append(
                    f"server start-up step {fn_name} skipped: the server arguments did not settle"
                )
                continue
            fn = resolve_entry(engine, fn_name)
            if isinstance(fn, Unknown):
                notes.append(f"server start-up step {fn_name} is absent in this version")
                continue
            outs = run_phase(
                engine,
                PHASE_STEPS["server_args"],
                f"server start-up step {fn_name}",
                lambda f=fn, i=inst: engine.call(PathState(envs=[{}]), f, [i], {}, None),
                merge_at=4,
            )
            stopped = next((s.stopped for s, _ in outs if s.stopped), "")
            if stopped:
                notes.append(f"server start-up step {fn_name} did not finish: {stopped}")
            elif outs:
                outs[0][0].commit()  # the server's globals and contexts now hold these arguments
        return inst
    notes.append("no server-argument class found; server arguments are unknown")
    return Unknown("server arguments", kind=UnknownKind.INPUT)


# Each phase gets its own share of time, so a slow one ends Unknown without starving the rest.
# Evaluation steps per phase (about 30k steps a second here): a phase that needs more ends
# Unknown, deterministically, and the next phase starts with its own allowance.
PHASE_STEPS = {"server_args": 600_000, "model": 120_000, "block": 120_000, "trace": 250_000}


def run_phase(
    engine: Engine, steps: int, what: str, run: Any, record_inputs: bool = False, merge_at: int = 24
) -> list[tuple[PathState, Value]]:
    engine.budget.push(steps, f"{what} exceeded its budget of {steps:,} evaluation steps")
    engine.record_inputs = record_inputs
    engine.budget.merge_at = merge_at
    try:
        result: list[tuple[PathState, Value]] = run()
        return result
    except BudgetExceeded as exc:
        st = PathState(envs=[{}])
        st.stopped = str(exc)
        return [(st, Unknown(str(exc), kind=UnknownKind.BUDGET))]
    finally:
        engine.budget.pop()
        engine.record_inputs = True
        engine.budget.merge_at = 24


def settle(inst: Instance, states: list[PathState], notes: list[str], step: str) -> Instance:
    """Server arguments after a step that may have forked: fields every path agrees on keep
    their value, the others become Unknown naming the step (never one path's guess)."""
    views = [s.fields(inst) for s in states] or [inst.fields]
    merged: dict[str, Value] = {}
    for key in dict.fromkeys(k for v in views for k in v):
        vals = [v.get(key) for v in views]
        first = vals[0]
        same = all(v is first for v in vals) or all(
            isinstance(v, Const) and isinstance(first, Const) and repr(v.value) == repr(first.value)
            for v in vals
        )
        merged[key] = (
            first
            if same and first is not None
            else Unknown(
                f"depends on conditions in {step} the facts do not decide (server argument {key})",
                kind=UnknownKind.JOINED,
            )
        )
    changed = [
        k
        for k in merged
        if isinstance(merged[k], Unknown) and not isinstance(inst.fields.get(k), Unknown)
    ]
    if changed:
        notes.append(f"{step}: undecided for {', '.join(sorted(changed)[:6])}")
    inst.fields.clear()
    inst.fields.update(merged)
    if states:  # what the step wrote elsewhere (contexts, module state) takes the first path's
        states[0].heap.pop(id(inst), None)
        states[0].commit()
    return inst
