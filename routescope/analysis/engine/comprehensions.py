"""Comprehensions over known items, on each way their items take."""

from __future__ import annotations

import ast
from typing import cast

from routescope.analysis.engine.base import EngineBase, Paths
from routescope.analysis.engine.containers import (
    SEQ_LIMIT,
    UNHASHABLE,
    UNTOLD,
    ListVal,
    key_of,
    new_dict,
    new_set,
    new_tuple,
)
from routescope.analysis.engine.contents import iteration
from routescope.analysis.engine.openkeys import OpenKeys
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    Unknown,
    UnknownKind,
    Value,
)
from routescope.analysis.walked import walked

# a path forked into more ways than this while building one comprehension: unknown
MAX_WAYS = 16

Way = tuple[PathState, list[object]]  # a path, and the items the comprehension has on it


class ComprehensionsMixin(EngineBase):
    def ev_ListComp(self, st: PathState, node: ast.expr) -> Paths:
        """A comprehension over known items, evaluated item by item; where evaluating an item
        forks the path (a call whose way depends on an unknown), each way goes on with the
        items after it, as a loop would, until more than MAX_WAYS ways. Unknown when an item,
        a filter or the iterable is not known."""
        assert isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
        names = {n.id for g in node.generators for n in walked(g.target) if isinstance(n, ast.Name)}
        env = st.env if st.envs else None
        if env is None:
            return [(st, Unknown("comprehension", kind=UnknownKind.UNSUPPORTED))]
        saved = {n: env[n] for n in names if n in env}
        frames, envs = len(st.frames), len(st.envs)
        got: list[Way] | Unknown = [(st, [])]
        try:
            got = self._comprehend(st, node, node.generators, [])
        finally:
            if isinstance(got, Unknown):  # the ways are dropped, and calls entered on `st`
                del st.frames[frames:]  # itself must not stay entered
                del st.envs[envs:]
            for s, _ in [(st, None)] if isinstance(got, Unknown) else got:
                for n in names:  # the comprehension's variables are its own (Python 3 scoping)
                    s.env.pop(n, None)
                s.env.update(saved)
        if isinstance(got, Unknown):
            return [(st, got)]
        return [(s, self._built(node, cast(list[tuple[object, bool]], items))) for s, items in got]

    def _built(self, node: ast.expr, got: list[tuple[object, bool]]) -> Value:
        """The comprehension's value from its items, each with whether a filter the facts do
        not decide kept it (perhaps there): a dict then holds those keys perhaps (OpenKeys), a
        list those items perhaps (Seq.maybe); a set or a generator of such items is unknown."""
        why = Unknown("comprehension filter", kind=UnknownKind.UNSUPPORTED)
        perhaps = [item for item, maybe in got if maybe]
        if isinstance(node, ast.DictComp):
            pairs = [cast(tuple[Value, Value], item) for item, maybe in got if not maybe]
            if not perhaps:
                return new_dict(pairs)
            items = [cast(tuple[Value, Value], item) for item in perhaps]
            keys = {key_of(k) for k, _ in items}
            sure = {key_of(k) for k, _ in pairs}
            if any(k in (UNTOLD, UNHASHABLE) for k in keys) or keys & sure:
                return why
            if len(keys) < len(items):  # one key kept perhaps twice: which value, not known
                return new_dict(pairs, OpenKeys(frozenset(keys), "a comprehension filter"))
            values = {key_of(k): v for k, v in items}  # the value it holds when it is there
            return new_dict(pairs, OpenKeys(frozenset(keys), "a comprehension filter", values))
        if isinstance(node, ast.ListComp) and perhaps:
            return ListVal(None, why, [(cast(Value, item), maybe) for item, maybe in got])
        if perhaps:
            return why
        vals = [cast(Value, v) for v, _ in got]
        if isinstance(node, ast.ListComp):
            return ListVal(vals)
        if isinstance(node, ast.SetComp):
            return new_set(vals)
        return new_tuple(vals)  # a generator, read as the items it yields

    ev_SetComp = ev_DictComp = ev_GeneratorExp = ev_ListComp

    def _comprehend(
        self,
        st: PathState,
        node: ast.expr,
        gens: list[ast.comprehension],
        out: list[object],
        maybe: bool = False,
    ) -> list[Way] | Unknown:
        """The ways through the comprehension from `st` on, each with its items (`out` and
        what it adds); a way that raises stops there, with the exception on its path."""
        if not gens:
            dict_item = isinstance(node, ast.DictComp)
            parts = [node.key, node.value] if dict_item else [node.elt]  # type: ignore[attr-defined]
            ways = self.ev_seq(st, parts)
            if len(ways) > MAX_WAYS:
                return Unknown("comprehension item", kind=UnknownKind.UNSUPPORTED)
            made: list[Way] = []
            for s, vals in ways:
                item = (vals[0], vals[1]) if dict_item else vals[0]
                acc = out if len(ways) == 1 else list(out)  # (one way: the list it had)
                acc.append((item, maybe))
                made.append((s, acc))
            return made
        gen = gens[0]
        it = self.single(st, gen.iter)
        items = iteration(it, st) if it is not None else None
        if items is None:
            return Unknown("comprehension over unknown items", kind=UnknownKind.UNSUPPORTED)
        if len(items) > SEQ_LIMIT:
            return Unknown(
                f"comprehension over more than {SEQ_LIMIT} items", kind=UnknownKind.BUDGET
            )
        live: list[Way] = [(st, out)]
        for item in items:
            nxt: list[Way] = []
            for s, acc in live:
                if s.raising is not None:  # (the comprehension raised on this way)
                    nxt.append((s, acc))
                    continue
                self.assign(s, gen.target, item)
                keep, perhaps = True, maybe
                for cond in gen.ifs:
                    c = self.single(s, cond)
                    if c is None:  # evaluating the filter forks the path
                        return Unknown("comprehension filter", kind=UnknownKind.UNSUPPORTED)
                    t = self.truth_of(s, c)
                    if t is None:  # the facts do not decide it: the item is perhaps there
                        perhaps = True
                        continue
                    keep = keep and t
                    if not keep:
                        break
                if not keep:
                    nxt.append((s, acc))
                    continue
                got = self._comprehend(s, node, gens[1:], acc, perhaps)
                if isinstance(got, Unknown):
                    return got
                nxt.extend(got)
            if len(nxt) > MAX_WAYS:
                return Unknown(
                    f"comprehension forked into more than {MAX_WAYS} ways",
                    kind=UnknownKind.BUDGET,
                )
            live = nxt
        return live

    def single(self, st: PathState, node: ast.expr) -> Value | None:
        """`node`'s value when evaluating it keeps to this path (None when it forks)."""
        frames, envs = len(st.frames), len(st.envs)
        res = self.ev(st, node)
        if len(res) != 1 or res[0][0] is not st:
            # the forked paths are dropped; calls entered on `st` itself must not stay entered
            del st.frames[frames:]
            del st.envs[envs:]
            return None
        return res[0][1]
