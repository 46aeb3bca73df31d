"""Calls made again with the same arguments: a call's result is reused where the path holds
what the call read (ENGINE.md: caches are keyed by what they read).

Set-up code calls small helpers over and over with the same arguments (a permutation table
built from constants for each of 128 experts' weights, a type annotation unwrapped for each of
500 fields); each call is evaluated step by step again. A call is remembered, with what it read,
when its key (the function, the receiver, the arguments by value or identity, the engine's mode)
is seen a second time: then it runs recording its reads, and from the third time a path that
holds the same contents for every object it read takes the result instead, with its decisions,
the frames it entered and its assumptions. Only a call that went one way, changed nothing that
existed before it and reached no kernel is remembered.

What the call made is made again for each taker, as Python makes it again: the containers,
objects and unknowns the result holds that are newer than the call are copied, so that no two
results are one object (`f() is f()` stays false, and a list one caller appends to is not the
other's). A result holding anything whose age cannot be told (a tensor, a function) is not
remembered."""

from __future__ import annotations

import ast
import copy
from typing import Any

from routescope.analysis.engine.base import EngineBase, Outcome
from routescope.analysis.engine.containers import (
    DictVal,
    Entries,
    ListVal,
    Seq,
    SetVal,
    TupleVal,
    _Identity,
)
from routescope.analysis.engine.intervals import same_bounds
from routescope.analysis.engine.state import RECORDING, PathState, Reads, base_of
from routescope.analysis.engine.values import (
    SERIALS,
    ClassVal,
    Const,
    EnumMember,
    External,
    FunctionVal,
    Instance,
    ModuleVal,
    Unknown,
    Value,
)

# a call cheaper than this many steps is not worth remembering
MIN_STEPS = 40
# nor is a result with more values than this to copy
MAX_VALUES = 512
_SIMPLE = (int, float, str, bytes, bool, type(None))
_FRESH_KINDS = (ListVal, DictVal, SetVal, Instance, Unknown)


class _Uncopyable(Exception):
    pass


class CallCacheMixin(EngineBase):
    _calls: dict[tuple[Any, ...], list[Any]]
    _call_seen: dict[tuple[Any, ...], bool]

    def call_cached(
        self,
        st: PathState,
        fn: FunctionVal,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.AST | None,
    ) -> list[Outcome]:
        keep: list[Value] = []  # what the key names by identity
        key = self._call_key(fn, args, kwargs, keep)
        if key is None:
            return self.invoke_uncached(st, fn, args, kwargs, node)
        for entry in self._calls.get(key, ()):
            got = self._taken(st, entry)
            if got is not None:
                return [(st, "return", got)]
        again = self._call_seen.get(key)
        if again is not True:  # the first time: run, and only note the key; a call found not
            self._call_seen[key] = again is None  # worth remembering is not recorded again
            return self.invoke_uncached(st, fn, args, kwargs, node)
        self._call_seen[key] = False  # (recorded once: remembered now, or never)
        marks = (len(st.decisions), len(st.trail), len(st.assumptions), len(st.sinks))
        bounds, claims, steps = st.bounds, len(st.claims), self.budget.steps
        reads = Reads()
        RECORDING.append(reads)
        try:
            result = self.invoke_uncached(st, fn, args, kwargs, node)
        finally:
            RECORDING.pop()
        if len(result) != 1 or self.budget.steps - steps < MIN_STEPS:
            return result
        s, kind, value = result[0]
        if (
            kind != "return"
            or value is None
            or s.stopped
            or s.raising is not None
            or s.yielded is not None
            or len(s.sinks) != marks[3]
            or len(s.claims) != claims
            or s.bounds is not bounds
            or reads.memo
            or reads.side_effects()
        ):
            return result
        try:
            fresh = self._fresh_contents(s, value, reads.since)
        except _Uncopyable:
            return result
        made = (s.decisions[marks[0] :], s.trail[marks[1] :], s.assumptions[marks[2] :])
        self._calls.setdefault(key, []).append((value, reads, fresh, bounds, *made))
        self._memo_keep.extend(keep)  # (the ids in a remembered key stay their own)
        return result

    def _call_key(
        self, fn: FunctionVal, args: list[Value], kwargs: dict[str, Value], keep: list[Value]
    ) -> tuple[Any, ...] | None:
        """The function, its receiver, its arguments (a constant by its type and value, any
        other value by identity) and what the engine is doing; None: not remembered (a nested
        function reads its enclosing frames, which no record follows; a handler around the
        call may change what an import inside it does)."""
        if fn.closure is not None or self.catching:
            return None
        vals = [_arg_key(self.resolved(v), keep) for v in args]
        kw = tuple(sorted((k, _arg_key(self.resolved(v), keep)) for k, v in kwargs.items()))
        if fn.bound is not None:
            keep.append(fn.bound)
        mode = (
            self.tracing,
            self.record_inputs,
            self.tolerant,
            tuple(self.compiling),
            id(self.only_module),
            self.default_dtype,
            id(self.default_device),
            len(self.construct_hooks),
            tuple(self.entering),
        )
        return (id(fn.node), id(fn.bound), tuple(vals), kw, mode)

    def _taken(self, st: PathState, entry: tuple[Any, ...]) -> Value | None:
        value, reads, fresh, bounds, decisions, trail, assumptions = entry
        if not same_bounds(st.bounds, bounds) or not reads.holds_on(st):
            return None
        for r in RECORDING:  # what takes the result stands on what the call read
            r.absorb(reads)
        copies: dict[int, Value] = {}
        got = _copied(value, reads.since, fresh, copies)
        st.decisions.extend(decisions)
        st.trail.extend(trail)
        st.assumptions.extend(assumptions)
        return got

    def _fresh_contents(self, st: PathState, value: Value, since: int) -> dict[int, Any]:
        """The contents, at the call's end, of each object in the result the call made (by
        id); raises _Uncopyable for a result that cannot be made again."""
        out: dict[int, Any] = {}
        seen: set[int] = set()
        todo = [value]
        while todo:
            v = todo.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            if len(seen) > MAX_VALUES:
                raise _Uncopyable
            if isinstance(v, (Const, External, EnumMember, ModuleVal)):
                continue
            if isinstance(v, TupleVal):
                todo.extend(v.items)
                continue
            if isinstance(v, ClassVal):
                if v.serial >= since:
                    raise _Uncopyable  # (a class made by the call)
                continue
            if not isinstance(v, _FRESH_KINDS):
                raise _Uncopyable  # a tensor, a function: its age is not told
            if v.serial < since:  # older than the call: the same object for every taker
                continue
            if isinstance(v, Unknown):
                continue
            if (
                id(v) in self._unbuilt
                or id(v) in self.tensor_data
                or id(v) in self.dict_data
                or id(v) in self.score_sources
            ):
                raise _Uncopyable  # (the engine knows it by id)
            contents = st.heap.get(id(v), base_of(v))
            out[id(v)] = contents
            todo.extend(_values_in(contents))
        return out


def _arg_key(v: Value, keep: list[Value]) -> Any:
    if isinstance(v, Const) and isinstance(v.value, _SIMPLE):
        return (type(v.value), v.value)  # (1, 1.0 and True are three arguments)
    keep.append(v)
    return ("is", id(v))


def _values_in(contents: Any) -> list[Value]:
    if isinstance(contents, dict):
        return list(contents.values())
    if isinstance(contents, Seq):
        if contents.items is not None:
            return list(contents.items)
        return [v for v, _ in contents.maybe or ()]
    if isinstance(contents, Entries):
        if any(isinstance(k, _Identity) for k in contents.items) or not (
            contents.rest is None or type(contents.rest) is Unknown
        ):
            raise _Uncopyable  # (a key by identity, keys perhaps there: kept simple)
        return [x for kv, v in contents.items.values() for x in (kv, v)]
    raise _Uncopyable


def _copied(v: Value, since: int, fresh: dict[int, Any], copies: dict[int, Value]) -> Value:
    """`v` with each object the call made (newer than `since`) made again, contents and all."""
    if isinstance(v, TupleVal):  # (a tuple's identity is never told: kept where it can be)
        items = [_copied(x, since, fresh, copies) for x in v.items]
        same = all(a is b for a, b in zip(items, v.items, strict=True))
        return v if same else TupleVal(items, v.origins)
    if not isinstance(v, _FRESH_KINDS) or v.serial < since:
        return v
    done = copies.get(id(v))
    if done is not None:
        return done
    if isinstance(v, Unknown):
        new = copy.copy(v)
        new.serial = next(SERIALS)
        copies[id(v)] = new
        return new
    contents = fresh[id(v)]
    if isinstance(v, Instance):
        inst = Instance(v.cls, {}, v.label)
        copies[id(v)] = inst
        inst.fields = {k: _copied(x, since, fresh, copies) for k, x in contents.items()}
        return inst
    if isinstance(v, ListVal):
        lst = ListVal(())
        copies[id(v)] = lst
        maybe = [(_copied(x, since, fresh, copies), p) for x, p in contents.maybe or ()]
        items = contents.items
        lst.base = Seq(
            None if items is None else [_copied(x, since, fresh, copies) for x in items],
            contents.why,
            maybe if items is None and contents.maybe is not None else None,
        )
        return lst
    made = DictVal() if isinstance(v, DictVal) else SetVal()
    copies[id(v)] = made

    def again(x: Value) -> Value:
        return _copied(x, since, fresh, copies)

    made.base = Entries(
        {h: (again(kv), again(x)) for h, (kv, x) in contents.items.items()}, contents.rest
    )
    return made
