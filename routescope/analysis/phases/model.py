"""From a config's architecture to the MoE block that builds the router, using the framework's
own registry and constructors: no per-model tables."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from routescope.analysis.engine.base import Ctx
from routescope.analysis.engine.containers import DictVal, ListVal, TupleVal
from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    FunctionVal,
    ModuleVal,
    Unknown,
    UnknownKind,
    Value,
    describe,
)
from routescope.analysis.phases.generic import generic_backend, served_by_backend
from routescope.analysis.phases.inner import InnerCalls, inner_models
from routescope.analysis.walked import walked
from routescope.errors import RoutescopeError


@dataclass(frozen=True, slots=True)
class ModelSite:
    """Where the model's router is built."""

    model_class: ClassVal
    block_class: ClassVal
    chain: tuple[str, ...]  # the constructor chain from the model class to the block
    # the links of the chain built by name through the rules' inner-model function
    inner: InnerCalls = field(default_factory=dict)


def find_model_class(
    engine: Engine,
    models: dict[str, Any],
    arch: str,
    model_type: str | None = None,
    remote: str | None = None,
) -> ClassVal:
    """The model class the release serves `arch` with, found the release's own way (the rules'
    `models`): its registry lookup evaluated (`lookup`), or the class named `arch` in some
    `<package>.*` module's registry list (`registry_name`, e.g. a module-level `EntryClass`).
    None names it: the error says what the release does instead, from `generic_backend` (its
    resolver, where the release has it, and the library it takes the class from; `remote`: the
    checkpoint's auto_map AutoModel)."""
    package, generic = models["package"], models.get("generic_backend")
    if "lookup" in models:
        found, why = _looked_up(engine, models["lookup"], arch)
        backend = (
            served_by_backend(engine.index.tree, generic, models["lookup"]["in"], arch, found)  # type: ignore[attr-defined]
            if found is not None and generic
            else None
        )
        if backend is not None:
            raise RoutescopeError(arch, backend)
        if found is not None:
            return found
        native = f"the registry ({models['lookup']['in']}) has no model class for it: {why}"
    else:
        found = _listed(engine, package, models["registry_name"], arch)
        if found is not None:
            return found
        native = f"no model class of this name in {package} ({models['registry_name']} lists)"
    tree = engine.index.tree  # type: ignore[attr-defined]
    if generic is None:
        raise RoutescopeError(arch, native)
    raise RoutescopeError(
        arch, f"{native}; {generic_backend(tree, engine, generic, arch, model_type, remote)}"
    )


def _looked_up(engine: Engine, lookup: dict[str, str], arch: str) -> tuple[ClassVal | None, str]:
    """The class the release's registry lookup gives for `arch`, or None and why not."""
    got = engine.evaluate_in(
        PathState(envs=[{}]), lookup["in"], lookup["expr"], {"architecture": Const(arch)}
    )
    classes = {id(v): v for st, v in got if st.raising is None and isinstance(v, ClassVal)}
    if len(classes) == 1:
        return next(iter(classes.values())), ""
    raised = next((st for st, _ in got if st.raising is not None), None)
    if raised is not None:
        return None, f"{lookup['expr']} raises {describe(raised.raising)}"  # type: ignore[arg-type]
    return None, f"{lookup['expr']} gives {' or '.join(describe(v) for _, v in got) or 'nothing'}"


def _listed(engine: Engine, package: str, registry: str, arch: str) -> ClassVal | None:
    """The class named `arch` in some `<package>.*` module's `registry` list."""
    tree = engine.index.tree  # type: ignore[attr-defined]
    prefix = package.replace(".", "/") + "/"
    files = [f for f in tree.files() if f.startswith(prefix) and f.endswith(".py")]
    tree.prefetch(files)
    for relpath in files:
        text = tree.read_bytes(relpath).decode("utf-8", errors="replace")
        if registry not in text or arch not in text:
            continue
        modname = relpath[:-3].replace("/", ".").removesuffix(".__init__")
        mod = engine.load_module(modname)
        if mod is None:
            continue
        entry = engine.resolved(
            mod.globals.get(registry, Unknown("no registry", kind=UnknownKind.ABSENT))
        )
        for cls in _classes_in(entry):
            if cls.qualname.split(":")[-1] == arch:
                return cls
    return None


def _classes_in(v: Value) -> list[ClassVal]:
    if isinstance(v, ClassVal):
        return [v]
    items = v.items if isinstance(v, TupleVal) else v.base.items if isinstance(v, ListVal) else None
    if items:
        return [c for c in items if isinstance(c, ClassVal)]
    return []


def _constructed(engine: Engine, cls: ClassVal, called_only: bool = False) -> list[ClassVal]:
    """Framework classes named in the __init__ of `cls` or its bases: called, or passed on
    (a decoder-layer class handed to a base model's constructor), lambdas included;
    `called_only`: the classes it calls."""
    out: list[ClassVal] = []
    # the constructors, with the methods of their own they build parts with, scanned as one
    bodies = init_bodies(cls)
    inits = {id(getattr(owner.attrs.get("__init__"), "node", None)) for owner in cls.mro()}
    for node, _ in bodies:
        for sub in walked(node) if id(node) in inits else ():
            method = cls.lookup(sub.func.attr) if _self_call(sub) else None  # type: ignore[attr-defined]
            # `self.model_cls(...)`: a class it builds
            if isinstance(method, ClassVal) and method.node is not None and method is not cls:
                out += [method] if method not in out else []
    for node, module in bodies:
        if module is None:
            continue
        st = PathState(envs=[module.globals])
        for cls_val in _imported_here(engine, module, node):  # `from m import C` in __init__
            if cls_val not in out and cls_val is not cls:
                out.append(cls_val)
        # (the calls-only pass also leaves out classes only tested for or annotated; the broad
        # pass keeps them: a block named only in `isinstance(layer.mlp, Block)` is still found)
        tested = _type_tests(node) if called_only else set()
        calls = {id(c.func) for c in walked(node) if isinstance(c, ast.Call)}
        for sub in walked(node):
            if called_only and id(sub) not in calls:
                continue
            if not isinstance(sub, (ast.Name, ast.Attribute)) or not isinstance(sub.ctx, ast.Load):
                continue
            if isinstance(sub, ast.Name) and sub.id in ("self", "super", "cls"):
                continue
            if id(sub) in tested:  # `isinstance(layer.mlp, C)`: C is tested for, not built
                continue
            for v in _static_values(engine, module, st, sub):
                # (the broad pass: a module-level table of classes the constructor picks from
                # by a runtime key, `LAYER_TYPES[config.layer_types[i]](...)`, names them all)
                named = [v] if called_only else [v, *_table_classes(v)]
                for c in named:
                    if (
                        isinstance(c, ClassVal)
                        and c.node is not None
                        and c not in out
                        and c is not cls
                    ):
                        out.append(c)
    return out


def _table_classes(v: Value) -> list[ClassVal]:
    """The classes a module-level dict, list or tuple holds (as built at import)."""
    if isinstance(v, DictVal):
        return [c for _k, c in v.base.items.values() if isinstance(c, ClassVal)]
    return [] if isinstance(v, ClassVal) else _classes_in(v)


def _type_tests(node: ast.AST) -> set[int]:
    """Where a body names a class without building it: the class operands of isinstance /
    issubclass calls (tuples of classes too) and annotations."""
    out: set[int] = set()
    for sub in walked(node):
        notes: list[ast.expr] = []
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
            params = (*sub.args.posonlyargs, *sub.args.args, *sub.args.kwonlyargs)
            notes.extend(a.annotation for a in params if a.annotation)
            if sub.returns:
                notes.append(sub.returns)
        if isinstance(sub, ast.AnnAssign):
            notes.append(sub.annotation)
        out.update(id(n) for note in notes for n in walked(note))
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Name)
            and sub.func.id in ("isinstance", "issubclass")
            and len(sub.args) == 2
        ):
            cls = sub.args[1]
            out.update(id(n) for n in (cls.elts if isinstance(cls, ast.Tuple) else [cls]))
    return out


def _self_call(node: ast.AST) -> bool:
    """`self.m(...)`."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    )


def _imported_here(engine: Engine, module: ModuleVal, node: ast.AST) -> list[ClassVal]:
    """Framework classes a function imports in its own body (a multimodal wrapper importing its
    language model's class where it builds it)."""
    out: list[ClassVal] = []
    package = module.name.rpartition(".")[0]
    for imp in (n for n in walked(node) if isinstance(n, ast.ImportFrom)):
        base = imp.module or ""
        if imp.level:
            parts = package.split(".")
            root = ".".join(parts[: len(parts) - imp.level + 1])
            base = f"{root}.{base}" if base else root
        mod = engine.load_module(base) if base else None
        if mod is None or mod.error is not None:
            continue
        for alias in imp.names:
            v = engine.resolved(mod.globals.get(alias.name, Const(None)))
            if isinstance(v, ClassVal) and v.node is not None:
                out.append(v)
    return out


def _is_static(node: ast.expr) -> bool:
    """A module-level name or dotted path (not an attribute of a local value)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _ctx(module: ModuleVal) -> Ctx:
    return Ctx(module, module.relpath, f"{module.name}:<scan>")


def find_block(
    engine: Engine,
    model: ClassVal,
    router: ClassVal,
    built_by: tuple[str, ...] = (),
    max_depth: int = 7,
    models: dict[str, Any] | None = None,
) -> ModelSite:
    """Breadth-first through constructor calls until a class whose __init__ builds the router:
    constructs it, or calls a function the rules say builds it (`built_by`, a factory), or a
    function of the framework that calls one (a layer factory around the router factory).
    `models`: the rules' models table, for a wrapper that builds its language model by name
    through the registry (`inner_model`)."""
    builders = _builders(engine, built_by)
    lookup = (models or {}).get("lookup")
    calls: InnerCalls = {}
    inner = inner_models(
        engine,
        (models or {}).get("inner_model"),
        lambda arch: _looked_up(engine, lookup, arch)[0] if lookup else None,
        _static_values,
        init_bodies,
        calls,
    )
    # the classes each constructor calls first (the chain is then the one that builds the
    # block); failing that, the classes it names too (a layer class handed to a base model)
    for called_only in (True, False):
        site = _search(engine, model, router, builders, max_depth, called_only, inner)
        if site is not None:
            links = set(itertools.pairwise(site.chain))
            return replace(site, inner={k: v for k, v in calls.items() if k in links})
    name = router.qualname
    raise RoutescopeError(model.qualname, f"no class built by this model constructs {name}")


def _search(
    engine: Engine,
    model: ClassVal,
    router: ClassVal,
    builders: set[ast.AST],
    max_depth: int,
    called_only: bool,
    inner: Callable[[ClassVal], list[ClassVal]] = lambda cls: [],
) -> ModelSite | None:
    """Breadth-first through the constructors from the model class: the first class whose
    constructor builds the router, with the chain of classes to it."""
    frontier: list[tuple[ClassVal, tuple[str, ...]]] = [(model, (model.qualname,))]
    seen: set[str] = set()
    for _ in range(max_depth):
        nxt: list[tuple[ClassVal, tuple[str, ...]]] = []
        for cls, chain in frontier:
            made = _constructed(engine, cls, called_only)
            made += [m for m in inner(cls) if m not in made]
            if any(m is router or router in m.mro() for m in made) or _calls_builder(
                engine, cls, builders
            ):
                return ModelSite(model, cls, chain)
            for m in made:
                if m.qualname not in seen:
                    seen.add(m.qualname)
                    nxt.append((m, (*chain, m.qualname)))
        frontier = nxt
    return None


def _builders(engine: Engine, built_by: tuple[str, ...]) -> set[ast.AST]:
    """The function bodies of the rules' router factories this release has."""
    out: set[ast.AST] = set()
    for entry in built_by:
        module, _, qual = entry.partition(":")
        mod = engine.load_module(module)
        fn = mod.globals.get(qual) if mod is not None and mod.error is None else None
        node = getattr(engine.resolved(fn), "node", None) if fn is not None else None
        if node is not None:
            out.add(node)
    return out


def _calls_builder(engine: Engine, cls: ClassVal, builders: set[ast.AST], depth: int = 2) -> bool:
    """Whether the constructor of `cls` calls a router factory, directly or through functions of
    the framework it calls (`depth` levels): FusedMoEFactory(...) -> create_fused_moe_router."""
    if not builders:
        return False
    functions = init_bodies(cls)
    seen: set[int] = set()
    for _ in range(depth + 1):
        nxt = []
        for node, module in functions:
            if id(node) in seen or module is None:
                continue
            seen.add(id(node))
            for called in _called_functions(engine, module, node):
                if called.node in builders:
                    return True
                nxt.append((called.node, called.module))
        functions = nxt
    return False


def init_bodies(cls: ClassVal) -> list[tuple[ast.AST, Any]]:
    """The constructors along `cls`'s MRO, with the methods of its own they build parts with
    (`self._init_experts(...)`, the most-derived override), each with its module."""
    inits = [owner.attrs.get("__init__") for owner in cls.mro()]
    out: list[tuple[ast.AST, Any]] = [
        (f.node, f.module) for f in inits if isinstance(f, FunctionVal) and f.node is not None
    ]
    for node, _ in list(out):
        for sub in walked(node):
            if _self_call(sub):
                method = cls.lookup(sub.func.attr)  # type: ignore[attr-defined]
                node_ = method.node if isinstance(method, FunctionVal) else None
                if node_ is not None and all(node_ is not b for b, _ in out):
                    out.append((node_, method.module))  # type: ignore[union-attr]
    return out


def _called_functions(engine: Engine, module: ModuleVal, node: ast.AST) -> list[Any]:
    """Framework functions (not classes) a body calls by a module-level name or dotted path."""
    out = []
    st = PathState(envs=[module.globals])
    for sub in walked(node):
        if not isinstance(sub, ast.Call):
            continue
        if isinstance(sub.func, ast.Name) and sub.func.id in ("self", "super", "cls"):
            continue
        for v in _static_values(engine, module, st, sub.func):
            if isinstance(v, FunctionVal) and v.node is not None and v.module is not None:
                out.append(v)
    return out


def _static_values(engine: Engine, module: ModuleVal, st: PathState, node: ast.expr) -> list[Value]:
    """What a module-level name or dotted path in a body of `module` is (nothing for an
    attribute of a local value, or a name the scan cannot evaluate)."""
    if not _is_static(node):
        return []
    engine.ctx.append(_ctx(module))
    try:
        got = engine.ev(st.fork(), node)
    except Exception:  # a name the scan cannot evaluate names nothing it can follow
        got = []
    finally:
        engine.ctx.pop()
    return [engine.resolved(v) for _, v in got]
