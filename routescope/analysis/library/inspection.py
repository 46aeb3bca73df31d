"""inspect.signature of the framework's own functions and classes: their parameters, read from
the definition (a loader that passes only the arguments a model class's __init__ takes, a
capability check that asks whether a method accepts a keyword)."""

from __future__ import annotations

import ast
import inspect
from typing import TYPE_CHECKING

from routescope.analysis.engine.containers import str_dict
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    External,
    FunctionVal,
    Instance,
    Value,
)
from routescope.analysis.library.records import closed_attributes
from routescope.analysis.library.registry import Paths, models, one

if TYPE_CHECKING:
    from routescope.analysis.engine.base import EngineBase
    from routescope.analysis.engine.state import PathState

KIND = inspect.Parameter
EMPTY = External("inspect.Parameter.empty")


def _parameter(name: str, kind: inspect._ParameterKind, default: Value) -> Instance:
    return Instance(
        None,
        {"name": Const(name), "kind": Const(kind, ("inspect.Parameter",)), "default": default},
        "Parameter",
    )


def signature(eng: EngineBase, fn: FunctionVal, drop_first: bool) -> Instance:
    """The Signature of a function as Python reports it (a bound method without its first
    parameter); defaults are what the definition evaluates them to."""
    a = fn.node.args
    positional = [*a.posonlyargs, *a.args]
    named = [p.arg for p in positional[len(positional) - len(a.defaults) :]]
    defaults: dict[str, ast.expr] = dict(zip(named, a.defaults, strict=True))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d})
    bound = eng.bind(fn, [], {}) if defaults else {}
    params: list[tuple[str, inspect._ParameterKind]] = [
        *((p.arg, KIND.POSITIONAL_ONLY) for p in a.posonlyargs),
        *((p.arg, KIND.POSITIONAL_OR_KEYWORD) for p in a.args),
        *(((a.vararg.arg, KIND.VAR_POSITIONAL),) if a.vararg else ()),
        *((p.arg, KIND.KEYWORD_ONLY) for p in a.kwonlyargs),
        *(((a.kwarg.arg, KIND.VAR_KEYWORD),) if a.kwarg else ()),
    ]
    if drop_first and params and params[0][1] is not KIND.KEYWORD_ONLY:
        params = params[1:]
    made: dict[str, Value] = {
        name: _parameter(name, kind, bound.get(name, EMPTY) if name in defaults else EMPTY)
        for name, kind in params
    }
    return Instance(None, {"parameters": str_dict(made)}, "Signature")


@models("inspect.signature")
def _signature(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    target = eng.resolved(args[0]) if args else None
    if isinstance(target, ClassVal):  # what calling the class takes: its __init__ less self
        init = target.lookup("__init__")
        if isinstance(init, FunctionVal):
            return one(st, signature(eng, init, drop_first=True))
        return None
    if isinstance(target, FunctionVal) and not isinstance(target.node, ast.Lambda):
        bound = target.bound is not None and "staticmethod" not in target.decorators
        return one(st, signature(eng, target, drop_first=bound))
    return None


@models("inspect.getattr_static")
def _getattr_static(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """inspect.getattr_static(cls, "name"[, default]): the attribute as the dictionaries along
    the class's MRO hold it, no descriptor run (a check whether a subclass overrides a base's
    method compares the two by identity). Where no class of the MRO has it, the default only
    when the bases from outside are known to have no such attribute."""
    attr = args[1] if len(args) > 1 else kwargs.get("attr")
    default = args[2] if len(args) > 2 else kwargs.get("default")
    target = eng.resolved(args[0]) if args else None
    if not isinstance(target, ClassVal) or not isinstance(attr, Const):
        return None
    if not isinstance(attr.value, str):
        return None
    found = target.lookup(attr.value)
    if found is not None:
        return one(st, found)
    if default is not None and closed_attributes(target, attr.value):
        return one(st, default)
    return None
