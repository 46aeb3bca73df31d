"""pathlib, os.path and glob: paths of known text are values; the server's filesystem queries
about its model path are answered from the checkpoint routescope read (else Unknown)."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from routescope.analysis.engine.containers import ListVal, Seq
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    Const,
    Unknown,
    UnknownKind,
    Value,
    describe,
    merge_origins,
)
from routescope.analysis.library.registry import Paths, models, one

if TYPE_CHECKING:
    from routescope.analysis.engine.base import EngineBase


class UnknownPath(Unknown):
    """A path on the server whose text the facts do not tell (`Path(__file__).parent.resolve()`,
    a package's install directory): unknown, yet a path. It is true, `/` joins it (a path never
    divides: no ZeroDivisionError), and what pathlib gives back as a path is one."""

    __slots__ = ()

    def __init__(self, reason: str, origins: tuple[str, ...] = ()) -> None:
        super().__init__(reason, origins, truthy=True, kind=UnknownKind.OPAQUE)
        self.not_none = True


class PathMethod(Unknown):
    """A method of a path that gives a path back (`resolve`, `with_suffix`, ...), the path not
    known: called, it gives an unknown path."""

    __slots__ = ()


# what pathlib's paths give back as a path: attributes, and methods (a known path's pure
# methods are evaluated on it; these are the ones of an unknown path, or that ask the disk)
PATH_ATTRIBUTES = frozenset({"parent"})
PATH_RETURNING = frozenset({"absolute", "expanduser", "joinpath", "readlink", "relative_to",
                            "resolve", "with_name", "with_stem", "with_suffix"})  # fmt: skip


def is_path(v: Value) -> bool:
    known = isinstance(v, Const) and isinstance(v.value, PurePosixPath)
    return known or isinstance(v, UnknownPath)


def path_attribute(obj: Unknown, name: str) -> Unknown:
    """An attribute of an unknown value: as unknown; of an unknown path, a path where pathlib's
    is one (`p.parent`), a method that gives one back (`p.resolve`)."""
    if isinstance(obj, UnknownPath) and name in PATH_ATTRIBUTES:
        return UnknownPath(obj.reason, obj.origins)
    if isinstance(obj, UnknownPath) and name in PATH_RETURNING:
        return PathMethod(obj.reason, obj.origins, kind=obj.kind)
    return Unknown(obj.reason, obj.origins, kind=obj.kind)


def path_join(a: Value, b: Value) -> Unknown | None:
    """`a / b` with a path on one side and an operand whose value is not known: an unknown path
    (pathlib joins; None where neither side is a path)."""
    if not (is_path(a) or is_path(b)):
        return None
    unknown = next((v for v in (a, b) if isinstance(v, Unknown)), None)
    why = unknown.reason if unknown else f"{describe(a)} / {describe(b)}"
    return UnknownPath(why, merge_origins(a, b))


def join_paths(vals: Sequence[Value | None], why: str) -> Unknown | None:
    """Unknown paths on each of the paths joined: an unknown path (None where not all are)."""
    if vals and all(isinstance(v, UnknownPath) for v in vals):
        return UnknownPath(why, merge_origins(*(v for v in vals if v is not None)))
    return None


def each_of(seqs: list[Seq]) -> Value | None:
    """What every item of these lists is, where a list's contents are no longer kept (a loop
    forgets them, a join cannot align them): a path, where every item each holds, or is said
    to hold, is one; None otherwise."""
    values: list[Value | None] = []
    for seq in seqs:
        layout = seq.layout()
        if layout is None and seq.each is None:
            return None
        values.extend([v for v, _ in layout] if layout is not None else [seq.each])
    return join_paths(values, "an item of a list of unknown contents") if values else None


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
    if args:  # a path whose text is not known (or a call that fails: as for any library call)
        return one(st, UnknownPath(f"result of {name}()", merge_origins(*args)))
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
