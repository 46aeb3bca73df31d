"""re on known text: a pattern and a string the trace knows are matched as Python would match
them (a compiled pattern is a constant; its methods are the constant's, see builtins); a pattern
or a string the trace does not know leaves the call to the engine's default (Unknown).

The `regex` package (often imported as re) matches as re does for every pattern re accepts; a
pattern only `regex` accepts is left to the default, never taken as an error."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import Const, Value, merge_origins, raises
from routescope.analysis.library.registry import Paths, models, one

if TYPE_CHECKING:
    from routescope.analysis.engine.base import EngineBase

_FUNCTIONS = (
    "match",
    "search",
    "fullmatch",
    "compile",
    "sub",
    "subn",
    "split",
    "findall",
    "escape",
)


@models(*(f"{m}.{f}" for m in ("re", "regex") for f in _FUNCTIONS))
def _regex(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    given = [*args, *kwargs.values()]
    if not all(isinstance(a, Const) for a in given):
        return None
    try:
        got = getattr(re, name.rsplit(".", 1)[1])(
            *(a.value for a in args),  # type: ignore[attr-defined]
            **{k: a.value for k, a in kwargs.items()},  # type: ignore[attr-defined]
        )
    except Exception as exc:  # re.error for a bad pattern, TypeError for a bad argument
        if name.startswith("regex."):
            return None  # the regex package may accept what re does not
        return one(st, raises(type(exc).__name__, f"{name}() raised {type(exc).__name__}"))
    return one(st, Const(got, merge_origins(*given)))
