"""Calls of functions from outside the framework tree: the rules' platform facts first, then the
library models registered for the name, then the rules' sink kinds, then models of whole
namespaces (torch.*); anything else is an opaque result."""

from __future__ import annotations

import ast

from routescope.analysis.engine.base import EngineBase, Paths
from routescope.analysis.engine.contents import snapshot
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import External, Unknown, UnknownKind, Value
from routescope.analysis.library import models, registry

del models  # imported for the models it registers


class ExternalsMixin(EngineBase):
    def call_external(
        self,
        st: PathState,
        fn: External,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.AST | None,
    ) -> Paths:
        name = fn.name
        fact = self.facts.call_fact(name)
        if fact is not None:
            return [(st, fact)]
        for model in registry.exact(name):
            got = model(self, st, name, args, kwargs, node)
            if got is not None:
                return got
        rule = self.facts.sink_for_external(name)
        if rule is not None:
            seen = [snapshot(st, a) for a in args]  # a list of tensors reads as its items
            return [(st, self.hit_sink(st, name, rule, node, seen, kwargs))]
        for model in registry.by_prefix(name):
            got = model(self, st, name, args, kwargs, node)
            if got is not None:
                return got
        return [(st, Unknown(f"result of {name}()", kind=UnknownKind.OPAQUE))]
