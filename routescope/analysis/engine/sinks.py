"""Routing kernels reached on a path: which one produced the routing tensors."""

from __future__ import annotations

import ast

from routescope.analysis.engine.base import EngineBase
from routescope.analysis.engine.facts import SinkRule
from routescope.analysis.engine.state import PathState, SinkHit
from routescope.analysis.engine.values import (
    Instance,
    Tensor,
    Value,
    describe,
)


def tensors_in(vals: list[Value], depth: int = 2) -> list[Tensor]:
    out: list[Tensor] = []
    for v in vals:
        if isinstance(v, Tensor):
            out.append(v)
        elif isinstance(v, Instance) and v.label in ("tuple", "dict", "list") and depth > 0:
            out.extend(tensors_in(list(v.fields.values()), depth - 1))
    return out


def producer_of(vals: list[Value], claims: dict[int, SinkHit]) -> SinkHit | None:
    for t in tensors_in(vals):
        found = t.producer or claims.get(id(t))
        if found is not None:
            return found
    return None


def routing_producer(result: Value, claims: dict[int, SinkHit], depth: int = 3) -> SinkHit | None:
    """The sink that produced the first routing tensor found in a returned value."""
    if isinstance(result, Tensor):
        return result.producer or claims.get(id(result))
    if isinstance(result, Instance) and depth > 0:
        for v in result.fields.values():
            found = routing_producer(v, claims, depth - 1)
            if found is not None:
                return found
    return None


class SinksMixin(EngineBase):
    def made_at(self, node: ast.AST | None) -> tuple[str, str, int] | None:
        """Where decode-time torch ops made a tensor; tensors built while constructing the
        model (parameters, buffers) are not routing results."""
        if not self.tracing:
            return None
        return (self.current_function(), self.current_file(), getattr(node, "lineno", 0))

    def hit_sink(
        self,
        st: PathState,
        name: str,
        rule: SinkRule,
        node: ast.AST | None,
        args: list[Value],
        kwargs: dict[str, Value],
    ) -> Tensor:
        """A routing-capable kernel was called. Its output belongs to whichever sink produced its
        tensor inputs (post-processing of routed ids), else it is itself the producer; tensors it
        receives that no sink wrote yet are its outputs written in place."""
        inputs = [*args, *kwargs.values()]
        inherited = producer_of(inputs, st.claims)
        if inherited is not None:
            return Tensor(producer=inherited)
        shown = tuple(
            (k, describe(v := self.resolved(kwargs[k])), v.origins)
            for k in rule.args
            if k in kwargs
        )
        hit = SinkHit(
            name,
            rule.kind,
            self.current_file(),
            getattr(node, "lineno", 0),
            self.current_function(),
            rule.id,
            shown,
        )
        st.sinks.append(hit)
        for t in tensors_in(inputs):
            if t.producer is None and id(t) not in st.claims:
                st.claims[id(t)] = hit  # written in place (preallocated outputs); path-local
                st.claimed.append(t)
        return Tensor(producer=hit)
