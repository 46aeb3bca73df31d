"""Loops: unrolled over known items; an unknown trip count runs the body on a havoced state."""

from __future__ import annotations

import ast

from routescope.analysis.engine.base import EngineBase, Outcome
from routescope.analysis.engine.containers import (
    LIST_UNKNOWN,
    SEQ_LIMIT,
    is_list,
    iteration,
    truth_in,
)
from routescope.analysis.engine.join import (
    merge_paths,
)
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.stmts import raised_outcome
from routescope.analysis.engine.values import (
    Unknown,
    UnknownKind,
    Value,
)


class LoopsMixin(EngineBase):
    def ex_For(self, st: PathState, node: ast.For) -> list[Outcome]:
        out: list[Outcome] = []
        for s, it in self.ev(st, node.iter):
            if s.raising is not None:
                out.append(raised_outcome(s))
                continue
            items = iteration(it, s)
            if items is None or len(items) > SEQ_LIMIT:
                out.extend(self._havoc_loop(s, node))
                continue
            live = [s]
            for item in items:
                nxt: list[PathState] = []
                for s2 in live:
                    self.assign(s2, node.target, item)
                    self._iterate(s2, node.body, nxt, out)
                live = nxt
                if (
                    len(live) > self.budget.merge_at
                ):  # each undecided iteration would double the paths
                    live = merge_paths(live, f"{self.current_file()}:{node.lineno}")
            for s2 in live:
                out.extend(self.exec_block(s2, node.orelse))
        return out

    ex_AsyncFor = ex_For

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
        """An unbounded loop: run the body once on unknowns, then forget what it assigned."""
        if isinstance(node, ast.For):
            self.assign(st, node.target, Unknown("loop variable", kind=UnknownKind.LOOP))
        out: list[Outcome] = []
        merged: PathState | None = None
        # lists the body changes hold an unknown number of changes after it
        before = {k: st.fields(o) for k, o in st.heap_objs.items() if is_list(o)}
        for s, kind, val in self.exec_block(st, node.body):
            if kind in ("return", "raise", "stop", "yield"):
                out.append((s, kind, val))
                continue
            if merged is None:  # the iterations that fall through collapse into one path
                merged = s
        if merged is not None:
            for key, obj in list(merged.heap_objs.items()):
                if is_list(obj) and not same_view(merged.fields(obj), before.get(key, obj.fields)):
                    merged.replace_fields(
                        obj, {LIST_UNKNOWN: Unknown("changed in a loop", kind=UnknownKind.LOOP)}
                    )
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    merged.env[sub.id] = Unknown(
                        f"assigned in the loop at line {node.lineno}", kind=UnknownKind.LOOP
                    )
            out.append((merged, "normal", None))
        return out


def same_view(a: dict[str, Value], b: dict[str, Value]) -> bool:
    return a is b or (a.keys() == b.keys() and all(a[k] is b[k] for k in a))
