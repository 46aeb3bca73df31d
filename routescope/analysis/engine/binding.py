"""Binding a call's arguments to parameters; rule summaries evaluated in a function's scope."""

from __future__ import annotations

import ast
import builtins
import functools
import itertools

from routescope.analysis.engine.base import Ctx, EngineBase, Paths
from routescope.analysis.engine.containers import new_tuple, str_dict
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    Const,
    External,
    FunctionVal,
    Unknown,
    UnknownKind,
    Value,
)


@functools.cache
def parsed_summary(text: str, line: int = 1) -> ast.expr:
    """A summary's expression, at the line of the def it stands for: what it decides or
    raises is shown there (`get_config` at config.py:336), not at a line 1 of that file."""
    tree = ast.parse(text, mode="eval").body
    return ast.increment_lineno(tree, line - 1) if line > 1 else tree


# env slots: the frame a function's variables belong to, and the frames a closure reads from
FRAME_KEY = "\x00frame"
CLOSURE_FRAMES = "\x00closure-frames"
NONLOCAL_KEY = "\x00nonlocal"  # the names a function declared `nonlocal`
_FRAMES = itertools.count(1)


class BindingMixin(EngineBase):
    def rule_value(self, text: str, fn: FunctionVal) -> Value:
        """A rule file's expression over the bindings, evaluated where `fn` is defined."""
        got = self.summary(PathState(envs=[{}]), fn, text)
        return (
            got[0][1]
            if len(got) == 1
            else Unknown(f"{text} has several values", kind=UnknownKind.JOINED)
        )

    def defined_alternative(self, fn: FunctionVal, texts: str | tuple[tuple[str, str], ...]) -> str:
        """The rules' summary of `fn` (recorded as an assumption): of its alternatives, each
        (a string constant the function's code must hold, or "", expression), the first that
        fits this release: its code holds the constant (the release's own function does what
        the summary stands for: a config reader that opens a sidecar file), and every
        name it reads is one the summary can read where `fn` is defined (its parameters, the
        rules' bindings, a builtin, a global of its module: a release that lacks a helper newer
        ones have takes the next); the last when none fits."""
        chosen = texts if isinstance(texts, str) else self._first_fitting(fn, texts)
        self.facts.summary_used(fn.qualname, chosen)
        return chosen

    def _first_fitting(self, fn: FunctionVal, texts: tuple[tuple[str, str], ...]) -> str:
        a = fn.node.args
        params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
        params |= {p.arg for p in (a.vararg, a.kwarg) if p is not None}
        known = params | set(self.facts.bindings) | {"namespace"} | set(dir(builtins))
        module = fn.module.globals if fn.module is not None else {}
        raw = fn.node.body  # (a lambda's is one expression)
        body: list[ast.AST] = list(raw) if isinstance(raw, list) else [raw]
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # (its docstring is not its code)
        strings = {n.value for stmt in body for n in ast.walk(stmt)
                   if isinstance(n, ast.Constant) and isinstance(n.value, str)}  # fmt: skip
        for holds, text in texts:
            if holds and holds not in strings:
                continue
            names = {n.id for n in ast.walk(parsed_summary(text))
                     if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}  # fmt: skip
            if all(n in known or n in module for n in names):
                return text
        return texts[-1][1]

    def evaluate_in(self, st: PathState, module: str, text: str, env: dict[str, Value]) -> Paths:
        """A rule file's expression evaluated at the top level of `module` (its globals), with
        the rules' bindings and `env`; an Unknown (kind ABSENT) when the module is not there."""
        mod = self.load_module(module)
        if mod is None or mod.error is not None:
            return [(st, Unknown(f"module {module} is not there", kind=UnknownKind.ABSENT))]
        names = {**self.facts.bindings, "namespace": External("routescope.namespace"), **env}
        st.envs.append(names)
        self.ctx.append(Ctx(mod, mod.relpath, module))
        try:
            out = self.ev(st, parsed_summary(text))
        finally:
            self.ctx.pop()
        for s, _v in out:
            if len(s.envs) > 1:
                s.envs.pop()
        return out

    def summary(
        self,
        st: PathState,
        fn: FunctionVal,
        text: str,
        args: list[Value] | None = None,
        kwargs: dict[str, Value] | None = None,
    ) -> Paths:
        """A rules summary of `fn` evaluated in its scope, its parameters bound to the call's
        arguments (or their defaults), the rules' bindings over them."""
        expr = parsed_summary(text, fn.node.lineno)
        env = self.bind(fn, list(args or ()), dict(kwargs or {}))
        env.update(self.facts.bindings)
        env["namespace"] = External("routescope.namespace")
        st.envs.append(env)
        self.ctx.append(Ctx(fn.module, fn.module.relpath, fn.qualname))
        try:
            out = self.ev(st, expr)
        finally:
            self.ctx.pop()
        for s, _v in out:
            if (s.envs and s.envs[-1] is env) or len(s.envs) > 1:
                s.envs.pop()
        return out

    def bind(
        self, fn: FunctionVal, args: list[Value], kwargs: dict[str, Value]
    ) -> dict[str, Value]:
        node = fn.node
        a = node.args
        params = [*a.posonlyargs, *a.args]
        env: dict[str, Value] = {FRAME_KEY: Const(next(_FRAMES))}  # this call's frame, for closures
        positional = list(args)
        if fn.bound is not None and params and "staticmethod" not in fn.decorators:
            env[params[0].arg] = fn.bound
            params = params[1:]
        defaults = a.defaults
        first_default = len(params) - len(defaults)
        self.ctx.append(Ctx(fn.module, fn.module.relpath, fn.qualname))
        try:
            for i, p in enumerate(params):
                if i < len(positional):
                    env[p.arg] = positional[i]
                elif p.arg in kwargs:
                    env[p.arg] = kwargs[p.arg]
                elif fn.defaults is not None and p.arg in fn.defaults:
                    env[p.arg] = fn.defaults[p.arg]
                elif i >= first_default:
                    env[p.arg] = self._default(defaults[i - first_default], fn, p.arg)
                else:
                    env[p.arg] = Unknown(f"argument {p.arg} not given", kind=UnknownKind.INPUT)
            for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True):
                if p.arg in kwargs:
                    env[p.arg] = kwargs[p.arg]
                elif fn.defaults is not None and p.arg in fn.defaults:
                    env[p.arg] = fn.defaults[p.arg]
                elif d is not None:
                    env[p.arg] = self._default(d, fn, p.arg)
                else:
                    env[p.arg] = Unknown(f"argument {p.arg} not given", kind=UnknownKind.INPUT)
            if a.vararg:
                extra = positional[len(params) :]
                env[a.vararg.arg] = new_tuple(extra)
            if a.kwarg:
                known = {p.arg for p in [*params, *a.kwonlyargs]}
                env[a.kwarg.arg] = str_dict({k: v for k, v in kwargs.items() if k not in known})
        finally:
            self.ctx.pop()
        return env

    def _default(self, node: ast.expr, fn: FunctionVal, name: str) -> Value:
        """A module-level function's default, evaluated in its module's globals. A literal
        (`None`, `False`, `128`: most defaults) is the same constant at every call, made once
        per parameter; anything else is evaluated again (on a throw-away path)."""
        if type(node) is ast.Constant:
            known = self._literal_defaults.get(id(node))
            if known is not None and known[0] is node:
                return known[1]
        got = self.ev(PathState(envs=[fn.module.globals]), node)
        v = got[0][1] if got else Unknown("default", kind=UnknownKind.UNSUPPORTED)
        where = f"default of {name} at {fn.module.relpath}:{node.lineno}"
        made = Const(v.value, (*v.origins, where)) if isinstance(v, Const) else v
        if type(node) is ast.Constant:
            self._literal_defaults[id(node)] = (node, made)  # (the node kept: its id its own)
        return made
