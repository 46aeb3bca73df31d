"""Package versions as the framework's code compares them: what `packaging.version` parses. A
package's `__version__` is a fact (Facts.versions: the version the release pins), read where
the module's attribute is looked up; `__import__` is modelled with importlib's import_module."""

from __future__ import annotations

import ast

from packaging.version import InvalidVersion, Version

from routescope.analysis.engine.base import EngineBase
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import Const, Value, raises
from routescope.analysis.library.registry import Paths, models, one


@models("packaging.version.parse", "packaging.version.Version")
def _version(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """A version string parsed as packaging parses it: a constant that compares as a Version
    (an invalid one raises InvalidVersion, as packaging does)."""
    if len(args) != 1 or kwargs or not isinstance(args[0], Const):
        return None
    text = args[0].value
    if not isinstance(text, str):
        return None
    try:
        return one(st, Const(Version(text), args[0].origins))
    except InvalidVersion:
        return one(st, raises("InvalidVersion", f"invalid version {text!r}"))


@models("importlib.metadata.version", "importlib_metadata.version")
def _distribution_version(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """importlib.metadata.version(distribution): the traced release's own version, or the
    version it pins a distribution to (Facts.distributions); anything else stays unknown."""
    if len(args) != 1 or not isinstance(args[0], Const) or not isinstance(args[0].value, str):
        return None
    known = eng.facts.distributions.get(args[0].value)
    if known is None:
        return None
    version, said = known
    eng.facts.assume("package", f"{args[0].value} version", version, said)
    return one(st, Const(version, (said,)))
