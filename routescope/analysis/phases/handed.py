"""What a parent hands the class it builds beyond the values a block is built from: a decoder
layer's `MoE(config=config, ..., is_v4=True)` that switches the block to another routing. A
class built from the values alone takes each such parameter's default, which the served model
may never do."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import ClassVal, Value
from routescope.analysis.walked import walked

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True, slots=True)
class Handed:
    """The arguments the parent's construction passes that the values do not settle: those
    that follow from the values alone (constants, module-level names, the parent's parameters
    it hands on unchanged) with what they evaluate to; the names of the others (from what the
    parent computes, or was handed and the values do not hold): a parameter the values do not
    hold left at the child's default, one they hold kept as they give it; where the call is."""

    known: dict[str, Value]
    left: tuple[str, ...]
    where: str


def handed(
    engine: Engine,
    parent: ClassVal,
    child: ClassVal,
    values: dict[str, Value],
    bodies: list[tuple[ast.AST, Any]],
) -> Handed:
    """What the constructor of `parent` (`bodies`: its constructors and the methods of its own
    they call, with their modules) passes `child` beyond `values`, when it builds it at one
    place; nothing when it builds it nowhere it can see or at several places (which one runs
    is the parent's to decide)."""
    node = getattr(child.lookup("__init__"), "node", None)
    name = child.node.name if child.node is not None else child.qualname.rpartition(".")[2]
    calls = [
        (c, m) for body, m in bodies for c in walked(body)
        if isinstance(c, ast.Call) and builds(c, name)
    ]  # fmt: skip
    if not isinstance(node, _FUNCTIONS) or len(calls) != 1 or calls[0][1] is None:
        return Handed({}, (), "")
    call, module = calls[0]
    where = f"{module.relpath}:{call.lineno}"
    params = [p.arg for p in [*node.args.posonlyargs, *node.args.args][1:]]
    passed: list[tuple[str, ast.expr]] = []
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred) or i >= len(params):
            return Handed({}, ("*args",), where)
        passed.append((params[i], arg))
    for kw in call.keywords:
        if kw.arg is None:
            return Handed({}, ("**kwargs",), where)
        passed.append((kw.arg, kw.value))
    init = _enclosing(bodies, call)
    local = assigned(init) if init is not None else set()
    own = param_names(init) if init is not None else set()
    # the parent's parameters known to be the values: handed on unchanged, never reassigned
    bound = {
        e.id: values[k]
        for k, e in passed
        if isinstance(e, ast.Name) and k in values and e.id in own and e.id not in local
    }
    known: dict[str, Value] = {}
    left: list[str] = []
    for key, expr in passed:
        if isinstance(expr, ast.Name) and expr.id in bound and bound[expr.id] is values.get(key):
            continue  # the value the values give, handed on
        got = (
            engine.evaluate_in(PathState(envs=[{}]), module.name, ast.unparse(expr), bound)
            if from_values(expr, set(bound), own | local, module.globals)
            else []
        )
        if len(got) == 1 and got[0][0].raising is None:
            known[key] = got[0][1]
        elif key not in values:  # (one the values hold stays as they give it: its path, ...)
            left.append(key)
    return Handed(known, tuple(left), where)


def builds(node: ast.Call, name: str) -> bool:
    """`Name(...)` or `<module or class>.Name(...)`."""
    f = node.func
    return (isinstance(f, ast.Name) and f.id == name) or (
        isinstance(f, ast.Attribute) and f.attr == name and isinstance(f.value, ast.Name)
    )


def _enclosing(bodies: list[tuple[ast.AST, Any]], call: ast.Call) -> ast.AST | None:
    """The body (a constructor or a method of its own) the call is written in."""
    return next((b for b, _ in bodies if any(n is call for n in walked(b))), None)


def param_names(fn: ast.AST) -> set[str]:
    """The names a function (or a lambda) takes."""
    a = fn.args if isinstance(fn, (*_FUNCTIONS, ast.Lambda)) else None
    if a is None:
        return set()
    names = [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg))]
    return {p.arg for p in names}


def assigned(fn: ast.AST) -> set[str]:
    """The names a function body binds (its locals, its parameters reassigned)."""
    return {n.id for n in walked(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def from_values(
    expr: ast.expr, bound: set[str], local: set[str], globals_: Mapping[str, object]
) -> bool:
    """Whether `expr` reads only the parameters known to be the values, module-level names and
    builtins: nothing the parent computed (its locals, `self`) or was handed beyond them."""
    for sub in walked(expr):
        if isinstance(sub, (ast.Lambda, ast.NamedExpr, ast.comprehension)):
            return False
        if isinstance(sub, ast.Name):
            if sub.id in bound:
                continue
            if sub.id in local or sub.id == "self":
                return False
            if sub.id not in globals_ and not hasattr(builtins, sub.id):
                return False
    return True
