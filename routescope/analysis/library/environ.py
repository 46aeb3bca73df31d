"""The process environment: os.environ and os.getenv answered from --env and the rules'
convention for variables the user did not give (unset, or unknown)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from routescope.analysis.engine.containers import ListVal, new_tuple, str_dict
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import Const, Unknown, UnknownKind, Value
from routescope.analysis.library.registry import Paths, models, one

if TYPE_CHECKING:
    from routescope.analysis.engine.base import EngineBase


@models("os.getenv", "os.environ.get", "os.environ.__getitem__", "os.environ.setdefault")
def _getenv(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    if not args or not isinstance(args[0], Const):
        return one(st, Unknown("environment variable with an unknown name", kind=UnknownKind.INPUT))
    var = str(args[0].value)
    facts = eng.facts
    if var in facts.env:
        return one(st, Const(facts.env[var], (f"--env {var}",)))
    default = args[1] if len(args) > 1 else kwargs.get("default")
    if default is None and facts.env_unset_means_absent:
        facts.env_unset(var)
        return one(st, Const(None, (f"env {var} unset (assumed; give --env {var}=... to change)",)))
    if default is None:
        return one(
            st,
            Unknown(
                f"environment variable {var} has no default (give --env {var}=...)",
                (f"env {var}",),
                kind=UnknownKind.INPUT,
            ),
        )
    if isinstance(default, Const):
        where = f"{eng.current_file()}:{getattr(node, 'lineno', 0)}"
        return one(st, Const(default.value, (f"env {var} unset: default at {where}",)))
    return one(st, default)


@models("os.environ.items", "os.environ.keys", "os.environ.values", "os.environ.copy")
def _listed(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """What the environment lists, where the rules take a variable not given as unset: the
    --env variables and no others (else unknown, as any library call routescope does not
    model)."""
    facts = eng.facts
    if args or kwargs or not facts.env_unset_means_absent:
        return None
    facts.env_unset("any other variable (os.environ listed)")
    given: dict[str, Value] = {k: Const(v, (f"--env {k}",)) for k, v in sorted(facts.env.items())}
    view = name.rsplit(".", 1)[1]
    if view == "copy":
        return one(st, str_dict(given))
    made: list[Value] = (
        [new_tuple([Const(k), v]) for k, v in given.items()]
        if view == "items"
        else [Const(k) for k in given]
        if view == "keys"
        else list(given.values())
    )
    return one(st, ListVal(made))
