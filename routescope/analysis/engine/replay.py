"""Is a computation's result on one path also its result on another? A computation (a decode
trace) that ran on path A with its reads recorded gives the same result on path B when B holds,
for everything the computation read, the same contents up to a renaming of the objects each path
made on its own (two ways through a constructor build two routers: alike field by field, yet
distinct objects). ENGINE.md: caches are keyed by what they read.

`Replay.holds` builds that renaming as it compares: it pairs the roots (the function and its
arguments), then each object A read, in the order it was read, with its counterpart on B, and
each functools memo entry A looked up with B's. An object nothing paired is the same object on
both (what refers to it is shared); pairing it later with another of B's objects is a doubt, and
any doubt answers False (trace again): two objects paired with one, a class or module made on
one way only, a memo key naming an object that is not the same on both."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any

from routescope.analysis.engine.binding import CLOSURE_FRAMES, FRAME_KEY
from routescope.analysis.engine.containers import Entries, Seq, _Identity
from routescope.analysis.engine.intervals import same_bounds
from routescope.analysis.engine.state import PathState, Reads, base_of
from routescope.analysis.engine.values import ClassVal, Const, Instance, ModuleVal, Value

# the contents of these live on each path (PathState.contents), compared only where read
_CONTENTS = ("fields", "globals", "attrs", "base")
_SKIP = frozenset({"serial", "_mro", *_CONTENTS})


class _Differ(Exception):
    pass


class Replay:
    """The renaming from path A's objects to path B's, built while comparing."""

    def __init__(self, a: PathState, b: PathState, reads: Reads) -> None:
        self.a, self.b, self.reads = a, b, reads
        self.to_b: dict[int, Value] = {}
        self.to_a: dict[int, Value] = {}

    def holds(self, roots_a: Iterable[Any], roots_b: Iterable[Any]) -> bool:
        if self.a.claims or self.b.claims or self.a.stopped != self.b.stopped:
            return False
        if self.a.raising is not None or self.b.raising is not None:
            return False
        if not same_bounds(self.a.bounds, self.b.bounds) or not self.reads.same_truths(self.b):
            return False  # what the branches told of a count decides comparisons with it
        try:
            self._any(tuple(roots_a), tuple(roots_b))
            for obj, contents in list(self.reads.reads.values()):  # in the order A read them
                if self.reads.older(obj):
                    self._read(obj, contents)
            for key, seen in list(self.reads.memo.items()):
                self._memo(key, seen)
        except _Differ:
            return False
        return True

    def _read(self, obj: Value, contents: Any) -> None:
        """Compare what A read of `obj` with what B holds of its counterpart."""
        other = self.to_b.get(id(obj), obj)
        self._pair(obj, other)
        now = self.b.heap.get(id(other), base_of(other))
        if isinstance(contents, tuple):  # one name read (a global, a field)
            name, got = contents
            self._any(got, now.get(name))
        else:
            self._any(contents, now)

    def _memo(self, key: tuple[Any, ...], seen: tuple[Any, tuple[Any, ...]]) -> None:
        """A functools memo A looked up: B's trace looks up the same key (every object in it
        the same on both) and finds what A found."""
        hit, objs = seen
        for o in objs:
            if isinstance(o, Const) or not isinstance(o, Value):
                continue
            if self.reads.older(o) and self.to_b.get(id(o), o) is not o:
                raise _Differ  # B's trace looks up another key
        mine = self.b.memo.get(key)
        if hit is None or mine is None:
            if hit is not mine:
                raise _Differ
            return
        self._any(hit[0], mine[0])  # (value, the decisions that computed it, receiver)
        self._any(hit[2], mine[2])
        if list(hit[1]) != list(mine[1]):
            raise _Differ

    def _pair(self, x: Value, y: Value) -> None:
        if isinstance(x, Const):  # a constant is its value
            if not isinstance(y, Const) or type(x.value) is not type(y.value):
                raise _Differ
            if x.value != y.value or x.origins != y.origins:
                raise _Differ
            return
        known = self.to_b.get(id(x))
        if known is not None:
            if known is not y:
                raise _Differ
            return
        if id(y) in self.to_a:
            raise _Differ  # two of A's objects cannot be one of B's
        self.to_b[id(x)], self.to_a[id(y)] = y, x
        if x is y:
            return
        if isinstance(x, (ClassVal, ModuleVal)) or type(x) is not type(y):
            raise _Differ  # a class or module made on one way only
        for name in _attributes(x):
            self._any(getattr(x, name, None), getattr(y, name, None))
        if isinstance(x, Instance) and x.cls is not y.cls:  # type: ignore[attr-defined]
            raise _Differ

    def _token(self, x: Any, y: Any) -> None:
        known = self.to_b.get(id(x))
        if known is None and id(y) in self.to_a:
            raise _Differ
        if known is not None and known is not y:
            raise _Differ
        self.to_b[id(x)], self.to_a[id(y)] = y, x

    def _any(self, x: Any, y: Any) -> None:
        if isinstance(x, Value):
            if not isinstance(y, Value):
                raise _Differ
            self._pair(x, y)
        elif x is y or isinstance(x, ast.AST):
            if x is not y:
                raise _Differ
        elif type(x) is not type(y):
            raise _Differ
        elif isinstance(x, (tuple, list)):
            if len(x) != len(y):
                raise _Differ
            for i, j in zip(x, y, strict=True):
                self._any(i, j)
        elif isinstance(x, dict):
            if list(x) != list(y):
                raise _Differ
            for k, v in x.items():
                if k == FRAME_KEY:  # a call's frame token: compared by identity
                    self._token(v, y[k])
                elif k == CLOSURE_FRAMES:  # the frames a closure reads from, likewise
                    if len(v.value) != len(y[k].value):
                        raise _Differ
                    for t, u in zip(v.value, y[k].value, strict=True):
                        self._token(t, u)
                else:
                    self._any(v, y[k])
        elif isinstance(x, Seq):
            self._any((x.items, x.maybe, x.why), (y.items, y.maybe, y.why))
        elif isinstance(x, Entries):
            if len(x.items) != len(y.items):
                raise _Differ
            for (hx, kvx), (hy, kvy) in zip(x.items.items(), y.items.items(), strict=True):
                if hx != hy and not (isinstance(hx, _Identity) and isinstance(hy, _Identity)):
                    raise _Differ  # keys by identity are paired through the key values
                self._any(kvx, kvy)
            self._any(x.rest, y.rest)
        elif x != y:
            raise _Differ


def _attributes(v: Value) -> list[str]:
    names = [n for c in type(v).__mro__ for n in getattr(c, "__slots__", ())]
    names.extend(getattr(v, "__dict__", {}))
    return [n for n in dict.fromkeys(names) if n not in _SKIP]
