"""Tracked containers (lists, tuples, dicts, sets) as a path sees them."""

from __future__ import annotations

import ast

from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    External,
    Instance,
    OpenKeys,
    Unknown,
    UnknownKind,
    Value,
    merge_origins,
    rest_of_dicts,
    truth,
)
from routescope.analysis.library.builtins import (
    ordered,
)

SEQ_LIMIT = 2048
LIST_UNKNOWN = "*"  # a list field that says its contents are no longer known


def is_list(v: Value) -> bool:
    """A mutable list the engine tracks item by item (fields "0".."n-1" in the path's view)."""
    return isinstance(v, Instance) and v.cls is None and v.label == "list"


def new_list(items: list[Value]) -> Instance:
    return Instance(None, {str(i): v for i, v in enumerate(items)}, "list")


def seq_items(st: PathState, v: Value) -> list[Value] | None:
    """The items of a tracked tuple or list as this path sees them; None when not known."""
    if isinstance(v, Instance) and v.cls is None and v.label in ("tuple", "list"):
        f = st.fields(v) if v.label == "list" else v.fields
        if LIST_UNKNOWN in f:
            return None
        return list(f.values())
    return None


def is_set(v: Value) -> bool:
    """A mutable set the engine tracks by its items (fields keyed by each item's repr)."""
    return isinstance(v, Instance) and v.cls is None and v.label == "set"


def new_set(items: list[Value]) -> Value:
    """A tracked set of these items; a set of unknown items is an unknown set."""
    if not all(isinstance(i, Const) for i in items):
        return Instance(
            None,
            {LIST_UNKNOWN: Unknown("set of unknown items", kind=UnknownKind.UNSUPPORTED)},
            "set",
        )
    return Instance(None, {repr(i.value): i for i in items}, "set")  # type: ignore[attr-defined]


def set_items(st: PathState, v: Value) -> list[Value] | None:
    """A tracked set's items as this path sees them, in one fixed order; None if unknown."""
    f = st.fields(v) if isinstance(v, Instance) else {}
    if LIST_UNKNOWN in f or not all(isinstance(v, Const) for v in f.values()):
        return None  # (a join of paths whose sets differ leaves Unknown members)
    return [f[k] for k in sorted(f)]


def is_dict(v: Value) -> bool:
    return isinstance(v, Instance) and v.cls is None and v.label == "dict"


def open_set_minus(st: PathState, a: Value, b: Value) -> Value | None:
    """`a - b` where `a` is a set with members only perhaps there (OpenKeys: the keys of a
    joined dict) and `b` a known set: the same kind of set, closed when every perhaps-member
    is removed. None when the operands are not of that kind."""
    view = st.fields(a) if isinstance(a, Instance) else {}
    rest = view.get(LIST_UNKNOWN)
    if not isinstance(rest, OpenKeys) or not (
        isinstance(b, Const) and isinstance(b.value, (set, frozenset))
    ):
        return None
    gone = {repr(x) for x in b.value}
    fields = {k: v for k, v in view.items() if k != LIST_UNKNOWN and k not in gone}
    maybe = rest.keys - gone
    if maybe:
        fields[LIST_UNKNOWN] = OpenKeys(maybe, rest.reason)
    return Instance(None, fields, "set")


def update_view(view: dict[str, Value], other: dict[str, Value]) -> None:
    """`view.update(other)` for two dicts' path views: what either may also hold ("*") is
    combined, not overwritten by `other`'s."""
    rest = rest_of_dicts([view.get(LIST_UNKNOWN), other.get(LIST_UNKNOWN)])
    view.update(other)
    if rest is not None:
        view[LIST_UNKNOWN] = rest


def key_absent(view: dict[str, Value], key: str) -> bool:
    """Is `key` (a repr) known to be absent from a dict this path sees as `view`?"""
    if key in view:
        return False
    rest = view.get(LIST_UNKNOWN)
    return rest is None or (isinstance(rest, OpenKeys) and key not in rest.keys)


def items_of(st: PathState, v: Value) -> list[Value] | None:
    """The items of a list, tuple or constant sequence, as this path sees them."""
    if isinstance(v, Const) and isinstance(v.value, (list, tuple)):
        return [Const(x, v.origins) for x in v.value]
    return seq_items(st, v)


def snapshot(st: PathState, v: Value) -> Value:
    """A list as this path sees it now, as an immutable value (a Const list when every item is
    known, else a tuple object); a dict this path changed, as a copy of its view; every other
    value as it is."""
    if is_dict(v):
        assert isinstance(v, Instance)
        view = st.fields(v)
        return v if view is v.fields else Instance(None, dict(view), "dict")
    if is_set(v):
        members = set_items(st, v)
        if members is None:
            return Unknown("set of unknown contents", kind=UnknownKind.UNSUPPORTED)
        return Const({m.value for m in members}, merge_origins(*members))  # type: ignore[attr-defined]
    if not is_list(v):
        return v
    items = seq_items(st, v)
    if items is None:
        return Unknown("list of unknown contents", kind=UnknownKind.UNSUPPORTED)
    if all(isinstance(i, Const) for i in items):
        return Const([i.value for i in items], merge_origins(*items))  # type: ignore[attr-defined]
    return Instance(None, {str(i): x for i, x in enumerate(items)}, "tuple")


def truth_in(st: PathState, v: Value) -> bool | None:
    """Truthiness as this path sees it: a tracked list is false when empty."""
    if is_list(v):
        items = seq_items(st, v)
        return None if items is None else bool(items)
    if is_dict(v) or is_set(v):
        assert isinstance(v, Instance)
        view = st.fields(v)
        if LIST_UNKNOWN in view:
            return True if len(view) > 1 and is_dict(v) else None  # a known key is there
        return bool(view)
    return truth(v)


def iteration(v: Value, st: PathState) -> list[Value] | None:
    if isinstance(v, Const) and isinstance(v.value, (tuple, list, frozenset, set, str, range)):
        return [Const(x, v.origins) for x in ordered(v.value)]
    if isinstance(v, Instance) and v.label in ("tuple", "list"):
        return seq_items(st, v)
    if is_set(v):
        return set_items(st, v)
    if isinstance(v, Instance) and v.cls is None and v.label == "dict":
        f = st.fields(v)
        if LIST_UNKNOWN in f:
            return None
        try:  # keys are stored as their repr
            return [Const(ast.literal_eval(k)) for k in f]
        except (ValueError, SyntaxError):
            return None
    if isinstance(v, ClassVal) and v.is_enum:
        return [m for m in v.attrs.values() if type(m).__name__ == "EnumMember"]
    if isinstance(v, External):
        return None
    return None


def as_built(st: PathState, v: Value, depth: int) -> Value:
    """A container as this path built it, as an object of its own: what a cached function
    returns is read later on paths that do not share this one's writes."""
    if not (isinstance(v, Instance) and v.cls is None and depth > 0):
        return v
    view = st.fields(v)
    fields = {k: as_built(st, x, depth - 1) for k, x in view.items()}
    if view is v.fields and all(fields[k] is view[k] for k in view):
        return v
    return Instance(None, fields, v.label)


def set_of(items: list[Value]) -> Value:
    try:
        return new_set(items)
    except TypeError:
        return Unknown("set() of unhashable items", kind=UnknownKind.UNSUPPORTED)


def tuple_of(items: list[Value]) -> Instance:
    return Instance(None, {str(i): v for i, v in enumerate(items)}, "tuple")


def index_of(v: Value) -> int | None:
    if isinstance(v, Const) and isinstance(v.value, int) and not isinstance(v.value, bool):
        return v.value
    return None


def unknown_list() -> Instance:
    return Instance(
        None,
        {LIST_UNKNOWN: Unknown("copy of a list of unknown contents", kind=UnknownKind.UNSUPPORTED)},
        "list",
    )


def key_value(key: str) -> Value:
    import ast as _ast

    try:
        return Const(_ast.literal_eval(key))
    except (ValueError, SyntaxError):
        return Unknown("dict key", kind=UnknownKind.UNSUPPORTED)
