"""A model a release serves through its generic backend (no class of its own for the
architecture): the library's MoE block, read from the library's source at the version the
release pins, built from the config, with the backend's own replacement of the block's experts
run on it. The block's forward, the library's code, is what routes at decode."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    FunctionVal,
    Instance,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
    describe,
)
from routescope.analysis.phases.block import RouterState, nearest, reachable, read_router_state
from routescope.analysis.phases.consumer import consumer_classes
from routescope.analysis.phases.frameworks import FrameworkRules
from routescope.analysis.phases.generic import library_source
from routescope.analysis.phases.model import ModelSite, _listed, _looked_up
from routescope.analysis.phases.notes import Notes
from routescope.analysis.phases.runphase import PHASE_STEPS, raised_text, run_phase
from routescope.analysis.phases.trace import resolve_entry
from routescope.errors import RoutescopeError


@dataclass(frozen=True, slots=True)
class LibraryModel:
    """The backend class, the library's block class, where the library's source comes from."""

    site: ModelSite
    origin: str  # the library's distribution, as its tree names it
    module: str  # the library module that defines the block


def library_model(
    engine: Engine,
    rules: FrameworkRules,
    arch: str,
    model_type: str | None,
    refused: RoutescopeError,
    remote: str | None = None,
) -> LibraryModel:
    """The backend class the release serves `arch` with and the library block it builds, the
    library's directory for the model overlaid on the source; `refused` (why no class of the
    release's own serves it) is raised again, with what the backend lacks, when either cannot
    be found."""
    models = rules.data["models"]
    generic: dict[str, Any] = models.get("generic_backend") or {}
    if "replace" not in generic or not model_type or remote:
        raise refused  # (remote: the checkpoint's own code wins, and it is never run)
    index: Any = engine.index
    found = library_source(index.tree, generic, arch, model_type)
    if isinstance(found, str):  # (the refusal already says what the library lacks)
        raise refused
    lib, rel = found
    directory = rel.rpartition("/")[0] + "/"
    index.overlay(lib, directory)
    module = rel[:-3].replace("/", ".")
    backend = _backend_class(engine, models, generic, arch)
    if isinstance(backend, str):
        raise RoutescopeError(refused.subject, f"{refused.message}; {backend}")
    block = _block_class(engine, module, str(generic["replaces"]))
    if isinstance(block, str):
        raise RoutescopeError(refused.subject, f"{refused.message}; {block}")
    return LibraryModel(ModelSite(backend, block, (backend.qualname, block.qualname)),
                        lib.origin, module)  # fmt: skip


def _backend_class(
    engine: Engine, models: dict[str, Any], generic: dict[str, Any], arch: str
) -> ClassVal | str:
    """The class the release's generic backend serves the model with (its own choice, from
    the model config the loader is handed: the rules' loader argument, else the server's),
    or why it is not known."""
    config = engine.facts.bindings.get("server_model_config")
    loader_rule = models.get("loader") or {}
    loader = resolve_entry(engine, loader_rule["function"]) if loader_rule else None
    if isinstance(loader, FunctionVal) and "model_config" in loader_rule.get("args", {}):
        config = engine.rule_value(loader_rule["args"]["model_config"], loader)
    if config is None or isinstance(config, Unknown):
        return "the server's model config, from which the backend class is chosen, is not known"
    got = engine.evaluate_in(
        PathState(envs=[{}]),
        str(generic["backend_in"]),
        str(generic["backend"]),
        {"model_config": config, "architecture": Const(arch, ("config.json architectures[0]",))},
    )
    names = {v.value for _, v in got if isinstance(v, Const) and isinstance(v.value, str)}
    if len(names) != 1 or len(got) != len(names):
        raised = next((s for s, _ in got if s.raising is not None), None)
        if raised is not None:
            return f"the generic backend's class ({generic['backend']}): {raised_text(raised)}"
        shown = " or ".join(dict.fromkeys(describe(v) for _, v in got)) or "nothing"
        return f"the generic backend's class ({generic['backend']}) is {shown}"
    name = names.pop()
    if "lookup" in models:
        cls, why = _looked_up(engine, models["lookup"], name)
        return cls if cls is not None else f"its backend class {name} is not found: {why}"
    listed = _listed(engine, models["package"], models["registry_name"], name)
    return listed or f"its backend class {name} is in no registry list"


def _block_class(engine: Engine, module: str, child: str) -> ClassVal | str:
    """The library module's MoE block: the one class whose constructor sets `self.<child>`
    (the child the backend replaces), or why there is none."""
    mod = engine.load_module(module)
    if mod is None or mod.error is not None:
        return f"the library module {module} does not load"
    info = engine.index.module(module)
    tree = info.tree if info is not None else None
    names: list[str] = []
    for node in tree.body if tree is not None else ():
        if not isinstance(node, ast.ClassDef):
            continue
        init = next((f for f in node.body
                     if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)  # fmt: skip
        if init is not None and any(
            isinstance(t, ast.Attribute)
            and t.attr == child
            and isinstance(t.value, ast.Name)
            and t.value.id == "self"
            for s in ast.walk(init)
            if isinstance(s, (ast.Assign, ast.AnnAssign))
            for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
        ):
            names.append(node.name)
    classes = [c for n in names if isinstance(c := mod.globals.get(n), ClassVal)]
    if len(classes) != 1:
        shown = ", ".join(names) or "none"
        return f"{module} has {len(names)} classes that set self.{child} ({shown}), not one"
    return classes[0]


def build_library_block(
    engine: Engine,
    rules: FrameworkRules,
    lib: LibraryModel,
    values: dict[str, Value],
    notes: Notes,
    gate: tuple[Value, Value],
) -> list[tuple[PathState, Value, Value]]:
    """The library block built from the config, then the backend's replacement run on it
    (the block stands in for the library model the backend builds whole): each way through,
    with the block twice (it is also what the decode trace calls). `gate`: the shape of the
    router's gate weight (routed experts, hidden size): what the block computes from a weight
    of that shape, before a top-k, is the router's scores."""
    generic = rules.data["models"]["generic_backend"]
    block_cls, backend = lib.site.block_class, lib.site.model_class
    config = values["config"]
    built = run_phase(
        engine,
        PHASE_STEPS["block"],
        f"building {block_cls.qualname}",
        lambda: engine.call(PathState(envs=[{}]), block_cls, [config], {}, None),
        record_inputs=True,
        as_served=False,
    )
    method = backend.lookup(str(generic["replace"]))
    out: list[tuple[PathState, Value, Value]] = []
    for st, block in built:
        if not isinstance(block, Instance) or not isinstance(method, FunctionVal) or st.stopped:
            why = st.stopped or f"{block_cls.qualname} built {describe(block)}"
            out.append((st, block, Unknown(why, kind=UnknownKind.UNSUPPORTED)))
            continue
        holder = Instance(backend, {}, f"{backend.qualname} (the library block standing in "
                                        "for the library model)")  # fmt: skip
        module = backend.module.name if backend.module else ""
        bound = {"hf_config": config, "quant_config": values["quant_config"], "block": block}
        for field, text in dict(generic.get("holds", {})).items():
            got = engine.evaluate_in(st.fork(), module, str(text), bound)
            holder.fields[field] = got[0][1] if len(got) == 1 else Unknown(
                f"{text} has several values", kind=UnknownKind.JOINED)  # fmt: skip
        replaced = run_phase(
            engine,
            PHASE_STEPS["block"],
            f"the backend's {method.qualname} on {block_cls.qualname}",
            lambda s=st, h=holder: engine.call(s, method.bind(h), [], {}, None),
            record_inputs=True,
            merge_at=4,  # (the server runs it: a way on which it raises does not serve)
        )
        for s, _ in replaced:
            for weight in _gate_weights(s, block, gate):
                weight.role = "scores"  # (a weight is no input: what it computes is the scores)
            out.append((s, block, block))
    notes.append(
        f"served through the generic backend {backend.qualname}: the MoE block is the library's "
        f"{block_cls.qualname} ({lib.origin}), built from the config, with the backend's "
        f"{getattr(method, 'qualname', generic['replace'])} run on it (the block standing "
        "in for the library model the backend builds whole)"
    )
    return out


def _gate_weights(st: PathState, block: Instance, shape: tuple[Value, Value]) -> list[Tensor]:
    """The block's parameters shaped as a router's gate: one row per routed expert over the
    hidden size (2-D; the experts' own weights are 3-D or per expert), three levels deep."""
    want = tuple(v.value if isinstance(v, Const) else None for v in shape)
    if None in want:
        return []
    held = [v for obj in reachable(st, block, 2) for v in st.fields(obj).values()]
    held += [t for v in held if isinstance(v, Tensor) for _, t in v.members or ()]
    return [v for v in held if isinstance(v, Tensor) and v.nn == "parameter" and _dims(v) == want]


def _dims(t: Tensor) -> tuple[object, ...] | None:
    if t.shape is None:
        return None
    return tuple(d.value if isinstance(d, Const) else None for d in t.shape)


def library_router_state(
    engine: Engine, rules: FrameworkRules, st: PathState, block: Value
) -> RouterState | None:
    """The library router's settings (its own names: the verdict reads them through the OEA
    rules' router_fields), with the fused MoE layer's the backend put in the block (its fused
    shared-expert count, none): the router is the module in the block whose forward calls a
    top-k."""
    router = next((v for v in reachable(st, block, 3) if _calls_topk(v)), None)
    if router is None:
        return None
    state = read_router_state(st, router)
    if state is None:
        return None
    settings = dict(state.settings)
    layer = nearest(st, block, consumer_classes(engine, rules))
    found = read_router_state(st, layer) if layer is not None else None
    for name, item in (found.settings if found else {}).items():
        settings.setdefault(name, item)
    return RouterState(settings)


def _calls_topk(obj: Instance) -> bool:
    """Does the class's forward call a top-k (`torch.topk(...)`, `x.topk(...)`)?"""
    fn = obj.cls.lookup("forward") if obj.cls is not None else None
    node = getattr(fn, "node", None)
    return node is not None and any(
        isinstance(c, ast.Call) and isinstance(c.func, (ast.Attribute, ast.Name))
        and (c.func.attr if isinstance(c.func, ast.Attribute) else c.func.id) == "topk"
        for c in ast.walk(node)
    )  # fmt: skip
