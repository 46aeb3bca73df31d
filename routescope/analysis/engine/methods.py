"""Methods of values the engine tracks: list, dict and set methods (a change goes to the path's
own contents), context variables, nn.Module's register_*, functools.partial, and a config's
to_dict()."""

from __future__ import annotations

from typing import cast

from routescope.analysis.engine.base import EngineBase
from routescope.analysis.engine.containers import (
    UNTOLD,
    DictVal,
    Entries,
    ListVal,
    Seq,
    SetVal,
    key_of,
    new_tuple,
    str_dict,
)
from routescope.analysis.engine.contents import (
    contains,
    dict_get,
    entries,
    index_of,
    iteration,
    one_key_gone,
    seq_items,
    snapshot,
)
from routescope.analysis.engine.equality import equal
from routescope.analysis.engine.sequences import merged, set_algebra
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    Const,
    Unknown,
    UnknownKind,
    Value,
    may_raise,
    raises,
)
from routescope.analysis.engine.worklists import after_pop, appended, popped


class ContainerMethod(Value):
    """`a_list.append`, `a_dict.get`, `a_set.add`: a method of a tracked container."""

    never_none = True

    def __init__(self, target: ListVal | DictVal | SetVal, name: str) -> None:
        super().__init__()
        self.target = target
        self.name = name


def _unknown(why: str) -> Unknown:
    return Unknown(why, kind=UnknownKind.UNSUPPORTED)


def call_method(
    eng: EngineBase, st: PathState, m: ContainerMethod, args: list[Value], kwargs: dict[str, Value]
) -> Value:
    if isinstance(m.target, ListVal):
        return _list_method(st, m.target, m.name, args, kwargs)
    if isinstance(m.target, DictVal):
        return _dict_method(st, m.target, m.name, args, kwargs)
    return _set_method(st, m.target, m.name, args)


# --- lists -------------------------------------------------------------------------------------


def _list_method(
    st: PathState, lst: ListVal, name: str, args: list[Value], kwargs: dict[str, Value]
) -> Value:
    items = seq_items(st, lst)
    if name == "copy" and not args:
        return (
            ListVal(items)
            if items is not None
            else ListVal(None, _unknown("a copy of a list of unknown contents"))
        )
    if name == "index" and items is None:  # the item may be there or not
        return may_raise("ValueError", _unknown("list.index() of a list of unknown contents"))
    if name in ("index", "count") and len(args) == 1 and items is not None:
        hits = [equal(st, v, args[0]) for v in items]
        if name == "count":
            return (
                Const(sum(1 for h in hits if h))
                if None not in hits
                else _unknown("list.count() of unknowns")
            )
        for h in hits:
            if h is None:  # not found among what is known: perhaps further on, or nowhere
                return may_raise("ValueError", _unknown("list.index() of unknowns"))
            if h:
                return Const(hits.index(True))
        return raises("ValueError", "list.index() of a missing item")
    if name not in _LIST_CHANGES:
        return _unknown(f"list.{name}()")
    raised = _list_raises(st, name, items, args)
    if raised is not None:
        return raised
    changed = _list_change(st, name, items, args, kwargs)
    if changed is None:
        seq = st.contents(lst)
        assert isinstance(seq, Seq)
        kept = _unknown_length_change(st, seq, name, args)
        if kept is not None:  # still nothing but items it is known it may hold
            st.store(lst, kept)
            return Const(None)
        popping = name == "pop" and not args and (seq.maybe or seq.each) is not None
        after = (
            after_pop(seq)
            if popping
            else Seq(None, _unknown(f"a list.{name}() of unknown contents"))
        )
        st.store(lst, after)  # (popped: any of its last items may have gone)
        got = popped(seq) if popping else None  # (one of its items, where that is known)
        why = got if isinstance(got, Unknown) else _unknown(f"list.{name}() of unknown contents")
        fails = _may_fail(st, seq, name, items, args)
        return may_raise(fails, why, got) if fails else (got or why)
    new, value = changed
    st.store(lst, Seq(new))
    return value


def _list_raises(st: PathState, name: str, items: list[Value] | None,
                 args: list[Value]) -> Value | None:  # fmt: skip
    """list.pop() of a position the list does not have, list.remove() of an item it does not
    hold: Python raises (may raise, when the items are not all known)."""
    if items is None:
        return None
    if name == "pop" and len(args) <= 1:
        at = index_of(args[0]) if args else -1
        if at is not None and not -len(items) <= at < len(items):
            return raises("IndexError", "pop from a list without that position")
    if name == "remove" and len(args) == 1:
        hits = [equal(st, v, args[0]) for v in items]
        if True not in hits:
            why = "list.remove() of an item not there"
            return raises("ValueError", why) if None not in hits else None
    return None


_LIST_CHANGES = frozenset(
    {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"}
)


def _may_fail(
    st: PathState, seq: Seq, name: str, items: list[Value] | None, args: list[Value]
) -> str | None:
    """What a pop or remove the contents do not decide may raise: list.pop() of a list perhaps
    empty (a loop's pops from it) or of a position perhaps past its end, list.remove() of an
    item perhaps not there; None where it cannot."""
    if name == "pop":
        sure = not args and (seq.filled or any(not perhaps for _, perhaps in seq.layout() or ()))
        return None if sure else "IndexError"
    if name == "remove" and len(args) == 1:
        found = items is not None and any(equal(st, v, args[0]) is True for v in items)
        return None if found else "ValueError"
    return None


def _unknown_length_change(st: PathState, seq: Seq, name: str, args: list[Value]) -> Seq | None:
    """A list of unknown length known as items some perhaps absent (Seq.maybe), after an
    append, an extend of known items or a reverse; None when it is no longer known."""
    if seq.maybe is None:  # (only what every item is may still be known)
        extra = iteration(args[0], st) if name == "extend" and len(args) == 1 else None
        return appended(seq, args if name == "append" and len(args) == 1 else extra)
    if name == "append" and len(args) == 1:
        return seq.extended(args)
    if name == "extend" and len(args) == 1:
        extra = iteration(args[0], st)
        return seq.extended(extra) if extra is not None else None
    if name == "reverse" and not args:
        return Seq(None, seq.why, seq.maybe[::-1])
    return None


def _list_change(
    st: PathState, name: str, items: list[Value] | None, args: list[Value], kwargs: dict[str, Value]
) -> tuple[list[Value], Value] | None:
    """The new items and the call's value; None when the contents are no longer known."""
    if name == "clear" and not args:
        return [], Const(None)
    if items is None:
        return None
    if name == "append" and len(args) == 1:
        return [*items, args[0]], Const(None)
    if name == "extend" and len(args) == 1:
        extra = iteration(args[0], st)
        return None if extra is None else ([*items, *extra], Const(None))
    if name == "insert" and len(args) == 2 and index_of(args[0]) is not None:
        new = list(items)
        new.insert(cast(int, index_of(args[0])), args[1])
        return new, Const(None)
    if name == "pop" and len(args) <= 1:
        at = index_of(args[0]) if args else -1
        if at is None or not items or not -len(items) <= at < len(items):
            return None
        new = list(items)
        value = new.pop(at)
        return new, value
    if name == "remove" and len(args) == 1:
        for i, v in enumerate(items):
            hit = equal(st, v, args[0])
            if hit is None:
                return None
            if hit:
                return [*items[:i], *items[i + 1 :]], Const(None)
        return None  # ValueError
    if name == "reverse" and not args:
        return items[::-1], Const(None)
    if name == "sort" and not args and not kwargs and all(isinstance(i, Const) for i in items):
        try:
            order = sorted(items, key=lambda i: cast(Const, i).value)
        except TypeError:
            return None
        return order, Const(None)
    return None


# --- dicts -------------------------------------------------------------------------------------


def _dict_method(
    st: PathState, d: DictVal, name: str, args: list[Value], kwargs: dict[str, Value]
) -> Value:
    e = entries(st, d)
    if name in ("get", "pop", "setdefault") and args:
        key, default = args[0], args[1] if len(args) > 1 else None
        found = dict_get(st, d, key)  # None: known absent
        k = key_of(key)
        if name == "get":
            return found if found is not None else (default or Const(None))
        if name == "setdefault":
            if found is None:
                value = default or Const(None)
                st.store(d, e.with_item(key, value))
                return value
            if isinstance(found, Unknown):  # perhaps there: there now, its value unknown
                st.store(d, e.with_item(key, _unknown("perhaps set by setdefault")))
            return found
        # pop
        if found is None:
            return default or raises("KeyError", "dict.pop() of a missing key")
        perhaps = default is None and contains(st, d, key) is not True  # (then KeyError)
        if k is UNTOLD:  # (each key perhaps popped: perhaps there still, no other)
            st.store(d, one_key_gone(e, "a dict popped by a key routescope cannot tell"))
        else:
            st.store(d, e.without(k))
        if perhaps:
            why = (
                found
                if isinstance(found, Unknown)
                else _unknown("dict.pop() of a key perhaps there")
            )
            return may_raise("KeyError", why, None if isinstance(found, Unknown) else found)
        return found
    if name == "update":
        new = e
        if args:
            other = args[0]
            if isinstance(other, DictVal):
                new = merged(new, entries(st, other))
            else:
                pairs = iteration(other, st)
                if pairs is None:
                    new = Entries(
                        {h: (kv, _unknown("perhaps updated")) for h, (kv, _v) in new.items.items()},
                        _unknown("a dict updated from an unknown value"),
                    )
                else:
                    for pair in pairs:
                        kv = seq_items(st, pair)
                        new = (
                            new.with_item(kv[0], kv[1])
                            if kv is not None and len(kv) == 2
                            else Entries(new.items, _unknown("a dict updated from unknown pairs"))
                        )
        new = merged(new, str_dict(kwargs).base)
        st.store(d, new)
        return Const(None)
    if name == "clear" and not args:
        st.store(d, Entries({}))
        return Const(None)
    if name == "copy" and not args:
        return DictVal(e)
    if name == "popitem" and not args:
        if e.closed() and e.items:
            last = next(reversed(e.items))
            first_key, v = e.items[last]
            st.store(d, e.without(last))
            return new_tuple([first_key, v])
        return _unknown("dict.popitem()")
    if name in ("keys", "values", "items"):
        if not e.closed():
            return _unknown(f"dict.{name}() of a dict of unknown contents")
        if name == "keys":
            return new_tuple([kv for kv, _ in e.items.values()])
        if name == "values":
            return new_tuple([v for _, v in e.items.values()])
        return new_tuple([new_tuple([kv, v]) for kv, v in e.items.values()])
    if name == "__contains__" and len(args) == 1:
        got = contains(st, d, args[0])
        return Const(got) if got is not None else _unknown("dict.__contains__ of unknowns")
    return _unknown(f"dict.{name}()")


# --- sets --------------------------------------------------------------------------------------

_SET_CHANGES = {
    "add",
    "discard",
    "remove",
    "update",
    "clear",
    "difference_update",
    "intersection_update",
    "symmetric_difference_update",
    "pop",
}
_SET_READS = {"union": "|", "intersection": "&", "difference": "-", "symmetric_difference": "^"}


def _set_method(st: PathState, s: SetVal, name: str, args: list[Value]) -> Value:
    import ast

    e = entries(st, s)
    ops = {"|": ast.BitOr(), "&": ast.BitAnd(), "-": ast.Sub(), "^": ast.BitXor()}
    if name in _SET_READS and len(args) == 1:
        return set_algebra(st, ops[_SET_READS[name]], s, _as_set(st, args[0]))
    if name in ("issubset", "issuperset", "isdisjoint") and len(args) == 1:
        mine, other = snapshot(st, s), snapshot(st, _as_set(st, args[0]))
        if isinstance(mine, Const) and isinstance(other, Const):
            return Const(getattr(mine.value, name)(other.value))
        return _unknown(f"set.{name}() of unknowns")
    if name == "copy" and not args:
        return SetVal(e)
    if name not in _SET_CHANGES:
        return _unknown(f"set.{name}()")
    if name == "add" and len(args) == 1:
        st.store(s, e.with_item(args[0], args[0]))
    elif name in ("discard", "remove") and len(args) == 1:
        k = key_of(args[0])
        if k is UNTOLD:
            st.store(s, Entries({}, _unknown(f"set.{name}() of an unknown member")))
        else:
            st.store(s, e.without(k))
    elif name == "clear":
        st.store(s, Entries({}))
    elif (
        name
        in ("update", "difference_update", "intersection_update", "symmetric_difference_update")
        and len(args) == 1
    ):
        op = {
            "update": "|",
            "difference_update": "-",
            "intersection_update": "&",
            "symmetric_difference_update": "^",
        }[name]
        made = set_algebra(st, ops[op], s, _as_set(st, args[0]))
        st.store(
            s,
            entries(st, made)
            if isinstance(made, SetVal)
            else Entries({}, _unknown(f"set.{name}() of unknowns")),
        )
    else:  # pop: which member goes is up to the hash order
        st.store(s, Entries({}, _unknown("set.pop()")))
        return _unknown("set.pop()")
    return Const(None)


def _as_set(st: PathState, v: Value) -> Value:
    """A set method's argument (any iterable) as a set."""
    if isinstance(v, (SetVal, DictVal)) or (
        isinstance(v, Const) and isinstance(v.value, (set, frozenset))
    ):
        return v
    items = iteration(v, st)
    if items is None:
        return SetVal(Entries({}, _unknown("a set of unknown members")))
    return SetVal(Entries({}).with_items((i, i) for i in items))


# --- objects that are not containers -----------------------------------------------------------
