"""The MoE block's module path (`prefix`) as the model builds it: each constructor along the
chain from the model class hands its part the `prefix=` it computes from its own, from the
empty path the loader builds the model at. A quantization config keys its per-layer choices by
this path (a mixed-precision checkpoint's `quantized_layers`, every exclusion list), so one made
up (`model.layers.N.mlp`) reads another layer's entry, or none, where a wrapper puts the
language model under its own name (`language_model.model.layers.N.mlp`)."""

from __future__ import annotations

import ast
import itertools
from typing import Any

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import ClassVal, Const, FunctionVal
from routescope.analysis.phases.handed import assigned, builds, from_values, param_names
from routescope.analysis.phases.inner import InnerCalls
from routescope.analysis.phases.model import ModelSite, init_bodies
from routescope.analysis.phases.trace import resolve_entry
from routescope.analysis.walked import walked

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def module_paths(engine: Engine, site: ModelSite, layer: int) -> tuple[tuple[str, ...], str]:
    """The module path of each class along the chain, the block's last, with layer `layer`;
    none where a step cannot be read, and then why."""
    chain = [c for c in (resolve_entry(engine, q) for q in site.chain) if isinstance(c, ClassVal)]
    if not chain or len(chain) != len(site.chain):
        return (), "the constructor chain is not all classes"
    prefix = _root(chain[0])
    if prefix is None:
        return (), f"{chain[0].qualname} takes no prefix"
    paths = [prefix]
    for parent, child in itertools.pairwise(chain):
        step = _handed_prefix(engine, parent, child, paths[-1], layer, site.inner)
        if step is None:
            return (), f"{parent.qualname} hands {child.qualname} no prefix read from its own"
        paths.append(step)
    return tuple(paths), ""


def _root(model: ClassVal) -> str | None:
    """The model class's own path: the empty one (the loader builds the model as the root
    module, whose parts are named from it), where its constructor takes a `prefix`."""
    init = model.lookup("__init__")
    node = init.node if isinstance(init, FunctionVal) else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    return "" if "prefix" in param_names(node) else None


def _handed_prefix(
    engine: Engine, parent: ClassVal, child: ClassVal, prefix: str, layer: int, inner: InnerCalls
) -> str | None:
    """The `prefix=` the parent's constructor builds `child` with, its own being `prefix`:
    written at one place, read from the parent's `prefix` and module-level names alone. Built
    in a layer factory (`def get_layer(prefix): return Layer(..., prefix=prefix)` handed to a
    helper with `prefix=f"{prefix}.layers"`), the layer's path is the helper's plus the layer's
    index, as a module list names its items."""
    bodies = init_bodies(parent)
    name = child.node.name if child.node is not None else child.qualname.rpartition(".")[2]
    calls: list[tuple[ast.Call, ast.AST, Any]] = []
    for b, m in bodies:  # the most derived constructor that builds it (a base's runs before
        calls = [  # it, if at all, and what it built is replaced)
            (c, b, m)
            for c in walked(b)
            if isinstance(c, ast.Call) and (builds(c, name) or _by_attribute(parent, c, child))
        ]
        if calls:
            break
    keyword = "prefix"
    if not calls and (parent.qualname, child.qualname) in inner:  # built by name, its path
        call, body, module, keyword = inner[parent.qualname, child.qualname]  # handed on
        calls = [(call, body, module)]
    if len(calls) != 1 or calls[0][2] is None:
        return None
    call, body, module = calls[0]
    expr = _keyword(call, keyword)
    if expr is None or "prefix" in assigned(body):  # (its own, changed: not read here)
        return None
    factory = _factory(body, call)
    if factory is not None:  # built per layer: the helper the factory is handed to names it
        if not (isinstance(expr, ast.Name) and expr.id in param_names(factory)):
            return None
        helper = _handed_to(body, factory)
        outer = _keyword(helper, "prefix") if helper is not None else None
        if outer is None:
            return None
        got = _evaluate(engine, module, outer, prefix)
        return None if got is None else f"{got}.{layer}"
    return _evaluate(engine, module, expr, prefix)


def _evaluate(engine: Engine, module: Any, expr: ast.expr, prefix: str) -> str | None:
    if not from_values(expr, {"prefix"}, set(), module.globals):
        return None
    got = engine.evaluate_in(
        PathState(envs=[{}]), module.name, ast.unparse(expr), {"prefix": Const(prefix)}
    )
    if len(got) != 1 or got[0][0].raising is not None:
        return None
    v = got[0][1]
    return v.value if isinstance(v, Const) and isinstance(v.value, str) else None


def _by_attribute(parent: ClassVal, call: ast.Call, child: ClassVal) -> bool:
    """`self.model_cls(...)`, the class attribute holding `child`."""
    f = call.func
    return (
        isinstance(f, ast.Attribute)
        and isinstance(f.value, ast.Name)
        and f.value.id == "self"
        and parent.lookup(f.attr) is child
    )


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _factory(body: ast.AST, call: ast.Call) -> ast.AST | None:
    """The innermost function written inside `body` (not `body` itself) that holds `call`."""
    found = None
    for node in walked(body):
        holds = node is not body and isinstance(node, _FUNCTIONS)
        inner = found is None or any(n is node for n in walked(found))
        if holds and inner and any(n is call for n in walked(node)):
            found = node
    return found


def _handed_to(body: ast.AST, factory: ast.AST) -> ast.Call | None:
    """The one call in `body` that is handed the factory (by its name, or the lambda itself)."""
    name = getattr(factory, "name", None)
    out = [
        c
        for c in walked(body)
        if isinstance(c, ast.Call)
        and any(
            a is factory or (name is not None and isinstance(a, ast.Name) and a.id == name)
            for a in [*c.args, *(k.value for k in c.keywords)]
        )
    ]
    return out[0] if len(out) == 1 else None
