"""Merging paths that reached the same answer: whole paths at a merge point, or part-way
through an expression's parts; a way that raises never merges with one that goes on."""

from __future__ import annotations

from routescope.analysis.engine.join import (
    MAX_SHAPES,
    exception_key,
    join_states,
    join_values,
    record_key,
)
from routescope.analysis.engine.joinscope import joining
from routescope.analysis.engine.shapes import (
    kind_shapes,
    list_shape,
)
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    Value,
)


def merge_paths(
    states: list[PathState], where: str, force: bool = False, kinds: bool = False
) -> list[PathState]:
    """Join paths that reached the same kernels (`force`: all of them, whatever they reached)."""
    groups: dict[tuple[object, ...], list[PathState]] = {}
    # Lists some path grew or shrank: joining paths that disagree on a list's length loses the
    # whole list (a declaration stash read later through it), so such paths stay apart unless
    # that leaves too many of them; with `kinds` (a phase that joins its paths at every
    # statement, to keep what they built), so do paths that disagree on the class of an object
    # a field holds (a kernel object built on one way, None or another class on the other).
    held = kind_shapes(states) if kinds and not force else [()] * len(states)
    shapes = [() if force else (list_shape(s), k) for s, k in zip(states, held, strict=True)]
    keep_shapes = not force and len(set(shapes)) <= MAX_SHAPES
    for s, shape in zip(states, shapes, strict=True):
        key = ("all",) if force else record_key(s) + ((shape,) if keep_shapes else ())
        groups.setdefault(key, []).append(s)
    out: list[PathState] = []
    for members in groups.values():
        first = join_states(members, f"differs between paths joined at {where}")
        if len(members) > 1:
            first.assumptions.append(f"{len(members)} paths joined at {where}")
        out.append(first)
    return out


def merge_raised(
    done: list[tuple[PathState, str, Value | None]], where: str
) -> list[tuple[PathState, str, Value | None]]:
    """Join the ways out of a block that raise the same exception class at the same place and
    reached the same kernels: a handler further up sees one state, the values they disagree on
    Unknown. Each unknown assert on a path that goes on adds a raising way; without this, a
    function with a dozen of them after a fork ends with hundreds of ways that all say one
    thing. Ways that return, break or stop are kept as they are."""
    groups: dict[tuple[object, ...], list[tuple[PathState, Value | None]]] = {}
    rest: list[tuple[PathState, str, Value | None]] = []
    for s, kind, val in done:
        if kind != "raise" or val is None:
            rest.append((s, kind, val))
            continue
        key = (*record_key(s), exception_key(val), s.raised_at)
        groups.setdefault(key, []).append((s, val))
    why = f"differs between ways raising at one place, joined at {where}"
    for members in groups.values():
        if len(members) == 1:
            rest.append((members[0][0], "raise", members[0][1]))
            continue
        states = [s for s, _ in members]
        with joining():
            exc = join_values([v for _, v in members if v is not None], states, why)
            first = join_states(states, why)
        first.assumptions.append(f"{len(members)} raising ways joined at {where}")
        rest.append((first, "raise", exc))
    return rest


def merge_partials(
    acc: list[tuple[PathState, list[Value]]], where: str
) -> list[tuple[PathState, list[Value]]]:
    """`merge_paths` for an expression part-way through (the arguments of a call evaluated so
    far on each path): paths that merge have their values so far joined, place by place. Each
    argument that may fork would otherwise double the paths the next one runs on."""
    shapes = [list_shape(s) for s, _ in acc]
    keep_shapes = len(set(shapes)) <= MAX_SHAPES
    groups: dict[tuple[object, ...], list[tuple[PathState, list[Value]]]] = {}
    for (s, vals), shape in zip(acc, shapes, strict=True):
        key = record_key(s) + (len(vals),) + ((shape,) if keep_shapes else ())
        groups.setdefault(key, []).append((s, vals))
    out: list[tuple[PathState, list[Value]]] = []
    why = f"differs between paths joined at {where}"
    for members in groups.values():
        if len(members) == 1:
            out.append(members[0])
            continue
        states = [s for s, _ in members]
        with joining():  # the values and the state share what they hold
            vals = [  # read off the paths as they were, before their states are joined
                join_values([m[1][i] for m in members], states, why)
                for i in range(len(members[0][1]))
            ]
            first = join_states(states, why)
        first.assumptions.append(f"{len(members)} paths joined at {where}")
        out.append((first, vals))
    return out
