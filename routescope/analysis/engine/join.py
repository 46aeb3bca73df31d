"""Joining: the one notion of "the same value", and the one join of values and of path states.

Used wherever paths meet: after a statement when too many paths are live, after a call, at the
end of a module-level statement, across the passes of a loop, and between set-up phases. A
join covers every path it joins: what they agree on is kept, containers and objects of one kind
are joined item by item, anything else becomes Unknown (kind JOINED).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, cast

from routescope.analysis.engine.base import JOIN_THRESHOLD, EngineBase, Outcome
from routescope.analysis.engine.containers import (
    DictVal,
    Entries,
    ListVal,
    MappingProxy,
    Seq,
    SetVal,
    TupleVal,
    same_const,
)
from routescope.analysis.engine.intervals import (
    forget_truths,
    joined_bounds,
    same_bounds,
)
from routescope.analysis.engine.joinscope import joined_memo, joining
from routescope.analysis.engine.nones import never_none
from routescope.analysis.engine.openkeys import OpenKeys, rest_of_dicts
from routescope.analysis.engine.shapes import (
    ALIGN_LIMIT,
    DEPTH,
    align,
    heap_digest,
    kind_shapes,
    value_shape,
)
from routescope.analysis.engine.sinks import join_compiled
from routescope.analysis.engine.state import PathState, base_of, set_base
from routescope.analysis.engine.values import (
    Const,
    EnumMember,
    External,
    FunctionVal,
    Instance,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
)
from routescope.analysis.library.paths import each_of, join_paths

# How far into nested objects a join looks (server args -> declaration stash -> entry -> dict).
JOIN_DEPTH = DEPTH
# At most this many list shapes are kept apart at a join (see merge_paths).
MAX_SHAPES = 8


def agree(a: Value | None, b: Value | None) -> bool:
    """Are `a` and `b` one value, on every path (the same object, or equal immutables)?"""
    if a is b:
        return True
    if a is None or b is None:
        return False
    if isinstance(a, Const) and isinstance(b, Const):
        return same_const(a, b)
    if isinstance(a, FunctionVal) and isinstance(b, FunctionVal):
        return a.node is b.node and a.bound is b.bound
    if isinstance(a, EnumMember) and isinstance(b, EnumMember):
        return a.cls is b.cls and a.name == b.name
    if isinstance(a, External) and isinstance(b, External):
        return a.name == b.name
    if isinstance(a, TupleVal) and isinstance(b, TupleVal):
        return len(a.items) == len(b.items) and all(
            agree(x, y) for x, y in zip(a.items, b.items, strict=True)
        )
    return False


def _unknown(why: str, vals: list[Value | None] | None = None) -> Unknown:
    """The unknown paths that disagree join into: not None where no path held None (a scale
    that is 1.0 on one way and a tensor's item on the other is no None on either)."""
    got = Unknown(why, kind=UnknownKind.JOINED)
    got.not_none = vals is not None and all(never_none(v) for v in vals)
    return got


def join_values(
    vals: list[Value | None], states: list[PathState], why: str, depth: int = JOIN_DEPTH
) -> Value:
    """One value for `vals` as seen on paths `states` (one value each): equal -> kept;
    containers and objects of one kind made on each path -> a new one with its items joined
    (one per objects joined, in the current join: see joinscope); anything else -> Unknown."""
    with joining():
        return _join_values(vals, states, why, depth)


def _join_values(vals: list[Value | None], states: list[PathState], why: str, depth: int) -> Value:
    first = vals[0]
    if first is not None and all(agree(v, first) for v in vals):
        return first
    if depth <= 0 or any(v is None for v in vals):
        return _unknown(why)
    kinds = {type(v) for v in vals}
    if len(kinds) != 1:
        return _unknown(why, vals)
    if isinstance(first, TupleVal):
        tuples = [v for v in vals if isinstance(v, TupleVal)]
        if len({len(t.items) for t in tuples}) > 1:
            return _unknown(why)
        return TupleVal(
            join_values([t.items[i] for t in tuples], states, why, depth - 1)
            for i in range(len(first.items))
        )
    memo, key = joined_memo(), tuple(id(v) for v in vals)
    if key in memo:  # these objects were joined already in this join: the same joined object
        return cast(Value, memo[key])
    if isinstance(first, MappingProxy):  # a view on each path: of the dicts joined
        target = join_values([v.target for v in vals if isinstance(v, MappingProxy)], states,
                             why, depth - 1)  # fmt: skip
        return MappingProxy(target) if isinstance(target, DictVal) else _unknown(why)
    if isinstance(first, (ListVal, DictVal, SetVal)):  # made on each path: joined item by item
        made: Value = ListVal(None) if isinstance(first, ListVal) else type(first)()
        memo[key] = made  # (before its items: an object that holds itself)
        views = [s.contents(v) for s, v in zip(states, vals, strict=False) if v is not None]
        made.base = join_contents(views, states, why, depth - 1)  # type: ignore[attr-defined]
        return made
    if isinstance(first, Instance):  # objects of one class (or one kind: a config on each path)
        insts = [v for v in vals if isinstance(v, Instance)]
        if len({(id(i.cls), i.label if i.cls is None else "") for i in insts}) == 1:
            inst = memo[key] = Instance(first.cls, {}, first.label)
            views = [s.fields(i) for s, i in zip(states, insts, strict=False)]
            inst.fields.update(join_fields(views, states, why, depth - 1))
            return inst
    if isinstance(first, Tensor):
        tensors = [v for v in vals if isinstance(v, Tensor)]
        if all(t.producer is first.producer for t in tensors):
            return Tensor(producer=first.producer, role=first.role)
    return join_compiled(vals) or join_paths(vals, why) or _unknown(why, vals)


def join_fields(
    views: list[dict[str, Value]], states: list[PathState], why: str, depth: int
) -> dict[str, Value]:
    """An object's fields joined: a field some path lacks is unknown (it may be there)."""
    names = dict.fromkeys(k for v in views for k in v)  # the first path's order
    return {n: join_values([v.get(n) for v in views], states, why, depth) for n in names}


def join_contents(views: list[Any], states: list[PathState], why: str, depth: int) -> Any:
    """What a mutable object holds, joined over the paths: fields, a list's items (unknown
    when the lengths differ), a dict's items or a set's members (a key only some paths hold
    is perhaps there: OpenKeys keeps every other key decided)."""
    first = views[0]
    if all(v is first for v in views):
        return first
    if isinstance(first, dict):
        return join_fields(views, states, why, depth)
    if isinstance(first, Seq):
        return _join_lists([cast(Seq, v) for v in views], states, why, depth)
    if isinstance(first, Entries):
        return _join_entries([v for v in views if isinstance(v, Entries)], states, why, depth)
    return first


def _join_lists(seqs: list[Seq], states: list[PathState], why: str, depth: int) -> Seq:
    """A list's items joined over the paths. Lists of one length join item by item; lists of
    different lengths are aligned (the longest common run of alike items, pairwise), and what
    some paths' lists do not hold is perhaps absent: each path's list is then one of the ways
    through the joined one (Seq.maybe)."""
    layouts = [s.layout() for s in seqs]
    why_seq = next((s.why for s in seqs if s.why is not None), None) or _unknown(why)
    if any(lay is None for lay in layouts) or sum(len(lay or ()) for lay in layouts) > ALIGN_LIMIT:
        return Seq(None, why_seq, each=each_of(seqs))
    known = cast(list[tuple[tuple[Value, bool], ...]], layouts)
    if len({len(lay) for lay in known}) == 1 and all(s.items is not None for s in seqs):
        return Seq(
            join_values([lay[i][0] for lay in known], states, why, depth)
            for i in range(len(known[0]))
        )
    columns: list[dict[int, tuple[Value, bool]]] = [{0: e} for e in known[0]]
    for i in range(1, len(known)):
        columns = align(columns, known[i], i, states)
    out: list[tuple[Value, bool]] = []
    for col in columns:
        at = sorted(col)
        value = join_values([col[k][0] for k in at], [states[k] for k in at], why, depth)
        out.append((value, len(at) < len(seqs) or any(col[k][1] for k in at)))
    if not any(perhaps for _, perhaps in out):
        return Seq(v for v, _ in out)
    return Seq(None, why_seq, out)


def _join_entries(views: list[Entries], states: list[PathState], why: str, depth: int) -> Entries:
    keys: dict[Hashable, Value] = {}
    for v in views:
        for k, (kv, _) in v.items.items():
            keys.setdefault(k, kv)
    everywhere = [k for k in keys if all(k in v.items for v in views)]
    partial = frozenset(k for k in keys if k not in everywhere)
    items = {
        k: (keys[k], join_values([v.items[k][1] for v in views], states, why, depth))
        for k in everywhere
    }
    values: dict[Hashable, Value] = {}
    if len(views) == len(states):  # what a key only some paths hold holds where it is there
        for k in partial:
            having = [(s, v.items[k][1]) for s, v in zip(states, views, strict=True)
                      if k in v.items]  # fmt: skip
            values[k] = join_values([v for _, v in having], [s for s, _ in having], why, depth)
    opened = OpenKeys(partial, why, values) if partial else None
    rest = rest_of_dicts([opened, *(v.rest for v in views)])
    return Entries(items, rest if isinstance(rest, Unknown) else None)


def join_states(states: list[PathState], why: str) -> PathState:
    """One state covering `states`: the first path's record (decisions, frames, kernels), its
    names and what every object holds joined over all of them. The first state is changed."""
    first = states[0]
    if len(states) == 1:
        return first
    with joining():
        return _join_states(first, states, why)


def _join_states(first: PathState, states: list[PathState], why: str) -> PathState:
    objs = {k: o for s in states for k, o in s.heap_objs.items()}
    # every join reads the paths as they were: the first path is written only after
    updates: list[tuple[Value, Any]] = []
    for obj in objs.values():
        held = [s.heap.get(id(obj), base_of(obj)) for s in states]  # (not a read: kept as is)
        if all(v is held[0] for v in held):
            continue  # no path changed it differently
        views = [s.keyed(obj) for s in states]  # read: the join is made of what they hold
        updates.append((obj, join_contents(views, states, why, JOIN_DEPTH)))
    env_updates: list[tuple[dict[str, Value], str, Value]] = []
    for depth, env in enumerate(first.envs):
        names = dict.fromkeys(k for s in states for k in s.envs[depth])
        for name in names:
            vals = [s.envs[depth].get(name) for s in states]
            if not all(v is vals[0] for v in vals):
                env_updates.append((env, name, join_values(vals, states, why)))
    memo = {
        k: v for k, v in first.memo.items() if all(k in s.memo and s.memo[k] is v for s in states)
    }
    for obj, contents in updates:
        first.store(obj, contents)
    for env, name, value in env_updates:
        env[name] = value
    first.memo, first.bounds = memo, joined_bounds(states)
    return first


def same(a: Value | None, b: Value | None) -> bool:
    """`agree`, and equal literals made on different paths (`return {}` on each): callers group
    paths by what they changed on shared objects first, so these are compared as made."""
    if agree(a, b):
        return True
    if isinstance(a, DictVal) and isinstance(b, DictVal):
        x, y = a.base, b.base
        return (
            x.rest is None
            and y.rest is None
            and x.items.keys() == y.items.keys()
            and all(same(x.items[k][1], y.items[k][1]) for k in x.items)
        )
    return False


def join_returns(vals: list[Value | None], states: list[PathState], n: int, where: str) -> Value:
    """The return value of joined paths: containers built on each path (a dict of declared
    settings) are joined item by item; anything else that differs is Unknown."""
    head = vals[0]
    if head is not None and all(same(v, head) for v in vals):
        return head
    return join_values(vals, states, f"differs between the {n} paths through {where}")


class JoinMixin(EngineBase):
    def join(
        self, where: str, outs: list[Outcome], threshold: int = JOIN_THRESHOLD
    ) -> list[Outcome]:
        """Merge the returning paths of a call when they reached the same routing kernels and
        left shared objects alike: the forks inside it did not change what routes, so one path
        (its return values joined) stands for all. Paths that reached different kernels are
        kept apart: they are the answer."""
        outs = one_of_alike(outs)
        returning = [o for o in outs if o[1] == "return" and not o[0].stopped]
        if len(returning) <= min(threshold, self.budget.merge_limit([o[0] for o in returning])):
            return outs
        rest = [o for o in outs if o not in returning]
        groups: dict[tuple[Any, ...], list[Outcome]] = {}
        whole = self.budget.merge_at <= 1  # set-up phases: join every agreeing path, state too
        held = kind_shapes([o[0] for o in returning]) if whole else []
        for n, o in enumerate(returning):
            if whole:
                key: tuple[Any, ...] = (
                    _kernels_key(o[0]),
                    value_shape(o[2]),
                    len(o[0].envs),
                    held[n],
                )
            else:
                key = (record_key(o[0]), heap_digest(o[0]), value_shape(o[2]))
            groups.setdefault(key, []).append(o)
        merged: list[Outcome] = []
        for members in groups.values():
            states = [m[0] for m in members]
            with joining():  # the value returned and the state's names share what they hold
                value = join_returns([m[2] for m in members], states, len(members), where)
                state = join_states(states, f"differs between paths joined at {where}")
            if len(members) > 1:
                state.assumptions.append(f"{len(members)} paths through {where} joined")
            merged.append((state, "return", value))
        return merged + rest


def one_of_alike(outs: list[Outcome]) -> list[Outcome]:
    """Ways through a call that return one value and leave one state (a fork whose branches
    only logged: `if torch.distributed.is_initialized() and rank == 0: logger.info(...)`) are
    one way: whatever follows the call runs alike on each, so the first stands for them (with
    what the others assumed). Without this, a config built after such a call is a different
    object on each way, and what reads it forks on a condition that decides nothing."""
    if len(outs) < 2:
        return outs
    kept: list[Outcome] = []
    for o in outs:
        twin = next((k for k in kept if _alike(k, o)), None) if o[1] == "return" else None
        if twin is None:
            kept.append(o)
            continue
        mine = twin[0].assumptions
        mine.extend(a for a in o[0].assumptions if a not in mine)
        forget_truths(twin[0], o[0].bounds)
    return kept


def _alike(a: Outcome, b: Outcome) -> bool:
    """Do two returning ways hold the same value and the same state, their records aside?"""
    x, y = a[0], b[0]
    return (
        a[1] == b[1] == "return"
        and not x.stopped
        and not y.stopped
        and x.raising is None
        and y.raising is None
        and x.yielded is None
        and y.yielded is None
        and agree(a[2], b[2])
        and record_key(x) == record_key(y)
        and x.routed == y.routed
        and x.frames == y.frames
        and x.envs == y.envs
        and x.heap == y.heap
        and x.heap_objs.keys() == y.heap_objs.keys()
        and x.memo.keys() == y.memo.keys()
        and all(agree(x.memo[k][0], y.memo[k][0]) for k in x.memo)
        and same_bounds(x.bounds, y.bounds)
    )


def commit_agreed(states: list[PathState], skip: Value | None) -> None:
    """Make what a phase wrote on objects their own, for the phases after it: what each object
    holds, joined over the phase's paths (the server arguments, `skip`, are settled with their
    own notes)."""
    objs = {k: o for s in states for k, o in s.heap_objs.items() if o is not skip}
    why = "differs between the paths that built the model"
    with joining():
        for obj in objs.values():
            views = [s.contents(obj) for s in states]
            set_base(obj, join_contents(views, states, why, JOIN_DEPTH))


def record_key(st: PathState) -> tuple[object, ...]:
    """What the report reads of a path besides its values: paths that differ here are
    different answers and are never joined. A way that raises never joins one that goes on
    (the joined state would either raise for both or for neither)."""
    claims = tuple(sorted((k, id(v)) for k, v in st.claims.items()))
    raising = None if st.raising is None else (exception_key(st.raising), st.raised_at)
    return (_kernels_key(st), claims, len(st.envs), st.stopped, raising)


def _kernels_key(st: PathState) -> tuple[object, ...]:
    """The kernels a path reached: a routing kernel by identity (the tensors it claims are its
    own), a launch that routes nothing by where it is (two ways that launch the same kernel at
    the same call join)."""
    return tuple(id(h) if h.routes else (h.name, h.file, h.line) for h in st.sinks)


def exception_key(exc: Value) -> object:
    """What tells two raised exceptions apart for a join: the class raised."""
    if isinstance(exc, External):
        return exc.name
    if isinstance(exc, Instance):
        return exc.cls.qualname if exc.cls is not None else exc.label
    return type(exc).__name__
