"""Lists of unknown length used as worklists (`while stack: item = stack.pop()`): what a pop()
gives and leaves, and what a truth test that went true tells (the list holds an item)."""

from __future__ import annotations

from routescope.analysis.engine.containers import ListVal, Seq
from routescope.analysis.engine.join import agree
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import Value
from routescope.analysis.library.paths import join_paths


def popped(seq: Seq) -> Value | None:
    """What pop() of a list of unknown length known as items some perhaps absent (Seq.maybe)
    gives: one of them, from its last sure one on. Where they are one value, or paths each (a
    worklist of paths), that; of a list whose every item is a path (Seq.each), a path; None
    where that is not known."""
    if seq.maybe is None:
        return seq.each
    layout, last = seq.maybe, _last_sure(seq.maybe)
    candidates = [v for v, _ in layout[last:]]
    if candidates and all(agree(v, candidates[0]) for v in candidates):
        return candidates[0]
    return join_paths(candidates, "list.pop() of a list of unknown length")


def after_pop(seq: Seq) -> Seq:
    """The list after that pop(): the items before its last sure one as they were; that one
    and those after it each perhaps there (the one popped is one of them, and which is not
    known)."""
    if seq.maybe is None:
        return Seq(None, seq.why, each=seq.each)
    layout, last = seq.maybe, _last_sure(seq.maybe)
    return Seq(None, seq.why, [*layout[:last], *((v, True) for v, _ in layout[last:])])


def _last_sure(layout: tuple[tuple[Value, bool], ...]) -> int:
    """Where a pop() may take from: the last item surely there (0 where none is)."""
    return max((i for i, (_, perhaps) in enumerate(layout) if not perhaps), default=0)


def known_filled(st: PathState, lst: ListVal) -> None:
    """`while stack:` went the true way on a list of unknown length: it holds an item, so a
    pop() from it does not raise."""
    seq = st.contents(lst)
    if isinstance(seq, Seq) and seq.items is None and not seq.filled:
        st.store(lst, Seq(None, seq.why, seq.maybe, filled=True, each=seq.each))


def appended(seq: Seq, more: list[Value] | None) -> Seq | None:
    """A list of unknown contents whose every item is a path (Seq.each) after `more` was added
    to it: still so where they are paths too; None where it is not."""
    if seq.each is None or more is None:
        return None
    each = join_paths([seq.each, *more], "an item of a list of unknown contents")
    filled = seq.filled or bool(more)
    return Seq(None, seq.why, filled=filled, each=each) if each is not None else None
