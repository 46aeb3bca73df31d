"""Routing kernels reached on a path: which one produced the routing tensors."""

from __future__ import annotations

import ast

from routescope.analysis.engine.base import EngineBase
from routescope.analysis.engine.containers import DictVal, ListVal, TupleVal
from routescope.analysis.engine.data import as_data
from routescope.analysis.engine.facts import SinkRule
from routescope.analysis.engine.state import PathState, SinkHit
from routescope.analysis.engine.values import (
    Instance,
    Tensor,
    Value,
    describe,
)


def held(v: Value, st: PathState | None = None) -> list[Value]:
    """The values a container holds as made (the tensors a call is handed in a tuple, list or
    dict; a record's fields); with `st`, also an object's fields on that path (a library's
    wrapper of a tensor, whose storage object holds the torch tensor)."""
    if isinstance(v, TupleVal):
        return list(v.items)
    if isinstance(v, ListVal):
        return list(v.base.items or ())
    if isinstance(v, DictVal):
        return [x for _, x in v.base.items.values()]
    if isinstance(v, Instance) and v.cls is None:
        return list(v.fields.values())
    if isinstance(v, Instance) and st is not None:
        return list(st.contents(v).values())
    return []


def tensors_in(vals: list[Value], depth: int = 2, st: PathState | None = None) -> list[Tensor]:
    out: list[Tensor] = []
    for v in vals:
        if isinstance(v, Tensor):
            out.append(v)
        elif depth > 0:
            out.extend(tensors_in(held(v, st), depth - 1, st))
    return out


def role_of(vals: list[Value], st: PathState | None = None) -> str | None:
    """ "scores" when an input was computed from the router's scores without a top-k yet;
    else "ids" when one holds experts torch code selected from them (the indices of a
    `scores.max(dim=-1)`: a routing made in plain torch, with no kernel of its own); with
    `st`, inputs held in the objects a kernel is handed count too."""
    roles = {t.role for t in tensors_in(vals, st=st)}
    return "scores" if "scores" in roles else "ids" if "ids" in roles else None


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
    if depth > 0:
        for v in result.fields.values() if isinstance(result, Instance) else held(result):
            found = routing_producer(v, claims, depth - 1)
            if found is not None:
                return found
    return None


def torch_ops_hit(made_at: tuple[str, str, int]) -> SinkHit:
    """The routing done by plain torch ops in the framework function that made the result."""
    function, file, line = made_at
    return SinkHit(function, "torch", file, line, function, "torch-ops", provider="torch")


class SinksMixin(EngineBase):
    def made_at(self, node: ast.AST | None) -> tuple[str, str, int] | None:
        """Where decode-time torch ops made a tensor; tensors built while constructing the
        model (parameters, buffers) are not routing results."""
        if not self.tracing:
            return None
        return (self.current_function(), self.current_file(), getattr(node, "lineno", 0))

    def hit_sink(self, st: PathState, name: str, rule: SinkRule, node: ast.AST | None,
                 args: list[Value], kwargs: dict[str, Value]) -> Tensor:  # fmt: skip
        """A kernel was called. It is the router kernel when it reads what was computed from
        the router's inputs (its scores) and no kernel has routed yet: tensors it receives that
        nothing produced are its outputs, written in place. A kernel that reads ids a kernel
        produced post-processes them (its output is still that kernel's); one that reads no
        scores routes nothing. Inside a torch.compile'd function, torch ops are the compiled
        function's own, not kernels of their own."""
        inputs = [*args, *kwargs.values()]
        inherited = producer_of(inputs, st.claims)
        if inherited is not None:
            self._launched(st, name, rule, node, inputs, kwargs)
            return Tensor(producer=inherited)
        chosen = [t for t in tensors_in(inputs) if t.role == "ids"]
        if chosen:  # handed experts torch code chose (it does not route them: that code did)
            if not any(h.routes for h in st.sinks) and chosen[0].made_at is not None:
                self._routed_by_torch(st, chosen[0].made_at)
            self._launched(st, name, rule, node, inputs, kwargs)
            return Tensor(made_at=self.made_at(node))
        if role_of(inputs, st) != "scores" or (rule.kind == "torch" and self.compiling):
            self._launched(st, name, rule, node, inputs, kwargs)
            return Tensor(made_at=self.made_at(node), role=role_of(inputs))
        hit = self._hit(name, rule, node, kwargs)
        st.sinks.append(hit)
        if self.budget.routed_steps is not None:
            st.routed = True  # (a by-kernel decode trace: its steps count against the share)
        self.claim_outputs(st, inputs, hit)
        return Tensor(producer=hit)

    def _routed_by_torch(self, st: PathState, made_at: tuple[str, str, int]) -> None:
        """A kernel is handed experts that torch ops chose from the router's scores (the indices
        of a `scores.max(dim=-1)`, a `torch.topk` in a torch.compile'd function) and no kernel
        has routed: the routing is that torch code, where the experts were chosen (as a router
        whose own forward returns what its torch ops computed: trace._sink)."""
        st.sinks.append(torch_ops_hit(made_at))
        if self.budget.routed_steps is not None:
            st.routed = True

    def _hit(self, name: str, rule: SinkRule, node: ast.AST | None,
             kwargs: dict[str, Value], routes: bool = True) -> SinkHit:  # fmt: skip
        shown = tuple((k, describe(v := self.resolved(kwargs[k])), v.origins, as_data(v))
                      for k in rule.args if k in kwargs)  # fmt: skip
        return SinkHit(name, rule.kind, self.current_file(), getattr(node, "lineno", 0),
                       self.current_function(), rule.id, shown, rule.provider or _provider(name),
                       self.compiling[-1] if self.compiling else "", routes)  # fmt: skip

    def _launched(self, st: PathState, name: str, rule: SinkRule, node: ast.AST | None,
                  inputs: list[Value], kwargs: dict[str, Value]) -> None:  # fmt: skip
        """A kernel the decode path launches that routes nothing (what a deployment runs on the
        GPU besides the router: the experts' kernels are checked against the target GPU). A
        launch is handed tensors (a library's enum or config built from plain values is not);
        torch's own ops, and anything inside a torch.compile'd function, are not launches."""
        if (self.tracing and rule.kind != "torch" and not self.compiling
                and tensors_in(inputs)):  # fmt: skip
            st.sinks.append(self._hit(name, rule, node, kwargs, routes=False))

    def claim_outputs(self, st: PathState, inputs: list[Value], hit: SinkHit) -> None:
        """Tensors a kernel is handed that nothing produced and that hold no scores: its
        outputs, written in place (preallocated); path-local."""
        for t in tensors_in(inputs):
            if t.producer is None and t.role != "scores" and id(t) not in st.claims:
                st.claims[id(t)] = hit
                st.claimed.append(t)


def _provider(name: str) -> str:
    """The library a kernel's name comes from: torch.ops.<namespace>.<op> -> namespace."""
    parts = name.split(".")
    return parts[2] if name.startswith("torch.ops.") and len(parts) > 2 else parts[0]


class CompiledModule(Value):
    """A CUDA module compiled or loaded at run time (tvm-ffi, torch.utils.cpp_extension): its
    functions are kernels."""

    never_none = True

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class CompiledFunction(Value):
    """A function of a CompiledModule."""

    never_none = True

    def __init__(self, module: CompiledModule, name: str) -> None:
        super().__init__()
        self.module, self.name = module, name


def join_compiled(vals: list[Value | None]) -> Value | None:
    """Modules compiled or loaded at run time on each path (a prebuilt .so loaded on one, its
    sources built on the other) join into one compiled module: its functions are kernels on
    every path; one function of them by name likewise. None where not every value is one."""
    if all(isinstance(v, CompiledModule) for v in vals):
        return CompiledModule(" or ".join(sorted({v.name for v in vals})))  # type: ignore[union-attr]
    funcs = [v for v in vals if isinstance(v, CompiledFunction)]
    if len(funcs) == len(vals) and len({f.name for f in funcs}) == 1:
        module = join_compiled([f.module for f in funcs])
        if isinstance(module, CompiledModule):
            return CompiledFunction(module, funcs[0].name)
    return None


UNRECOGNISED = "unrecognised"  # the kind of a call that may have written the ids (see invoke)
