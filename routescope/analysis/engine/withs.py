"""with statements and @contextmanager generators."""

from __future__ import annotations

import ast
from typing import Any

from routescope.analysis.engine.base import EngineBase, Outcome
from routescope.analysis.engine.state import PathState, base_of
from routescope.analysis.engine.values import (
    Const,
    External,
    FunctionVal,
    Unknown,
    UnknownKind,
    Value,
)
from routescope.analysis.library.devices import is_device

Saved = list[tuple[Value, Any]]  # what a context manager's entry changed


class WithMixin(EngineBase):
    def ex_With(self, st: PathState, node: ast.With) -> list[Outcome]:
        return self._with_items(st, list(node.items), node.body)

    ex_AsyncWith = ex_With

    def _with_items(
        self, st: PathState, items: list[ast.withitem], body: list[ast.stmt]
    ) -> list[Outcome]:
        """`with a, b: body` as `with a: with b: body`. A @contextmanager generator runs up
        to its yield on entry; what it changed on objects is put back on exit (the save and
        restore such managers do; the code after the yield itself is not run)."""
        if not items:
            return self.exec_block(st, body)
        item, rest = items[0], items[1:]
        out: list[Outcome] = []
        for s, v in self.ev(st, item.context_expr):
            if s.raising is not None:
                out.append((s, "normal", None))  # exec_stmt turns it into the raise
                continue
            if is_device(v):  # `with torch.device(...)`: the default device in the block
                out.extend(self._on_device(s, v, item, rest, body))
                continue
            if not isinstance(v, ContextManager):
                if item.optional_vars is not None:  # a file object enters as itself
                    entered = (
                        v
                        if getattr(v, "enters_as_itself", False)
                        else Unknown("context manager value", kind=UnknownKind.OPAQUE)
                    )
                    self.assign(s, item.optional_vars, entered)
                out.extend(self._with_items(s, rest, body))
                continue
            for s2, kind, val, saved in self._enter(s, v, item.context_expr):
                if kind != "yield":
                    out.append((s2, kind, val))
                    continue
                if item.optional_vars is not None:
                    self.assign(s2, item.optional_vars, val or Const(None))
                for s3, k3, v3 in self._with_items(s2, rest, body):
                    put_back(s3, saved)
                    out.append((s3, k3, v3))
        return out

    def _on_device(
        self,
        st: PathState,
        device: Value,
        item: ast.withitem,
        rest: list[ast.withitem],
        body: list[ast.stmt],
    ) -> list[Outcome]:
        """torch.device's __enter__ makes it the default device until its __exit__ (and enters
        as the device itself)."""
        if item.optional_vars is not None:
            self.assign(st, item.optional_vars, device)
        outer, self.default_device = self.default_device, device
        try:
            return self._with_items(st, rest, body)
        finally:
            self.default_device = outer

    def _enter(
        self, st: PathState, cm: ContextManager, node: ast.AST
    ) -> list[tuple[PathState, str, Value | None, Saved]]:
        before = dict(st.heap)
        self.entering.append(len(st.frames) + 1)
        try:
            outs = self.invoke_uncached(st, cm.fn, cm.args, cm.kwargs, node)
        finally:
            self.entering.pop()
        entered = []
        for s, kind, val in outs:
            if kind == "yield":
                entered.append((s, kind, val, changed_since(before, s)))
            elif kind in ("return", "normal"):  # a generator that never yields fails to enter
                entered.append((s, "raise", External("RuntimeError"), []))
            else:
                entered.append((s, kind, val, []))
        return entered


class ContextManager(Value):
    """What calling a @contextmanager function returns: the generator, run when entered."""

    def __init__(self, fn: FunctionVal, args: list[Value], kwargs: dict[str, Value]) -> None:
        super().__init__()
        self.fn = fn
        self.args = args
        self.kwargs = kwargs


ABSENT_FIELD = object()


def changed_since(before: dict[int, Any], st: PathState) -> list[tuple[Value, Any]]:
    """What `st` wrote since `before` (a heap snapshot), with the old contents: an object's
    old fields by name, a container's old contents whole."""
    out: list[tuple[Value, Any]] = []
    for key, fields in st.heap.items():
        prev = before.get(key)
        if prev is fields:
            continue
        obj = st.heap_objs[key]
        if not isinstance(fields, dict):
            out.append((obj, prev if prev is not None else obj.base))  # type: ignore[attr-defined]
            continue
        base = prev if prev is not None else base_of(obj)
        old = {
            n: base.get(n, ABSENT_FIELD)
            for n in {*fields, *base}
            if fields.get(n, ABSENT_FIELD) is not base.get(n, ABSENT_FIELD)
        }
        if old:
            out.append((obj, old))
    return out


def put_back(st: PathState, saved: list[tuple[Value, Any]]) -> None:
    for obj, old in saved:
        if not isinstance(old, dict):
            st.store(obj, old)
            continue
        own = dict(st.contents(obj))
        for name, value in old.items():
            if value is ABSENT_FIELD:
                own.pop(name, None)
            else:
                own[name] = value
        st.store(obj, own)
