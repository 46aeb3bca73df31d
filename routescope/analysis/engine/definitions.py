"""Definitions: functions, lambdas, classes, their decorators and registrations."""

from __future__ import annotations

import ast

from routescope.analysis.engine import enums
from routescope.analysis.engine.base import Ctx, EngineBase, Outcome
from routescope.analysis.engine.binding import CLOSURE_FRAMES, FRAME_KEY, NONLOCAL_KEY
from routescope.analysis.engine.bound import BoundOperation
from routescope.analysis.engine.budget import BudgetExceeded
from routescope.analysis.engine.join import join_returns, join_states
from routescope.analysis.engine.joinscope import joining
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    EnumMember,
    External,
    FunctionVal,
    Instance,
    Unknown,
    UnknownKind,
    Value,
)
from routescope.analysis.library import records


class DefinitionsMixin(EngineBase):
    def _decorator_names(self, st: PathState, decorators: list[ast.expr]) -> tuple[str, ...]:
        names: list[str] = []
        for d in decorators:
            head = d.func if isinstance(d, ast.Call) else d
            try:
                results = self.ev(st.fork(), head)
            except BudgetExceeded:
                results = []
            val = self.resolved(results[0][1]) if results else None
            if isinstance(val, External):
                names.append(val.name.removeprefix("builtins."))
            elif isinstance(val, (FunctionVal, ClassVal)):
                names.append(val.qualname)
                if isinstance(val, FunctionVal) and any(
                    n.endswith(records.TRANSFORM) for n in val.decorators
                ):
                    names.append(records.TRANSFORM)  # it makes dataclass-like classes
            else:
                names.append(self.source_text(head))
        return tuple(names)

    def _closure_of(self, env: dict[str, Value]) -> dict[str, Value]:
        """What a function defined in `env`'s scope closes over: that scope's variables, read
        at call time from the frame while it is live on the path (Python's cells: late
        binding), else as they were at the definition; and the scopes around it, likewise."""
        outer = self._closure_env or {}
        frames = outer.get(CLOSURE_FRAMES)
        token = env.get(FRAME_KEY)
        chain = (token, *(frames.value if isinstance(frames, Const) else ()))
        return {**outer, **env, CLOSURE_FRAMES: Const(tuple(t for t in chain if t is not None))}

    def ex_Nonlocal(self, st: PathState, node: ast.Nonlocal) -> list[Outcome]:
        declared = st.env.get(NONLOCAL_KEY)
        names = set(declared.value) if isinstance(declared, Const) else set()
        st.env[NONLOCAL_KEY] = Const(frozenset(names | set(node.names)))
        return [(st, "normal", None)]

    def write_cell(self, st: PathState, name: str, v: Value) -> bool:
        """`nonlocal name` then `name = v`: the write goes to the nearest enclosing frame that
        has the variable, while that frame is live on the path (Python's cell, shared with the
        enclosing function). False when the name is not declared nonlocal here. Where the
        enclosing call has returned (a closure called later), the value is this call's, and
        the cell as later calls read it is unknown (the engine keeps no cell past its frame)."""
        declared = st.env.get(NONLOCAL_KEY)
        if not (isinstance(declared, Const) and name in declared.value):
            return False
        closure = self._closure_env
        frames = closure.get(CLOSURE_FRAMES) if closure is not None else None
        for token in frames.value if isinstance(frames, Const) else ():
            live = next((e for e in reversed(st.envs) if e.get(FRAME_KEY) is token), None)
            if live is not None and name in live:
                live[name] = v
                return True
        st.env[name] = v
        if closure is not None and name in closure:
            closure[name] = Unknown(
                f"{name}, written through nonlocal after its scope returned",
                kind=UnknownKind.UNSUPPORTED,
            )
        return True

    def define_function(self, st: PathState, node: ast.FunctionDef | ast.AsyncFunctionDef) -> Value:
        mod = self.ctx[-1].module
        owner_prefix = self.ctx[-1].prefix
        qual = f"{mod.name}:{owner_prefix}{node.name}"
        if owner_prefix:
            # a method: the class bodies it sits in are no scope of its body (Python resolves
            # a bare name there in the enclosing function, then the module), so a method that
            # calls the module's function of its own name calls the function
            scopes = st.envs[: len(st.envs) - owner_prefix.count(".")]
            closure = (
                self._closure_of(scopes[-1]) if scopes and scopes[-1] is not mod.globals else None
            )
        else:
            closure = (
                self._closure_of(st.env) if len(st.envs) > 1 or st.env is not mod.globals else None
            )
        fn = FunctionVal(
            qual,
            node,
            mod,
            self._decorator_names(st, node.decorator_list),
            closure=closure,
            defaults=self._nested_defaults(st, node) if closure is not None else None,
        )
        fn.origins = (f"{mod.relpath}:{node.lineno}",)
        if node.decorator_list and owner_prefix == "" and len(st.envs) == 1:  # module level
            self._register(st, fn, node.decorator_list)
        return fn

    def _nested_defaults(
        self, st: PathState, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    ) -> dict[str, Value] | None:
        """A nested function's defaults, evaluated in the scope that defines it (`def
        getter(self, _name=name)` in a loop binds each iteration's name)."""
        a = node.args
        params = [*a.posonlyargs, *a.args]
        pairs = list(zip(params[len(params) - len(a.defaults) :], a.defaults, strict=True))
        pairs += [(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d]
        out: dict[str, Value] = {}
        for p, d in pairs:
            if isinstance(d, ast.Constant):
                continue  # the same wherever it is evaluated
            got = self._default_value(st, d)  # in the defining scope
            out[p.arg] = (
                got
                if got is not None
                else Unknown(f"default of {p.arg}", kind=UnknownKind.UNSUPPORTED)
            )
        return out or None

    def _default_value(self, st: PathState, d: ast.expr) -> Value | None:
        """A default's value; where evaluating it forks (a call that branches on what is not
        known), what each way wrote is kept, joined onto this path, and the value is the ways'
        values joined: the def statement does not fork, but no write is lost."""
        frames, envs = len(st.frames), len(st.envs)
        res = self.ev(st, d)
        if len(res) == 1 and res[0][0] is st:
            return res[0][1]
        del st.frames[frames:]  # (calls entered on `st` itself must not stay entered)
        del st.envs[envs:]
        if self.def_raises is not None:  # the ways it raises: the def statement raises there
            self.def_raises.extend(s for s, _ in res if s.raising is not None and s is not st)
        ways = [(s, v) for s, v in res if s.raising is None and not s.stopped]
        if not ways:
            return None
        where = f"{self.current_file()}:{d.lineno}"
        states = [s for s, _ in ways]
        with joining():
            value = join_returns([v for _, v in ways], states, len(ways), where)
            joined = join_states(states, f"differs between the ways of a default at {where}")
        st.adopt(joined)
        return value

    def _register(self, st: PathState, fn: Value, decorators: list[ast.expr]) -> None:
        """Run the framework's own decorators of a module-level function or class for what
        they record (a registry's append, the class attribute a registering decorator sets);
        the name keeps the function or class itself, as before."""
        for d in reversed(decorators):
            try:
                heads = self.ev(st.fork(), d)
                dec = self.resolved(heads[0][1]) if len(heads) == 1 else None
                if isinstance(dec, BoundOperation):  # one the engine carries out: it records
                    done = heads[0][0]  # (torch.library.register_fake's decorator)
                    dec.call(done, [fn])
                    st.heap, st.heap_objs = done.heap, done.heap_objs
                    continue
                if not isinstance(dec, FunctionVal):
                    continue
                results = self.call(heads[0][0], dec, [fn], {}, None)
            except BudgetExceeded:
                continue
            if len(results) == 1:
                done = results[0][0]
                st.heap, st.heap_objs = done.heap, done.heap_objs

    def make_lambda(self, st: PathState, node: ast.Lambda) -> Value:
        """A lambda closes over the variables in scope where it is written."""
        mod = self.ctx[-1].module
        closure = self._closure_of(st.env) if st.env is not mod.globals else None
        return FunctionVal(
            f"{mod.name}:<lambda:{node.lineno}>",
            node,
            mod,
            (),
            closure=closure,
            defaults=self._nested_defaults(st, node) if closure else None,
        )

    def define_class(self, st: PathState, node: ast.ClassDef) -> Value:
        mod = self.ctx[-1].module
        bases: list[Value] = []
        for b in node.bases:
            got = self.ev(st.fork(), b)
            bases.append(
                self.resolved(got[0][1]) if got else Unknown("base", kind=UnknownKind.UNSUPPORTED)
            )
        prefix = self.ctx[-1].prefix
        cls = ClassVal(
            f"{mod.name}:{prefix}{node.name}",
            node,
            mod,
            tuple(bases),
            decorators=self._decorator_names(st, node.decorator_list),
        )
        cls.is_enum = any(
            (isinstance(b, External) and b.name.startswith("enum."))
            or (isinstance(b, ClassVal) and b.is_enum)
            for b in bases
        )
        body_st = PathState(envs=[*st.envs, {}])
        outer = self.ctx[-1]
        self.ctx.append(Ctx(mod, outer.file, outer.function, f"{prefix}{node.name}."))
        try:
            self._class_body(cls, body_st, node)
        finally:
            self.ctx.pop()
        if node.decorator_list and prefix == "" and len(st.envs) == 1:  # module level
            self._register(st, cls, node.decorator_list)
        return cls

    def _class_body(self, cls: ClassVal, st: PathState, node: ast.ClassDef) -> None:
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                name = stmt.target.id
                if stmt.value is not None:  # a field(...) call gives a records.FieldDefault
                    got = self.ev(st, stmt.value)
                    cls.attrs[name] = (
                        got[0][1]
                        if got
                        else Unknown("class attribute", kind=UnknownKind.UNSUPPORTED)
                    )
                if not _class_var(stmt.annotation):  # a ClassVar is no record's field
                    cls.attrs.setdefault(f"__field__{name}", Const(name))
                cls.annotations[name] = stmt.annotation
                continue
            try:
                outcomes = self.exec_stmt(st, stmt)
            except BudgetExceeded:
                continue
            if outcomes:
                st = outcomes[0][0]
                self.commit(st)  # descriptors built in a class body keep what their __init__ set
        values: list[Value] = []  # the members' values so far, which auto() continues
        for key, val in st.env.items():
            if cls.is_enum and not isinstance(val, FunctionVal) and not key.startswith("_"):
                if enums.is_auto(val):
                    val = enums.auto_value(cls, key, values)
                values.append(val)
                val = EnumMember(cls, key, val)
            cls.attrs[key] = val
        if records.is_dataclass(cls):  # the class attribute of a field is its default
            for key, val in list(cls.attrs.items()):
                if isinstance(val, records.FieldDefault) and val.validate:  # (pydantic's)
                    cls.attrs[f"{records.VALIDATE_DEFAULT}{key}"] = Const(True)
                if isinstance(val, records.FieldDefault) and val.init is not None:
                    cls.attrs[f"{records.INIT}{key}"] = val.init  # field(init=False)
                if isinstance(val, records.FieldDefault) and records.has_default(val):
                    cls.attrs[key] = val.default  # type: ignore[assignment]
        for key, val in list(cls.attrs.items()):
            if isinstance(val, Instance) and val.cls is not None and val.cls.lookup("__set_name__"):
                setter = val.cls.lookup("__set_name__")
                if isinstance(setter, FunctionVal):
                    set_st = PathState(envs=[{}])
                    self.invoke(set_st, setter.bind(val), [cls, Const(key)], {}, None)
                    self.commit(set_st)

    # --- calls ---------------------------------------------------------------------------------


def _class_var(annotation: ast.expr) -> bool:
    """`x: ClassVar[T]` (or typing.ClassVar, or the same as a string): a class attribute that
    dataclasses, NamedTuple and msgspec leave out of the fields."""
    node = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.split("[", 1)[0].strip() in ("ClassVar", "typing.ClassVar")
    return (isinstance(node, ast.Name) and node.id == "ClassVar") or (
        isinstance(node, ast.Attribute) and node.attr == "ClassVar"
    )
