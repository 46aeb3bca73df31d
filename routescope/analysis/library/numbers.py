"""Numbers known only in part: bounds that min() and max() give."""

from __future__ import annotations

import ast
import math
from typing import TYPE_CHECKING

from routescope.analysis.engine.contents import iteration
from routescope.analysis.engine.intervals import bounded, low_of
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    AtLeast,
    Const,
    Unknown,
    UnknownKind,
    Value,
)
from routescope.analysis.library.registry import Paths, models, one

if TYPE_CHECKING:
    from routescope.analysis.engine.base import EngineBase


@models("min", "max")
def _bounds(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """max() or min() of numbers some of which are not known: the lower bound the known ones
    give (`max(1, n)` is at least 1; `min(n, 64)` with n at least 1 is at least 1), so a
    division by it is known not to divide by zero (a chunk size, `max(1, min(M, C))`). None
    when no bound follows, or when every argument is known (the pure builtin computes that).
    One argument: its items (`max([m, 1])`), where they are known."""
    if len(args) == 1 and not kwargs:
        items = iteration(args[0], st)
        args = list(items) if items else []
    if not args or kwargs or all(isinstance(a, Const) for a in args):
        return None
    lows = [low_of(a) for a in args]  # None: a number not known (no bound of its own)
    if any(x is None and not (type(a) is Unknown and a.kind is not UnknownKind.RAISED)
           for a, x in zip(args, lows, strict=True)):  # fmt: skip
        return None
    known = [x for x in lows if x is not None]
    if name == "max" and known:
        return one(st, bounded(max(known), args))
    if name == "min" and len(known) == len(lows):
        return one(st, bounded(min(known), args))
    return None


@models("sum", "math.prod")
def _bounded_total(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """sum() or math.prod() of integers some of which are known only from below (sizes made
    from a batch's token count): the bound their least values give (a sum of theirs; a
    product of theirs, every one at least 0), so a buffer sized by them is known not to be
    empty. None when an item is anything else, or no item is such an integer."""
    if len(args) != 1 or kwargs:
        return None
    items = iteration(args[0], st)
    if not items or not any(isinstance(i, AtLeast) for i in items):
        return None
    lows = [low_of(i) for i in items]
    if any(x is None for x in lows):
        return None
    known = [x for x in lows if x is not None]
    if name == "sum":
        return one(st, bounded(sum(known), items))
    if any(x < 0 for x in known):
        return None
    return one(st, bounded(math.prod(known), items))
