"""The server-argument phase: the framework's own argument object, resolved as at start-up;
and the budgeted phases every set-up step runs in."""

from __future__ import annotations

from typing import Any

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.join import JOIN_DEPTH, join_fields, join_values
from routescope.analysis.engine.joinscope import joining
from routescope.analysis.engine.state import Decision, PathState
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    FunctionVal,
    Instance,
    Unknown,
    UnknownKind,
    Value,
    describe,
)
from routescope.analysis.phases.declared import Declared, declared_choices
from routescope.analysis.phases.deployment import Deployment, ep_argument
from routescope.analysis.phases.frameworks import FrameworkRules
from routescope.analysis.phases.notes import Notes
from routescope.analysis.phases.runphase import PHASE_STEPS, run_phase
from routescope.analysis.phases.trace import resolve_entry
from routescope.errors import RoutescopeError


def server_arguments(
    engine: Engine,
    rules: FrameworkRules,
    dep: Deployment,
    notes: Notes,
    forks: list[Decision],
    choosing: list[Decision] | None = None,
) -> Value:
    """The framework's server-argument object: its defaults, --set, --tp, then its own
    post-processing (per-GPU and per-model overrides), then the start-up install steps.
    Conditions a step could not decide (its paths were joined) go to `forks`; those that read
    an argument the rules say chooses the kernels go to `choosing`."""
    sa_rules = rules.data.get("server_args", {})
    chooses = tuple(sa_rules.get("chooses", ()))
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
        names = sa_rules.get("fields", {})
        given: dict[str, Value] = {
            names["model"]: Const(root, ("the model",)),
            names["tp"]: Const(dep.tp, ("--tp",)),
        }
        declared = declared_choices(
            engine, cls, {*dep.server_args, *([names["quant"]] if dep.quant else [])}
        )
        quant = _quant_method(dep.quant, sa_rules, declared.get(names.get("quant", "")))
        if quant is not None:
            given[names["quant"]] = Const(quant, ("--quant",))
        for key, value in dep.server_args.items():
            if key not in fields:
                raise RoutescopeError(f"--set {key}", f"{cls.qualname} has no such field")
            d = declared.get(key)
            if d is not None and not d.accepts(value):
                raise RoutescopeError(
                    f"--set {key}={value}", f"not a choice declared at {d.where}: {d.shown()}"
                )
            value = typed(key, value, inst.fields.get(key), cls.qualname)
            given[key] = Const(value, (f"--set {key}",))
        if dep.ep is not None:
            given.update(
                expert_parallel(sa_rules.get("expert_parallel"), dep, given, inst.fields, fields)
            )
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
                notes.did_not_finish(f"server-argument step {step} did not finish: {stopped}")
                unsettled = True
            forks.extend(_forked(outs))
            if choosing is not None and chooses:
                choosing.extend(
                    d
                    for s, _ in outs
                    for d in s.decisions
                    if d.value is not None and any(c in d.text for c in chooses)
                )
            engine.commit_all([s for s, _ in outs], inst)  # what it wrote on other objects
            inst = settle(inst, [s for s, _ in outs], notes, step)
        if "product" in sa_rules:
            engine.facts.bindings["server_config"] = _product(
                engine, cls, inst, str(sa_rules["product"]), notes, forks, unsettled
            )
        for entry in sa_rules.get("install", []):
            if unsettled:  # publishing half-resolved arguments would resolve them again
                notes.append(
                    f"server start-up step {_step_name(entry)} skipped: the server arguments "
                    "did not settle"
                )
                continue
            found = _install_step(engine, rules, entry)
            if found is None:
                continue  # the rules list every release's steps; each release has some
            fn_name, step_run = found
            outs = run_phase(
                engine,
                PHASE_STEPS["server_args"],
                f"server start-up step {fn_name}",
                lambda r=step_run, i=inst: r(i),
                merge_at=4,
            )
            stopped = next((s.stopped for s, _ in outs if s.stopped), "")
            if stopped:
                notes.did_not_finish(f"server start-up step {fn_name} did not finish: {stopped}")
            elif outs:  # the server's globals and contexts now hold these arguments
                engine.commit_all([s for s, _ in outs])
        return inst
    notes.append("no server-argument class found; server arguments are unknown")
    return Unknown("server arguments", kind=UnknownKind.INPUT)


def expert_parallel(
    how: Any, dep: Deployment, given: dict[str, Value], defaults: dict[str, Value], fields: set[str]
) -> dict[str, Value]:
    """--ep as the release takes it (the rules' `expert_parallel`): a size argument, or a
    switch whose size the other parallel sizes fix (each rank then holds whole experts, as many
    ranks as the named sizes multiply to). A size the release cannot be given exits 2 naming
    the ones it can."""
    target = ep_argument(how)
    if target is None:
        raise RoutescopeError(
            f"--ep {dep.ep}", "this framework's rules name no expert-parallel option"
        )
    if target not in fields:
        raise RoutescopeError(f"--ep {dep.ep}", f"this release's server arguments have no {target}")
    if target in dep.server_args:  # a way out changed it (both from the user: ep_given_once)
        return {}
    if isinstance(how, str):
        return {target: Const(dep.ep, ("--ep",))}
    size, parts, known = 1, [], True
    for name in how["size"]:
        if name not in fields:
            continue  # (an older release without that kind of parallelism: 1)
        v = given.get(name, defaults.get(name))
        if not isinstance(v, Const) or not isinstance(v.value, int):
            known = False  # the size is not known here: --ep is taken as given
            continue
        size *= v.value
        parts.append(f"{name} {v.value}")
    if known and dep.ep not in (1, size):
        raise RoutescopeError(
            f"--ep {dep.ep}",
            f"{target} makes the expert-parallel size {' x '.join(parts)} = {size} "
            f"({how.get('where', 'the rules')}): --ep takes {size}, or 1 for none",
        )
    return {target: Const((dep.ep or 1) > 1, ("--ep",))}


def _forked(outs: list[tuple[PathState, Value]]) -> list[Decision]:
    """The conditions a step could not decide, where its ways forked (their roots: a condition
    undecided because of a join is not one)."""
    if len(outs) < 2:
        return []
    return [d for s, _ in outs for d in s.decisions
            if d.value is None and d.kind is not UnknownKind.JOINED]  # fmt: skip


def _product(
    engine: Engine,
    cls: ClassVal,
    inst: Instance,
    name: str,
    notes: Notes,
    forks: list[Decision],
    unsettled: bool,
) -> Value:
    """The configuration the server runs with, built by the argument object's own method (an
    engine-arguments class's create-config method): one object on every way through it, its
    fields joined where the ways differ; Unknown, saying why, when it could not be built."""
    method = cls.lookup(name)
    if unsettled or not isinstance(method, FunctionVal):
        why = "the server arguments did not settle" if unsettled else f"no {name} in this release"
        notes.append(f"the server configuration ({cls.qualname}.{name}) was not built: {why}")
        return Unknown(f"the server configuration: {why}", kind=UnknownKind.INPUT)
    what = f"server configuration {cls.qualname}.{name}"
    fatal = len(engine.fatal)
    outs = run_phase(
        engine,
        PHASE_STEPS["server_args"],
        what,
        lambda: engine.call(PathState(envs=[{}]), method.bind(inst), [], {}, None),
        merge_at=4,
    )
    stopped = next((s.stopped for s, _ in outs if s.stopped), "")
    if stopped:
        notes.did_not_finish(f"{what} did not finish: {stopped}")
        return Unknown(f"the server configuration: {stopped}", kind=UnknownKind.BUDGET)
    if len(engine.fatal) > fatal:  # every way through raises: what the tolerant run built is
        return Unknown(f"the server configuration: {engine.fatal[-1]}",  # not what serves
                       kind=UnknownKind.RAISED)  # fmt: skip
    forks.extend(_forked(outs))
    values = [v for _, v in outs]
    states = [s for s, _ in outs]
    if values and all(v is values[0] for v in values) and isinstance(values[0], Instance):
        engine.commit_all(states, inst)
        return settle(values[0], states, notes, what)
    why = f"depends on conditions in {what} the facts do not decide"
    joined = join_values(list(values), states, why) if values else None
    if not isinstance(joined, Instance):  # not one kind of object on every way
        shown = " or ".join(dict.fromkeys(describe(v) for v in values)) or "nothing"
        notes.did_not_finish(f"{what} did not build one configuration: {shown}")
        return Unknown(f"the server configuration: {shown}", kind=UnknownKind.JOINED)
    engine.commit_all(states, inst)
    notes.append(f"{what}: {len(values)} ways through it; the configuration is joined over "
                 "them (a setting they disagree on is unknown)")  # fmt: skip
    return joined


TRUE, FALSE = ("true", "1", "yes"), ("false", "0", "no")


def typed(key: str, value: Any, default: Value | None, owner: str) -> Any:
    """A --set value as the field's type has it, the type read from its default: a boolean
    field takes true/false (1/0, yes/no; any case), an integer field an integer, a float field
    a number. A value of another type exits 2 (the string 'False' would count as true)."""
    if not isinstance(default, Const) or default.value is None:
        return value
    kind = type(default.value)
    shown = f"{owner}.{key} is {kind.__name__} (default {default.value!r})"
    if kind is bool:
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        if word in TRUE or word in FALSE:
            return word in TRUE
        raise RoutescopeError(f"--set {key}={value}", f"{shown}: expected true or false")
    if kind is int and not (isinstance(value, int) and not isinstance(value, bool)):
        raise RoutescopeError(f"--set {key}={value}", f"{shown}: expected an integer")
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise RoutescopeError(f"--set {key}={value}", f"{shown}: expected a number")
        return float(value)
    if kind is str and not isinstance(value, str):
        return str(value) if not isinstance(value, bool) else value
    return value


def _step_name(entry: Any) -> str:
    alternatives = entry if isinstance(entry, list) else [entry]
    return " or ".join(
        a if isinstance(a, str) else str(a.get("call") or a.get("name", "")) for a in alternatives
    )


Step = Any  # server arguments -> the paths of the step


def _install_step(engine: Engine, rules: FrameworkRules, entry: Any) -> tuple[str, Step] | None:
    """The first of a start-up step's alternatives this release has, as (its name, how to run
    it on the server arguments); None when the release has none of them. An alternative is a
    function called with the server arguments (and keyword arguments the rules give, evaluated
    in its module: the launcher's placement of the process), or an expression the rules give,
    evaluated in a module where its `when` holds (the state a running server has built)."""
    where = f"{rules.path} server_args.install"
    for alt in entry if isinstance(entry, list) else [entry]:
        if isinstance(alt, dict) and "run" in alt:
            module, text = str(alt["in"]), str(alt["run"])
            test = str(alt.get("when", "True"))
            when = engine.evaluate_in(PathState(envs=[{}]), module, test, {})
            if len(when) != 1 or not (isinstance(when[0][1], Const) and when[0][1].value is True):
                continue
            engine.facts.assume("startup", module, str(alt.get("assumes", text)), where)

            def run_expr(inst: Value, m: str = module, t: str = text) -> Any:
                return engine.evaluate_in(PathState(envs=[{}]), m, t, {"server_args": inst})

            return f"{module}: {alt['name']}", run_expr
        name = alt if isinstance(alt, str) else str(alt["call"])
        fn = resolve_entry(engine, name)
        if not isinstance(fn, FunctionVal):
            continue
        given = {} if isinstance(alt, str) else dict(alt.get("kwargs", {}))
        params = {a.arg for a in (*fn.node.args.args, *fn.node.args.kwonlyargs)}
        if not set(given) <= params:
            continue  # this release's function takes no such argument
        kwargs: dict[str, Value] = {}
        for key, text in given.items():
            got = engine.summary(PathState(envs=[{}]), fn, str(text))
            if len(got) != 1 or isinstance(got[0][1], Unknown):
                break  # a name the expression needs is not in this release
            kwargs[key] = got[0][1]
        else:
            if given:
                shown = ", ".join(f"{k}={v}" for k, v in given.items())
                engine.facts.assume("startup", name, f"called with {shown}", where)

            def run_call(inst: Value, f: FunctionVal = fn, kw: dict[str, Value] = kwargs) -> Any:
                return engine.call(PathState(envs=[{}]), f, [inst], kw, None)

            return name, run_call
    return None


def _quant_method(quant: str | None, sa_rules: dict[str, Any], d: Declared | None) -> str | None:
    """The framework's own quantization method for --quant: one of the names its argument
    declares, or an alias the rules give (nvfp4 -> modelopt_fp4); None for bf16 or no --quant
    (the checkpoint decides, as it does for the server)."""
    if quant is None or quant == "bf16":
        return None
    aliases: dict[str, str] = sa_rules.get("quant_aliases", {})
    method = aliases.get(quant, quant)
    if d is not None and not d.accepts(method):
        known = ", ".join(f"{a} ({m})" for a, m in aliases.items())
        raise RoutescopeError(
            f"--quant {quant}",
            f"this release accepts bf16, {d.shown()} (declared at {d.where}); aliases: {known}",
        )
    return method


def settle(inst: Instance, states: list[PathState], notes: list[str], step: str) -> Instance:
    """Server arguments after a step that may have forked, joined with the engine's one join:
    a field every path agrees on keeps its value, a container each path built holds its items
    joined (a declaration stash rebuilt on each of four paths with the same entries is that
    list, not an unknown), anything else becomes Unknown naming the step (never one path's
    guess)."""
    views = [s.fields(inst) for s in states] or [inst.fields]
    why = f"depends on conditions in {step} the facts do not decide"
    with joining():
        merged = join_fields(views, states or [PathState(envs=[{}])], why, JOIN_DEPTH)
    for key, value in merged.items():  # a field that is unknown names itself
        if isinstance(value, Unknown) and value.kind is UnknownKind.JOINED and value.reason == why:
            merged[key] = Unknown(f"{why} (server argument {key})", kind=UnknownKind.JOINED)
    changed = [
        k
        for k in merged
        if isinstance(merged[k], Unknown) and not isinstance(inst.fields.get(k), Unknown)
    ]
    if changed:
        notes.append(f"{step}: undecided for {', '.join(sorted(changed)[:6])}")
    inst.fields = merged
    return inst
