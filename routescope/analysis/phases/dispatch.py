"""Deployment + model + framework source -> every routing path with its decisions and sink."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, cast

from routescope.analysis.engine.budget import Budget, few_collections
from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.facts import Assumption
from routescope.analysis.engine.replay import Replay
from routescope.analysis.engine.stack import on_reserved_stack
from routescope.analysis.engine.state import RECORDING, Decision, PathState, Reads
from routescope.analysis.engine.tensors import Count
from routescope.analysis.engine.values import (
    Const,
    External,
    Instance,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
    describe,
)
from routescope.analysis.index import Index
from routescope.analysis.phases.block import (
    RouterState,
    after_loading,
    merge_router_states,
    read_router_state,
)
from routescope.analysis.phases.checkpoint import (
    checkpoint_of,
    config_instance,
    experts_unquantized,
    served_config,
    served_through,
    served_unquantized,
    sidecar_value,
)
from routescope.analysis.phases.consumer import EXPERTS_MERGE_AT, decode_entry, into_consumer
from routescope.analysis.phases.deployment import Deployment
from routescope.analysis.phases.flags import check_env_values, check_unread
from routescope.analysis.phases.frameworks import FrameworkRules, build_facts, of_the_release
from routescope.analysis.phases.layers import build_routing_layer, layer_values
from routescope.analysis.phases.library import (
    LibraryModel,
    build_library_block,
    library_model,
    library_router_state,
)
from routescope.analysis.phases.loader import (
    build_quant_config,
    reported_args,
    run_model_init,
    served_quantization,
    server_model_config,
)
from routescope.analysis.phases.model import ModelSite, find_block, find_model_class
from routescope.analysis.phases.notes import Notes
from routescope.analysis.phases.ownconfig import auto_class, config_loading, own_config
from routescope.analysis.phases.runphase import PHASE_STEPS
from routescope.analysis.phases.setup import server_arguments
from routescope.analysis.phases.stops import Stop, explicit_stops, known_arguments
from routescope.analysis.phases.trace import TracedPath, first_class, trace_serving
from routescope.errors import RoutescopeError
from routescope.intake.spec import RoutingSpec
from routescope.timing import phase


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
    # server arguments the rules ask to report, as the server resolved them:
    # (name, value described, origins, values.as_data)
    server_args: tuple[tuple[str, str, tuple[str, ...], tuple[str, Any]], ...] = ()
    # conditions the server-argument phase could not decide (its paths were joined): upstream
    # of every traced path, so they are among the unknowns that would decide a fork
    setup_undecided: tuple[Decision, ...] = ()
    # what the answer rests on that the code cannot show: platform primitives, packages,
    # summaries from the rules, environment variables taken as unset
    assumptions: tuple[Assumption, ...] = ()
    # decided conditions of the server-argument phase that read an argument choosing the MoE
    # kernels (the rules' `chooses`): the values they compare against are the ways out of a
    # blocker worth trying
    choosing: tuple[Decision, ...] = ()
    # steps every way through which reaches a `raise` statement (phases/stops.py)
    stops: tuple[Stop, ...] = ()
    # every server argument the resolution left a known value, as Python holds it: what a
    # way past a stop may change, and from what
    arguments: tuple[tuple[str, object], ...] = ()
    # the checkpoint's weights do not fit the layers built (quantized experts built unquantized)
    weights: tuple[str, ...] = ()


def _hidden_states(spec: RoutingSpec, config: Instance) -> Tensor:
    """What the experts layer is handed during decode: [tokens, hidden_size] activations in
    the checkpoint's dtype (config.json's torch_dtype / dtype)."""
    width = spec.hidden_size.value
    dims: tuple[Value, ...] = (
        Count(1, "tokens in the batch"),
        Const(width, ("config.json hidden_size",)) if isinstance(width, int) else Unknown(
            "hidden_size", kind=UnknownKind.INPUT),
    )  # fmt: skip
    dtype = next((v.name for k in ("torch_dtype", "dtype")
                  if isinstance(v := config.fields.get(k), External)), None)  # fmt: skip
    return Tensor(dims, dtype)


def uncovered(rules: FrameworkRules, version: str | None) -> str:
    """A note when no case in the rule file was read on `version` ("" when one was): the
    answer then rests on the trace alone (and on its assumptions), as on every release."""
    if version is None or any(c.get("version") == version for c in rules.cases):
        return ""
    return (
        f"no case in {rules.path} was read on {rules.id} {version}: the answer rests on the "
        "trace of its source (and the assumptions listed), not on a reading checked by hand"
    )


@on_reserved_stack  # the engine's recursion in one chunk of CPython's frame stack
@few_collections()  # (each call its own: a context manager made by contextmanager decorates)
def trace_dispatch(
    index: Index,
    rules: FrameworkRules,
    spec: RoutingSpec,
    dep: Deployment,
    version: str | None,
    origin: str,
    trial: bool = False,
) -> Dispatch:
    """Build the model's MoE block with the framework's code and trace its router's forward;
    a way-out `trial` ends at a step the server runs that raises (runphase.TrialStopped)."""
    start = time.monotonic()
    notes = Notes()
    facts = build_facts(rules, dep.gpu, dep.env, dep.packages, dep.tp)
    of_the_release(facts, rules, index.tree, version, origin)
    config = config_instance(spec)
    # what summaries may name: the checkpoint's config and the device, as routescope read them
    facts.checkpoint = checkpoint_of(spec)
    facts.bindings["hf_config"] = served = served_config(spec, config)
    facts.bindings["quant_sidecar"] = sidecar_value(spec)
    facts.bindings["gpu_memory_mib"] = Const(
        dep.gpu.memory_mib, (f"GPU profile {dep.gpu.family}/{dep.gpu.device}: memory_gib",)
    )
    facts.bindings["gpu_capability"] = Const(
        dep.gpu.capability, (f"GPU profile {dep.gpu.family}/{dep.gpu.device}: capability",)
    )
    facts.bindings["gpu_name"] = Const(
        dep.gpu.device_name, (f"GPU profile {dep.gpu.family}/{dep.gpu.device}: device_name",)
    )
    engine = Engine(index, facts, Budget())
    engine.trial = trial
    platform_objects(engine, rules)
    if isinstance(spec.model_type.value, str):  # the class the release re-reads it through
        with phase("the framework's own config class"):
            served = own_config(engine, rules, served, spec.model_type.value, spec.config_file,
                                spec.routing_config_path, notes,
                                lambda name: served_through(spec, name))  # fmt: skip
        facts.bindings["hf_config"] = served
        config_loading(engine, rules, index.tree, spec, notes)
        inner = served.fields.get(spec.routing_config_path) if spec.routing_config_path else None
        config = inner if isinstance(inner, Instance) else served
    facts.bindings["routing_config"] = config  # (a wrapper's text config, else hf_config)
    env_declared = check_env_values(engine, rules, dep.env)
    forks: list[Decision] = []
    choosing: list[Decision] = []
    with phase("server arguments"):
        server_args = server_arguments(engine, rules, dep, notes, forks, choosing)
    facts.bindings["server_args"] = server_args
    router_cls = first_class(engine, rules.router_classes, origin)
    arch = (spec.architectures.value or ("",))[0]
    if not arch:
        raise RoutescopeError(
            spec.model.ref,
            "config.json has no architectures: the framework "
            "picks the model class by architectures[0]",
        )
    model_type = spec.model_type.value if isinstance(spec.model_type.value, str) else None
    library: LibraryModel | None = None
    remote = auto_class(spec.outer_view.get("auto_map") or spec.config_view.get("auto_map"))
    try:
        with phase(f"the model class of {arch}"):
            model_cls = find_model_class(engine, rules.data["models"], arch, model_type, remote)
    except RoutescopeError as refused:  # no class of its own: its generic backend, if it can
        facts.bindings["server_model_config"] = server_model_config(
            engine, rules, server_args, notes
        )
        library = library_model(engine, rules, arch, model_type, refused, remote)
        model_cls = library.site.model_class
    if library is None:
        built_by = tuple(rules.data["router"].get("built_by", ()))
        with phase("the MoE block in the model class"):
            site = find_block(engine, model_cls, router_cls, built_by, models=rules.data["models"])
        facts.bindings["server_model_config"] = server_model_config(
            engine, rules, server_args, notes
        )
    else:
        site = library.site
    quant = served_quantization(
        engine, rules, server_args, dep.quant or spec.quantization.value, notes
    )
    quant_config: Value = (
        Const(None, ("unquantized checkpoint",))
        if quant in (None, "bf16")
        else build_quant_config(engine, rules, quant, notes)
    )
    layer = spec.first_moe_layer or 0  # (its layout not known: the first layer, then the next)
    values, built_at, why = layer_values(
        engine, site, {"config": config, "quant_config": quant_config}, layer, library is None
    )
    if not built_at and library is None and quant not in (None, "bf16"):  # (what reads it)
        notes.append(
            f"the MoE block's module path, which the quantization config's per-module "
            f"settings are looked up by, is taken as model.layers.{layer}.mlp: {why}"
        )
    for name, text in rules.data["models"].get("block_args", {}).items():
        module = site.block_class.module.name if site.block_class.module else ""
        got = engine.evaluate_in(PathState(envs=[{}]), module, text, {})
        engine.commit_all([s for s, _ in got])  # (what it set on the objects it made)
        several = Unknown(f"{text} has several values", kind=UnknownKind.JOINED)
        values[name] = got[0][1] if len(got) == 1 else several
    said = served_unquantized(spec, dep.quant, values.get("quant_config", quant_config))
    for text in [said] if said else []:
        notes.weights_unfit(text)
    facts.bindings["model_class"] = model_cls
    facts.bindings["architecture"] = Const(arch, ("config.json architectures[0]",))
    facts.bindings["quant_config"] = quant_config
    hidden = _hidden_states(spec, config)
    if library is None:
        run_model_init(engine, rules, site, {**values, "config": served}, notes)
        layers = spec.num_hidden_layers.value
        built, layer = build_routing_layer(
            engine,
            site,
            values,
            built_at,
            router_cls,
            notes,
            layer,
            layers if isinstance(layers, int) else None,
            tuple(rules.data["router"].get("by_table", ())),
        )
    else:
        gate = (Const(spec.num_experts.value), hidden.shape[-1] if hidden.shape else Const(None))
        built = build_library_block(
            engine, rules, library, {**values, "config": served}, notes, gate
        )
    built = after_loading(engine, rules.data["models"].get("after_loading"), built)
    plain = tuple(rules.data["models"].get("unquantized_experts", ()))
    for text in experts_unquantized(spec, dep.quant, quant_config, built, plain, not built_at):
        notes.weights_unfit(text)
    paths: list[TracedPath] = []
    router_states: list[RouterState] = []
    done: list[tuple[PathState, Reads, tuple[Value, ...], list[TracedPath]]] = []
    for bst, block, router in built:
        if not isinstance(router, Instance):
            why = router.reason if isinstance(router, Unknown) else "the block built no router"
            paths.append(TracedPath((), (), None, "stop", "", why, (), tuple(bst.decisions)))
            continue
        state = (
            read_router_state(bst, router)
            if library is None
            else library_router_state(engine, rules, bst, block)
        )
        if state is not None:
            router_states.append(state)
        n = spec.num_experts.value
        logits = Tensor(  # the router's scores: what a kernel that routes reads (a count of their
            # own: a gate is handed whatever the layer hands it, not always the hidden states);
            # a gate's output, a fresh [tokens, experts] tensor: contiguous
            (Count(1, "tokens in the batch"), Const(n, ("routed experts",))),
            "torch.float32",
            role="scores",
            contiguous=True,
        )
        fn, args, what = (
            decode_entry(engine, rules, bst, block, router, hidden, logits)
            if library is None
            else (engine.attribute(bst, block, "forward")[0][1], [cast(Value, hidden)],
                  f"the library block's decode forward ({site.block_class.qualname})")
        )  # fmt: skip
        roots = (fn, *args, block, hidden)
        # ways through the build that made alike layers (they differ in what the decode
        # never reads) decode alike: traced once, the answer replayed (engine/replay.py)
        traced = next((t for a, r, ra, t in done if Replay(a, bst, r).holds(ra, roots)), None)
        if traced is None:
            reads = Reads()
            RECORDING.append(reads)
            try:
                traced = decode_trace(
                    engine, rules, bst, fn, args, what, block, hidden, notes, library is not None
                )
            finally:
                RECORDING.pop()
            done.append((bst, reads, roots, traced))
        paths.extend(replace(p, setup=tuple(bst.decisions)) for p in traced)
    check_unread(engine, rules, dep.env, dep.packages, env_declared, version)
    for name, exc, at in engine.import_errors:
        where = f" at {at[0]}:{at[1]}" if at else ""
        notes.append(
            f"importing {name} raises {describe(exc)}{where}: what imports it sees the exception"
        )
    for fatal in engine.fatal:
        notes.did_not_finish(fatal)
    notes.extend(engine.staged)
    incomplete = tuple(notes.unfinished)
    uncovered_note = uncovered(rules, version)
    if uncovered_note:
        notes.append(uncovered_note)
    reported = reported_args(engine, rules, server_args)
    router_state = merge_router_states(router_states)
    return Dispatch(
        rules.id,
        version,
        origin,
        site,
        router_state,
        tuple(paths),
        tuple(dict.fromkeys(notes)),
        time.monotonic() - start,
        incomplete,
        reported,
        tuple({(d.file, d.line): d for d in forks}.values()),
        tuple(sorted(facts.used.values(), key=lambda a: (a.kind, a.name))),
        tuple({(d.file, d.line, d.text): d for d in choosing}.values()),
        explicit_stops(engine),
        known_arguments(server_args),
        tuple(notes.weights),
    )


def decode_trace(
    engine: Engine, rules: FrameworkRules, bst: PathState, fn: Value, args: list[Value],
    what: str, block: Value, hidden: Value, notes: Notes, whole: bool = False,
) -> list[TracedPath]:  # fmt: skip
    """The decode step from one way through the build: every path through the router's (or the
    layer's) call on the scores, on into the layer it hands its result to. `whole`: the call is
    the block's own forward (a library block), which routes and runs the experts itself."""
    engine.budget.push(PHASE_STEPS["trace"], "the decode trace exceeded its budget")
    engine.tracing = True
    by_kernel = whole or rules.data["router"].get("entry") == "consumer"
    # past its first kernel that routes, a way is read only for the experts it launches:
    # ways that routed alike join early there, as the experts trace of a router does
    engine.budget.routed_merge_at = EXPERTS_MERGE_AT if by_kernel else None
    engine.budget.routed_steps = PHASE_STEPS["trace"] // 4 if by_kernel else None
    engine.budget.routed_spent = 0
    try:
        with phase(f"decode: {what}"):
            traced = trace_serving(engine, fn, args, {}, bst, what, by_kernel=by_kernel)
    finally:
        engine.tracing = False
        engine.budget.routed_merge_at = engine.budget.routed_steps = None
        engine.budget.pop()
    if not whole:
        with phase("decode: into the layer the router hands its result to"):
            traced = into_consumer(engine, rules, block, traced, notes, hidden)
    if by_kernel and any(p.stopped and p.sink is not None for p in traced):
        # past its first kernel that routes a way runs only the experts: the routing is
        # decided where it stopped, the kernels the experts launch are not all followed
        # (as for a router's experts trace that runs out of its budget)
        notes.append(
            f"{what} ran out of its budget in the experts, after the kernel that routes: "
            "the kernels the experts launch are not all checked against the GPU"
        )
        traced = [replace(p, stopped="") if p.sink is not None else p for p in traced]
    out: list[TracedPath] = []
    for p in traced:
        stopped = p.stopped
        if not stopped and p.sink is None and by_kernel:
            # the layer that routes and runs the experts reached no kernel that routes: the
            # routing is not shown (never "routes nothing": it is that layer's own job)
            stopped = f"{what} reached no kernel that routes (it returned {p.result})"
        elif not stopped and p.sink is None and (p.result.startswith("unknown") or not p.frames):
            # no kernel and no known result: nothing shows the routing happens downstream
            stopped = f"the router's forward returned an unknown value: {p.result}"
        out.append(replace(p, stopped=stopped, end=None, value=None))
    return out


def platform_objects(engine: Engine, rules: FrameworkRules) -> None:
    """The rules' platform objects (an installed library's registry of backends, say), each an
    expression evaluated at the top level of the framework's package: the value code reading
    that external attribute gets."""
    objects = rules.data.get("platform", {}).get("objects", {})
    for name, text in objects.items():
        got = engine.evaluate_in(PathState(envs=[{}]), rules.data["package"], text, {})
        if len(got) == 1 and not isinstance(got[0][1], Unknown):
            engine.facts.attributes[name] = got[0][1]
