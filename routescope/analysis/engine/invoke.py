"""Calls: dispatch on the callee, entering framework functions, functools memos."""

from __future__ import annotations

import ast
from pathlib import PurePosixPath
from typing import Any, cast

from routescope.analysis.engine.base import Ctx, EngineBase, Outcome, Paths
from routescope.analysis.engine.budget import BudgetExceeded
from routescope.analysis.engine.containers import (
    as_built,
    snapshot,
)
from routescope.analysis.engine.externals import PATH_METHODS
from routescope.analysis.engine.join import (
    JOIN_DEPTH,
    join_paths_values,
    same,
)
from routescope.analysis.engine.methods import (
    ConfigToDict,
    ContextVarMethod,
    DictMethod,
    ListMethod,
    Partial,
    Register,
    SetMethod,
    config_dict,
)
from routescope.analysis.engine.sinks import producer_of
from routescope.analysis.engine.state import Frame, PathState
from routescope.analysis.engine.tensors import (
    METHOD_DTYPES,
    SAME_DTYPE,
    SAME_SHAPE,
    TensorMethod,
    stride_of,
)
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
from routescope.analysis.library.builtins import (
    BoundConst,
    call_bound_const,
)


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
            if isinstance(fn.target.value, PurePosixPath) and fn.name in PATH_METHODS:
                return [(st, self.fs_query(PATH_METHODS[fn.name], fn.target, f"Path.{fn.name}"))]
            if isinstance(fn.target.value, PurePosixPath) and fn.name == "glob":
                pattern = args[0].value if len(args) == 1 and isinstance(args[0], Const) else None
                found = (
                    None
                    if pattern is None
                    else self.listing(str(fn.target.value / str(pattern)), PurePosixPath)
                )
                return [(st, found or Unknown("result of Path.glob()", kind=UnknownKind.OPAQUE))]
            return [(st, call_bound_const(fn, [snapshot(st, a) for a in args], kwargs))]
        if isinstance(fn, TensorMethod):
            shape = fn.tensor.shape
            if fn.name == "dim" and shape is not None and not args:
                return [(st, Const(len(shape)))]
            stride = stride_of(fn.tensor, args) if fn.name == "stride" else None
            if stride is not None:
                return [(st, stride)]
            if (
                fn.name == "size"
                and shape is not None
                and len(args) == 1
                and isinstance(args[0], Const)
                and isinstance(args[0].value, int)
                and -len(shape) <= args[0].value < len(shape)
            ):
                return [(st, shape[args[0].value])]
            made = fn.tensor.made_at or self.made_at(node)
            same = fn.name in SAME_SHAPE  # elementwise and dtype changes keep the shape
            dtype = METHOD_DTYPES.get(fn.name, fn.tensor.dtype if fn.name in SAME_DTYPE else None)
            flat = fn.name == "contiguous" or (fn.tensor.contiguous and fn.name in SAME_SHAPE)
            return [
                (
                    st,
                    Tensor(
                        shape if same else None,
                        dtype,
                        producer=producer_of([fn.tensor, *args], st.claims),
                        made_at=made,
                        contiguous=flat,
                    ),
                )
            ]
        if isinstance(fn, DictMethod):
            return [(st, fn.call(st, args, kwargs))]
        if isinstance(fn, ConfigToDict) and not args and not kwargs:
            return [(st, config_dict(st, fn.config, JOIN_DEPTH))]
        if isinstance(fn, ListMethod):
            return [(st, fn.call(self, st, args, kwargs))]
        if isinstance(fn, ContextVarMethod):
            return [(st, fn.call(st, args))]
        if isinstance(fn, Register):
            if len(args) >= 2 and isinstance(args[0], Const) and isinstance(args[0].value, str):
                st.write(fn.target, args[0].value, args[1])
            return [(st, Const(None))]
        if isinstance(fn, SetMethod):
            return [(st, fn.call(st, [snapshot(st, a) for a in args]))]
        if isinstance(fn, Partial):
            return self.call(st, fn.fn, [*fn.args, *args], {**fn.kwargs, **kwargs}, node)
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
        if isinstance(fn, Unknown):  # calling an unknown value: its result is as unknown
            return [(st, Unknown(fn.reason, fn.origins, kind=fn.kind))]
        return [(st, Unknown(f"call of {type(fn).__name__}", kind=UnknownKind.UNSUPPORTED))]

    # --- with statements ---------------------------------------------------------------------

    def returned(self, st: PathState, outs: list[Outcome], always: str) -> Paths:
        """The values a call's paths return. A path that raised ends here unless a handler up
        the stack may catch its exception: then it carries the exception to that statement.
        When every path raised and none is caught, the call reads as an Unknown `always`."""
        out: Paths = []
        for s, k, v in outs:
            if k == "raise":
                exc = v or Unknown("an exception", kind=UnknownKind.RAISED)
                if self._caught(s, exc):
                    s.raising = exc
                    out.append((s, Unknown(f"raised {describe(exc)}", kind=UnknownKind.RAISED)))
                continue
            # _invoke turns "normal" ends into returns of Const(None): no value here is None
            out.append(
                (
                    s,
                    cast(Value, v)
                    if k in ("return", "normal")
                    else Unknown(f"raised {v}", kind=UnknownKind.RAISED),
                )
            )
        return out or [(st, Unknown(always or "always raises", kind=UnknownKind.RAISED))]

    def _caught(self, st: PathState, exc: Value) -> bool:
        return any(
            self.exception_matches(exc, h, st) is not False
            for handlers in self.catching
            for h in handlers
        )

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
        if decorated is not None and decorated.kind != "none":
            out = self.hit_sink(st, fn.qualname, decorated, node, args, kwargs)
            return [(st, "return", out)]
        if any(d.endswith("contextmanager") for d in fn.decorators):
            return [(st, "return", ContextManager(fn, args, kwargs))]  # runs when entered
        memo_key = self._memo_key(fn, args, kwargs)
        if memo_key is not None and memo_key in self._memo:
            value, decisions, receiver = self._memo[memo_key]
            if receiver is fn.bound:  # the id in the key still names the same receiver
                st.decisions.extend(decisions)
                return [(st, "return", value)]
        if memo_key is not None:
            before = len(st.decisions)
            result = self.invoke_uncached(st, fn, args, kwargs, node)
            if len(result) == 1 and result[0][1] == "return" and result[0][0] is st:
                self._memo[memo_key] = (
                    as_built(st, result[0][2] or Const(None), JOIN_DEPTH),
                    st.decisions[before:],
                    fn.bound,
                )
            else:
                returned = [o for o in result if o[1] == "return" and not o[0].stopped]
                if returned and len(returned) == len(result):
                    # a cached function computes one value: later calls get the join of what
                    # this first call's paths returned (its own callers keep every path)
                    vals: list[Value | None] = [o[2] or Const(None) for o in returned]
                    head = vals[0] or Const(None)
                    joined = (
                        head
                        if all(same(v, head) for v in vals)
                        else join_paths_values(
                            vals, [o[0] for o in returned], len(returned), fn.qualname
                        )
                    )
                    self._memo[memo_key] = (joined, [], fn.bound)
            return result
        return self.invoke_uncached(st, fn, args, kwargs, node)

    def _memo_key(
        self, fn: FunctionVal, args: list[Value], kwargs: dict[str, Value]
    ) -> tuple[Any, ...] | None:
        """functools-cached functions of known arguments are evaluated once per engine."""
        if not any("cache" in d.rsplit(".", 1)[-1].rsplit(":", 1)[-1] for d in fn.decorators):
            return None

        def key(v: Value) -> str | None:
            """functools.cache keys by hash: constants by value, classes and functions by
            identity (as Python hashes them); anything else is not cached here."""
            if isinstance(v, Const) and isinstance(
                v.value, (int, float, str, bool, type(None), tuple)
            ):
                return repr(v.value)
            if isinstance(v, (ClassVal, FunctionVal)):
                self._memo_keep.append(v)  # its id stays its own while the engine lives
                return f"#{type(v).__name__}:{id(v)}"
            if isinstance(v, EnumMember):
                return f"{v.cls.qualname}.{v.name}"
            return None

        arg_keys = [key(self.resolved(v)) for v in args]
        kw_keys = sorted((k, key(self.resolved(v))) for k, v in kwargs.items())
        if any(k is None for k in arg_keys) or any(k is None for _, k in kw_keys):
            return None
        return (fn.qualname, id(fn.bound), tuple(arg_keys), tuple(kw_keys))

    def invoke_uncached(
        self,
        st: PathState,
        fn: FunctionVal,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.AST | None,
    ) -> list[Outcome]:
        summary = self.facts.summaries.get(fn.qualname)
        if summary is not None:
            return [(s, "return", v) for s, v in self.summary(st, fn, summary)]
        if self.facts.is_opaque(fn.qualname):
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
            and sum(f.function == fn.qualname for f in st.frames) >= 3
        ):
            st.stopped = f"recursion in {fn.qualname} exceeded the budget"
            return [(st, "stop", Unknown(st.stopped, kind=UnknownKind.BUDGET))]
        depth = (len(st.frames), len(st.envs))
        env = self.bind(fn, args, kwargs)
        frame = Frame(
            fn.qualname,
            fn.module.relpath,
            fn.node.lineno,
            self.current_file(),
            getattr(node, "lineno", 0),
            fn.decorators,
        )
        st.frames.append(frame)
        st.trail.append(frame)
        st.envs.append(env)
        self.ctx.append(Ctx(fn.module, fn.module.relpath, fn.qualname))
        saved_closure = getattr(self, "_closure_env", None)
        self._closure_env = fn.closure
        stack = getattr(self, "_self_stack", [])
        stack.append((fn.bound, fn.owner or self.owner_of(fn)))
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
