"""Loops: unrolled over known items; an unknown trip count runs the body on a havoced state."""

from __future__ import annotations

import ast

from routescope.analysis.engine.base import EngineBase, Outcome
from routescope.analysis.engine.containers import SEQ_LIMIT
from routescope.analysis.engine.contents import iteration, layout_of, truth_in
from routescope.analysis.engine.fixpoint import all_stable, forget_unstable
from routescope.analysis.engine.join import join_states, record_key
from routescope.analysis.engine.merging import merge_paths
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.stmts import raised_outcome
from routescope.analysis.engine.values import (
    SERIALS,
    Unknown,
    UnknownKind,
)


class LoopsMixin(EngineBase):
    def ex_For(self, st: PathState, node: ast.For) -> list[Outcome]:
        out: list[Outcome] = []
        for s, it in self.ev(st, node.iter):
            if s.raising is not None:
                out.append(raised_outcome(s))
                continue
            items = iteration(it, s)
            layout = (
                [(i, False) for i in items] if items is not None else layout_of(it, s)
            )  # a list of unknown length may be known as items some perhaps absent
            if layout is None or len(layout) > SEQ_LIMIT:
                out.extend(self._havoc_loop(s, node))
                continue
            live, room = [s], self._room()
            for n, (item, perhaps) in enumerate(layout):
                if n >= UNROLL_SAMPLE and self._cannot_unroll(room, n, len(layout) - n):
                    for s2 in live:  # the rest, any number of them: what fits the budget
                        out.extend(self._havoc_loop(s2, node))
                    live = []
                    break
                nxt: list[PathState] = []
                for s2 in live:
                    skip = s2.fork() if perhaps else None  # this item is not in every list
                    self.assign(s2, node.target, item)
                    went: list[PathState] = []
                    self._iterate(s2, node.body, went, out)
                    if skip is not None:  # a pass that changed nothing is the skip's path
                        went = [w for w in went if not _same_as(skip, w, node.target)]
                        nxt.append(skip)
                    nxt.extend(went)
                live = nxt
                if len(live) > 1 and len(live) > self.budget.merge_limit(
                    live
                ):  # each undecided iteration would double the paths
                    live = merge_paths(
                        live,
                        f"{self.current_file()}:{node.lineno}",
                        kinds=self.budget.merge_at <= 1,
                    )
            for s2 in live:
                out.extend(self.exec_block(s2, node.orelse))
        return out

    ex_AsyncFor = ex_For

    def _room(self) -> int | None:
        """The steps left under the innermost step budget (None: none set). Imports are not
        charged (load_module moves the limits by what they cost), so neither is this."""
        b = self.budget
        return b.local[-1][0] - b.steps if b.local else None

    def _cannot_unroll(self, room: int | None, done: int, left: int) -> bool:
        """Will unrolling the items left run the loop out of the step budget it runs under
        (`room` when it began), and is what is left of it now only enough to run the rest as
        a loop of unknown trip count (SUMMARY_PASSES passes, each costing what a pass so far
        cost on average)? Then it does so: its passes from the state reached cover every number
        of the items left, the count itself included, where unrolling on would end the path
        with nothing (its budget exceeded). Until then it unrolls, so a loop whose first passes
        are its dearest (what they build, later ones find) and that fits is unrolled to the end
        as before; averages are taken over UNROLL_SAMPLE passes at least."""
        now = self._room()
        if room is None or now is None:
            return False
        spent = room - now
        return spent * left > now * done and now * done < spent * SUMMARY_PASSES

    def ex_While(self, st: PathState, node: ast.While) -> list[Outcome]:
        """Unrolled while the condition is decided; an undecided one runs the body once, havoced."""
        out: list[Outcome] = []
        live = [st]
        for _ in range(self.budget.loop_limit):
            nxt: list[PathState] = []
            for s0 in live:
                probe = self.peek(s0, node.test)
                if probe is None or truth_in(s0, probe) is None:
                    out.extend(self._havoc_loop(s0, node))
                    continue
                for s, taken in self.decide(s0, node.test):
                    if not taken:
                        out.extend(self.exec_block(s, node.orelse))
                        continue
                    self._iterate(s, node.body, nxt, out)
            live = nxt
            if not live:
                return out
        where = f"{self.current_file()}:{node.lineno}"
        for s in live:
            s.stopped = f"loop at {where} did not finish within {self.budget.loop_limit} iterations"
            out.append((s, "stop", Unknown(s.stopped, kind=UnknownKind.BUDGET)))
        return out

    def _iterate(
        self, st: PathState, body: list[ast.stmt], again: list[PathState], done: list[Outcome]
    ) -> None:
        """One pass of a loop body: paths that go round again, and paths that leave the loop
        (a break continues after it; return, raise and stop end it)."""
        for s, kind, val in self.exec_block(st, body):
            if kind in ("normal", "continue"):
                again.append(s)
            elif kind == "break":
                done.append((s, "normal", None))
            else:
                done.append((s, kind, val))

    def _havoc_loop(self, st: PathState, node: ast.For | ast.While) -> list[Outcome]:
        """A loop whose trip count is not known (an unknown iterable, an undecided condition)
        may run any number of times, so its exit covers every count: the state before it,
        joined with the state after a pass, pass after pass from the joined state, until a pass
        changes nothing but unknowns into other unknowns (past LOOP_PASSES, what still changes
        is forgotten). What leaves the loop on any pass (a return, a raise, a break) leaves it."""
        where = f"{self.current_file()}:{node.lineno}"
        why = f"written in the loop at {where}"
        current = st
        if isinstance(node, ast.For):  # bound on every pass, and (over-approximated) before any
            self.assign(st, node.target, Unknown("the loop variable", kind=UnknownKind.LOOP))
        exits: list[Outcome] = []
        for n in range(2 * LOOP_PASSES):
            since = next(SERIALS)  # what the pass makes is newer
            ends = self._loop_pass(current.fork(), node, exits)
            if not ends:  # no way goes round again: the loop ends in its first pass
                return self._leave(exits, node, current, st, [])
            joined = join_states([current.fork(), *ends], why)
            if all_stable(current, joined, since):  # `current` covers every number of passes
                return self._leave(exits, node, current, st, ends)
            current = joined if n < LOOP_PASSES else forget_unstable(current, joined, why, since)
        current.stopped = f"the loop at {where} did not settle in {2 * LOOP_PASSES} passes"
        return [(current, "stop", Unknown(current.stopped, kind=UnknownKind.BUDGET))]

    def _leave(
        self,
        exits: list[Outcome],
        node: ast.For | ast.While,
        covering: PathState,
        before: PathState,
        ends: list[PathState],
    ) -> list[Outcome]:
        """The loop's outcomes: breaks go on after it; a while loop ends normally where its
        condition is false, a for loop anywhere its iterable may run out (the covering state,
        once for each way through that reached kernels the state before had not): both then
        run the else clause."""
        out: list[Outcome] = []
        for s, kind, val in exits:
            if kind == "loop-exit":
                out.extend(self.exec_block(s, node.orelse))
            elif kind == "break":
                out.append((s, "normal", None))
            else:
                out.append((s, kind, val))
        if isinstance(node, ast.For):
            states = [covering]
            seen = {record_key(before)}
            for end in ends:
                if record_key(end) not in seen:
                    seen.add(record_key(end))
                    states.append(with_record(covering, end))
            out.extend(o for s in states for o in self.exec_block(s, node.orelse))
        return out

    def _loop_pass(
        self, st: PathState, node: ast.For | ast.While, exits: list[Outcome]
    ) -> list[PathState]:
        """One pass of the loop from `st`: the paths that go round again; the paths that leave
        (a break, a return, a raise, a false condition) go to `exits`."""
        starts = [st]
        if isinstance(node, ast.While):
            starts = []
            for s, taken in self.decide(st, node.test):
                if taken:
                    starts.append(s)
                else:
                    exits.append((s, "loop-exit", None))
        ends: list[PathState] = []
        for s in starts:
            for s2, kind, val in self.exec_block(s, node.body):
                if kind in ("normal", "continue"):
                    ends.append(s2)
                elif kind == "break":
                    exits.append((s2, "break", None))
                else:
                    exits.append((s2, kind, val))
        return ends


# Passes of a loop of unknown trip count before what still changes is forgotten.
LOOP_PASSES = 3
# Passes of a loop over known items before their cost is projected over the rest.
UNROLL_SAMPLE = 8
# What a loop of unknown trip count is allowed, in passes of the loop it summarizes (its passes
# to a fixpoint, forks within them), when the rest of a known one cannot be unrolled.
SUMMARY_PASSES = 6 * LOOP_PASSES


def with_record(values: PathState, record: PathState) -> PathState:
    """`values`' names and objects with `record`'s decisions, frames and kernels."""
    out = values.fork()
    out.decisions, out.trail = list(record.decisions), list(record.trail)
    out.sinks, out.claims = list(record.sinks), dict(record.claims)
    out.claimed = list(record.claimed)
    return out


def _same_as(skip: PathState, went: PathState, target: ast.expr) -> bool:
    """Did a pass over a perhaps-absent item leave the path as skipping it would (but for the
    loop variable)? Then the skip covers it and the paths need not fork."""
    names = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    a, b = skip.scratch(), went.scratch()
    for n in names:
        a.env.pop(n, None)
        b.env.pop(n, None)
    return record_key(a) == record_key(b) and all_stable(a, b) and all_stable(b, a)
