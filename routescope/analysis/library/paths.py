"""pathlib, os.path and glob: paths of known text are values; the server's filesystem queries
about its model path are answered from the checkpoint routescope read (else Unknown)."""

from __future__ import annotations

import ast
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from routescope.analysis.engine.containers import ListVal
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import Const, Unknown, UnknownKind, Value, merge_origins
from routescope.analysis.library.registry import Paths, models, one

if TYPE_CHECKING:
    from routescope.analysis.engine.base import EngineBase

_FS_QUERIES = {
    "os.path.exists": "exists",
    "os.path.isfile": "file",
    "os.path.isdir": "dir",
    "os.path.lexists": "exists",
}
PATH_METHODS = {"exists": "exists", "is_file": "file", "is_dir": "dir"}


@models("pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "pathlib.PurePosixPath")
def _path(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    if args and all(
        isinstance(a, Const) and isinstance(a.value, (str, PurePosixPath)) for a in args
    ):
        return one(st, Const(PurePosixPath(*(a.value for a in args)), merge_origins(*args)))  # type: ignore[attr-defined]
    return None


@models("glob.glob")
def _glob(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    if not args or not isinstance(args[0], Const):
        return None
    found = listing(eng, str(args[0].value), str)
    return one(st, found) if found is not None else None


@models(*_FS_QUERIES)
def _exists(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    if len(args) != 1:
        return None
    return one(st, fs_query(eng, _FS_QUERIES[name], args[0], name))


def path_method(eng: EngineBase, target: Const, method: str, args: list[Value]) -> Value | None:
    """Path.exists / is_file / is_dir / glob of a known path; None for other methods."""
    if method in PATH_METHODS:
        return fs_query(eng, PATH_METHODS[method], target, f"Path.{method}")
    if method == "glob":
        pattern = args[0].value if len(args) == 1 and isinstance(args[0], Const) else None
        found = (
            None
            if pattern is None
            else listing(eng, str(target.value / str(pattern)), PurePosixPath)
        )
        return found or Unknown("result of Path.glob()", kind=UnknownKind.OPAQUE)
    return None


def listing(eng: EngineBase, pattern: str, kind: type) -> Value | None:
    """The checkpoint paths matching a glob pattern as a new list of `kind` (str for
    glob.glob, a path for Path.glob); None when the listing is not known."""
    cp = eng.facts.checkpoint
    found = cp.listing(pattern) if cp is not None else None
    if found is None or cp is None:
        return None
    origin = (f"checkpoint {cp.root}: {cp.origin}",)
    return ListVal([Const(kind(f), origin) for f in found])


def fs_query(eng: EngineBase, kind: str, arg: Value, what: str) -> Value:
    cp = eng.facts.checkpoint
    if cp is not None and isinstance(arg, Const) and isinstance(arg.value, (str, PurePosixPath)):
        found = cp.query(kind, str(arg.value))
        if found is not None:
            return Const(found, (f"checkpoint {cp.root}: {cp.origin}",))
    return Unknown(f"result of {what}()", kind=UnknownKind.OPAQUE)
