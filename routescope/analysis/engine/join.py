"""One notion of joining: paths meeting after a call or a statement, values across paths."""

from __future__ import annotations

from typing import Any

from routescope.analysis.engine.base import JOIN_THRESHOLD, EngineBase, Outcome
from routescope.analysis.engine.containers import (
    LIST_UNKNOWN,
    is_dict,
    is_list,
)
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    Const,
    EnumMember,
    FunctionVal,
    Instance,
    OpenKeys,
    Unknown,
    UnknownKind,
    Value,
    rest_of_dicts,
)

# More live paths than this after a statement are merged where they reached the same routing
# kernels: a control-flow join, with the variables they disagree on becoming Unknown.
MERGE_AT = 24
# How far into nested objects a join looks (server args -> declaration stash -> entry -> dict).
JOIN_DEPTH = 4
# At most this many list shapes are kept apart at a join (see merge_paths).
MAX_SHAPES = 8


def merge_paths(states: list[PathState], where: str, force: bool = False) -> list[PathState]:
    """Join paths that reached the same kernels (`force`: all of them, whatever they reached)."""
    groups: dict[tuple[object, ...], list[PathState]] = {}
    # Lists some path grew or shrank: joining paths that disagree on a list's length loses the
    # whole list (a declaration stash read later through it), so such paths stay apart unless
    # that leaves too many of them.
    shapes = [
        ()
        if force
        else tuple(sorted(_content(s, o, 3) for o in s.heap_objs.values() if is_list(o)))
        for s in states
    ]
    keep_shapes = not force and len(set(shapes)) <= MAX_SHAPES
    for s, shape in zip(states, shapes, strict=True):
        claims = tuple(sorted((k, id(v)) for k, v in s.claims.items()))
        key: tuple[object, ...] = (tuple(id(h) for h in s.sinks), claims, len(s.envs), s.stopped)
        if keep_shapes:
            key += (shape,)
        groups.setdefault(("all",) if force else key, []).append(s)
    out: list[PathState] = []
    for members in groups.values():
        first = members[0]
        if len(members) > 1:
            why = f"differs between paths joined at {where}"
            objs = {k: o for m in members for k, o in m.heap_objs.items()}
            # every join reads the paths as they were: the first path is written only after
            # (a list each path made for itself joins item by item where a variable holds it,
            # even though the other paths' views of the first path's list differ)
            updates: list[tuple[Instance, dict[str, Value]]] = []
            for obj in objs.values():
                views = [m.fields(obj) for m in members]
                if all(v is views[0] for v in views):
                    continue  # no path changed it differently
                if is_list(obj) and len({tuple(v) for v in views}) > 1:
                    updates.append(
                        (obj, {LIST_UNKNOWN: Unknown(why, kind=UnknownKind.JOINED)})
                    )  # lengths differ
                    continue
                if is_dict(obj):
                    joined = _join_dict(views, members, why, JOIN_DEPTH)
                else:
                    joined = _join_fields(views, members, why, JOIN_DEPTH)
                updates.append((obj, joined))
            env_updates: list[tuple[dict[str, Value], str, Value]] = []
            for depth, env in enumerate(first.envs):
                names = dict.fromkeys(k for m in members for k in m.envs[depth])
                for name in names:
                    vals = [m.envs[depth].get(name) for m in members]
                    env_updates.append((env, name, _join(vals, members, why, JOIN_DEPTH)))
            for obj, fields in updates:
                first.replace_fields(obj, fields)
            for env, name, value in env_updates:
                env[name] = value
            first.assumptions.append(f"{len(members)} paths joined at {where}")
        out.append(first)
    return out


def _list_shape(st: PathState) -> tuple[str, ...]:
    """What the lists this path changed hold, in one comparable form."""
    return tuple(sorted(_content(st, o, 3) for o in st.heap_objs.values() if is_list(o)))


def _content(st: PathState, v: Value | None, depth: int) -> str:
    """What a value holds, as text two paths can compare (object identity below `depth`)."""
    if isinstance(v, Const):
        return repr(v.value)
    if isinstance(v, Instance) and v.cls is None and depth > 0:
        f = st.fields(v)
        items = ",".join(f"{k}={_content(st, x, depth - 1)}" for k, x in f.items())
        return f"{v.label}({items})"
    return f"#{id(v)}"


def join_values(vals: list[Value | None], members: list[PathState], why: str) -> Value:
    """One value for `vals` as seen on paths `members` (see _join)."""
    return _join(list(vals), members, why, JOIN_DEPTH)


def _join_fields(
    views: list[dict[str, Value]], members: list[PathState], why: str, depth: int
) -> dict[str, Value]:
    names = dict.fromkeys(k for v in views for k in v)  # first path's order: dicts iterate
    return {n: _join([v.get(n) for v in views], members, why, depth) for n in names}


def _join_dict(
    views: list[dict[str, Value]], members: list[PathState], why: str, depth: int
) -> dict[str, Value]:
    """A dict's items joined across paths: a key every path has is kept (its values joined); a
    key only some have is neither present nor absent, which the "*" field records (OpenKeys:
    the keys it may hold, so a lookup of any other key is still decided)."""
    rests = [v.get(LIST_UNKNOWN) for v in views]
    items = [{k: x for k, x in v.items() if k != LIST_UNKNOWN} for v in views]
    joined = _join_fields(items, members, why, depth)
    everywhere = {k for k in joined if all(k in w for w in items)}
    partial = frozenset(k for k in joined if k not in everywhere)
    out = {k: v for k, v in joined.items() if k in everywhere}
    rest = rest_of_dicts([OpenKeys(partial, why) if partial else None, *rests])
    if rest is not None:
        out[LIST_UNKNOWN] = rest
    return out


def _join(vals: list[Value | None], members: list[PathState], why: str, depth: int) -> Value:
    """The join of one variable's values across paths: equal -> kept; objects of one class ->
    a new object whose fields are joined; anything else -> Unknown."""
    first = vals[0]
    if first is not None and all(_agree(v, first) for v in vals):
        return first
    if all(v is not None and is_list(v) for v in vals):
        lists = [v for v in vals if isinstance(v, Instance)]
        views = [m.fields(i) for m, i in zip(members, lists, strict=False)]
        if len({tuple(v) for v in views}) > 1 or depth <= 0:
            return Instance(None, {LIST_UNKNOWN: Unknown(why, kind=UnknownKind.JOINED)}, "list")
        return Instance(None, _join_fields(views, members, why, depth - 1), "list")
    if depth > 0 and all(
        isinstance(v, Instance) and v.cls is None and v.label in ("tuple", "dict") for v in vals
    ):  # values built on each path (a stash entry): joined item by item
        insts = [v for v in vals if isinstance(v, Instance)]
        views = [m.fields(i) for m, i in zip(members, insts, strict=False)]
        label = insts[0].label
        if any(i.label != label for i in insts):
            return Unknown(why, kind=UnknownKind.JOINED)
        if label == "tuple" and len({len(v) for v in views}) > 1:
            return Unknown(why, kind=UnknownKind.JOINED)
        if label == "dict":
            return Instance(None, _join_dict(views, members, why, depth - 1), label)
        return Instance(None, _join_fields(views, members, why, depth - 1), label)
    if depth > 0 and all(
        isinstance(v, Instance) and (v.cls is not None or v.label not in ("list", "tuple", "dict"))
        for v in vals
    ):  # objects of one class (or one kind: the model's config made on each path)
        insts = [v for v in vals if isinstance(v, Instance)]
        if len({(id(i.cls), i.label if i.cls is None else "") for i in insts}) == 1:
            views = [m.fields(i) for m, i in zip(members, insts, strict=False)]
            return Instance(
                insts[0].cls, _join_fields(views, members, why, depth - 1), insts[0].label
            )
    return Unknown(why, kind=UnknownKind.JOINED)


def _agree(a: Value | None, b: Value | None) -> bool:
    if a is b:
        return True
    if isinstance(a, FunctionVal) and isinstance(b, FunctionVal):
        return a.node is b.node  # the same method, bound to objects being joined
    if isinstance(a, Const) and isinstance(b, Const):
        return repr(a.value) == repr(b.value)
    return False


def _shape(v: Value | None) -> str:
    """What kind of value a path returned: paths returning different kinds stay apart."""
    if isinstance(v, Instance):
        return v.cls.qualname if v.cls is not None else v.label
    if isinstance(v, Const):
        return repr(v.value)
    return type(v).__name__


def _digest(v: Value) -> str:
    if isinstance(v, Const):
        return repr(v.value)
    if isinstance(v, EnumMember):
        return f"{v.cls.qualname}.{v.name}"
    return str(id(v))


def same(a: Value | None, b: Value | None) -> bool:
    if a is b:
        return True
    if isinstance(a, Const) and isinstance(b, Const):
        return repr(a.value) == repr(b.value)
    if isinstance(a, EnumMember) and isinstance(b, EnumMember):
        return a.cls is b.cls and a.name == b.name
    if (
        isinstance(a, Instance)
        and isinstance(b, Instance)
        and a.cls is None
        and b.cls is None
        and a.label == b.label
        and a.label in ("dict", "tuple")
    ):
        # equal literals made on different paths (`return {}` on each): callers group paths
        # by what they changed in the heap first, so these objects' own fields are their view
        return a.fields.keys() == b.fields.keys() and all(
            same(a.fields[k], b.fields[k]) for k in a.fields
        )
    return False


def join_paths_values(
    vals: list[Value | None], states: list[PathState], n: int, where: str
) -> Value:
    """The return value of joined paths: containers built on each path (a dict of declared
    settings) are joined item by item; anything else that differs is Unknown."""
    return join_values(vals, states, f"differs between the {n} paths through {where}")


class JoinMixin(EngineBase):
    def join(
        self, where: str, outs: list[Outcome], threshold: int = JOIN_THRESHOLD
    ) -> list[Outcome]:
        """Merge the returning paths of a call when they reached the same routing kernels: the
        forks inside it did not change what routes, so one path (values joined) stands for all.
        Paths that reached different kernels are kept apart: they are the answer."""
        returning = [o for o in outs if o[1] == "return" and not o[0].stopped]
        if len(returning) <= min(threshold, self.budget.merge_at):
            return outs
        if self.budget.merge_at <= 1:  # set-up phases: join every agreeing path, state and all
            return self._join_states(where, returning) + [o for o in outs if o not in returning]
        groups: dict[tuple[Any, ...], list[Outcome]] = {}
        for o in returning:
            heap = tuple(
                sorted(
                    (k, tuple(sorted((n, _digest(v)) for n, v in d.items())))
                    for k, d in o[0].heap.items()
                )
            )
            key = (
                tuple(id(h) for h in o[0].sinks),
                tuple(sorted(o[0].claims.items())),
                heap,
                _shape(o[2]),
            )
            groups.setdefault(key, []).append(o)
        merged: list[Outcome] = []
        for members in groups.values():
            first_state, _, first_val = members[0]
            vals = [m[2] for m in members]
            value = (
                first_val
                if all(same(v, first_val) for v in vals)
                else join_paths_values(vals, [m[0] for m in members], len(members), where)
            )
            if len(members) > 1:
                first_state.assumptions.append(f"{len(members)} paths through {where} joined")
            merged.append((first_state, "return", value))
        return merged + [o for o in outs if o not in returning]

    def _join_states(self, where: str, returning: list[Outcome]) -> list[Outcome]:
        groups: dict[tuple[Any, ...], list[Outcome]] = {}
        for o in returning:
            key = (tuple(id(h) for h in o[0].sinks), _shape(o[2]), len(o[0].envs))
            groups.setdefault(key, []).append(o)
        out: list[Outcome] = []
        for members in groups.values():
            vals = [m[2] for m in members]
            first_val = vals[0]
            value = (
                first_val
                if all(same(v, first_val) for v in vals)
                else join_paths_values(vals, [m[0] for m in members], len(members), where)
            )
            (state,) = merge_paths([m[0] for m in members], where, force=True)
            out.append((state, "return", value))
        return out


def commit_agreed(states: list[PathState], skip: Value | None) -> None:
    """Make what a phase wrote on objects their own, for the phases after it: a field every
    path agrees on keeps its value, objects of one kind join field by field, the rest become
    Unknown."""
    if not states:
        return
    keys = dict.fromkeys(k for s in states for k in s.heap)
    for key in keys:
        obj = next(s.heap_objs[key] for s in states if key in s.heap_objs)
        if obj is skip:
            continue  # the server arguments are settled with their own notes
        views = [s.fields(obj) for s in states]
        why = "differs between the paths that built the model"
        merged = {
            name: join_values([v.get(name) for v in views], states, why)
            for name in dict.fromkeys(n for v in views for n in v)
        }  # objects of one kind made on each path join field by field
        obj.fields.clear()
        obj.fields.update(merged)
