"""Iterators: iter() and next(), and map() and filter() with a function framework code defines
(a lambda, a method): the function runs on each item, on each path, as Python runs it.
(Builtins and pure library functions over constants are evaluated for real by the pure-builtin
model.)"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from routescope.analysis.engine.bound import Partial
from routescope.analysis.engine.containers import (
    SEQ_LIMIT,
    DictVal,
    ListVal,
    MappingProxy,
    Seq,
    new_dict,
    new_tuple,
)
from routescope.analysis.engine.contents import iteration, seq_items, truth_in
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    External,
    FunctionVal,
    Unknown,
    UnknownKind,
    Value,
    raises,
)
from routescope.analysis.library.registry import Paths, models, one

if TYPE_CHECKING:
    from routescope.analysis.engine.base import EngineBase

# ways the function may fork into over the items before map/filter is not followed (each
# undecided item doubles them)
FORKS = 4


@models("map", "filter")
def _map_filter(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """The items map/filter gives, as a tuple (an iterator read once, as framework code reads
    it: in a loop, any(), list()); None when the iterables' items are not known."""
    if kwargs or len(args) < 2 or (name == "filter" and len(args) != 2):
        return None
    fn = eng.resolved(args[0])
    keep_truthy = name == "filter" and isinstance(fn, Const) and fn.value is None
    if not keep_truthy and not isinstance(fn, (FunctionVal, ClassVal, Partial)):
        return None
    seqs = [iteration(a, st) for a in args[1:]]
    if any(seq is None or len(seq) > SEQ_LIMIT for seq in seqs):
        return None
    rows = list(zip(*[s for s in seqs if s is not None], strict=False))  # the shortest ends it
    paths: list[tuple[PathState, list[Value]]] = [(st, [])]
    for row in rows:
        nxt: list[tuple[PathState, list[Value]]] = []
        for s, acc in paths:
            if s.raising is not None:
                nxt.append((s, acc))
                continue
            ways = [(s, row[0])] if keep_truthy else eng.call(s, fn, list(row), {}, node)
            for s2, v in ways:
                if s2.raising is not None or name == "map":
                    nxt.append((s2, [*acc, v]))
                    continue
                t = truth_in(s2, v)
                if t is None:  # which items it keeps is not known: so is what it gives
                    return None
                nxt.append((s2, [*acc, row[0]] if t else acc))
        if len(nxt) > FORKS:  # the function itself forks on more items than this
            return None
        paths = nxt
    return [(s, new_tuple(acc)) for s, acc in paths]


@models("itertools.accumulate")
def _accumulate(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """itertools.accumulate(items[, func], *, initial=None): the running totals, one per item
    (and the initial value first), as a tuple read once, as map's; each total is `+` (or
    func) of the one before and the item, evaluated as the code would: so the totals of
    sizes not known are not known, while how many there are is. None when the items are not
    known, or func forks on more items than map follows."""
    if not 1 <= len(args) <= 2 or set(kwargs) - {"func", "initial"}:
        return None
    items = iteration(args[0], st)
    if items is None or len(items) > SEQ_LIMIT:
        return None
    given = args[1] if len(args) == 2 else kwargs.get("func")
    fn = eng.resolved(given) if given is not None else None
    if isinstance(fn, Const) and fn.value is None:
        fn = None
    if fn is not None and not isinstance(fn, (FunctionVal, ClassVal, Partial, External)):
        return None
    initial = kwargs.get("initial")
    if isinstance(initial, Const) and initial.value is None:
        initial = None
    if initial is not None:
        items = [initial, *items]
    if not items:
        return one(st, new_tuple([]))
    add = ast.BinOp(ast.Constant(0), ast.Add(), ast.Constant(0))
    ast.copy_location(add, node if node is not None else add)
    paths: list[tuple[PathState, list[Value]]] = [(st, [items[0]])]
    for item in items[1:]:
        nxt: list[tuple[PathState, list[Value]]] = []
        for s, acc in paths:
            if s.raising is not None:
                nxt.append((s, acc))
                continue
            if fn is None:
                total = eng.binop(s, add, acc[-1], item)
                if isinstance(total, Unknown) and total.exc is not None:
                    return None  # a total that raises (None + 1): left to the opaque call
                nxt.append((s, [*acc, total]))
                continue
            nxt.extend((s2, [*acc, v]) for s2, v in eng.call(s, fn, [acc[-1], item], {}, node))
        if len(nxt) > FORKS:
            return None
        paths = nxt
    return [(s, new_tuple(acc)) for s, acc in paths]


class IteratorVal(Unknown):
    """What iter() gives: an iterator over a snapshot of the items (a list of its own, on the
    path) that next() consumes. Anything else done with it (a loop, zip(), list(), len) is not
    modelled and reads it as unknown; an iterator object is always true."""

    def __init__(self, items: ListVal) -> None:
        super().__init__("an iterator", truthy=True, kind=UnknownKind.UNSUPPORTED)
        self.items = items


@models("iter")
def _iter(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """iter(items): an iterator over the items this path holds now (a dict's keys), which
    next() consumes; None (unknown) when they are not known or for iter(f, stop)."""
    if len(args) != 1 or kwargs:
        return None
    items = iteration(args[0], st)
    return one(st, IteratorVal(ListVal(items))) if items is not None else None


@models("next")
def _next(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """next(iterator[, default]): from iter()'s iterator, its next item (taken from it), else
    the default, else StopIteration; from what a generator expression yields (the engine
    evaluates one eagerly, as its items), the first item."""
    if not args or kwargs or len(args) > 2:
        return None
    it = args[0]
    items = seq_items(st, it.items if isinstance(it, IteratorVal) else it)
    if items is None:
        return None
    if items:
        if isinstance(it, IteratorVal):  # consumed: the next next() gives the item after it
            st.store(it.items, Seq(items[1:]))
        return one(st, items[0])
    if len(args) > 1:
        return one(st, args[1])
    return one(st, raises("StopIteration", "next() of an exhausted iterator"))


@models("dict.fromkeys", "builtins.dict.fromkeys")
def _fromkeys(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """dict.fromkeys(keys[, value]): a new dict of those keys in their order (a repeated one
    once), each holding the value (None); None (unknown) when the keys are not known."""
    if not 1 <= len(args) <= 2 or kwargs:
        return None
    keys = iteration(args[0], st)
    if keys is None:
        return None
    value = args[1] if len(args) == 2 else Const(None)
    return one(st, new_dict((k, value) for k in keys))


@models("types.MappingProxyType")
def _mapping_proxy(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """types.MappingProxyType(d): a read-only live view of the dict (a constant dict: of a new
    dict of its items); None (unknown) for anything else."""
    if len(args) != 1 or kwargs:
        return None
    d = eng.resolved(args[0])
    if isinstance(d, MappingProxy):
        d = d.target  # a view of a view reads the same dict
    if isinstance(d, Const) and isinstance(d.value, dict):
        d = new_dict((Const(k, d.origins), Const(v, d.origins)) for k, v in d.value.items())
    return one(st, MappingProxy(d)) if isinstance(d, DictVal) else None
