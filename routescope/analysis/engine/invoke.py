"""Calls: dispatch on the callee, entering framework functions, functools memos."""

from __future__ import annotations

import ast
from pathlib import PurePosixPath
from typing import Any, cast

from routescope.analysis.engine.base import Ctx, EngineBase, Outcome, Paths
from routescope.analysis.engine.bound import (
    BoundOperation,
    ConfigMethod,
    Partial,
    Register,
    config_method,
)
from routescope.analysis.engine.budget import BudgetExceeded
from routescope.analysis.engine.containers import UNHASHABLE, UNTOLD, key_of, new_tuple
from routescope.analysis.engine.contents import snapshot
from routescope.analysis.engine.facts import JIT_MODULE, SinkRule
from routescope.analysis.engine.generators import YIELDS, is_generator
from routescope.analysis.engine.intervals import same_bounds
from routescope.analysis.engine.join import JOIN_DEPTH, agree, commit_agreed
from routescope.analysis.engine.memo import cache_bound, evict
from routescope.analysis.engine.methods import ContainerMethod, call_method
from routescope.analysis.engine.sinks import (
    UNRECOGNISED,
    CompiledFunction,
    role_of,
    routing_producer,
)
from routescope.analysis.engine.state import RECORDING, Frame, PathState, Reads, SinkHit, class_of
from routescope.analysis.engine.tensorcalls import tensor_method
from routescope.analysis.engine.tensors import TensorMethod
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    EnumMember,
    External,
    FunctionVal,
    Instance,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
    describe,
)
from routescope.analysis.engine.withs import ContextManager
from routescope.analysis.library.builtins import BoundConst, call_bound_const
from routescope.analysis.library.modules import torch_module_call
from routescope.analysis.library.nn_module import MODULE_BASES
from routescope.analysis.library.paths import PathMethod, UnknownPath, path_method

# how deep one function may recurse on a path: a walk over nested configuration (a dict of
# defaults three levels deep) recurses as deep as its data; past this, the budget stops it
RECURSION = 6


class InvokeMixin(EngineBase):
    def call(
        self,
        st: PathState,
        fn: Value,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.AST | None,
    ) -> Paths:
        if st.raising is not None:  # an argument's call raised: this call is never made
            return [(st, Unknown("not reached: an exception was raised", kind=UnknownKind.RAISED))]
        fn = self.resolved(fn)
        if isinstance(fn, BoundConst):
            if isinstance(fn.target.value, PurePosixPath):
                got = path_method(self, fn.target, fn.name, args)
                if got is not None:
                    return [(st, got)]
            return [(st, call_bound_const(fn, [snapshot(st, a) for a in args], kwargs))]
        if isinstance(fn, TensorMethod):
            return [(st, tensor_method(st, fn, args, kwargs, lambda: self.made_at(node)))]
        if isinstance(fn, ContainerMethod):
            return [(st, call_method(self, st, fn, args, kwargs))]
        if isinstance(fn, ConfigMethod):
            return [(st, config_method(st, fn, args, kwargs, JOIN_DEPTH))]
        if isinstance(fn, BoundOperation):
            return [(st, fn.call_with(st, args, kwargs))]
        if isinstance(fn, Register):
            if len(args) >= 2 and isinstance(args[0], Const) and isinstance(args[0].value, str):
                st.write(fn.target, args[0].value, args[1])
            return [(st, Const(None))]
        if isinstance(fn, Partial):
            return self.call(st, fn.fn, [*fn.args, *args], {**fn.kwargs, **kwargs}, node)
        gate = self.score_sources.get(id(fn)) if isinstance(fn, Instance) else None
        if gate is not None and gate[0] is fn:  # the router's gate (the object itself, kept)
            return [(st, gate[1])]
        if isinstance(fn, Instance) and fn.cls is not None:  # calling an object: its __call__,
            cls = class_of(st, fn)  # or, a torch module, its forward
            method = cls.lookup("__call__")
            if method is None and any(b in MODULE_BASES for b in cls.external_bases()):
                method = cls.lookup("forward")
            if isinstance(method, FunctionVal):
                return self.call(st, method.bind(fn), args, kwargs, node)
        if isinstance(fn, External):
            return self.call_external(st, fn, args, kwargs, node)
        if isinstance(fn, FunctionVal):
            outs = self.join(fn.qualname, self.invoke(st, fn, args, kwargs, node))
            # _invoke turns "normal" ends into returns of Const(None): no value here is None
            return self.returned(st, outs, f"{fn.qualname} always raises")
        if isinstance(fn, ClassVal):
            return self.construct(st, fn, args, kwargs, node)
        if isinstance(fn, EnumMember):
            return [(st, Unknown("call of enum member", kind=UnknownKind.OPAQUE))]
        if isinstance(fn, CompiledFunction):  # a kernel of a CUDA module built at run time
            return [(st, self.hit_sink(st, self.current_function(), JIT_MODULE, node, args,
                                       kwargs))]  # fmt: skip
        if isinstance(fn, PathMethod):  # `p.resolve()` of a path not known: a path
            return [(st, UnknownPath(fn.reason, fn.origins))]
        if isinstance(fn, Unknown):  # calling an unknown value: its result is as unknown
            if self.tracing and role_of([*args, *kwargs.values()]) == "scores":
                self._unrecognised(st, fn, node, [*args, *kwargs.values()])
            return [(st, Unknown(fn.reason, fn.origins, kind=fn.kind))]
        if isinstance(fn, Tensor) and (fn.nn or "").startswith("module:"):  # torch.nn's
            return [(st, torch_module_call(st, fn, args, self.made_at(node)))]
        return [(st, Unknown(f"call of {type(fn).__name__}", kind=UnknownKind.UNSUPPORTED))]

    # --- with statements ---------------------------------------------------------------------

    def _unrecognised(self, st: PathState, fn: Unknown, node: ast.AST | None,
                      inputs: list[Value]) -> None:  # fmt: skip
        """A call routescope cannot follow handed the router's scores: the fresh tensors it is
        handed may be the ids it wrote (the report names the call rather than a later kernel)."""
        hit = SinkHit(fn.reason, UNRECOGNISED, self.current_file(), getattr(node, "lineno", 0),
                      self.current_function(), UNRECOGNISED)  # fmt: skip
        self.claim_outputs(st, inputs, hit)

    def returned(self, st: PathState, outs: list[Outcome], always: str) -> Paths:
        """The values a call's paths return. A path that raised carries its exception on to
        the statement that made the call, which ends with it (a handler up the stack may catch
        it, or the caller raises in turn, as in Python)."""
        out: Paths = []
        for s, k, v in outs:
            if k == "raise":
                exc = v or Unknown("an exception", kind=UnknownKind.RAISED)
                if self.tolerant and not self._caught(s, exc):
                    continue  # the way on which the server would stop: not how it runs
                s.raising = exc
                out.append((s, Unknown(f"raised {describe(exc)}", kind=UnknownKind.RAISED)))
                continue
            # invoke turns "normal" ends into returns of Const(None): no value here is None
            out.append((s, cast(Value, v) if k in ("return", "normal") else
                        Unknown(f"ended: {v}", kind=UnknownKind.BUDGET)))  # fmt: skip
        return out or [(st, Unknown(always or "no way through returns", kind=UnknownKind.RAISED))]

    def _caught(self, st: PathState, exc: Value) -> bool:
        return any(self.exception_matches(exc, h, st) is not False
                   for handlers in self.catching for h in handlers)  # fmt: skip

    def invoke(
        self,
        st: PathState,
        fn: FunctionVal,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.AST | None,
    ) -> list[Outcome]:
        """Enter a framework function, or record it as the sink, or apply its summary."""
        decorated = self.facts.sink_for_decorators(fn.decorators)
        if decorated is not None and decorated.kind == "torch_compile" and self.tracing:
            return self._compiled(st, fn, decorated, args, kwargs, node)
        if decorated is not None and decorated.kind != "none":
            out = self.hit_sink(st, fn.qualname, decorated, node, args, kwargs)
            return [(st, "return", out)]
        if any(d.endswith("contextmanager") for d in fn.decorators):
            return [(st, "return", ContextManager(fn, args, kwargs))]  # runs when entered
        memo_key = self._memo_key(fn, args, kwargs)
        if memo_key is None:
            return self.call_cached(st, fn, args, kwargs, node)
        # functools.cache is process state: an entry this path (or one it forked from) filled,
        # else one a committed phase filled (with the decisions that computed it)
        bound_size = cache_bound(fn)
        hit = st.memo.get(memo_key)
        if RECORDING:  # a path that holds another entry here gets another value
            named = (fn.bound, *map(self.resolved, (*args, *kwargs.values())))
            for r in RECORDING:
                r.memo.setdefault(memo_key, (hit, named))
        if hit is not None and hit[2] is fn.bound:  # the id in the key names the same receiver
            if bound_size is not None:  # an lru_cache: the entry is now the most recent
                st.memo[memo_key] = st.memo.pop(memo_key)
            return [(st, "return", hit[0])]
        if bound_size is None:  # an unbounded cache: what committed phases or other paths filled
            hit = self._memo.get(memo_key)
            if hit is not None and hit[2] is fn.bound:
                st.decisions.extend(hit[1])
                return [(st, "return", hit[0])]
            shared = self._shared_hit(st, memo_key, fn)
            if shared is not None:
                return [(st, "return", shared)]
        before, bounds = len(st.decisions), st.bounds  # (replaced when written: a snapshot)
        reads = Reads()
        RECORDING.append(reads)
        try:
            result = self.invoke_uncached(st, fn, args, kwargs, node)
        finally:
            RECORDING.pop()
        for s, kind, value in result:
            if kind == "return" and not s.stopped:
                s.memo[memo_key] = (value or Const(None), s.decisions[before:], fn.bound)
                if bound_size is not None:
                    evict(s.memo, memo_key[:2], bound_size)
        if (
            bound_size is None
            and len(result) == 1
            and result[0][1] == "return"
            and (not reads.side_effects() and not result[0][0].stopped)
        ):  # one value from what it read: valid on any path that holds the same
            s, _, value = result[0]
            fresh = [(o, s.heap[k]) for k, o in reads.writes.items() if k in s.heap]
            self._shared.setdefault(memo_key, []).append(
                (value or Const(None), s.decisions[before:], fn.bound, reads, fresh, bounds)
            )
        return result

    def _shared_hit(self, st: PathState, key: tuple[Any, ...], fn: FunctionVal) -> Value | None:
        """A memo another path filled, valid here: this path holds the same contents for every
        object the cached call read (what it built comes with it, its decisions replayed)."""
        for value, decisions, bound, reads, fresh, bounds in self._shared.get(key, ()):
            if bound is fn.bound and same_bounds(st.bounds, bounds) and reads.holds_on(st):
                for r in RECORDING:  # the hit stands on what the cached call read
                    r.absorb(reads)
                for obj, contents in fresh:
                    st.store(obj, contents)
                st.decisions.extend(decisions)
                st.memo[key] = (value, decisions, bound)
                return value  # type: ignore[no-any-return]
        return None

    def _compiled(self, st: PathState, fn: FunctionVal, rule: SinkRule, args: list[Value],
                  kwargs: dict[str, Value], node: ast.AST | None) -> list[Outcome]:  # fmt: skip
        """A torch.compile'd function during decode: entered, so a kernel it calls (a compiled
        extension's op stays a kernel of its own in the compiled graph) can be the one that
        routes; when none does, the compiled function itself computes the top-k."""
        before = len(st.sinks)
        self.compiling.append(fn.qualname)
        try:
            outs = self.invoke_uncached(st, fn, args, kwargs, node)
        finally:
            self.compiling.pop()
        result: list[Outcome] = []
        for s, kind, value in outs:
            inner = routing_producer(value, s.claims) if value is not None else None
            if kind == "return" and not (inner is not None and inner in s.sinks[before:]):
                del s.sinks[before:]  # torch ops inside are the compiled function's own
                value = self.hit_sink(s, fn.qualname, rule, node, args, kwargs)
            result.append((s, kind, value))
        return result

    def commit_all(self, states: list[PathState], skip: Value | None = None) -> None:
        """What a phase's paths wrote, joined over them, made the objects' own (`skip`, the
        server arguments, is settled with its own notes); memos they all agree on too."""
        commit_agreed(states, skip)
        if states:
            self._memo.update(
                {
                    k: v
                    for k, v in states[0].memo.items()
                    if all(k in s.memo and agree(s.memo[k][0], v[0]) for s in states)
                }
            )

    def commit(self, st: PathState) -> None:
        """Make a path's writes the objects' own and its memos the engine's, for what is
        evaluated after it (module level, a finished set-up phase)."""
        self._memo.update(st.memo)
        st.commit()

    def _memo_key(
        self, fn: FunctionVal, args: list[Value], kwargs: dict[str, Value]
    ) -> tuple[Any, ...] | None:
        """functools-cached functions memoise by their arguments' hash and equality (as
        functools does: 1, 1.0 and True are one key); None when an argument is unknown."""
        if not any("cache" in d.rsplit(".", 1)[-1].rsplit(":", 1)[-1] for d in fn.decorators):
            return None
        vals = [self.resolved(v) for v in args]
        keys = [key_of(v) for v in vals]
        kw = sorted((k, key_of(self.resolved(v))) for k, v in kwargs.items())
        if any(k is UNTOLD or k is UNHASHABLE for k in [*keys, *(k for _, k in kw)]):
            return None
        self._memo_keep.extend(vals)  # the ids in identity keys stay their own
        return (fn.qualname, id(fn.bound), tuple(keys), tuple(kw))

    def invoke_uncached(
        self,
        st: PathState,
        fn: FunctionVal,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.AST | None,
    ) -> list[Outcome]:
        summary = self.facts.summary_for(fn.qualname)
        if summary is not None:
            said = self.defined_alternative(fn, summary)
            return [(s, "return", v) for s, v in self.summary(st, fn, said, args, kwargs)]
        if self.facts.is_opaque(fn.qualname) and not self.whole:
            if fn.qualname.endswith(".__init__") and isinstance(fn.bound, Instance):
                self.partly_built(fn.bound)  # what that constructor sets is not known
            return [
                (st, "return", Unknown(f"{fn.qualname} is not entered", kind=UnknownKind.OPAQUE))
            ]
        if len(st.frames) >= self.budget.max_depth:
            st.stopped = f"call depth {self.budget.max_depth} exceeded at {fn.qualname}"
            return [(st, "stop", Unknown(st.stopped, kind=UnknownKind.BUDGET))]
        if (
            any(f.function == fn.qualname for f in st.frames[-4:])
            and sum(f.function == fn.qualname for f in st.frames) >= RECURSION
        ):
            st.stopped = f"recursion in {fn.qualname} exceeded the budget"
            return [(st, "stop", Unknown(st.stopped, kind=UnknownKind.BUDGET))]
        depth = (len(st.frames), len(st.envs))
        env = self.bind(fn, args, kwargs)
        rel = fn.module.relpath  # its body runs now; a call gives what it yields (YIELDS)
        generator = is_generator(fn.node, self._lines.get(rel) if rel in self._aligned else None)
        if generator:
            env[YIELDS] = new_tuple([])
        frame = Frame(fn.qualname, rel, fn.node.lineno, self.current_file(),
                      getattr(node, "lineno", 0), fn.decorators)  # fmt: skip
        st.frames.append(frame)
        st.trail.append(frame)
        st.envs.append(env)
        self.ctx.append(Ctx(fn.module, fn.module.relpath, fn.qualname))
        saved_closure = self._closure_env
        self._closure_env = fn.closure
        stack = self._self_stack
        stack.append((fn.bound, fn.owner or self.owner_of(fn), fn))
        self._self_stack = stack
        try:
            outcomes: list[Outcome]
            if isinstance(fn.node, ast.Lambda):  # its body is one expression
                outcomes = [(s, "return", v) for s, v in self.ev(st, fn.node.body)]
            else:
                outcomes = self.exec_block(st, list(fn.node.body))
        except BudgetExceeded as exc:
            st.stopped = str(exc)
            outcomes = [(st, "stop", Unknown(str(exc), kind=UnknownKind.BUDGET))]
        finally:
            stack.pop()
            self._closure_env = saved_closure
            self.ctx.pop()
        result: list[Outcome] = []
        for s, kind, val in outcomes:
            if s.frames and s.frames[-1] is frame:
                s.frames.pop()
                if generator and kind in ("normal", "return"):
                    kind, val = "return", s.envs[-1][YIELDS]
                s.envs.pop()
            if kind == "normal":
                result.append((s, "return", Const(None)))
            elif kind == "stop":
                result.append((s, "stop", val))
            else:
                result.append((s, kind, val))
        if all(s is not st for s, _k, _v in result):  # every path forked off: st left the call
            del st.frames[depth[0] :]
            del st.envs[depth[1] :]
        return result
