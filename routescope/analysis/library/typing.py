"""typing's reflection as framework code uses it: Annotated[...], get_origin, get_args."""

from __future__ import annotations

from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    External,
    Instance,
    Unknown,
    UnknownKind,
    Value,
)


def annotated(idx: Value) -> Value:
    """`Annotated[T, meta...]`: the type with its metadata (what get_origin/get_args read)."""
    if isinstance(idx, Const) and isinstance(idx.value, tuple):
        items: list[Value] = [Const(x, idx.origins) for x in idx.value]
    elif isinstance(idx, Instance) and idx.cls is None and idx.label == "tuple":
        items = list(idx.fields.values())
    else:
        return Unknown("Annotated[] of unknown arguments", kind=UnknownKind.UNSUPPORTED)
    return Instance(
        None,
        {
            "__origin__": items[0],
            "__metadata__": Instance(None, {str(i): v for i, v in enumerate(items[1:])}, "tuple"),
        },
        "typing.Annotated",
    )


def typing_call(name: str, args: list[Value]) -> Value | None:
    """typing.get_origin / typing.get_args of an annotation value."""
    if (
        name
        not in (
            "typing.get_origin",
            "typing.get_args",
            "typing_extensions.get_origin",
            "typing_extensions.get_args",
        )
        or len(args) != 1
    ):
        return None
    tp = args[0]
    origin = name.endswith("get_origin")
    if isinstance(tp, Instance) and tp.label == "typing.Annotated":
        if origin:
            return External("typing.Annotated")
        meta = list(tp.fields["__metadata__"].fields.values())  # type: ignore[attr-defined]
        return Instance(
            None, {str(i): v for i, v in enumerate([tp.fields["__origin__"], *meta])}, "tuple"
        )
    plain = isinstance(tp, (ClassVal, Const)) or (
        isinstance(tp, External) and "." not in tp.name  # bool, int, str: no origin, no args
    )
    if plain:
        return Const(None) if origin else Const(())
    if origin and isinstance(tp, External) and tp.name in _TYPING_ORIGINS:
        # `Optional[X]` is kept as typing.Optional: its origin is known, its arguments are not
        found = _TYPING_ORIGINS[tp.name]
        return External(found) if found else Const(None)
    return None


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
