"""A loop's fixpoint: when the state a pass leaves holds nothing the state before it does not
(every name and object agrees, or is unknown in both), the state covers every number of passes;
past a few passes, what still changes is forgotten (made unknown) so that it does."""

from __future__ import annotations

from typing import Any

from routescope.analysis.engine.containers import Entries, Seq
from routescope.analysis.engine.join import agree
from routescope.analysis.engine.nones import never_none
from routescope.analysis.engine.openkeys import OpenKeys
from routescope.analysis.engine.state import PathState, base_of
from routescope.analysis.engine.values import AtLeast, Unknown, UnknownKind, Value
from routescope.analysis.library.paths import each_of


def stable(a: Value | None, b: Value | None) -> bool:
    """`agree`, or both unknown and `a` standing for whatever `b` may be: a loop whose next
    pass changes nothing but unknowns into unknowns its state covers has reached its fixpoint."""
    return agree(a, b) or (isinstance(a, Unknown) and isinstance(b, Unknown) and covers(a, b))


def covers(a: Unknown, b: Unknown) -> bool:
    """Is every value `b` may be one `a` may be? What is known of `a` (its truth, not None, a
    path, a count from below, its kind of unknown) must hold of `b`: an f-string before the
    loop (true) does not cover what a pass may assign (any value, perhaps false)."""
    if type(a) is not Unknown and type(a) is not type(b):
        return False
    if isinstance(a, AtLeast) and isinstance(b, AtLeast) and b.low < a.low:
        return False
    return (a.truthy is None or a.truthy == b.truthy) and (not a.not_none or never_none(b))


def all_stable(a: PathState, b: PathState, since: int | None = None) -> bool:
    """Does `b` hold only what `a` holds: every name and object agrees, or is unknown in both?
    With `since` (a serial taken as `b`'s pass began), the objects made from then on are not
    compared: `a` cannot hold them, and a pass makes new ones each time (a list a callee
    builds), so no two passes would agree. They reach `b`'s state only through a name or an
    older object, which then differs from `a`'s and is compared."""
    for ea, eb in zip(a.envs, b.envs, strict=False):
        if any(not stable(ea.get(n), eb.get(n)) for n in {*ea, *eb}):
            return False
    objs = {**a.heap_objs, **b.heap_objs}
    for o in objs.values():
        if since is not None and getattr(o, "serial", 0) >= since:
            continue
        if a.heap.get(id(o), base_of(o)) is b.heap.get(id(o), base_of(o)):
            continue  # (not a read: the same on both, whatever it holds)
        if not _contents_stable(a.keyed(o), b.keyed(o)):
            return False
    return True


def _contents_stable(x: Any, y: Any) -> bool:
    if x is y:
        return True
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(stable(x[k], y[k]) for k in x)
    if isinstance(x, Seq) and isinstance(y, Seq):
        a, b = x.layout(), y.layout()
        if a is None or b is None:  # (what every item is, where known, as for a value)
            return a is None and b is None and (x.each is None or stable(x.each, y.each))
        return len(a) == len(b) and all(
            p == q and stable(i, j) for (i, p), (j, q) in zip(a, b, strict=True)
        )
    if isinstance(x, Entries) and isinstance(y, Entries):
        rests_alike = (x.rest is None) == (y.rest is None) and (
            not isinstance(x.rest, OpenKeys)
            or (isinstance(y.rest, OpenKeys) and x.rest.keys == y.rest.keys)
        )
        return (
            rests_alike
            and x.items.keys() == y.items.keys()
            and all(stable(x.items[k][1], y.items[k][1]) for k in x.items)
        )
    return False


def forget_unstable(a: PathState, b: PathState, why: str, since: int | None = None) -> PathState:
    """`b` with every name, field and container that is not stable between `a` and `b` made
    unknown: a state that covers any number of further passes (`since`: as in all_stable)."""
    lost = Unknown(why, kind=UnknownKind.LOOP)
    for ea, eb in zip(a.envs, b.envs, strict=False):
        for n in {*ea, *eb}:
            if not stable(ea.get(n), eb.get(n)):
                eb[n] = lost
    for obj in {**a.heap_objs, **b.heap_objs}.values():
        if since is not None and getattr(obj, "serial", 0) >= since:
            continue
        x, y = a.contents(obj), b.contents(obj)
        if _contents_stable(x, y):
            continue
        if isinstance(y, dict):
            b.store(obj, {k: (v if stable(x.get(k), v) else lost) for k, v in y.items()})
        elif isinstance(y, Seq):  # (what every item is may still be known: a path)
            b.store(obj, Seq(None, lost, each=each_of([x, y]) if isinstance(x, Seq) else None))
        else:
            b.store(obj, Entries({}, lost))
    return b
