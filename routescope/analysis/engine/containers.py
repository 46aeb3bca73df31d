"""Containers as values: lists, tuples, dicts and sets.

A list, dict or set is mutable: the value is its identity, and what it holds lives on each path
(`PathState.contents`), so a write on one path is never seen by another (copy-on-write: the
contents are immutable and replaced on every write). A tuple holds its items. Dict keys and set
members compare as Python compares them, by value and hash (`True`, `1` and `1.0` are one key).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING, Any

from routescope.analysis.engine.enums import INT_BASES, STR_BASES
from routescope.analysis.engine.openkeys import OpenKeys
from routescope.analysis.engine.values import (
    SERIALS,
    ClassVal,
    Const,
    EnumMember,
    External,
    FunctionVal,
    Instance,
    ModuleVal,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
    merge_origins,
    raises,
)

if TYPE_CHECKING:
    pass

# A for loop or comprehension over known items runs item by item up to this many items (the
# step budgets still bound the work); beyond, a loop's body runs on a havoced state and a
# comprehension is Unknown.
SEQ_LIMIT = 2048


class Seq:
    """A list's items on one path; `items` None: not known (`why` says why). A list of unknown
    length may still be known as a sequence of items some of which are perhaps absent
    (`maybe`: (item, perhaps absent) in order; a join of paths that appended different items):
    the list holds the sure ones and some of the others, in that order. A loop over it goes
    through them, forking where one is perhaps there."""

    __slots__ = ("each", "filled", "items", "maybe", "why")

    def __init__(
        self,
        items: Iterable[Value] | None,
        why: Unknown | None = None,
        maybe: Iterable[tuple[Value, bool]] | None = None,
        filled: bool = False,  # of unknown length, yet not empty: a truth test went true
        each: Value | None = None,  # of unknown contents, yet every item is one (a path)
    ) -> None:
        self.items: tuple[Value, ...] | None = tuple(items) if items is not None else None
        self.why, self.filled = why, filled and items is None
        self.maybe: tuple[tuple[Value, bool], ...] | None = (
            tuple(maybe) if maybe is not None and items is None else None
        )
        self.each = each if items is None and maybe is None else None

    def layout(self) -> tuple[tuple[Value, bool], ...] | None:
        """The items in order, each with whether it is perhaps absent; None when not known."""
        return tuple((v, False) for v in self.items) if self.items is not None else self.maybe

    def extended(self, more: Iterable[Value]) -> Seq:
        """This list after `more` was appended to it."""
        if self.items is not None:
            return Seq([*self.items, *more])
        if self.maybe is None:  # (contents not known: still not known)
            return Seq(None, self.why)
        return Seq(None, self.why, [*self.maybe, *((v, False) for v in more)])


class Entries:
    """A dict's items (key -> (the key as first written, the value)) or a set's members (the
    value is the member) on one path, in insertion order. `rest`: None when these are all;
    OpenKeys when some of its keys may also be there (a join of paths that differed); another
    Unknown when anything else may be there. Never changed in place."""

    __slots__ = ("items", "rest")

    def __init__(
        self, items: dict[Hashable, tuple[Value, Value]], rest: Unknown | None = None
    ) -> None:
        self.items = items
        self.rest = rest

    def with_item(self, key: Value, value: Value) -> Entries:
        k = key_of(key)
        if k is UNTOLD or k is UNHASHABLE:
            why = Unknown("written with a key routescope cannot tell", kind=UnknownKind.UNSUPPORTED)
            return Entries(
                {
                    h: (kv, perhaps_value(v, value, "perhaps overwritten through an unknown key"))
                    for h, (kv, v) in self.items.items()
                },
                why,
            )
        items = dict(self.items)
        first = items.get(k)
        items[k] = (first[0] if first is not None else key, value)  # Python keeps the first key
        return Entries(items, self.rest)

    def with_items(self, pairs: Iterable[tuple[Value, Value]]) -> Entries:
        """`with_item` of each pair in order, in one pass (a set or dict built from n items
        costs n writes, not n copies)."""
        items, rest = dict(self.items), self.rest
        for key, value in pairs:
            k = key_of(key)
            if k is UNTOLD or k is UNHASHABLE:
                e = Entries(items, rest).with_item(key, value)
                items, rest = dict(e.items), e.rest
                continue
            first = items.get(k)
            items[k] = (first[0] if first is not None else key, value)
        return Entries(items, rest)

    def without(self, key: Hashable) -> Entries:
        items = dict(self.items)
        items.pop(key, None)
        rest = self.rest
        if isinstance(rest, OpenKeys) and key in rest.keys:
            rest = rest.narrowed(rest.keys - {key})
        return Entries(items, rest)

    def absent(self, key: Hashable) -> bool:
        """Is `key` known not to be among these entries?"""
        if key in self.items:
            return False
        return self.rest is None or (isinstance(self.rest, OpenKeys) and key not in self.rest.keys)

    def closed(self) -> bool:
        return self.rest is None


def perhaps_value(
    old: Value,
    new: Value | None,
    why: str = "perhaps overwritten by a dict update",
    kind: UnknownKind = UnknownKind.JOINED,
) -> Value:
    """What an entry holds when a write of `new` perhaps happened (None: of a value not
    known): itself when both agree, else Unknown."""
    if new is not None and (
        old is new or (isinstance(old, Const) and isinstance(new, Const) and same_const(old, new))
    ):
        return old
    return Unknown(why, kind=kind)


def same_const(a: Const, b: Const) -> bool:
    """One Python value: equal and of one type (1 and True are equal keys but not one value)."""
    return type(a.value) is type(b.value) and _equal(a.value, b.value)


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


class ListVal(Value):
    """A mutable list: its items live on each path (`base` is what it held when made)."""

    __slots__ = ("base", "serial")

    def __init__(
        self,
        items: Iterable[Value] | None,
        why: Unknown | None = None,
        maybe: Iterable[tuple[Value, bool]] | None = None,
    ) -> None:
        super().__init__()
        self.base = Seq(items, why, maybe)
        self.serial = next(SERIALS)

    def __repr__(self) -> str:
        return "ListVal()"


class TupleVal(Value):
    """A tuple of values some of which are not constants (a tuple of constants is a Const)."""

    __slots__ = ("items",)

    def __init__(self, items: Iterable[Value], origins: tuple[str, ...] = ()) -> None:
        super().__init__(origins)
        self.items = tuple(items)

    def __repr__(self) -> str:
        return f"TupleVal({len(self.items)})"


class KeyedTuple(TupleVal):
    """A read-only sequence that also answers to some string keys (transformers' per-layer
    config view: a layer's config by its index, or by its layer type); a string it does not
    know raises ValueError with `missing`. `copies`: each index read gives a new copy of the
    object there (transformers copies the config for each read of a layer's)."""

    __slots__ = ("by_key", "copies", "missing")

    def __init__(self, items: Iterable[Value], by_key: dict[str, Value], missing: str,
                 copies: bool = False) -> None:  # fmt: skip
        super().__init__(items)
        self.by_key = by_key
        self.missing = missing
        self.copies = copies


class DictVal(Value):
    """A mutable dict: its items live on each path."""

    __slots__ = ("base", "serial")

    def __init__(self, entries: Entries | None = None) -> None:
        super().__init__()
        self.base = entries if entries is not None else Entries({})
        self.serial = next(SERIALS)

    def __repr__(self) -> str:
        return "DictVal()"

    def written(self, e: Entries, key: Value, value: Value) -> Entries:
        """What `d[key] = value` leaves of contents `e`."""
        return e.with_item(key, value)


class MappingProxy(DictVal):
    """`types.MappingProxyType(d)`: a read-only view of the dict `d`, live as Python's is (what
    is written into `d` later is read through it); its contents are `d`'s on every path.
    Writing an item through it raises TypeError, and it has no mutating methods."""

    __slots__ = ("target",)

    def __init__(self, target: DictVal) -> None:
        super().__init__()
        self.target = target

    def __repr__(self) -> str:
        return "MappingProxy()"


class InstanceDict(DictVal):
    """`obj.__dict__` of a framework object, read while the object lives: what is written into
    it is the object's attributes (`self.__dict__.update(other.__dict__)` copies another
    object's attributes onto this one; `self.__dict__[name] = v` sets one). A key that is not a
    string, or one routescope cannot tell, leaves the attributes as they were."""

    __slots__ = ("owner",)
    mirrored = True

    def __init__(self, entries: Entries, owner: Value) -> None:
        super().__init__(entries)
        self.owner = owner

    def mirror(self, st: Any, before: Entries, after: Entries) -> None:
        """The dict's change from `before` to `after`, made to the object's attributes: only
        the names written (an attribute set on the object since the dict was read stays; one
        deleted from the dict stays too: routescope keeps what it knew)."""
        old = before.items
        written = {k: v for k, (_kv, v) in after.items.items()
                   if isinstance(k, str) and (k not in old or old[k][1] is not v)}  # fmt: skip
        if written:
            st.store(self.owner, {**st.fields(self.owner), **written})


class SetVal(Value):
    """A mutable set: its members live on each path."""

    __slots__ = ("base", "serial")

    def __init__(self, entries: Entries | None = None) -> None:
        super().__init__()
        self.base = entries if entries is not None else Entries({})
        self.serial = next(SERIALS)

    def __repr__(self) -> str:
        return "SetVal()"


Mutable = ListVal | DictVal | SetVal
Contents = Seq | Entries


class _Identity:
    """The key of an object that hashes and compares by identity (a class, a function, an
    enum member of a plain Enum): equal to no Python value."""

    __slots__ = ("token",)

    def __init__(self, token: Hashable) -> None:
        self.token = token

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.token == self.token

    def __hash__(self) -> int:
        return hash(self.token)


class _Unhashable:
    pass


UNHASHABLE: Hashable = _Unhashable()  # key_of's answer for a list, dict or set: Python raises
UNTOLD: Hashable = _Unhashable()  # key_of's answer for a value it cannot tell (an unknown)


def key_of(v: Value) -> Hashable:
    """`v` as a dict key or set member, compared as Python compares keys; UNTOLD when it
    cannot be told (an unknown value), UNHASHABLE when Python raises TypeError."""
    if isinstance(v, Const):
        try:
            hash(v.value)
        except TypeError:
            return UNHASHABLE
        got: Hashable = v.value  # (typed, not cast: this runs on every key read)
        return got
    if isinstance(v, TupleVal):
        keys = [key_of(i) for i in v.items]
        if any(k is UNHASHABLE for k in keys):
            return UNHASHABLE
        return UNTOLD if any(k is UNTOLD for k in keys) else tuple(keys)
    if isinstance(v, (ListVal, DictVal, SetVal)):
        return UNHASHABLE
    if isinstance(v, EnumMember):
        if any(
            b in INT_BASES or b in STR_BASES for b in v.cls.external_bases()
        ):  # a member of an int or str enum (IntFlag's too) is equal to its value
            return key_of(v.value)
        return _Identity(("enum", id(v.cls), v.name))
    if isinstance(v, FunctionVal):
        return _Identity(("fn", id(v.node), id(v.bound)))
    if isinstance(v, (ClassVal, ModuleVal, Tensor)):
        return _Identity(id(v))
    if isinstance(v, External):
        return _Identity(("ext", v.name))
    if (
        isinstance(v, Instance)
        and v.cls is not None
        and v.cls.lookup("__hash__") is None
        and (v.cls.lookup("__eq__") is None and not v.cls.external_bases())
    ):
        return _Identity(id(v))
    return UNTOLD


def new_tuple(items: Iterable[Value], origins: tuple[str, ...] = ()) -> Value:
    """A tuple: a Const when every item is one, else a TupleVal."""
    vals = list(items)
    if all(isinstance(i, Const) for i in vals):
        return Const(tuple(i.value for i in vals), origins or merge_origins(*vals))  # type: ignore[attr-defined]
    return TupleVal(vals, origins)


def new_dict(pairs: Iterable[tuple[Value, Value]], rest: Unknown | None = None) -> DictVal:
    return DictVal(Entries({}, rest).with_items(pairs))


def str_dict(items: dict[str, Value]) -> DictVal:
    """A dict of string keys (keyword arguments, attributes read as a dict)."""
    return DictVal(Entries({k: (Const(k), v) for k, v in items.items()}))


def new_set(members: Iterable[Value]) -> Value:
    """A set of these members; Unknown when Python raises (an unhashable member)."""
    ms = list(members)
    keys = [key_of(m) for m in ms]
    if UNHASHABLE in keys:
        return raises("TypeError", "a set of unhashable members")
    if UNTOLD in keys:
        return SetVal(Entries({}).with_items((m, m) for m in ms))
    items: dict[Hashable, tuple[Value, Value]] = {}
    for k, m in zip(keys, ms, strict=True):  # with_items, each key found once
        first = items.get(k)
        items[k] = (first[0] if first is not None else m, m)
    return SetVal(Entries(items))


def from_python(value: Any, origins: tuple[str, ...] = ()) -> Value:
    """A Python value read from a file or computed by a pure builtin, as a value: a list, dict
    or set becomes a container this path may change; immutable values stay constants."""
    if isinstance(value, list):
        return ListVal([from_python(x, origins) for x in value])
    if isinstance(value, dict):
        return new_dict(
            (from_python(k, origins), from_python(x, origins)) for k, x in value.items()
        )
    if isinstance(value, set):
        return new_set(Const(x, origins) for x in value)
    if isinstance(value, tuple) and any(isinstance(x, (list, dict, set)) for x in value):
        return TupleVal([from_python(x, origins) for x in value], origins)
    return Const(value, origins)
