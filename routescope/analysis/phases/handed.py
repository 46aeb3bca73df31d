"""What a parent hands the class it builds beyond the values a block is built from: a decoder
layer's `MoE(config=config, ..., is_v4=True)` that switches the block to another routing. A
class built from the values alone takes each such parameter's default, which the served model
may never do."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Mapping
from dataclasses import dataclass

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import ClassVal, Value


@dataclass(frozen=True, slots=True)
class Handed:
    """The arguments the parent's construction passes beyond the values: those that follow
    from the values alone (constants, module-level names, the values the parent is handed)
    with what they evaluate to; the names of the others (from what the parent computed or
    was handed and the values do not hold), left at the child's defaults; where the call is."""

    known: dict[str, Value]
    left: tuple[str, ...]
    where: str


def handed(engine: Engine, parent: ClassVal, child: ClassVal, values: dict[str, Value]) -> Handed:
    """What the constructor of `parent` (or of a base) passes `child` beyond `values`, when it
    builds it at one place; nothing when it builds it nowhere it can see or at several places
    (which one runs is the parent's to decide)."""
    node = getattr(child.lookup("__init__"), "node", None)
    calls = _calls(parent, child)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or len(calls) != 1:
        return Handed({}, (), "")
    ((owner, call),) = calls
    params = [p.arg for p in [*node.args.posonlyargs, *node.args.args][1:]]
    passed: list[tuple[str, ast.expr]] = []
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred) or i >= len(params):
            return Handed({}, ("*args",), _where(owner, call))
        passed.append((params[i], arg))
    for kw in call.keywords:
        if kw.arg is None:
            return Handed({}, ("**kwargs",), _where(owner, call))
        passed.append((kw.arg, kw.value))
    module = owner.module
    init = getattr(owner.attrs.get("__init__"), "node", None)
    if module is None or not isinstance(init, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return Handed({}, (), "")
    own = [a.arg for a in [*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs]]
    bound = {name: values[name] for name in own if name in values}
    known: dict[str, Value] = {}
    left: list[str] = []
    for name, expr in passed:
        if name in values:
            continue  # the values hold it (the parent passes what it was handed of them)
        if not _from_values(expr, set(bound), set(own) | _assigned(init), module.globals):
            left.append(name)
            continue
        got = engine.evaluate_in(PathState(envs=[{}]), module.name, ast.unparse(expr), bound)
        if len(got) == 1 and got[0][0].raising is None:
            known[name] = got[0][1]
        else:
            left.append(name)
    return Handed(known, tuple(left), _where(owner, call))


def _calls(parent: ClassVal, child: ClassVal) -> list[tuple[ClassVal, ast.Call]]:
    """Where the constructors along `parent`'s MRO call `child` by name."""
    name = child.node.name if child.node is not None else child.qualname.rpartition(".")[2]
    out = []
    for owner in parent.mro():
        init = getattr(owner.attrs.get("__init__"), "node", None)
        for sub in ast.walk(init) if init is not None else ():
            if isinstance(sub, ast.Call) and (
                (isinstance(sub.func, ast.Name) and sub.func.id == name)
                or (isinstance(sub.func, ast.Attribute) and sub.func.attr == name)
            ):
                out.append((owner, sub))
    return out


def _assigned(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names a function body binds (its locals)."""
    return {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _from_values(
    expr: ast.expr, bound: set[str], local: set[str], globals_: Mapping[str, object]
) -> bool:
    """Whether `expr` reads only the parameters the values give, module-level names and
    builtins: nothing the parent computed (its locals, `self`) or was handed beyond them."""
    for sub in ast.walk(expr):
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


def _where(owner: ClassVal, call: ast.Call) -> str:
    rel = owner.module.relpath if owner.module is not None else "?"
    return f"{rel}:{call.lineno}"
