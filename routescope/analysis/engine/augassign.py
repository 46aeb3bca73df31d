"""`x op= y`: the target's parts evaluated once, before the value (`d[k] += f()` reads and
writes the item at the key `k` had before `f()` ran, as Python does); a list, dict or set
changed in place."""

from __future__ import annotations

import ast

from routescope.analysis.engine.base import EngineBase, Outcome
from routescope.analysis.engine.containers import DictVal, Entries, ListVal, Seq, SetVal
from routescope.analysis.engine.contents import entries, iteration, seq_items
from routescope.analysis.engine.sequences import merged, set_algebra
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import Unknown, UnknownKind, Value

# env slots holding an augmented target's object and key while the statement runs
OBJ, KEY = "\x00aug-object", "\x00aug-key"


class AugAssignMixin(EngineBase):
    _aug: dict[int, tuple[ast.AugAssign, ast.expr, ast.expr]]

    def ex_AugAssign(self, st: PathState, node: ast.AugAssign) -> list[Outcome]:
        """`x op= y`: a list, dict or set changes in place (`+=` extends, `|=` updates), so
        every name for it sees the change; anything else is `x = x op y`, where `x` is an
        attribute or item of what its parts gave before `y` was evaluated."""
        store, load = self._aug_target(node)
        parts = _parts(node.target)
        out: list[Outcome] = []
        held: list[PathState] = [st]  # (a module body's env is its globals: none stays there)
        for s0, got in self.ev_seq(st, parts) if parts else [(st, [])]:
            if s0.raising is not None:
                out.append((s0, "normal", None))
                continue
            held.append(s0)
            s0.env.update(zip((OBJ, KEY), got, strict=False))
            for s, (cur, more) in self.ev_seq(s0, [load, node.value]):
                if self._in_place(s, node.op, cur, more):
                    out.append((s, "normal", None))
                    continue
                called = self.overloaded(s, node.op, cur, more, node, inplace=True)
                if called is None:  # no framework class's own operator: the builtin one
                    expr = ast.BinOp(left=load, op=node.op, right=node.value)
                    expr = ast.copy_location(expr, node)
                    called = [(s, self.binop(s, expr, cur, more))]
                for s2, v in called:
                    if s2.raising is None:
                        self.assign(s2, store, v)
                    out.append((s2, "normal", None))
        for s in [*held, *(s for s, _, _ in out)]:
            for slot in (OBJ, KEY):
                s.env.pop(slot, None)
        return out

    def _aug_target(self, node: ast.AugAssign) -> tuple[ast.expr, ast.expr]:
        """The target to store into and to read, over the slots its evaluated parts are put
        in (made once per statement)."""
        known = self._aug.get(id(node))
        if known is not None and known[0] is node:
            return known[1], known[2]
        t = node.target
        if isinstance(t, ast.Attribute):
            store: ast.expr = ast.Attribute(value=_slot(OBJ, t), attr=t.attr, ctx=ast.Store())
        elif isinstance(t, ast.Subscript):
            store = ast.Subscript(value=_slot(OBJ, t), slice=_slot(KEY, t), ctx=ast.Store())
        else:
            store = t
        ast.copy_location(store, t)
        load = _as_load(store)
        self._aug[id(node)] = (node, store, load)  # the node is kept: its id stays its own
        return store, load

    def _in_place(self, st: PathState, op: ast.operator, cur: Value, more: Value) -> bool:
        if isinstance(cur, ListVal) and isinstance(op, ast.Add):
            items, extra = seq_items(st, cur), iteration(more, st)
            why = Unknown("a list extended by unknown items", kind=UnknownKind.UNSUPPORTED)
            st.store(
                cur,
                Seq([*items, *extra])
                if items is not None and extra is not None
                else Seq(None, why),
            )
            return True
        if isinstance(cur, DictVal) and isinstance(op, ast.BitOr) and isinstance(more, DictVal):
            st.store(cur, merged(entries(st, cur), entries(st, more)))
            return True
        if isinstance(cur, SetVal) and isinstance(op, (ast.BitOr, ast.BitAnd, ast.Sub, ast.BitXor)):
            made = set_algebra(st, op, cur, more)
            why = Unknown("a set changed by an unknown operand", kind=UnknownKind.UNSUPPORTED)
            st.store(cur, entries(st, made) if isinstance(made, SetVal) else Entries({}, why))
            return True
        return False


def _parts(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, ast.Attribute):
        return [target.value]
    if isinstance(target, ast.Subscript):
        return [target.value, target.slice]
    return []


def _slot(name: str, at: ast.expr) -> ast.Name:
    return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), at)


def _as_load(target: ast.expr) -> ast.expr:
    """The target read as an expression (x.y += 1 reads x.y)."""
    if isinstance(target, ast.Attribute):
        made = ast.Attribute(value=target.value, attr=target.attr, ctx=ast.Load())
        return ast.copy_location(made, target)
    if isinstance(target, ast.Subscript):
        return ast.copy_location(
            ast.Subscript(value=target.value, slice=target.slice, ctx=ast.Load()), target
        )
    if isinstance(target, ast.Name):
        return ast.copy_location(ast.Name(id=target.id, ctx=ast.Load()), target)
    return target
