"""Operations on containers: dict merges, set algebra, list and tuple arithmetic, and the
builtins that read their arguments as sequences (len, list, sorted, zip, ...)."""

from __future__ import annotations

import ast
from typing import cast

from routescope.analysis.engine.containers import (
    SEQ_LIMIT,
    DictVal,
    Entries,
    ListVal,
    SetVal,
    new_set,
    new_tuple,
    perhaps_value,
)
from routescope.analysis.engine.contents import (
    entries,
    index_of,
    iteration,
    layout_of,
    length,
    seq_items,
)
from routescope.analysis.engine.openkeys import OpenKeys, rest_of_dicts
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    Const,
    Unknown,
    UnknownKind,
    Value,
    merge_origins,
    ordered,
)
from routescope.analysis.library.builtins import call_builtin


def merged(a: Entries, b: Entries) -> Entries:
    """`a.update(b)`: b's items over a's; what either may also hold is kept."""
    items = dict(a.items)
    for k, (kv, v) in b.items.items():
        first = items.get(k)
        items[k] = (first[0] if first is not None else kv, v)
    if isinstance(b.rest, OpenKeys):  # a key b perhaps holds perhaps overwrites a's item
        for k in b.rest.keys & a.items.keys():
            kv, v = items[k]
            items[k] = (kv, perhaps_value(v, b.rest.values.get(k)))
    rest = rest_of_dicts([a.rest, b.rest])
    if isinstance(rest, OpenKeys):
        rest = rest.narrowed(frozenset(rest.keys - items.keys()))
    return Entries(items, rest if isinstance(rest, Unknown) else None)


def _as_members(st: PathState, v: Value) -> Entries | None:
    if isinstance(v, SetVal):
        return entries(st, v)
    if isinstance(v, Const) and isinstance(v.value, (set, frozenset)):
        members = [Const(x, v.origins) for x in ordered(v.value)]
        return Entries({}).with_items((m, m) for m in members)
    if isinstance(v, DictVal):  # dict.keys() views take part in set algebra
        e = entries(st, v)
        return Entries({k: (kv, kv) for k, (kv, _) in e.items.items()}, e.rest)
    return None


def set_algebra(st: PathState, op: ast.operator, a: Value, b: Value) -> Value:
    """`a | b`, `a & b`, `a - b`, `a ^ b` of sets on this path's members: a new set."""
    x, y = _as_members(st, a), _as_members(st, b)
    if x is None or y is None:
        return Unknown("set algebra with an operand that is no set", kind=UnknownKind.UNSUPPORTED)
    unknown = Unknown("a set made from sets of unknown members", kind=UnknownKind.UNSUPPORTED)
    if isinstance(op, ast.BitOr):
        return SetVal(merged(x, y))
    if isinstance(op, ast.Sub):
        if not y.closed():
            return SetVal(Entries({}, unknown))
        gone = set(y.items)
        rest = x.rest
        if isinstance(rest, OpenKeys):  # the keys of a joined dict: some only perhaps there
            rest = rest.narrowed(frozenset(rest.keys - gone))
        return SetVal(Entries({k: m for k, m in x.items.items() if k not in gone}, rest))
    if isinstance(op, ast.BitAnd):
        both = {k: m for k, m in x.items.items() if k in y.items}
        exact = x.closed() and y.closed()
        return SetVal(Entries(both, None if exact else unknown))
    if isinstance(op, ast.BitXor) and x.closed() and y.closed():
        only = {k: m for k, m in x.items.items() if k not in y.items}
        only.update({k: m for k, m in y.items.items() if k not in x.items})
        return SetVal(Entries(only))
    return Unknown("an operation on sets routescope does not model", kind=UnknownKind.UNSUPPORTED)


def sequence_op(st: PathState, op: ast.operator, a: Value, b: Value) -> Value:
    """`list + list`, `tuple + tuple`, `seq * n`: a new list (or tuple) of the items."""
    left, right = seq_items(st, a), seq_items(st, b)
    as_list = isinstance(a, ListVal) or (isinstance(a, Const) and isinstance(a.value, list))
    if isinstance(op, ast.Add):
        if left is None or right is None:
            return Unknown(
                "a concatenation of a sequence of unknown contents", kind=UnknownKind.UNSUPPORTED
            )
        items = left + right
    else:  # seq * n or n * seq
        seq, n = (left, index_of(b)) if left is not None else (right, index_of(a))
        if seq is None or n is None:
            return Unknown("a repetition of unknown length", kind=UnknownKind.UNSUPPORTED)
        as_list = as_list or isinstance(b, ListVal)
        items = seq * max(n, 0)
    return ListVal(items) if as_list else new_tuple(items)


# builtins that read their arguments as sequences of items
SEQUENCE_BUILTINS = frozenset(
    {
        "list",
        "tuple",
        "reversed",
        "set",
        "frozenset",
        "sorted",
        "enumerate",
        "zip",
        "len",
        "any",
        "all",
        "min",
        "max",
        "sum",
        "dict",
    }
)


def over_containers(
    st: PathState, name: str, args: list[Value], kwargs: dict[str, Value]
) -> Value | None:
    """A sequence builtin over containers (and constants): on their items as constants when
    every item is one, else structurally (a new list, a tuple of the same objects). None when
    the pure builtin (or nothing) applies."""
    if name not in SEQUENCE_BUILTINS:
        return None
    if not args:
        if name == "dict":
            return DictVal(Entries({k: (Const(k), v) for k, v in kwargs.items()}))
        made = {
            "list": ListVal([]),
            "set": SetVal(),
            "tuple": Const(()),
            "frozenset": Const(frozenset()),
        }.get(name)
        return None if kwargs else made
    if name == "len" and len(args) == 1:
        n = length(st, args[0])
        return Const(n) if n is not None else None
    if name == "dict" and len(args) == 1:
        return _dict_of(st, args[0], kwargs)
    if name == "set" and len(args) == 1 and isinstance(args[0], DictVal) and not kwargs:
        e = entries(st, args[0])  # the keys of a dict, the perhaps-keys of a joined one kept
        return SetVal(Entries({k: (kv, kv) for k, (kv, _) in e.items.items()}, e.rest))
    if name not in ("list", "set") and all(isinstance(a, Const) for a in args):
        return None  # the pure builtin computes it
    if name == "set" and len(args) == 1 and isinstance(args[0], Const) and not kwargs:
        return _set_of_constant(args[0])
    seqs = [iteration(a, st) for a in args]
    if name in ("list", "reversed") and len(args) == 1 and seqs[0] is None and not kwargs:
        layout = layout_of(args[0], st)  # a copy of a list known as items some perhaps absent
        if layout is not None:
            why = Unknown(f"{name}() of a list of unknown length", kind=UnknownKind.JOINED)
            return ListVal(None, why, layout if name == "list" else layout[::-1])
    if any(seq is None or len(seq) > SEQ_LIMIT for seq in seqs):
        return None
    items = [cast(list[Value], seq) for seq in seqs]
    if name == "list" and len(items) == 1 and not kwargs:
        return ListVal(items[0])
    if name == "set" and len(items) == 1 and not kwargs:
        return new_set(items[0])
    if all(isinstance(i, Const) for seq in items for i in seq):
        consts = [Const(tuple(i.value for i in seq), merge_origins(*seq)) for seq in items]  # type: ignore[attr-defined]
        got = call_builtin(name, cast(list[Value], consts), kwargs)
        if got is not None and name == "sorted" and isinstance(got, Const):
            return ListVal([Const(x, got.origins) for x in got.value])  # sorted() makes a list
        return got
    if kwargs:
        return None
    first = items[0]
    if name == "frozenset" and len(items) == 1:
        return new_set(first)  # of objects (enum members): a set nothing changes
    if name in ("tuple", "reversed") and len(items) == 1:
        return new_tuple(first if name == "tuple" else first[::-1])
    if name == "enumerate" and len(items) == 1:
        return new_tuple([new_tuple([Const(i), v]) for i, v in enumerate(first)])
    if name == "zip":
        return new_tuple([new_tuple(list(row)) for row in zip(*items, strict=False)])
    return None


def _dict_of(st: PathState, arg: Value, kwargs: dict[str, Value]) -> Value | None:
    """`dict(mapping_or_pairs, **kw)`: a new dict."""
    if isinstance(arg, DictVal):
        e = entries(st, arg)
    else:
        pairs = iteration(arg, st)
        if pairs is None:
            return None
        kvs = [seq_items(st, pair) for pair in pairs]
        if any(kv is None or len(kv) != 2 for kv in kvs):
            return None
        e = Entries({}).with_items((kv[0], kv[1]) for kv in kvs if kv is not None)
    e = e.with_items((Const(k), v) for k, v in kwargs.items())
    return DictVal(Entries(dict(e.items), e.rest))


_SETS_OF: dict[int, tuple[Const, Value]] = {}  # id(constant) -> (it, kept; its set's contents)


def _set_of_constant(c: Const) -> Value | None:
    """`set(a_constant)`: a new set each call, its contents made once per constant (a set of
    a module's tuple of a few hundred names, in a loop that tests each field against it, was
    built again on every pass). None when the builtin decides (not iterable: it raises)."""
    known = _SETS_OF.get(id(c))
    if known is None or known[0] is not c:
        items = iteration(c, PathState(envs=[{}]))
        if items is None or len(items) > SEQ_LIMIT:
            return None
        made = new_set(items)
        if len(_SETS_OF) > 4096:
            _SETS_OF.clear()
        known = _SETS_OF[id(c)] = (c, made)
    made = known[1]
    return SetVal(made.base) if isinstance(made, SetVal) else made
