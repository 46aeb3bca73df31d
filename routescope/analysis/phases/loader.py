"""The model loader phase: the model's constructor run for its side effects, the quantization
config the loader builds, the server arguments as the server resolved them."""

from __future__ import annotations

from typing import Any

from routescope.analysis.engine.budget import BudgetExceeded
from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.data import as_data
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    External,
    FunctionVal,
    Instance,
    Unknown,
    UnknownKind,
    Value,
    describe,
)
from routescope.analysis.library.devices import is_device
from routescope.analysis.phases.block import init_kwargs
from routescope.analysis.phases.frameworks import FrameworkRules
from routescope.analysis.phases.model import ModelSite
from routescope.analysis.phases.notes import Notes
from routescope.analysis.phases.runphase import PHASE_STEPS, run_phase
from routescope.analysis.phases.setup import settle
from routescope.analysis.phases.trace import resolve_entry


def run_model_init(
    engine: Engine,
    rules: FrameworkRules,
    site: ModelSite,
    values: dict[str, Value],
    notes: Notes,
) -> None:
    """Run the model class's own __init__ for its side effects (a model may decide shared-
    expert fusion there and write it into the server arguments), without building its body.
    When the rules name the framework's model loader, the loader builds it: what the loader
    sets up around the construction (a shared-expert layout) is the world the MoE block is
    then built in."""
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
            if "default_dtype" in loader_rule or "default_device" in loader_rule:
                engine.facts.bindings.update(args)  # (what those expressions read)
            if "default_dtype" in loader_rule:  # what the loader builds the model under
                dtype = engine.rule_value(loader_rule["default_dtype"], loader)
                if isinstance(dtype, External) and dtype.name.startswith("torch."):
                    engine.default_dtype = dtype.name
            if "default_device" in loader_rule:  # and the device it builds it on
                device = engine.rule_value(loader_rule["default_device"], loader)
                engine.default_device = device if is_device(device) else None
            engine.construct_hooks[site.model_class] = build
            outs = run_phase(
                engine,
                PHASE_STEPS["model"],
                f"the model loader {loader.qualname}",
                lambda: engine.call(PathState(envs=[{}]), loader, [], args, None),
                # its ways join as they go, as commit_all joins them at its end: it runs for
                # what it leaves behind, and ways that built the model's other towers apart
                # (a wrapper's vision encoder, whose processor files a checkpoint may or may
                # not have) would otherwise each build the language model again
                merge_at=1,
            )
            if not captured:
                stopped = next((s.stopped for s, _ in outs if s.stopped), "")
                notes.append(
                    f"the model loader did not build {site.model_class.qualname}"
                    + (f": {stopped}" if stopped else "")
                )
        else:
            kwargs = init_kwargs(site.model_class, values)
            outs = run_phase(
                engine,
                PHASE_STEPS["model"],
                "the model's constructor",
                lambda: engine.call(PathState(envs=[{}]), site.model_class, [], kwargs, None),
            )
            captured = [s for s, _ in outs]
        overran = [s.stopped for s in captured if s.stopped]
        if overran:
            notes.did_not_finish(f"the model's constructor did not finish: {overran[0]}")
        finished = [s for s in captured if not s.stopped]
        server_args = engine.facts.bindings.get("server_args")
        if isinstance(server_args, Instance):
            settle(server_args, finished, notes, "the model's constructor")
        engine.commit_all(finished, server_args)
    finally:
        engine.construct_hooks.pop(site.model_class, None)
        engine.not_built = set()
        engine.only_module = None


def server_model_config(
    engine: Engine, rules: FrameworkRules, server_args: Value, notes: list[str]
) -> Value:
    """The model config the server builds from its arguments (the rules' `model_config`, e.g.
    `ModelConfig.from_server_args`), for a release whose argument resolution does not build
    one itself: the loader is handed it, with the quantization the release's own ModelConfig
    resolves from the checkpoint. None when the rules name none or it cannot be built (the
    loader then gets the rules' stand-in)."""
    entry = (rules.data["models"].get("loader") or {}).get("model_config")
    if not entry or not isinstance(server_args, Instance):
        return Const(None)
    if not isinstance(server_args.fields.get("_model_config", Const(None)), Const):
        return Const(None)  # the argument resolution built it (0.5.20+)
    fn = resolve_entry(engine, entry)
    if not isinstance(fn, FunctionVal):
        return Const(None)
    outs = run_phase(
        engine,
        PHASE_STEPS["model"],
        f"the model config ({fn.qualname})",
        lambda: engine.call(PathState(envs=[{}]), fn, [server_args], {}, None),
    )
    values = [v for _, v in outs]
    stopped = next((st.stopped for st, _ in outs if st.stopped), "")
    if stopped or not values or not all(v is values[0] for v in values):
        why = stopped or "several outcomes"
        notes.append(f"the model config was not built ({why}): the loader gets a stand-in")
        return Const(None)
    if not isinstance(values[0], Instance):
        notes.append(f"the model config was not built ({describe(values[0])}): the loader "
                     "gets a stand-in")  # fmt: skip
        return Const(None)
    engine.commit_all([st for st, _ in outs])
    return values[0]


def build_quant_config(
    engine: Engine, rules: FrameworkRules, quant: str, notes: list[str]
) -> Value:
    """The QuantizationConfig the framework's loader builds for a quantized deployment (the
    rules name the builder; it is called with the loader's arguments of the same names)."""
    loader_rule = rules.data["models"].get("loader") or {}
    if "quant_config" not in loader_rule:
        return Unknown(
            f"the {quant} quantization config: the rules name no builder", kind=UnknownKind.INPUT
        )
    loader = resolve_entry(engine, loader_rule["function"])
    builder = resolve_entry(engine, loader_rule["quant_config"])
    if not isinstance(loader, FunctionVal) or not isinstance(builder, FunctionVal):
        return Unknown(
            f"the {quant} quantization config: no loader builder in this version",
            kind=UnknownKind.INPUT,
        )
    params = {a.arg for a in builder.node.args.args}
    args = {
        k: engine.rule_value(text, loader) for k, text in loader_rule["args"].items() if k in params
    }
    outs = run_phase(
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
        return Unknown(f"the {quant} quantization config ({why})", kind=UnknownKind.OPAQUE)
    engine.commit_all([st for st, _ in outs])  # its fields as the builder set them
    return values[0]


def reported_args(
    engine: Engine, rules: FrameworkRules, server_args: Value
) -> tuple[tuple[str, str, tuple[str, ...], tuple[str, Any]], ...]:
    """The server arguments the rules name under `report` that the release has, each as the
    server resolved it: read through the release's own reader where it has one (0.5.20+: the
    last declaration, else the input, else the declared fallback), else the field after
    post-processing."""
    if not isinstance(server_args, Instance):
        return ()
    out = []
    for name in rules.data.get("server_args", {}).get("report", []):
        if name not in server_args.fields:  # an argument this release does not have
            continue
        value = _resolved_arg(engine, rules, server_args, name)
        out.append((name, describe(value), value.origins, as_data(value)))
    return tuple(out)


def _resolved_arg(engine: Engine, rules: FrameworkRules, server_args: Value, name: str) -> Value:
    """One server argument as the server resolved it: through the release's own reader where it
    has one, else the field after post-processing."""
    if not isinstance(server_args, Instance):
        return Unknown(
            f"server argument {name}: the server arguments are unknown", kind=UnknownKind.INPUT
        )
    reader = next(
        (
            f
            for f in (
                resolve_entry(engine, q)
                for q in rules.data.get("server_args", {}).get("resolved_by", [])
            )
            if isinstance(f, FunctionVal)
        ),
        None,
    )
    value: Value = server_args.fields.get(name) or Unknown(
        f"no server argument {name}", kind=UnknownKind.ABSENT
    )
    if reader is None:
        return value
    engine.budget.push(PHASE_STEPS["block"], f"reading server argument {name}")
    try:
        got = engine.call(PathState(envs=[{}]), reader, [server_args, Const(name)], {}, None)
        return (
            got[0][1]
            if len(got) == 1
            else Unknown(f"{name} has several values", kind=UnknownKind.JOINED)
        )
    except BudgetExceeded as exc:
        return Unknown(str(exc), kind=UnknownKind.BUDGET)
    finally:
        engine.budget.pop()


def served_quantization(
    engine: Engine, rules: FrameworkRules, server_args: Value, asked: str | None, notes: list[str]
) -> str | None:
    """The quantization the model is built with: the server argument the rules name, as the
    server resolved it (a server may pick fp8 for an architecture when none is given), else
    what the deployment asked for or the checkpoint declares."""
    arg = rules.data["models"].get("loader", {}).get("quantization_arg")
    if not arg:
        return asked
    value = _resolved_arg(engine, rules, server_args, arg)
    if not isinstance(value, Const) or not isinstance(value.value, str) or value.value == asked:
        return asked
    where = ", ".join(value.origins) or "its own post-processing"
    notes.append(
        f"the server resolves {arg} = {value.value!r} ({where}): the model is "
        "built with that quantization"
    )
    return value.value
