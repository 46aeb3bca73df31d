"""functools and contextvars as framework code uses them: partial, the caching and wrapping
decorators (the memo itself is the engine's, per path), context variables."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from routescope.analysis.engine.bound import CONTEXT_VAR, Partial
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import ClassVal, External, FunctionVal, Instance, Value
from routescope.analysis.library.registry import Paths, models, one

if TYPE_CHECKING:
    from routescope.analysis.engine.base import EngineBase

# decorators that give back the function they decorate (the engine reads their effect from
# the decorator's name: functools.cache memoises, property is a descriptor)
IDENTITY_DECORATORS = (
    "functools.lru_cache",
    "functools.cache",
    "functools.wraps",
    "functools.cached_property",
    "typing.overload",
    "typing.final",
)


@models(*IDENTITY_DECORATORS)
def _identity(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    fns = [a for a in args if isinstance(eng.resolved(a), (FunctionVal, Partial, ClassVal))]
    return one(st, fns[0] if fns else External(f"{name}#decorator"))  # @lru_cache(maxsize=8)


@models(*(f"{d}#decorator" for d in IDENTITY_DECORATORS))
def _applied(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    return one(st, args[0]) if len(args) == 1 else None


@models("functools.partial")
def _partial(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    if not args:
        return None
    return one(st, Partial(eng.resolved(args[0]), list(args[1:]), dict(kwargs)))


@models("contextvars.ContextVar")
def _context_var(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """A context variable: its value on this path (a field the path writes), else its default."""
    if not args:
        return None
    default = {"default": kwargs["default"]} if "default" in kwargs else {}
    return one(st, Instance(None, {"name": args[0], **default}, CONTEXT_VAR))
