"""typing's reflection as framework code uses it: Annotated[...], get_origin, get_args,
get_type_hints."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, cast

from routescope.analysis.engine.containers import TupleVal, new_tuple
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    External,
    Instance,
    Unknown,
    UnknownKind,
    Value,
)
from routescope.analysis.library.registry import Paths, models, one

if TYPE_CHECKING:
    from routescope.analysis.engine.base import EngineBase

ANNOTATED = frozenset({"typing.Annotated", "typing_extensions.Annotated"})
LITERAL = frozenset({"typing.Literal", "typing_extensions.Literal"})


def _items(idx: Value) -> list[Value] | None:
    """The items of a subscript's index: `X[a, b]` gives a and b, `X[a]` gives a."""
    if isinstance(idx, Const) and isinstance(idx.value, tuple):
        return [Const(x, idx.origins) for x in idx.value]
    if isinstance(idx, TupleVal):
        return list(idx.items)
    return None


def literal(idx: Value) -> Value:
    """`Literal["a", "b"]`: the type with its values, which get_args gives back (framework code
    lists a Literal's values as the choices an option accepts)."""
    items = _items(idx)
    return Instance(
        None,
        {"__origin__": External("typing.Literal"), "__args__": new_tuple(items or [idx])},
        "typing.Literal",
    )


def annotated(idx: Value) -> Value:
    """`Annotated[T, meta...]`: the type with its metadata (what get_origin/get_args read)."""
    items = _items(idx)
    if items is None:
        return Unknown("Annotated[] of unknown arguments", kind=UnknownKind.UNSUPPORTED)
    return Instance(
        None, {"__origin__": items[0], "__metadata__": new_tuple(items[1:])}, "typing.Annotated"
    )


_TYPING_ORIGINS = {
    "typing.Optional": "typing.Union",
    "typing.Union": "typing.Union",
    "typing.List": "list",
    "typing.Dict": "dict",
    "typing.Tuple": "tuple",
    "typing.Set": "set",
    "typing.FrozenSet": "frozenset",
    "typing.Literal": "typing.Literal",
    "typing.Callable": "collections.abc.Callable",
    "typing.Type": "type",
    "typing.Any": "",
}


@models(
    "typing.get_origin",
    "typing.get_args",
    "typing_extensions.get_origin",
    "typing_extensions.get_args",
)
def _origin_or_args(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    if len(args) != 1:
        return None
    tp = eng.resolved(args[0])
    origin = name.endswith("get_origin")
    if isinstance(tp, Instance) and tp.label == "typing.Annotated":
        if origin:
            return one(st, External("typing.Annotated"))
        meta = cast(TupleVal | Const, tp.fields["__metadata__"])
        rest = list(meta.items) if isinstance(meta, TupleVal) else [Const(x) for x in meta.value]
        return one(st, new_tuple([tp.fields["__origin__"], *rest]))
    if isinstance(tp, Instance) and tp.label == "typing.Literal":
        return one(st, tp.fields["__origin__" if origin else "__args__"])
    plain = isinstance(tp, (ClassVal, Const)) or (
        isinstance(tp, External) and "." not in tp.name  # bool, int, str: no origin, no args
    )
    if plain:
        return one(st, Const(None) if origin else Const(()))
    if origin and isinstance(tp, External) and tp.name in _TYPING_ORIGINS:
        # `Optional[X]` is kept as typing.Optional: its origin is known, its arguments are not
        found = _TYPING_ORIGINS[tp.name]
        return one(st, External(found) if found else Const(None))
    return None


@models("typing.get_type_hints", "typing_extensions.get_type_hints")
def _type_hints(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    cls = eng.resolved(args[0]) if args else None
    return one(st, eng.type_hints(cls)) if isinstance(cls, ClassVal) else None


@models("typing.cast", "typing_extensions.cast")
def _cast(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """cast(T, value) returns value unchanged (a note for type checkers only)."""
    value = args[1] if len(args) == 2 else kwargs.get("val")
    return one(st, value) if value is not None else None
