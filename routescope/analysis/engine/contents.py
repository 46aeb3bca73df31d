"""What containers hold as one path sees them: items, entries, membership, truth, length, what a
loop goes through, and snapshots a pure function or a later path may read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from routescope.analysis.engine.openkeys import OpenKeys
from routescope.analysis.engine.state import RECORDING
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    EnumMember,
    Instance,
    PythonRaise,
    Unknown,
    UnknownKind,
    Value,
    merge_origins,
    ordered,
    truth,
)

if TYPE_CHECKING:
    from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.containers import (
    UNHASHABLE,
    UNTOLD,
    DictVal,
    Entries,
    ListVal,
    MappingProxy,
    Seq,
    SetVal,
    TupleVal,
    key_of,
)

FIELD = "__field__"  # a class attribute marking a record's field: __field__<name>


def seq_items(st: PathState, v: Value) -> list[Value] | None:
    """The items of a list or tuple (or a constant one) as this path sees them; None when
    they are not known."""
    if isinstance(v, ListVal):
        seq = st.contents(v)
        assert isinstance(seq, Seq)
        return list(seq.items) if seq.items is not None else None
    if isinstance(v, TupleVal):
        return list(v.items)
    if isinstance(v, Const) and isinstance(v.value, (tuple, list)):
        return [Const(x, v.origins) for x in v.value]
    if isinstance(v, Instance) and v.cls is not None:
        return named_tuple_items(st, v)
    return None


def field_names(cls: ClassVal) -> list[str]:
    """Fields in declaration order, bases first (as dataclasses, NamedTuple and msgspec order
    them)."""
    names: list[str] = []
    for c in reversed(cls.mro()):
        for key in c.attrs:
            if key.startswith(FIELD) and key[len(FIELD) :] not in names:
                names.append(key[len(FIELD) :])
    return names


def named_tuple_items(st: PathState, v: Instance) -> list[Value] | None:
    """A NamedTuple's items (its fields in order), as it is a tuple; None for anything else."""
    cls = v.cls
    if cls is None or not any(b.endswith("NamedTuple") for b in cls.external_bases()):
        return None
    names = field_names(cls)
    fields = st.fields(v)
    return [fields[n] for n in names] if all(n in fields for n in names) else None


def entries(st: PathState, v: DictVal | SetVal) -> Entries:
    got = st.contents(v)
    assert isinstance(got, Entries)
    return got


def dict_get(st: PathState, d: DictVal, key: Value) -> Value | None:
    """`d[key]` on this path: the value, None when the key is known absent (KeyError), or an
    Unknown when it cannot be told."""
    e = entries(st, d)
    k = key_of(key)
    if k is UNHASHABLE:
        return None
    if k is UNTOLD:
        if not e.items and e.closed():
            return None
        return Unknown(
            "a dict looked up with a key routescope cannot tell", kind=UnknownKind.UNSUPPORTED
        )
    if k in e.items:
        return e.items[k][1]
    if e.absent(k):
        return None
    rest = e.rest
    assert rest is not None
    return Unknown(rest.reason, kind=rest.kind)


def perhaps_item(st: PathState, d: DictVal, key: Value) -> Value | None:
    """What `d[key]` holds where `key` is there, for a key only perhaps there (a join or a
    comprehension's undecided filter); None when that is not known. `d.get(key)` may also
    give its default, so only a subscript (which raises where the key is missing) uses it."""
    rest = entries(st, d).rest
    k = key_of(key)
    if isinstance(rest, OpenKeys) and k is not UNTOLD and k is not UNHASHABLE:
        return rest.values.get(k)
    return None


def contains(st: PathState, container: Value, item: Value) -> bool | None:
    """`item in container` for a dict (its keys) or a set; None when it cannot be told."""
    if not isinstance(container, (DictVal, SetVal)):
        return None
    e = entries(st, container)
    k = key_of(item)
    if k is UNHASHABLE or k is UNTOLD:
        return None
    if k in e.items:
        return True
    return False if e.absent(k) else None


def keys_of(st: PathState, v: DictVal | SetVal) -> list[Value] | None:
    """The keys (members) in iteration order; None when not all are known."""
    e = entries(st, v)
    if not e.closed():
        return None
    keys = [kv for kv, _ in e.items.values()]
    return ordered_members(keys) if isinstance(v, SetVal) else keys


def ordered_members(members: list[Value]) -> list[Value]:
    """A set's members in one fixed order (constants by repr, as `ordered` orders Python
    sets): CPython's order of a set of strings changes with PYTHONHASHSEED, and a trace must
    not."""
    if all(isinstance(m, Const) for m in members):
        by = {repr(m.value): m for m in members}  # type: ignore[attr-defined]
        return [by[r] for r in sorted(by)]
    return members


def snapshot(st: PathState, v: Value) -> Value:
    """A container as this path sees it now, as a value a pure function may read: a list as a
    Const list when every item is known (else a TupleVal of its items), a set as a Const set
    of its members; every other value as it is."""
    if isinstance(v, ListVal):
        items = seq_items(st, v)
        if items is None:
            seq = st.contents(v)
            why = seq.why if isinstance(seq, Seq) else None
            return Unknown(
                why.reason if why else "a list of unknown contents",
                kind=why.kind if why else UnknownKind.UNSUPPORTED,
            )
        if all(isinstance(i, Const) for i in items):
            return Const([i.value for i in items], merge_origins(*items))  # type: ignore[attr-defined]
        return TupleVal(items)
    if isinstance(v, SetVal):
        members = keys_of(st, v)
        if members is None or not all(isinstance(m, Const) for m in members):
            return Unknown("a set of unknown members", kind=UnknownKind.UNSUPPORTED)
        return Const({m.value for m in members}, merge_origins(*members))  # type: ignore[attr-defined]
    return v


def truth_in(st: PathState, v: Value) -> bool | None:
    """Truthiness as this path sees it: a container is false when empty."""
    if isinstance(v, ListVal):
        layout = layout_of(v, st)
        if layout is None:
            return None
        if any(not perhaps for _, perhaps in layout):
            return True
        return None if layout else False
    if isinstance(v, TupleVal):
        return bool(v.items)
    if isinstance(v, (DictVal, SetVal)):
        e = entries(st, v)
        if e.items:
            return True
        return False if e.closed() else None
    if type(v) is Unknown and v.kind is UnknownKind.JOINED and v.truthy is None:
        known = st.bounds.get(-id(v))  # a branch on this path decided it (remember_truth)
        for r in RECORDING:  # (what a computation found is part of what it read)
            r.truths.setdefault(-id(v), known)
        if known is not None and known[0] is v and known[1] == known[2]:
            return bool(known[1])
    return truth(v)


def length(st: PathState, v: Value) -> int | None:
    if isinstance(v, (ListVal, TupleVal, Instance)):
        items = seq_items(st, v)
        return None if items is None else len(items)
    if isinstance(v, (DictVal, SetVal)):
        e = entries(st, v)
        return len(e.items) if e.closed() else None
    return None


def layout_of(v: Value, st: PathState) -> tuple[tuple[Value, bool], ...] | None:
    """A list's items in order, each with whether it is perhaps absent (see Seq.maybe); None
    when not known."""
    if isinstance(v, ListVal):
        seq = st.contents(v)
        return seq.layout() if isinstance(seq, Seq) else None
    return None


def iteration(v: Value, st: PathState) -> list[Value] | None:
    """What `for x in v` goes through, in order; None when not known."""
    if isinstance(v, Const) and isinstance(v.value, (tuple, list, frozenset, set, str, range)):
        return [Const(x, v.origins) for x in ordered(v.value)]
    if isinstance(v, (ListVal, TupleVal, Instance)):
        return seq_items(st, v)
    if isinstance(v, (DictVal, SetVal)):
        return keys_of(st, v)
    if isinstance(v, ClassVal) and v.is_enum:
        return [m for m in v.attrs.values() if isinstance(m, EnumMember)]
    return None


def as_built(st: PathState, v: Value, depth: int) -> Value:
    """A container as this path built it, as an object of its own (its contents made its
    base): a value read later on paths that do not share this one's writes."""
    if depth <= 0:
        return v
    if isinstance(v, ListVal):
        seq = st.contents(v)
        assert isinstance(seq, Seq)
        if seq is v.base:
            return v
        items = [as_built(st, x, depth - 1) for x in seq.items] if seq.items is not None else None
        return ListVal(items, seq.why, seq.maybe)
    if isinstance(v, (DictVal, SetVal)):
        e = entries(st, v)
        if e is v.base:
            return v
        made = {k: (kv, as_built(st, x, depth - 1)) for k, (kv, x) in e.items.items()}
        return type(v)(Entries(made, e.rest))
    if isinstance(v, TupleVal):
        return TupleVal([as_built(st, x, depth - 1) for x in v.items], v.origins)
    return v


def index_of(v: Value) -> int | None:
    if isinstance(v, Const) and isinstance(v.value, int) and not isinstance(v.value, bool):
        return v.value
    return None


def write_item(st: PathState, obj: DictVal | ListVal, idx: Value, v: Value) -> PythonRaise | None:
    """`obj[idx] = v` on this path: a dict's item, or a list's at a known place (anywhere else:
    its items unknown); the TypeError Python raises for a read-only view of a dict."""
    if isinstance(obj, MappingProxy):
        return PythonRaise("TypeError", "'mappingproxy' object does not support item assignment")
    if isinstance(obj, DictVal):
        st.store(obj, obj.written(entries(st, obj), idx, v))
        return None
    items = seq_items(st, obj)
    at = index_of(idx)
    if items is not None and at is not None and -len(items) <= at < len(items):
        items[at] = v
        st.store(obj, Seq(items))
    else:
        why = Unknown("a list item written at an unknown place", kind=UnknownKind.UNSUPPORTED)
        st.store(obj, Seq(None, why))
    return None


def one_key_gone(e: Entries, reason: str) -> Entries:
    """A dict's entries after one key routescope cannot tell was removed (`del d[k]`,
    `d.pop(k)`): each key there was is perhaps there still, with its value; no other."""
    rest = e.rest
    if rest is not None and not isinstance(rest, OpenKeys):
        return Entries({}, rest)
    keys = frozenset(e.items) | (rest.keys if rest is not None else frozenset())
    values = {h: v for h, (_kv, v) in e.items.items()}
    values.update(rest.values if rest is not None else {})
    return Entries({}, OpenKeys(keys, reason, values) if keys else None)
