"""Building the MoE block the way its parent does, and reading the router it built."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from routescope.analysis.engine.containers import DictVal
from routescope.analysis.engine.contents import entries
from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.data import as_data
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    EnumMember,
    FunctionVal,
    Instance,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
    describe,
)
from routescope.analysis.phases.handed import handed
from routescope.analysis.phases.model import ModelSite, init_bodies
from routescope.analysis.phases.notes import Notes
from routescope.analysis.phases.runphase import PHASE_STEPS, run_phase
from routescope.analysis.phases.trace import resolve_entry
from routescope.analysis.walked import walked


@dataclass(frozen=True, slots=True)
class RouterState:
    """The router op as the block built it: its scalar settings, each with where it came from."""

    # name -> (value described, origins, values.as_data: (kind, JSON value))
    settings: dict[str, tuple[str, tuple[str, ...], tuple[str, Any]]]


def init_kwargs(block: ClassVal, values: dict[str, Value]) -> dict[str, Value]:
    init = block.lookup("__init__")
    node = getattr(init, "node", None)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {}
    names = {a.arg for a in [*node.args.args, *node.args.kwonlyargs]}
    return {k: v for k, v in values.items() if k in names}


def read_router_state(st: PathState, router: Value) -> RouterState | None:
    if not isinstance(router, Instance):
        return None
    settings: dict[str, tuple[str, tuple[str, ...], tuple[str, Any]]] = {}
    for name, v in st.fields(router).items():
        inner = (
            st.fields(v).items() if isinstance(v, Instance) and v.cls is not None else [(name, v)]
        )
        for key, val in inner:
            if isinstance(val, (Const, EnumMember, Unknown, Tensor)):
                settings[key] = (describe(val), val.origins, as_data(val))
    return RouterState(settings)


def merge_router_states(states: list[RouterState]) -> RouterState | None:
    """The router settings over every way the block was built: one the builds disagree on is
    unknown, naming each value a build gave it (never the first build's guess)."""
    if not states:
        return None
    seen: dict[str, dict[str, tuple[str, ...]]] = {}  # name -> value -> origins
    data: dict[tuple[str, str], tuple[str, Any]] = {}
    for state in states:
        for key, (value, origins, datum) in state.settings.items():
            values = seen.setdefault(key, {})
            values[value] = tuple(dict.fromkeys((*values.get(value, ()), *origins)))
            data[key, value] = datum
    merged: dict[str, tuple[str, tuple[str, ...], tuple[str, Any]]] = {}
    for key, values in seen.items():
        if len(values) == 1:
            value, origins = next(iter(values.items()))
            merged[key] = (value, origins, data[key, value])
            continue
        origins = tuple(dict.fromkeys(o for os_ in values.values() for o in os_))
        merged[key] = (
            f"unknown (differs between the ways the block was built: {' or '.join(values)})",
            origins,
            ("unknown", None),
        )
    return RouterState(merged)


def nearest(
    st: PathState, obj: Value, cls: ClassVal | tuple[ClassVal, ...], depth: int = 3
) -> Instance | None:
    """The instance of `cls` (or of any of the classes) nearest to the built object
    (breadth-first over fields), so the block's own router wins over one its experts keep."""
    wanted = cls if isinstance(cls, tuple) else (cls,)
    return next((v for v in reachable(st, obj, depth)
                 if v.cls is not None and any(c in v.cls.mro() for c in wanted)), None)  # fmt: skip


def reachable(st: PathState, obj: Value, depth: int) -> Iterator[Instance]:
    """The objects reachable from `obj` through fields, breadth-first, `depth` levels deep."""
    seen: set[int] = set()
    level: list[Value] = [obj]
    for _ in range(depth + 1):
        nxt: list[Value] = []
        for v in level:
            if not isinstance(v, Instance) or id(v) in seen:
                continue
            seen.add(id(v))
            yield v
            nxt.extend(f for f in st.fields(v).values() if isinstance(f, Instance))
        level = nxt


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


_REPEATED = (ast.Lambda, ast.ListComp, ast.GeneratorExp, ast.For)


def _repeated(init: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """The parts of a constructor that run once per layer: a lambda, a comprehension, a loop,
    or a function it defines and hands to a call (`make_layers(n, get_layer)`)."""
    handed = {
        a.id
        for c in walked(init)
        if isinstance(c, ast.Call)
        for a in (*c.args, *(k.value for k in c.keywords))
        if isinstance(a, ast.Name)
    }
    return [
        n
        for n in walked(init)
        if isinstance(n, _REPEATED)
        or (
            n is not init
            and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.name in handed
        )
    ]


def _tabled(owner: ClassVal, name: str, child: ClassVal) -> bool:
    """Whether the module global `name` of `owner`'s module is a table whose values include
    `child` (a factory that picks each layer's class by its kind: `TYPES[pattern[idx]]`)."""
    table = owner.module.globals.get(name) if owner.module is not None else None
    if not isinstance(table, DictVal):
        return False
    st = PathState(envs=[{}])
    return any(v is child for _, v in entries(st, table).items.values())


def _built_per_layer(parent: ClassVal, child: ClassVal) -> bool:
    """Whether the constructor of `parent` (or a base's) builds `child` once per layer: names it,
    or a table of classes that holds it, inside a part that runs once per layer (`make_layers(n,
    lambda prefix: Layer(...))`, `nn.ModuleList([Layer(i) for i in range(n)])`)."""
    name = child.node.name if child.node is not None else child.qualname.rpartition(".")[2]
    for owner in parent.mro():
        node = getattr(owner.attrs.get("__init__"), "node", None)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for sub in (s for r in _repeated(node) for s in walked(r)):
            if (
                isinstance(sub, ast.Name) and (sub.id == name or _tabled(owner, sub.id, child))
            ) or (isinstance(sub, ast.Attribute) and sub.attr == name):
                return True
    return False


def _decoder_layer(chain: list[Value]) -> int | None:
    """Where in the constructor chain the decoder layer is: the first class, from the model
    down, that its parent builds once per layer; None when none is told apart."""
    for i in range(1, len(chain)):
        parent, child = chain[i - 1], chain[i]
        if (
            isinstance(parent, ClassVal)
            and isinstance(child, ClassVal)
            and _built_per_layer(parent, child)
        ):
            return i
    return None


def build_block(
    engine: Engine,
    site: ModelSite,
    values: dict[str, Value],
    router_cls: ClassVal,
    notes: Notes | None = None,
    paths: tuple[str, ...] = (),
) -> list[tuple[PathState, Value, Value]]:
    """Construct the block as its parents do when it needs arguments only they know (a MoE block
    that takes top_k from its decoder layer; an experts layer whose block reads the parallel
    config its decoder layer takes from the model's): the nearest class up the constructor
    chain that the values build; else the block itself."""
    chain = [resolve_entry(engine, q) for q in site.chain]
    layer = _decoder_layer(chain)
    cls, at = site.block_class, len(chain) - 1
    # up the chain to the nearest class the values build (the decoder layer takes the config;
    # an experts layer and the block around it take what their parents read from it), never
    # above the decoder layer (the model above it builds every layer)
    while _required_missing(cls, init_kwargs(cls, values)) and at >= 2 and at != layer:
        parent = chain[at - 1]
        if not isinstance(parent, ClassVal) or parent is site.model_class:
            break
        cls, at = parent, at - 1
    prefix = values.get("prefix")  # the MoE block's module path (model.layers.1.mlp)
    # the decoder layer gets its own path (model.layers.1: it reads its index from the last
    # part); a class below it is the MoE block or inside it and keeps the block's. Where no
    # class is told apart as built per layer, the block's parent is taken for the layer.
    if len(paths) == len(chain):  # each class's own path, as the model builds it
        values = {**values, "prefix": Const(paths[at], ("the module path the model builds",))}
    elif (
        cls is not site.block_class
        and isinstance(prefix, Const)
        and isinstance(prefix.value, str)
        and at == (layer if layer is not None else len(chain) - 2)
    ):
        values = {**values, "prefix": Const(prefix.value.rpartition(".")[0])}
    kwargs = init_kwargs(cls, values)
    above = chain[at - 1] if at >= 1 else None
    if isinstance(above, ClassVal):
        # what the parent hands it beyond the values: the ones that follow from the values
        # are passed; the others take their defaults, said in a note
        more = handed(engine, above, cls, values, init_bodies(above))
        kwargs.update(more.known)
        if more.left and notes is not None:
            notes.append(
                f"{cls.qualname} is built from the values: {above.qualname} also hands it "
                f"{', '.join(more.left)} ({more.where}), from what it computes or is handed; "
                "taken at their defaults"
            )
    built = run_phase(
        engine,
        PHASE_STEPS["block"],
        f"building {cls.qualname}",
        lambda: engine.call(PathState(envs=[{}]), cls, [], kwargs, None),
        record_inputs=True,
        as_served=False,  # built alone: the model's own build may open a context around it
        raise_stops=True,  # (a `raise` statement on every way stops it all the same)
    )
    return [
        (
            s,
            v,
            nearest(s, v, router_cls)
            or (
                Unknown(s.stopped, kind=UnknownKind.BUDGET)
                if s.stopped
                else Unknown("the block built no router", kind=UnknownKind.UNSUPPORTED)
            ),
        )
        for s, v in built
    ]


def after_loading(
    engine: Engine, name: str | None, built: list[tuple[PathState, Value, Value]]
) -> list[tuple[PathState, Value, Value]]:
    """What the model loader does once the weights are in (the rules' `after_loading`): each
    module of the block that holds a quant method has `quant_method.<name>(module)` called
    (a loader may build the experts' kernel object there). A way on which that raises or
    stops keeps the block as built, noted by the phase."""
    if not name:
        return built
    out: list[tuple[PathState, Value, Value]] = []
    for st, block, router in built:
        states = [st]
        for module in holding(st, block, "quant_method"):
            method = engine.attribute(st, st.fields(module)["quant_method"], name)[0][1]
            if not isinstance(method, FunctionVal):
                continue
            nxt: list[PathState] = []
            for s in states:
                ways = run_phase(
                    engine,
                    PHASE_STEPS["after_loading"],
                    f"{method.qualname} on the built block",
                    lambda s=s, m=method, mod=module: engine.call(s.fork(), m, [mod], {}, None),
                    record_inputs=True,
                    merge_at=1,  # what it builds, not how: ways that built alike join at once
                    as_served=False,
                    raise_stops=True,  # (a check of the weights' sizes on every way stops it)
                )
                done = [w for w, _ in ways if not w.stopped and w.raising is None]
                nxt.extend(done or [s])
            states = nxt
        out.extend((s, block, router) for s in states)
    return out


def holding(st: PathState, obj: Value, field: str, depth: int = 4) -> list[Instance]:
    """The objects reachable from `obj` (breadth-first over fields) that hold `field` set to an
    object of a framework class."""
    held = [(v, st.fields(v).get(field)) for v in reachable(st, obj, depth)]
    return [v for v, h in held if isinstance(h, Instance) and h.cls is not None]


def reached(engine: Engine, st: PathState, obj: Value, name: str, depth: int = 4) -> list[Instance]:
    """The objects of framework classes that `<o>.<name>` gives, read as Python reads it (a
    property over a private field included), for each object `o` reachable from `obj`."""
    out: list[Instance] = []
    for v in reachable(st, obj, depth):
        if name not in st.fields(v) and (v.cls is None or v.cls.lookup(name) is None):
            continue  # neither a field nor a class attribute: nothing to read
        got = engine.attribute(st.fork(), v, name)
        held = got[0][1] if len(got) == 1 else None
        if isinstance(held, Instance) and held.cls is not None and all(h is not held for h in out):
            out.append(held)
    return out
