"""Calls of functions from outside the framework tree: the rules' platform facts first, then the
library models registered for the name, then the rules' sink kinds, then models of whole
namespaces (torch.*); anything else is an opaque result."""

from __future__ import annotations

import ast

from routescope.analysis.engine.base import EngineBase, Paths
from routescope.analysis.engine.bound import op_called
from routescope.analysis.engine.containers import TupleVal, new_tuple
from routescope.analysis.engine.contents import snapshot
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import External, Tensor, Unknown, UnknownKind, Value
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
            made = self.hit_sink(st, name, rule, node, seen, kwargs)
            return [(st, self.as_faked(st, name, made, args, kwargs, node))]
        for model in registry.by_prefix(name):
            got = model(self, st, name, args, kwargs, node)
            if got is not None:
                return got
        return [(st, Unknown(f"result of {name}()", kind=UnknownKind.OPAQUE))]

    def as_faked(
        self,
        st: PathState,
        name: str,
        made: Tensor,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.AST | None,
    ) -> Value:
        """A compiled op's results shaped as the fake implementation the framework registered
        for it says (torch.library.register_fake: torch requires the fake's outputs to match
        the kernel's in shape, dtype and layout): the fake runs on a copy of the path, and
        each tensor it gives is the kernel's result (its producer, its role) with that shape,
        dtype and contiguity; a tuple of them likewise. The op's result as the kernel gave it
        where the op has no fake, or the fake does not give one value on one way."""
        # (the registration holds on every way: torch keeps one fake per op, registered
        # where the op exists, so on a way where it is not the op is not called either)
        fake = self.facts.fakes.get(op_called(name)) if name.startswith("torch.ops.") else None
        if fake is None:
            return made
        ways = self.call(st.fork(), fake, args, kwargs, node)
        if len(ways) != 1 or ways[0][0].raising is not None:
            return made
        return _shaped(made, ways[0][1])


def _shaped(made: Tensor, fake: Value) -> Value:
    if isinstance(fake, Tensor):
        return Tensor(fake.shape, fake.dtype, producer=made.producer, made_at=made.made_at,
                      contiguous=fake.contiguous, role=made.role)  # fmt: skip
    if isinstance(fake, TupleVal) and all(isinstance(v, Tensor) for v in fake.items):
        return new_tuple([_shaped(made, v) for v in fake.items])
    return made
