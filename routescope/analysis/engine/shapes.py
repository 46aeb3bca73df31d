"""Values and path states in forms two paths can compare: a value's fingerprint (constants by
value, containers by what they hold), the skeleton of the lists a path changed, the alignment of
two lists, and the digests that group paths at a join."""

from __future__ import annotations

from routescope.analysis.engine.containers import (
    DictVal,
    Entries,
    ListVal,
    Seq,
    SetVal,
    TupleVal,
)
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    Const,
    EnumMember,
    Instance,
    Value,
)

# Lists longer than this in all (over the paths) are not aligned at a join: unknown.
ALIGN_LIMIT = 512


# How far into nested objects a comparison looks (server args -> declaration stash -> entry ->
# dict), as a join does.
DEPTH = 4


def align(
    columns: list[dict[int, tuple[Value, bool]]],
    layout: tuple[tuple[Value, bool], ...],
    at: int,
    states: list[PathState],
) -> list[dict[int, tuple[Value, bool]]]:
    """Merge path `at`'s list into the columns so far: a longest common subsequence of alike
    items (one object, or equal contents) shares a column; the rest get columns of their own,
    in an order every path's list keeps."""

    def rep(col: dict[int, tuple[Value, bool]]) -> str:
        k = min(col)
        return fingerprint(states[k], col[k][0], DEPTH)

    left = [rep(c) for c in columns]
    right = [fingerprint(states[at], v, DEPTH) for v, _ in layout]
    m, n = len(left), len(right)
    best = [[0] * (n + 1) for _ in range(m + 1)]
    for i in range(m - 1, -1, -1):
        for j in range(n - 1, -1, -1):
            best[i][j] = (
                best[i + 1][j + 1] + 1
                if left[i] == right[j]
                else max(best[i + 1][j], best[i][j + 1])
            )
    out: list[dict[int, tuple[Value, bool]]] = []
    i = j = 0
    while i < m or j < n:
        if i < m and j < n and left[i] == right[j]:
            out.append({**columns[i], at: layout[j]})
            i, j = i + 1, j + 1
        elif j >= n or (i < m and best[i + 1][j] >= best[i][j + 1]):
            out.append(columns[i])
            i += 1
        else:
            out.append({at: layout[j]})
            j += 1
    return out


def fingerprint(st: PathState, v: Value | None, depth: int) -> str:
    """A value as text two paths can compare: constants by value, containers by what they
    hold (to `depth`), anything else by identity."""
    if isinstance(v, Const):
        return f"{type(v.value).__name__}:{v.value!r}"
    if isinstance(v, EnumMember):
        return f"{v.cls.qualname}.{v.name}"
    if depth > 0 and isinstance(v, TupleVal):
        return "(" + ",".join(fingerprint(st, x, depth - 1) for x in v.items) + ")"
    if depth > 0 and isinstance(v, ListVal):
        seq = st.contents(v)
        lay = seq.layout() if isinstance(seq, Seq) else None
        if lay is not None:
            inner = ",".join(("?" if p else "") + fingerprint(st, x, depth - 1) for x, p in lay)
            return "[" + inner + "]"
    if depth > 0 and isinstance(v, (DictVal, SetVal)):
        e = st.contents(v)
        if isinstance(e, Entries) and e.rest is None:
            inner = ",".join(
                f"{k!r}:{fingerprint(st, x, depth - 1)}" for k, (_kv, x) in e.items.items()
            )
            return type(v).__name__ + "{" + inner + "}"
    return f"#{id(v)}"


# The skeletons of lists holding no containers, by their contents (a Seq is never changed in
# place): the same text on every path, so each is built once (a join compares every list a
# path holds; a config's 300-name list walked at each one dominated a trace).
_FLAT: dict[int, tuple[Seq, str]] = {}
_NESTED = (ListVal, TupleVal, DictVal, SetVal)


def list_shape(st: PathState) -> tuple[str, ...]:
    """How the lists this path changed are built (lengths, and the keys of the dicts in them),
    in one comparable form: paths alike in this join item by item without losing a list."""
    return tuple(
        sorted(skeleton(st, o, DEPTH) for o in st.heap_objs.values() if isinstance(o, ListVal))
    )


def skeleton(st: PathState, v: Value | None, depth: int) -> str:
    """A value's structure as text two paths can compare: list lengths, tuple arities, dict
    keys; scalars and objects are a dot (a join keeps the equal ones and forgets the rest)."""
    if depth <= 0:
        return "."
    if isinstance(v, ListVal):
        seq = st.contents(v)
        if not isinstance(seq, Seq):
            return "?"
        known = _FLAT.get(id(seq))
        if known is not None and known[0] is seq:  # (a list's contents are never changed)
            return known[1]
        lay = seq.layout()
        if lay is None:
            return "?"
        text = "[" + ",".join(("?" if p else "") + skeleton(st, x, depth - 1) for x, p in lay) + "]"
        if not any(isinstance(x, _NESTED) for x, _ in lay):  # the same on every path, any depth
            if len(_FLAT) > 50_000:
                _FLAT.clear()
            _FLAT[id(seq)] = (seq, text)  # the contents are kept, so the id stays theirs
        return text
    if isinstance(v, TupleVal):
        return "(" + ",".join(skeleton(st, x, depth - 1) for x in v.items) + ")"
    if isinstance(v, (DictVal, SetVal)):
        e = st.contents(v)
        if isinstance(e, Entries) and e.rest is None:
            inner = ",".join(
                f"{k!r}:{skeleton(st, x, depth - 1)}" for k, (_kv, x) in e.items.items()
            )
            return "{" + inner + "}"
        return "{?}"
    return "."


def value_shape(v: Value | None) -> str:
    """What kind of value a path returned: paths returning different kinds stay apart."""
    if isinstance(v, Instance):
        return v.cls.qualname if v.cls is not None else v.label
    if isinstance(v, Const):
        return repr(v.value)
    return type(v).__name__


def digest(v: Value) -> str:
    if isinstance(v, Const):
        return repr(v.value)
    if isinstance(v, EnumMember):
        return f"{v.cls.qualname}.{v.name}"
    return str(id(v))


def heap_digest(st: PathState) -> tuple[object, ...]:
    out: list[tuple[int, object]] = []
    for k, contents in st.heap.items():
        if isinstance(contents, dict):
            out.append((k, tuple(sorted((n, digest(v)) for n, v in contents.items()))))
        else:
            out.append((k, id(contents)))
    return tuple(sorted(out, key=_first))  # (ids are unique: no contents compared or shown)


def _first(pair: tuple[int, object]) -> int:
    return pair[0]


def kind_shape(st: PathState) -> tuple[str, ...]:
    """Which framework classes the objects this path changed hold, field by field (into the
    objects they hold, to DEPTH): paths that disagree on one (a kernel object built on one, None
    or another class on the other) would join into an unknown, the object lost, as paths that
    disagree on a list's length lose the list."""
    out: list[str] = []
    for o in st.heap_objs.values():
        if isinstance(o, Instance):
            text = _kinds(st, o, DEPTH, set())
            if text:
                out.append(f"{id(o)}{text}")
    return tuple(sorted(out))


def kind_shapes(states: list[PathState]) -> list[tuple[str, ...]]:
    """A kind shape for each state, for telling the states apart: two are equal exactly where
    the states' own kind_shapes are. Paths whose heaps hold the same contents see every object
    alike (an object is seen as the path's heap holds it, else as the object holds it), so one
    walk serves them all, and where every path holds the same contents none is needed: the ways
    of an `if` that wrote nothing, met again at the next statement (in a loop over 256 experts,
    40% of a trace went to walking them)."""
    firsts: list[PathState] = []  # one state of each kind of heap
    which: list[int] = []
    for st in states:
        at = next((n for n, seen in enumerate(firsts) if _same_heap(st, seen)), None)
        if at is None:
            at = len(firsts)
            firsts.append(st)
        which.append(at)
    if len(firsts) == 1:
        return [()] * len(states)
    walked = [kind_shape(st) for st in firsts]
    return [walked[n] for n in which]


def _same_heap(a: PathState, b: PathState) -> bool:
    """Do the two paths hold the same contents objects for the same objects?"""
    if a.heap is b.heap:
        return True
    if len(a.heap) != len(b.heap):
        return False
    other = b.heap
    return all(other.get(k) is v for k, v in a.heap.items())


def _kinds(st: PathState, obj: Instance, depth: int, seen: set[int]) -> str:
    if depth <= 0 or id(obj) in seen:
        return ""
    seen.add(id(obj))
    held = [
        f"{name}:{v.cls.qualname}{_kinds(st, v, depth - 1, seen)}"
        for name, v in st.fields(obj).items()
        if isinstance(v, Instance) and v.cls is not None
    ]
    return "{" + ",".join(held) + "}" if held else ""
