"""`del`: a name, an item of a dict or list, an attribute, deleted on this path as Python
deletes it, with the KeyError or IndexError Python raises where the item is not there (a way of
its own where the contents do not tell). A deleted key that stayed would decide `key in d` the
wrong way (`del kwargs["x"]` and then `if "x" in kwargs`)."""

from __future__ import annotations

import ast

from routescope.analysis.engine.base import EngineBase, Outcome
from routescope.analysis.engine.containers import (
    UNHASHABLE,
    UNTOLD,
    DictVal,
    ListVal,
    MappingProxy,
    Seq,
    key_of,
)
from routescope.analysis.engine.contents import entries, index_of, one_key_gone, seq_items
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.stmts import GLOBALS_KEY
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    External,
    FunctionVal,
    Instance,
    ModuleVal,
    PythonRaise,
    Unknown,
    UnknownKind,
    Value,
)

# what deleting an item may raise: (exception, why, certain)
Raised = tuple[str, str, bool]


class DeletesMixin(EngineBase):
    def ex_Delete(self, st: PathState, node: ast.Delete) -> list[Outcome]:
        live = [st]
        for target in node.targets:
            nxt: list[PathState] = []
            for s in live:
                if s.raising is not None:
                    nxt.append(s)
                    continue
                nxt.extend(self._delete(s, target))
            live = nxt
        return [(s, "normal", None) for s in live]

    def _delete(self, st: PathState, target: ast.expr) -> list[PathState]:
        if isinstance(target, ast.Name):
            declared = st.env.get(GLOBALS_KEY)  # (a name declared global: not tracked)
            if not (isinstance(declared, Const) and target.id in declared.value):
                st.env.pop(target.id, None)
            return [st]
        if isinstance(target, (ast.Tuple, ast.List)):
            live = [st]
            for elt in target.elts:
                live = [s2 for s in live for s2 in self._delete(s, elt)]
            return live
        out: list[PathState] = []
        head = target.value if isinstance(target, (ast.Attribute, ast.Subscript)) else None
        if head is None:
            return [st]
        parts = [head, target.slice] if isinstance(target, ast.Subscript) else [head]
        for s, vals in self.ev_seq(st, parts):
            if s.raising is not None:
                out.append(s)
            elif isinstance(target, ast.Attribute):
                delete_attribute(s, self.resolved(vals[0]), target.attr)
                out.append(s)
            else:
                obj = self.resolved(vals[0])
                sliced = isinstance(parts[-1], ast.Slice)
                setter = _deleter(obj)
                if setter is not None:  # an object's own __delitem__
                    called = self.call(s, setter.bind(obj), [vals[1]], {}, target)
                    out.extend(s2 for s2, _ in called)
                    continue
                raised = delete_item(s, obj, vals[1], sliced)
                out.extend(self._raising_ways(s, raised, target))
        return out

    def _raising_ways(
        self, st: PathState, raised: Raised | None, node: ast.expr
    ) -> list[PathState]:
        """This path, and where the deletion may raise a way that raises (the one way where it
        certainly does)."""
        if raised is None:
            return [st]
        exc, why, certain = raised
        way = st if certain else st.fork()
        way.raising = PythonRaise(exc, why) if certain else External(exc)
        way.raised_at = (self.current_file(), node.lineno, self.current_function())
        return [way] if certain else [st, way]


def _deleter(obj: Value) -> FunctionVal | None:
    if isinstance(obj, Instance) and obj.cls is not None:
        got = obj.cls.lookup("__delitem__")
        return got if isinstance(got, FunctionVal) else None
    return None


def delete_item(st: PathState, obj: Value, idx: Value, sliced: bool = False) -> Raised | None:
    """`del obj[idx]` on this path for a dict or a list: what Python raises (certain, or
    perhaps: a key perhaps there, a position perhaps past the end); None when it does not.
    Anything else deleted from is not tracked."""
    if isinstance(obj, MappingProxy):
        return ("TypeError", "'mappingproxy' object does not support item deletion", True)
    if isinstance(obj, DictVal):
        e = entries(st, obj)
        k = key_of(idx)
        if k is UNHASHABLE:
            return ("TypeError", "an unhashable key", True)
        if k is UNTOLD:  # any one key, or none: each key perhaps there still
            if not e.items and e.closed():
                return ("KeyError", "del of a key from an empty dict", True)
            st.store(obj, one_key_gone(e, "a dict one key of which was deleted"))
            return ("KeyError", "del of a key routescope cannot tell", False)
        if e.absent(k):
            return ("KeyError", "del of a missing key", True)
        sure = k in e.items
        st.store(obj, e.without(k))
        return None if sure else ("KeyError", "del of a key perhaps there", False)
    if isinstance(obj, ListVal):
        items = seq_items(st, obj)
        if sliced and items is not None and isinstance(idx, Const):
            kept = list(items)
            try:
                del kept[idx.value]  # (a slice of known bounds: as Python deletes it)
            except (TypeError, ValueError) as exc:  # (bounds not ints; a step of 0)
                return (type(exc).__name__, str(exc), True)
            st.store(obj, Seq(kept))
            return None
        at = None if sliced else index_of(idx)
        if items is not None and at is not None:
            if not -len(items) <= at < len(items):
                return ("IndexError", "list assignment index out of range", True)
            kept = list(items)
            del kept[at]
            st.store(obj, Seq(kept))
            return None
        why = Unknown("a list item deleted at an unknown place", kind=UnknownKind.UNSUPPORTED)
        st.store(obj, Seq(None, why))
        return None if sliced else ("IndexError", "del of a position perhaps past the end", False)
    return None


def delete_attribute(st: PathState, obj: Value, name: str) -> None:
    """`del obj.name` on this path where the object holds it itself (an instance's field, a
    class's or module's attribute); anything else (a property's deleter, a __delattr__, an
    attribute only the class has, which Python refuses) is not tracked."""
    if isinstance(obj, Instance) and obj.cls is not None and obj.cls.lookup("__delattr__"):
        return
    if isinstance(obj, (Instance, ClassVal, ModuleVal)):
        own = st.contents(obj) if not isinstance(obj, Instance) else st.fields(obj)
        if name in own:
            st.store(obj, {k: v for k, v in own.items() if k != name})
