"""Numbers known only in part: bounds that min() and max() give."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    AtLeast,
    Const,
    Unknown,
    UnknownKind,
    Value,
    merge_origins,
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
    when no bound follows, or when every argument is known (the pure builtin computes that)."""
    if len(args) < 2 or kwargs or all(isinstance(a, Const) for a in args):
        return None
    lows: list[int | None] = []
    for a in args:
        if isinstance(a, AtLeast):
            lows.append(a.low)
        elif isinstance(a, Const) and type(a.value) is int:
            lows.append(a.value)
        elif type(a) is Unknown and a.kind is not UnknownKind.RAISED:
            lows.append(None)  # a number not known: no bound of its own
        else:
            return None
    known = [x for x in lows if x is not None]
    if name == "max" and known:
        low = max(known)
    elif name == "min" and len(known) == len(lows):
        low = min(known)
    else:
        return None
    # what the unknown operand was (an environment variable, a joined value) stays said: a
    # fork on the bound names what decides it
    why = next(a for a in args if isinstance(a, Unknown))
    out = AtLeast(low, why.reason, merge_origins(*args))
    out.kind = why.kind
    return one(st, out)
