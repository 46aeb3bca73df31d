"""Deployment + model + framework source -> every routing path with its decisions and sink."""

from __future__ import annotations

import ast
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routescope.analysis.deployment import Deployment
from routescope.analysis.engine import Engine
from routescope.analysis.facts import Checkpoint
from routescope.analysis.frameworks import FrameworkRules, build_facts
from routescope.analysis.index import Index
from routescope.analysis.interp import Budget, BudgetExceeded
from routescope.analysis.model import ModelSite, find_block, find_model_class
from routescope.analysis.modules import module_name
from routescope.analysis.state import Decision, PathState
from routescope.analysis.stmts import JOINED, join_values
from routescope.analysis.trace import TracedPath, resolve_entry, trace_call
from routescope.analysis.values import (
    AtLeast,
    ClassVal,
    Const,
    EnumMember,
    External,
    FunctionVal,
    Instance,
    Tensor,
    Unknown,
    Value,
    describe,
)  # fmt: skip
from routescope.errors import RoutescopeError
from routescope.intake.spec import RoutingSpec


@dataclass(frozen=True, slots=True)
class RouterState:
    """The router op as the block built it: its scalar settings, each with where it came from."""

    settings: dict[str, tuple[str, tuple[str, ...]]]  # name -> (value described, origins)


@dataclass(frozen=True, slots=True)
class Dispatch:
    framework: str
    version: str | None
    source: str  # where the source came from
    site: ModelSite | None
    router: RouterState | None
    paths: tuple[TracedPath, ...]
    notes: tuple[str, ...]
    seconds: float
    incomplete: tuple[str, ...] = ()  # set-up phases that did not finish: no path can be selected
    # server arguments the rules ask to report, as the server resolved them: (value, origins)
    server_args: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    # conditions the server-argument phase could not decide (its paths were joined): upstream
    # of every traced path, so they are among the unknowns that would decide a fork
    setup_undecided: tuple[Decision, ...] = ()


def _config_instance(spec: RoutingSpec) -> Instance:
    fields: dict[str, Value] = {}
    for key, value in spec.config_view.items():
        prov = spec.config_view_origin.get(key)
        origin = prov.describe() if prov else "config"
        fields[key] = _config_value(value, origin, key)
    return Instance(None, _torch_dtypes(fields), "config")


def _torch_dtypes(fields: dict[str, Value]) -> dict[str, Value]:
    """transformers' PretrainedConfig turns the dtype string into a torch.dtype and answers to
    both names (`dtype`, and the older `torch_dtype`)."""
    for key in ("dtype", "torch_dtype"):
        v = fields.get(key)
        if isinstance(v, Const) and isinstance(v.value, str) and v.value.isidentifier():
            fields[key] = External(f"torch.{v.value}", v.origins)
    for key, alias in (("dtype", "torch_dtype"), ("torch_dtype", "dtype")):
        if isinstance(fields.get(key), External):
            fields.setdefault(alias, fields[key])
    return fields


def _served_config(spec: RoutingSpec, text: Instance) -> Instance:
    """The config object the framework loads: for a wrapper (a multimodal checkpoint whose
    routing keys sit in `text_config`), its own top-level keys around the text config."""
    if not spec.routing_config_path or not spec.outer_view:
        return text
    fields = {k: _config_value(v, f"config.json {k}", k) for k, v in spec.outer_view.items()}
    fields[spec.routing_config_path] = text
    return Instance(None, _torch_dtypes(fields), "config")


def _config_value(value: Any, origin: str, key: str) -> Value:
    if _literal(value):
        return Const(value, (origin,))
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        # a nested table (rope_scaling, quantization_config): a dict the framework reads
        return Instance(None, {repr(k): _config_value(v, origin, f"{key}.{k}")
                               for k, v in value.items()}, "dict")  # fmt: skip
    return Unknown(f"config.{key}")


def _literal(v: Any) -> bool:
    return isinstance(v, (int, float, str, bool, type(None))) or (
        isinstance(v, (list, tuple)) and all(_literal(x) for x in v)
    )


def _checkpoint(spec: RoutingSpec) -> Checkpoint:
    """The model path the server is given, and what its filesystem queries about it find: a
    hub id is no local path; a directory holds its files; a lone config.json stands for a
    checkpoint directory holding just that file."""
    ref = spec.model
    if ref.kind == "hub":
        cp = Checkpoint(ref.ref, False, None, "a hub id (not a local path until downloaded)")
    elif ref.kind == "dir":
        root = Path(ref.ref)
        try:
            files = frozenset(p.relative_to(root).as_posix() for p in root.rglob("*")
                              if p.is_file())  # fmt: skip
        except OSError:
            files = None
        cp = Checkpoint(ref.ref, True, files, "the files in the model directory")
    else:
        cp = Checkpoint(str(Path(ref.config_path).parent), True, frozenset({"config.json"}),
                        "a checkpoint directory holding only the config.json read")  # fmt: skip
    return cp


def _server_args(engine: Engine, rules: FrameworkRules, dep: Deployment, notes: list[str],
                 forks: list[Decision]) -> Value:  # fmt: skip
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
        engine._dataclass_init(cls, inst, [], {})
        fields = {k[9:] for c in cls.mro() for k in c.attrs if k.startswith("__field__")}
        for field_name, v in list(inst.fields.items()):
            if isinstance(v, Const) and not v.origins:
                inst.fields[field_name] = Const(v.value, (f"{cls.qualname} default",))
        root = checkpoint.root if checkpoint else None
        given: dict[str, Value] = {"model_path": Const(root, ("the model",)),
                                   "tp_size": Const(dep.tp, ("--tp",))}  # fmt: skip
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
            outs = _phase(
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
                forks.extend(d for s, _ in outs for d in s.decisions
                             if d.value is None and not d.reason.startswith(JOINED))  # fmt: skip
            _commit_agreed([s for s, _ in outs], inst)  # what the step wrote on other objects
            inst = _settle(inst, [s for s, _ in outs], notes, step)
        for fn_name in sa_rules.get("install", []):
            if unsettled:  # publishing half-resolved arguments would resolve them again
                notes.append(f"server start-up step {fn_name} skipped: the server arguments "
                             "did not settle")  # fmt: skip
                continue
            fn = resolve_entry(engine, fn_name)
            if isinstance(fn, Unknown):
                notes.append(f"server start-up step {fn_name} is absent in this version")
                continue
            outs = _phase(
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
    return Unknown("server arguments")


# Each phase gets its own share of time, so a slow one ends Unknown without starving the rest.
# Evaluation steps per phase (about 30k steps a second here): a phase that needs more ends
# Unknown, deterministically, and the next phase starts with its own allowance.
PHASE_STEPS = {"server_args": 600_000, "model": 120_000, "block": 120_000, "trace": 250_000}


def _phase(engine: Engine, steps: int, what: str, run: Any, record_inputs: bool = False,
           merge_at: int = 24) -> list[tuple[PathState, Value]]:  # fmt: skip
    engine.budget.push(steps, f"{what} exceeded its budget of {steps:,} evaluation steps")
    engine.record_inputs = record_inputs
    engine.budget.merge_at = merge_at
    try:
        result: list[tuple[PathState, Value]] = run()
        return result
    except BudgetExceeded as exc:
        st = PathState(envs=[{}])
        st.stopped = str(exc)
        return [(st, Unknown(str(exc)))]
    finally:
        engine.budget.pop()
        engine.record_inputs = True
        engine.budget.merge_at = 24


def _settle(inst: Instance, states: list[PathState], notes: list[str], step: str) -> Instance:
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
                f"depends on conditions in {step} the facts do not decide (server argument {key})"
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


def _init_kwargs(block: ClassVal, values: dict[str, Value]) -> dict[str, Value]:
    init = block.lookup("__init__")
    node = getattr(init, "node", None)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {}
    names = {a.arg for a in [*node.args.args, *node.args.kwonlyargs]}
    return {k: v for k, v in values.items() if k in names}


def _router_state(st: PathState, router: Value) -> RouterState | None:
    if not isinstance(router, Instance):
        return None
    settings: dict[str, tuple[str, tuple[str, ...]]] = {}
    for name, v in st.fields(router).items():
        inner = (
            st.fields(v).items() if isinstance(v, Instance) and v.cls is not None else [(name, v)]
        )
        for key, val in inner:
            if isinstance(val, (Const, EnumMember, Unknown, Tensor)):
                settings[key] = (
                    describe(val) if not isinstance(val, Tensor) else "tensor",
                    val.origins,
                )
    return RouterState(settings)


def _merge_router_states(states: list[RouterState]) -> RouterState | None:
    """The router settings over every way the block was built: one the builds disagree on is
    unknown, naming each value a build gave it (never the first build's guess)."""
    if not states:
        return None
    seen: dict[str, dict[str, tuple[str, ...]]] = {}  # name -> value -> origins
    for state in states:
        for key, (value, origins) in state.settings.items():
            values = seen.setdefault(key, {})
            values[value] = tuple(dict.fromkeys((*values.get(value, ()), *origins)))
    merged: dict[str, tuple[str, tuple[str, ...]]] = {}
    for key, values in seen.items():
        if len(values) == 1:
            merged[key] = next(iter(values.items()))
            continue
        origins = tuple(dict.fromkeys(o for os_ in values.values() for o in os_))
        merged[key] = (f"unknown (differs between the ways the block was built: "
                       f"{' or '.join(values)})", origins)  # fmt: skip
    return RouterState(merged)


def _nearest(st: PathState, obj: Value, cls: ClassVal, depth: int = 3) -> Instance | None:
    """The instance of `cls` nearest to the built object (breadth-first over fields), so the
    block's own router wins over one its experts keep."""
    level: list[Value] = [obj]
    for _ in range(depth + 1):
        nxt: list[Value] = []
        for v in level:
            if not isinstance(v, Instance):
                continue
            if v.cls is not None and cls in v.cls.mro():
                return v
            nxt.extend(st.fields(v).values())
        level = nxt
    return None


def _into_consumer(engine: Engine, rules: FrameworkRules, block: Value,
                   traced: list[TracedPath], notes: list[str]) -> list[TracedPath]:  # fmt: skip
    """A router path that hands its inputs on without routing (no kernel, a returned record:
    SGLang's BYPASSED format) goes on into the layer the block hands the result to, where the
    routing then happens (the fused MoE kernel). When no way through that layer reaches a
    kernel, the router's own path stands (routing is still not done by the router), with a
    note saying why the kernel is not named."""
    rule = rules.data["router"].get("consumer")
    if not rule:
        return traced
    cls = resolve_entry(engine, rule["class"])
    if not isinstance(cls, ClassVal):
        return traced
    out: list[TracedPath] = []
    for p in traced:
        if p.sink is not None or p.outcome != "return" or p.end is None or p.value is None:
            out.append(p)
            continue
        consumer = _nearest(p.end, block, cls)
        if consumer is None:
            out.append(p)
            continue
        fn = engine.attribute(p.end, consumer, rule["call"])[0][1]
        engine.budget.push(PHASE_STEPS["trace"], "the consumer trace exceeded its budget")
        engine.tracing = True
        try:
            more = trace_call(engine, fn, [Tensor(), p.value], {}, start=p.end)
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
            notes.append(f"the router hands its result to {handoff[0]}, whose trace reached no "
                         f"kernel ({why or 'no kernel call on any path'}): the MoE kernel that "
                         "routes is not named")  # fmt: skip
            out.append(p)
            continue
        for q in more:
            out.append(TracedPath((*p.decisions, *q.decisions), (*p.frames, *q.frames), q.sink,
                                  q.outcome, q.result, q.stopped, (*p.kernels, *q.kernels),
                                  p.setup, handoff, q.end, q.value))  # fmt: skip
    return out


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
            lines[d.file] = {n.lineno for n in ast.walk(tree) if isinstance(n, ast.Assert)} \
                if tree is not None else set()  # fmt: skip
        if d.line in lines[d.file]:
            return d
    return None


def _required_missing(cls: ClassVal, given: dict[str, Value]) -> list[str]:
    init = cls.lookup("__init__")
    node = getattr(init, "node", None)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    a = node.args
    params = [*a.posonlyargs, *a.args][1:]
    required = params[: len(params) - len(a.defaults)]
    required += [p for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is None]
    return [p.arg for p in required if p.arg not in given]


def _build_block(engine: Engine, site: ModelSite, values: dict[str, Value],
                 router_cls: ClassVal) -> list[tuple[PathState, Value, Value]]:  # fmt: skip
    """Construct the block as its parent does when the block needs arguments only the parent
    knows (Mixtral's MoE takes top_k from its decoder layer); else the block itself."""
    cls = site.block_class
    if _required_missing(cls, _init_kwargs(cls, values)) and len(site.chain) >= 2:
        parent = resolve_entry(engine, site.chain[-2])
        if isinstance(parent, ClassVal) and parent is not site.model_class:
            cls = parent
    built = _phase(
        engine,
        PHASE_STEPS["block"],
        f"building {cls.qualname}",
        lambda: engine.call(PathState(envs=[{}]), cls, [], _init_kwargs(cls, values), None),
        record_inputs=True,
    )
    return [
        (s, v, _nearest(s, v, router_cls) or Unknown("the block built no router")) for s, v in built
    ]


def _run_model_init(engine: Engine, rules: FrameworkRules, site: ModelSite,
                    values: dict[str, Value], notes: list[str]) -> None:  # fmt: skip
    """Run the model class's own __init__ for its side effects (SGLang 0.5.9 decides shared-
    expert fusion there and writes it into the server arguments), without building its body.
    When the rules name the framework's model loader, the loader builds it: what the loader
    sets up around the construction (0.5.23's shared-expert layout) is the world the MoE block
    is then built in."""
    chain = [resolve_entry(engine, q) for q in site.chain[1:]]
    engine.not_built = {c for c in chain if isinstance(c, ClassVal)} | {site.block_class}
    engine.only_module = site.model_class
    loader_rule = rules.data["models"].get("loader")
    loader = resolve_entry(engine, loader_rule["function"]) if loader_rule else None
    captured: list[PathState] = []

    def build(st: PathState, args: list[Value], kwargs: dict[str, Value], node: Any) -> Any:
        del engine.construct_hooks[site.model_class]
        try:
            outs = engine.call(st, site.model_class, args, kwargs, node)
        finally:
            engine.construct_hooks[site.model_class] = build
        captured.extend(s.fork() for s, _ in outs)  # the world while the model is built
        return outs

    try:
        if isinstance(loader, FunctionVal) and loader_rule:
            args = {k: engine.rule_value(text, loader) for k, text in loader_rule["args"].items()}
            if "default_dtype" in loader_rule:  # what the loader builds the model under
                engine.facts.bindings.update(args)
                dtype = engine.rule_value(loader_rule["default_dtype"], loader)
                if isinstance(dtype, External) and dtype.name.startswith("torch."):
                    engine.default_dtype = dtype.name
            engine.construct_hooks[site.model_class] = build
            outs = _phase(
                engine,
                PHASE_STEPS["model"],
                f"the model loader {loader.qualname}",
                lambda: engine.call(PathState(envs=[{}]), loader, [], args, None),
            )
            if not captured:
                stopped = next((s.stopped for s, _ in outs if s.stopped), "")
                notes.append(f"the model loader did not build {site.model_class.qualname}"
                             + (f": {stopped}" if stopped else ""))  # fmt: skip
        else:
            kwargs = _init_kwargs(site.model_class, values)
            outs = _phase(
                engine,
                PHASE_STEPS["model"],
                "the model's constructor",
                lambda: engine.call(PathState(envs=[{}]), site.model_class, [], kwargs, None),
            )
            captured = [s for s, _ in outs]
        overran = [s.stopped for s in captured if s.stopped]
        if overran:
            notes.append(f"the model's constructor did not finish: {overran[0]}")
        finished = [s for s in captured if not s.stopped]
        server_args = engine.facts.bindings.get("server_args")
        if isinstance(server_args, Instance):
            _settle(server_args, finished, notes, "the model's constructor")
        _commit_agreed(finished, server_args)
    finally:
        engine.construct_hooks.pop(site.model_class, None)
        engine.not_built = set()
        engine.only_module = None


def _quant_config(engine: Engine, rules: FrameworkRules, quant: str, notes: list[str]) -> Value:
    """The QuantizationConfig the framework's loader builds for a quantized deployment (the
    rules name the builder; it is called with the loader's arguments of the same names)."""
    loader_rule = rules.data["models"].get("loader") or {}
    if "quant_config" not in loader_rule:
        return Unknown(f"the {quant} quantization config: the rules name no builder")
    loader = resolve_entry(engine, loader_rule["function"])
    builder = resolve_entry(engine, loader_rule["quant_config"])
    if not isinstance(loader, FunctionVal) or not isinstance(builder, FunctionVal):
        return Unknown(f"the {quant} quantization config: no loader builder in this version")
    params = {a.arg for a in builder.node.args.args}
    args = {k: engine.rule_value(text, loader) for k, text in loader_rule["args"].items()
            if k in params}  # fmt: skip
    outs = _phase(
        engine,
        PHASE_STEPS["model"],
        f"the quantization config ({builder.qualname})",
        lambda: engine.call(PathState(envs=[{}]), builder, [], args, None),
    )
    stopped = next((st.stopped for st, _ in outs if st.stopped), "")
    values = [v for _, v in outs]
    # the builder's ways through may differ after it made the config (0.5.9 renames weights
    # on it or not): one object returned on every way is the config, its fields joined
    one = bool(values) and all(v is values[0] for v in values)
    if stopped or not one or not isinstance(values[0], Instance):
        why = stopped or (describe(values[0]) if len(outs) == 1 else "several outcomes")
        notes.append(f"the {quant} quantization config was not built: {why}")
        return Unknown(f"the {quant} quantization config ({why})")
    _commit_agreed([st for st, _ in outs], None)  # its fields as the builder set them
    return values[0]


def _commit_agreed(states: list[PathState], skip: Value | None) -> None:
    """Make what a phase wrote on objects their own, for the phases after it: a field every
    path agrees on keeps its value, objects of one kind join field by field, the rest become
    Unknown."""
    if not states:
        return
    keys = dict.fromkeys(k for s in states for k in s.heap)
    for key in keys:
        obj = next(s.heap_objs[key] for s in states if key in s.heap_objs)
        if obj is skip:
            continue  # the server arguments are settled with their own notes
        views = [s.fields(obj) for s in states]
        why = "differs between the paths that built the model"
        merged = {
            name: join_values([v.get(name) for v in views], states, why)
            for name in dict.fromkeys(n for v in views for n in v)
        }  # objects of one kind made on each path join field by field
        obj.fields.clear()
        obj.fields.update(merged)


def _reported_args(engine: Engine, rules: FrameworkRules,
                   server_args: Value) -> tuple[tuple[str, str, tuple[str, ...]], ...]:  # fmt: skip
    """The server arguments the rules name under `report`, each as the server resolved it: read
    through the release's own reader where it has one (0.5.20+: the last declaration, else the
    input, else the declared fallback), else the field after post-processing."""
    if not isinstance(server_args, Instance):
        return ()
    out = []
    for name in rules.data.get("server_args", {}).get("report", []):
        value = _resolved_arg(engine, rules, server_args, name)
        out.append((name, describe(value), value.origins))
    return tuple(out)


def _resolved_arg(engine: Engine, rules: FrameworkRules, server_args: Value, name: str) -> Value:
    """One server argument as the server resolved it: through the release's own reader where it
    has one, else the field after post-processing."""
    if not isinstance(server_args, Instance):
        return Unknown(f"server argument {name}: the server arguments are unknown")
    reader = next((f for f in (resolve_entry(engine, q) for q in
                               rules.data.get("server_args", {}).get("resolved_by", []))
                   if isinstance(f, FunctionVal)), None)  # fmt: skip
    value: Value = server_args.fields.get(name) or Unknown(f"no server argument {name}")
    if reader is None:
        return value
    engine.budget.push(PHASE_STEPS["block"], f"reading server argument {name}")
    try:
        got = engine.call(PathState(envs=[{}]), reader, [server_args, Const(name)], {}, None)
        return got[0][1] if len(got) == 1 else Unknown(f"{name} has several values")
    except BudgetExceeded as exc:
        return Unknown(str(exc))
    finally:
        engine.budget.pop()


def _served_quantization(engine: Engine, rules: FrameworkRules, server_args: Value,
                         asked: str | None, notes: list[str]) -> str | None:  # fmt: skip
    """The quantization the model is built with: the server argument the rules name, as the
    server resolved it (SGLang 0.5.9 makes DeepSeek-V3 on SM100 fp8 when none is given), else
    what the deployment asked for or the checkpoint declares."""
    arg = rules.data["models"].get("loader", {}).get("quantization_arg")
    if not arg:
        return asked
    value = _resolved_arg(engine, rules, server_args, arg)
    if not isinstance(value, Const) or not isinstance(value.value, str) or value.value == asked:
        return asked
    where = ", ".join(value.origins) or "its own post-processing"
    notes.append(f"the server resolves {arg} = {value.value!r} ({where}): the model is "
                 "built with that quantization")  # fmt: skip
    return value.value


def _outside_validated(rules: FrameworkRules, version: str | None) -> str:
    """A note when `version` is not one the rule file's cases confirm ("" when it is)."""
    validated = rules.data.get("validated")
    if not validated or version in validated:
        return ""
    known = ", ".join(validated)
    return (f"{rules.id} {version or '(unversioned checkout)'} is not among the releases this "
            f"trace is validated against ({known}); the path is provisional")  # fmt: skip


def trace_dispatch(index: Index, rules: FrameworkRules, spec: RoutingSpec, dep: Deployment,
                   version: str | None, origin: str) -> Dispatch:  # fmt: skip
    """Build the model's MoE block with the framework's code and trace its router's forward."""
    start = time.monotonic()
    notes: list[str] = []
    facts = build_facts(rules, dep.gpu, dep.env, dep.packages)
    config = _config_instance(spec)
    # what summaries may name: the checkpoint's config and the device, as routescope read them
    facts.checkpoint = _checkpoint(spec)
    facts.bindings["hf_config"] = served = _served_config(spec, config)
    facts.bindings["gpu_memory_mib"] = Const(
        dep.gpu.memory_mib, (f"GPU profile {dep.gpu.family}/{dep.gpu.device}: memory_gib",)
    )
    engine = Engine(index, facts, Budget())
    forks: list[Decision] = []
    server_args = _server_args(engine, rules, dep, notes, forks)
    facts.bindings["server_args"] = server_args
    router_cls = resolve_entry(engine, rules.router_class)
    if not isinstance(router_cls, ClassVal):
        raise RoutescopeError(origin, f"{rules.router_class} not found in this version")
    arch = (spec.architectures.value or ("",))[0]
    if not arch:
        raise RoutescopeError(spec.model.ref, "config.json has no architectures: the framework "
                              "picks the model class by architectures[0]")  # fmt: skip
    models = rules.data["models"]
    model_cls = find_model_class(engine, models["package"], models["registry_name"], arch)
    site = find_block(engine, model_cls, router_cls)
    quant = _served_quantization(engine, rules, server_args, dep.quant or spec.quantization.value,
                                 notes)  # fmt: skip
    quant_config: Value = Const(None, ("unquantized checkpoint",)) if quant in (None, "bf16") else \
        _quant_config(engine, rules, quant, notes)  # fmt: skip
    layer = (
        spec.first_k_dense_replace.value if isinstance(spec.first_k_dense_replace.value, int) else 0
    )
    values: dict[str, Value] = {
        "config": config,
        "quant_config": quant_config,
        "layer_id": Const(layer, ("first MoE layer",)),
        "prefix": Const(f"model.layers.{layer}.mlp"),
    }
    facts.bindings["model_class"] = model_cls
    facts.bindings["architecture"] = Const(arch, ("config.json architectures[0]",))
    facts.bindings["quant_config"] = quant_config
    _run_model_init(engine, rules, site, {**values, "config": served}, notes)
    built = _build_block(engine, site, values, router_cls)
    paths: list[TracedPath] = []
    router_states: list[RouterState] = []
    for bst, block, router in built:
        if not isinstance(router, Instance):
            why = router.reason if isinstance(router, Unknown) else "the block built no router"
            paths.append(TracedPath((), (), None, "stop", "", why, (), tuple(bst.decisions)))
            continue
        state = _router_state(bst, router)
        if state is not None:
            router_states.append(state)
        fn = engine.attribute(bst, router, rules.router_call)[0][1]
        n = spec.num_experts.value
        logits = Tensor(
            (AtLeast(1, "tokens in the batch"), Const(n, ("routed experts",))), "torch.float32"
        )
        engine.budget.push(PHASE_STEPS["trace"], "the decode trace exceeded its budget")
        engine.tracing = True
        try:
            traced = trace_call(engine, fn, [Tensor(), logits], {}, start=bst)
        finally:
            engine.tracing = False
            engine.budget.pop()
        traced = _into_consumer(engine, rules, block, traced, notes)
        for p in traced:
            stopped = p.stopped
            if not stopped and p.sink is None and (p.result.startswith("unknown") or not p.frames):
                # no kernel and no known result: nothing shows the routing happens downstream
                stopped = f"the router's forward returned an unknown value: {p.result}"
            paths.append(TracedPath(p.decisions, p.frames, p.sink, p.outcome, p.result, stopped,
                                    p.kernels, tuple(bst.decisions), p.handoff))  # fmt: skip
    incomplete = tuple(n for n in notes if "did not finish" in n)
    outside = _outside_validated(rules, version)
    if outside:
        notes.append(outside)
        incomplete += (outside,)
    reported = _reported_args(engine, rules, server_args)
    router_state = _merge_router_states(router_states)
    return Dispatch(rules.id, version, origin, site, router_state, tuple(paths),
                    tuple(dict.fromkeys(notes)),
                    time.monotonic() - start, incomplete, reported,
                    tuple({(d.file, d.line): d for d in forks}.values()))  # fmt: skip
