"""The trace engine: modules, names, attributes and calls over the index of a framework tree.

Generic over frameworks: what is framework-specific (platform facts, sinks, summaries) comes in
through `Facts`, built from the rule files.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from pathlib import PurePosixPath
from typing import Any, Protocol, cast

from routescope.analysis import records
from routescope.analysis.builtins import (
    BoundConst,
    builtin_names,
    call_bound_const,
    call_builtin,
    const_attribute,
    ordered,
)
from routescope.analysis.facts import Facts, SinkRule
from routescope.analysis.interp import (
    LIST_UNKNOWN,
    SEQ_LIMIT,
    Budget,
    BudgetExceeded,
    Paths,
    is_dict,
    is_list,
    is_set,
    key_absent,
    merge_origins,
    new_list,
    new_set,
    seq_items,
    snapshot,
    typing_call,
    update_view,
)
from routescope.analysis.state import Frame, PathState, SinkHit
from routescope.analysis.stmts import (
    GLOBALS_KEY,
    JOIN_DEPTH,
    Outcome,
    StmtMixin,
    iteration,
    join_values,
)
from routescope.analysis.values import (
    ClassVal,
    Const,
    EnumMember,
    External,
    FunctionVal,
    Instance,
    ModuleVal,
    OpenKeys,
    Tensor,
    Unknown,
    Value,
    describe,
)  # fmt: skip

_BUILTINS = builtin_names() | {
    "None", "True", "False", "Exception", "ImportError", "ModuleNotFoundError", "ValueError",
    "RuntimeError", "AssertionError", "KeyError", "TypeError", "AttributeError",
    "NotImplementedError", "property", "staticmethod", "classmethod", "NotImplemented", "OSError",
    "__name__", "vars", "issubclass",
}  # fmt: skip


# A module-level statement (a registration call, a table built in a loop) that takes longer than
# this is abandoned: the names it binds become Unknown rather than stalling the trace.
MODULE_STMT_STEPS = 80_000


@functools.cache
def _parsed_summary(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


# A call whose paths outnumber this and agree on the routing kernels is joined into one path.
JOIN_THRESHOLD = 4


def _shape(v: Value | None) -> str:
    """What kind of value a path returned: paths returning different kinds stay apart."""
    if isinstance(v, Instance):
        return v.cls.qualname if v.cls is not None else v.label
    if isinstance(v, Const):
        return repr(v.value)
    return type(v).__name__


def _digest(v: Value) -> str:
    if isinstance(v, Const):
        return repr(v.value)
    if isinstance(v, EnumMember):
        return f"{v.cls.qualname}.{v.name}"
    return str(id(v))


def _same(a: Value | None, b: Value | None) -> bool:
    if a is b:
        return True
    if isinstance(a, Const) and isinstance(b, Const):
        return repr(a.value) == repr(b.value)
    if isinstance(a, EnumMember) and isinstance(b, EnumMember):
        return a.cls is b.cls and a.name == b.name
    if (
        isinstance(a, Instance)
        and isinstance(b, Instance)
        and a.cls is None
        and b.cls is None
        and a.label == b.label
        and a.label in ("dict", "tuple")
    ):
        # equal literals made on different paths (`return {}` on each): callers group paths
        # by what they changed in the heap first, so these objects' own fields are their view
        return a.fields.keys() == b.fields.keys() and all(
            _same(a.fields[k], b.fields[k]) for k in a.fields
        )
    return False


class ModuleSource(Protocol):
    def module(self, name: str) -> Any: ...
    def has_module(self, name: str) -> bool: ...
    def decorator_users(self, module: str, names: set[str]) -> list[str]: ...


def _decorator_factory(node: ast.stmt) -> bool:
    """`def register(key): def decorator(fn): ...; return decorator`: a function that returns
    a function it defines (what a registering decorator with arguments looks like)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    inner = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return any(isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and n.value.id in inner
               for n in node.body)  # fmt: skip


class _Ctx:
    """What is being evaluated: a module body, a class body (prefix "Cls."), or a function."""

    __slots__ = ("file", "function", "module", "prefix")

    def __init__(self, module: ModuleVal, file: str, function: str, prefix: str = "") -> None:
        self.module = module
        self.file = file
        self.function = function
        self.prefix = prefix


class Engine(StmtMixin):
    def __init__(self, index: ModuleSource, facts: Facts, budget: Budget | None = None) -> None:
        self.index = index
        self.facts = facts
        self.budget = budget or Budget()
        self.modules: dict[str, ModuleVal] = {}
        self.loading: set[str] = set()
        self.ctx: list[_Ctx] = []
        self._lines: dict[str, tuple[str, ...]] = {}
        self._in_module_getattr: set[str] = set()
        self._memo: dict[tuple[Any, ...], tuple[Value, list[Any], Any]] = {}
        self.not_built: set[ClassVal] = set()
        self._memo_keep: list[Value] = []  # values whose ids are in memo keys
        # While a model's own constructor runs for its side effects: the one class whose body
        # is built; every other torch module it constructs stays a bare object.
        self.only_module: ClassVal | None = None
        self.tracing = False  # set while the router's decode forward is traced
        self.catching: list[list[ast.ExceptHandler]] = []
        self._reads: dict[str, frozenset[str]] = {}
        # objects some constructor of which was not run (opaque, or built separately): their
        # missing attributes are unknown, not absent
        self._unbuilt: set[int] = set()
        self.entering: list[int] = []
        # torch's default dtype while the model is built (the loader's set_default_torch_dtype)
        self.default_dtype: str | None = None
        # classes whose construction a phase takes over (the model class while the framework's
        # own loader builds it): called with the path, the arguments and the call node
        self.construct_hooks: dict[ClassVal, Any] = {}
        self._texts: dict[int, tuple[ast.AST, str]] = {}  # id(node) -> (node, its source)

    # --- context -----------------------------------------------------------------------------

    def current_file(self) -> str:
        return self.ctx[-1].file if self.ctx else ""

    def current_function(self) -> str:
        return self.ctx[-1].function if self.ctx else ""

    def source_text(self, node: ast.AST) -> str:
        """The node's source, normalised; each node is unparsed once (a guard a loop or a
        repeated call evaluates again is written down each time)."""
        known = self._texts.get(id(node))
        if known is not None and known[0] is node:
            return known[1]
        try:
            text = " ".join(ast.unparse(node).split())
        except Exception:
            text = type(node).__name__
        self._texts[id(node)] = (node, text)  # the node is kept, so its id stays its own
        return text

    # --- modules and imports -----------------------------------------------------------------

    def load_module(self, name: str) -> ModuleVal | None:
        """Evaluate a module body once; a module being loaded gives its partial globals."""
        if name in self.modules:
            return self.modules[name]
        info = self.index.module(name)
        if info is None:
            return None
        mod = ModuleVal(name, {"__name__": Const(name)}, info.relpath)
        self.modules[name] = mod
        if info.tree is None:
            mod.globals["__unparseable__"] = Unknown(
                f"{info.relpath} does not parse: {info.unparseable}"
            )
            return mod
        self._lines[info.relpath] = info.lines
        self.loading.add(name)
        st = PathState(envs=[mod.globals])
        self.ctx.append(_Ctx(mod, info.relpath, f"{name}:<module>"))
        # An import completes whatever phase triggered it: a phase's deadline must not leave a
        # module half-evaluated for the phases after it (statements have their own budget).
        outer, self.budget.local = self.budget.local, []
        started = self.budget.steps
        try:
            for stmt in info.tree.body:
                self._module_stmt(mod, st, stmt)
        finally:
            spent = self.budget.steps - started  # the importing phase does not pay for the import
            self.budget.local = [(limit + spent, why) for limit, why in outer]
            self.ctx.pop()
            self.loading.discard(name)
        # Registries filled by decorators at import time (`@register_fused_func("none",
        # "flashinfer_trtllm")`): the server has imported the modules that register long before
        # it reads the registry (through import chains this engine resolves lazily), so the
        # modules beside this one that decorate with one of its decorator factories are loaded
        # with it, and a lookup finds what they registered.
        factories = {n.name for n in info.tree.body if _decorator_factory(n)}
        for user in self.index.decorator_users(name, factories) if factories else ():
            self.load_module(user)
        return mod

    def _module_stmt(self, mod: ModuleVal, st: PathState, stmt: ast.stmt) -> None:
        """Module level runs on one path: undecided branches merge (differing names -> Unknown)."""
        where = f"{mod.relpath}:{stmt.lineno}"
        self.budget.push(MODULE_STMT_STEPS, f"module-level statement at {where} ran too long")
        try:
            outcomes = self.exec_stmt(st, stmt)
        except BudgetExceeded as exc:
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    mod.globals[sub.id] = Unknown(str(exc))
            return
        finally:
            self.budget.pop()
        normal = [s for s, kind, _ in outcomes if kind == "normal"]
        if not normal:
            return
        normal[0].commit()  # objects configured at import time keep their state
        envs = [s.envs[0] for s in normal]
        if len(envs) == 1:
            merged = dict(envs[0])
        else:
            merged = {}
            where = f"{mod.relpath}:{stmt.lineno}"
            for key in dict.fromkeys(k for e in envs for k in e):
                vals = [e.get(key) for e in envs]
                first = vals[0]
                same = all(v is first for v in vals) or (
                    all(isinstance(v, Const) for v in vals)
                    and len({repr(v.value) for v in vals}) == 1  # type: ignore[union-attr]
                )
                merged[key] = (first if first is not None else Unknown("unbound")) if same else \
                    Unknown(f"depends on the undecided condition at {where}")  # fmt: skip
        if merged is not mod.globals:
            mod.globals.clear()
            mod.globals.update(merged)
        st.envs[0] = mod.globals
        del st.envs[1:]

    def do_import(self, st: PathState, node: ast.Import | ast.ImportFrom) -> list[Outcome]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                target = alias.name if alias.asname else top
                val = self._import_module(target)
                if isinstance(val, _ImportFailure):
                    return [(st, "raise", val.exc)]
                st.env[alias.asname or top] = val
                self._for_side_effects(alias.name, alias.asname or alias.name)
            return [(st, "normal", None)]
        base = self._absolute(node)
        for alias in node.names:
            if alias.name != "*":
                self._for_side_effects(f"{base}.{alias.name}", alias.asname or alias.name)
            if alias.name == "*":
                mod = self.load_module(base) if self.index.has_module(base) else None
                if mod is not None:
                    st.env.update({k: v for k, v in mod.globals.items() if not k.startswith("_")})
                continue
            val = self._import_name(base, alias.name)
            if isinstance(val, _ImportFailure):
                return [(st, "raise", val.exc)]
            st.env[alias.asname or alias.name] = val
        return [(st, "normal", None)]

    def _partly_built(self, obj: Instance) -> None:
        self._unbuilt.add(id(obj))
        self._memo_keep.append(obj)  # keeps the id its own

    def _for_side_effects(self, module: str, bound: str) -> None:
        """A module-level import of a framework module whose name the importing module never
        reads is there for what running the module does (registering into a registry, as
        `import pkg.plugins  # noqa: F401` does): run it now, as Python does. Other imports
        stay lazy: their module runs when a name from it is first read."""
        if not self.ctx or not self.ctx[-1].function.endswith(":<module>"):
            return
        importer = self.ctx[-1].module.name
        if module in self.modules or not self.index.has_module(module):
            return
        if bound in self._names_read(importer):
            return
        self.load_module(module)

    def _names_read(self, module: str) -> frozenset[str]:
        """The names and dotted attribute paths (a, a.b, a.b.c) a module's code reads."""
        got = self._reads.get(module)
        if got is None:
            info = self.index.module(module)
            names: set[str] = set()
            for sub in ast.walk(info.tree) if info is not None and info.tree is not None else ():
                if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
                elif isinstance(sub, ast.Attribute):
                    parts: list[str] = []
                    cur: ast.expr = sub
                    while isinstance(cur, ast.Attribute):
                        parts.append(cur.attr)
                        cur = cur.value
                    if isinstance(cur, ast.Name):
                        chain = [cur.id, *reversed(parts)]
                        names.update(".".join(chain[: i + 1]) for i in range(len(chain)))
                elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                    names.update(
                        n.strip() for n in sub.value.split(",") if n.strip().isidentifier()
                    )
            got = self._reads[module] = frozenset(names)
        return got

    def _absolute(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        current = self.ctx[-1].module.name if self.ctx else ""
        is_pkg = self.ctx[-1].file.endswith("__init__.py") if self.ctx else False
        parts = current.split(".")
        drop = node.level - 1 if is_pkg else node.level
        base = parts[: len(parts) - drop] if drop else parts
        return ".".join([*base, node.module] if node.module else base)

    def _import_module(self, name: str) -> Value:
        if self.index.has_module(name):
            return _LazyModule(self, name)
        avail = self.facts.package_available(name)
        if avail is False:
            return _ImportFailure(name)
        origin = (f"package {name.split('.')[0]} assumed importable",) if avail is None else ()
        return External(name, origin)

    def _import_name(self, base: str, name: str) -> Value:
        full = f"{base}.{name}"
        if self.index.has_module(full):
            return _LazyModule(self, full)
        if self.index.has_module(base):
            return _LazyName(self, base, name)
        avail = self.facts.package_available(full)
        if avail is False:
            return _ImportFailure(full)
        return External(full)

    def module_attr(self, mod: ModuleVal, name: str) -> Value:
        if name in mod.globals:
            return self._resolve(mod.globals[name])
        sub = f"{mod.name}.{name}"
        if self.index.has_module(sub):
            return self._resolve(_LazyModule(self, sub))
        hook = mod.globals.get("__getattr__")
        if isinstance(hook, FunctionVal) and name not in self._in_module_getattr:
            self._in_module_getattr.add(name)  # PEP 562 lazy attributes (current_platform)
            try:
                outs = self._invoke(PathState(envs=[{}]), hook, [Const(name)], {}, None)
                got = [v for _s, k, v in outs if k == "return" and v is not None]
            finally:
                self._in_module_getattr.discard(name)
            if len(got) == 1:
                return got[0]
        if mod.name in self.loading:
            return _LazyName(self, mod.name, name)
        return Unknown(f"{mod.name} has no attribute {name}")

    def _resolve(self, v: Value) -> Value:
        for _ in range(16):
            if isinstance(v, (_LazyModule, _LazyName)):
                v = v.resolve()
            else:
                return v
        return Unknown("import cycle")

    # --- names and attributes ---------------------------------------------------------------

    def lookup_name(self, st: PathState, name: str) -> Value:
        declared = st.env.get(GLOBALS_KEY) if st.envs else None
        is_global = isinstance(declared, Const) and name in declared.value
        if st.envs and name in st.env and not is_global:
            return self._resolve(st.env[name])
        fn_closure = self._closure()
        if fn_closure is not None and name in fn_closure:
            return self._resolve(fn_closure[name])
        if self.ctx and name in self.ctx[-1].module.globals:
            return self._resolve(self.ctx[-1].module.globals[name])
        if name in ("True", "False", "None"):
            return Const({"True": True, "False": False, "None": None}[name])
        if name in _BUILTINS:
            return External(name)
        if self.ctx and self.ctx[-1].module.name in self.loading:
            return _LazyName(self, self.ctx[-1].module.name, name)
        return Unknown(f"name {name} is not defined")

    def _closure(self) -> dict[str, Value] | None:
        return getattr(self, "_closure_env", None)

    def attribute(self, st: PathState, obj: Value, name: str, hook: bool = True) -> Paths:
        """`hook`: a miss on a framework object goes to its class's __getattr__ (off for
        object.__getattribute__)."""
        obj = self._resolve(obj)
        if isinstance(obj, ModuleVal):
            return [(st, self.module_attr(obj, name))]
        if isinstance(obj, External):
            full = f"{obj.name}.{name}"
            if full in self.facts.attributes:
                return [(st, self.facts.attributes[full])]
            return [(st, External(full, obj.origins))]
        if isinstance(obj, _SuperProxy):
            found = obj.cls.lookup(name) if obj.cls else None
            if isinstance(found, FunctionVal):
                return [(st, found.bind(obj.receiver))]
            return [(st, found or Unknown(f"super() has no attribute {name}"))]
        if isinstance(obj, Instance) and obj.label == "dict" and obj.cls is None:
            return [(st, _DictMethod(obj, name))]
        if isinstance(obj, Instance) and is_list(obj):
            return [(st, _ListMethod(obj, name))]
        if isinstance(obj, Instance) and is_set(obj):
            return [(st, _SetMethod(obj, name))]
        if isinstance(obj, Instance) and obj.label == _CONTEXT_VAR and obj.cls is None:
            return [(st, _ContextVarMethod(obj, name))]
        if isinstance(obj, Instance):
            fields = st.fields(obj)
            if name in fields:
                return [(st, fields[name])]
            if obj.cls is not None:
                found = obj.cls.lookup(name)
                if isinstance(found, FunctionVal):
                    if "property" in found.decorators or any(
                        d.endswith(".getter")
                        or d == "cached_property"
                        or d.endswith("cached_property")
                        for d in found.decorators
                    ):
                        got = self._invoke(st, found.bind(obj), [], {}, None)
                        return self._returned(st, got, f"{found.qualname} raised")
                    if "staticmethod" in found.decorators:
                        return [(st, found)]
                    if "classmethod" in found.decorators:
                        return [(st, found.bind(obj.cls))]
                    return [(st, found.bind(obj))]
                if found is not None:
                    return [(st, found)]
                if name in _REGISTERS and any(b in _MODULE_BASES for b in obj.cls.external_bases()):
                    return [(st, _Register(obj))]  # self.register_buffer("bias", t): a field
                getattr_hook = obj.cls.lookup("__getattr__") if hook else None
                if isinstance(getattr_hook, FunctionVal) and not name.startswith("__"):
                    return self.call(st, getattr_hook.bind(obj), [Const(name)], {}, None)
                if obj.cls.external_bases() and (
                    id(obj) in self._unbuilt or not records.closed_attributes(obj.cls, name)
                ):
                    return [
                        (
                            st,
                            Unknown(
                                f"{obj.label or obj.cls.qualname}.{name} (from an external base)"
                            ),
                        )
                    ]
            if obj.label == "config" and obj.cls is None and name == "to_dict":
                return [(st, _ConfigToDict(obj))]  # PretrainedConfig.to_dict()
            label = obj.label or (obj.cls.qualname if obj.cls else "object")
            return [(st, Unknown(f"{label} has no attribute {name}"))]
        if isinstance(obj, ClassVal):
            found = obj.lookup(name)
            if isinstance(found, FunctionVal) and "classmethod" in found.decorators:
                return [(st, found.bind(obj))]
            if found is not None:
                return [(st, found)]
            if name == "__annotations__":  # its own fields' annotations, evaluated
                own = {repr(n): self._annotation(obj, n) for n in list(obj.annotations)}
                return [(st, Instance(None, own, "dict"))]
            special = records.class_attribute(obj, name)
            if special is not None:
                return [(st, special)]
            if name == "__name__":
                return [(st, Const(obj.qualname.split(":")[-1].rsplit(".", 1)[-1]))]
            if name == "__qualname__":
                return [(st, Const(obj.qualname.split(":")[-1]))]
            if name == "__mro__":
                return [(st, Instance(None, {str(i): c for i, c in enumerate(obj.mro())}, "tuple"))]
            return [(st, Unknown(f"class {obj.qualname} has no attribute {name}"))]
        if isinstance(obj, EnumMember):
            if name == "name":
                return [(st, Const(obj.name))]
            if name == "value":
                return [(st, obj.value)]
            found = obj.cls.lookup(name)
            if isinstance(found, FunctionVal):
                return [(st, found.bind(obj))]
            return [(st, found or Unknown(f"enum member has no {name}"))]
        if isinstance(obj, Tensor):
            if name == "shape" and obj.shape is not None:
                return [(st, Instance(None, {str(i): v for i, v in enumerate(obj.shape)}, "tuple"))]
            if name == "dtype" and obj.dtype:
                return [(st, External(obj.dtype))]
            if name == "ndim" and obj.shape is not None:
                return [(st, Const(len(obj.shape)))]
            return [(st, _TensorMethod(obj, name))]
        if isinstance(obj, Const):
            return [(st, const_attribute(obj, name))]
        if isinstance(obj, FunctionVal):
            qual = obj.qualname.split(":")[-1]
            if name == "__qualname__":
                return [(st, Const(qual))]
            if name == "__name__":
                return [(st, Const(qual.rsplit(".", 1)[-1]))]
            if name == "__module__":
                return [(st, Const(obj.qualname.split(":")[0]))]
            return [(st, Unknown(f"attribute {name} of function"))]
        reason = obj.reason if isinstance(obj, Unknown) else f"attribute of {type(obj).__name__}"
        return [(st, Unknown(reason, obj.origins))]

    def set_attribute(self, st: PathState, obj: Value, name: str, value: Value) -> None:
        obj = self._resolve(obj)
        if isinstance(obj, Instance):
            st.write(obj, name, value)
        elif isinstance(obj, ClassVal):
            obj.attrs[name] = value
        elif isinstance(obj, ModuleVal):
            obj.globals[name] = value

    # --- definitions -------------------------------------------------------------------------

    def _decorator_names(self, st: PathState, decorators: list[ast.expr]) -> tuple[str, ...]:
        names: list[str] = []
        for d in decorators:
            head = d.func if isinstance(d, ast.Call) else d
            try:
                results = self.ev(st.fork(), head)
            except BudgetExceeded:
                results = []
            val = self._resolve(results[0][1]) if results else None
            if isinstance(val, External):
                names.append(val.name.removeprefix("builtins."))
            elif isinstance(val, (FunctionVal, ClassVal)):
                names.append(val.qualname)
            else:
                names.append(self.source_text(head))
        return tuple(names)

    def define_function(self, st: PathState, node: ast.FunctionDef | ast.AsyncFunctionDef) -> Value:
        mod = self.ctx[-1].module
        owner_prefix = self.ctx[-1].prefix
        qual = f"{mod.name}:{owner_prefix}{node.name}"
        if owner_prefix:
            # a method: the class bodies it sits in are no scope of its body (Python resolves
            # a bare name there in the enclosing function, then the module), so a method that
            # calls the module's function of its own name calls the function
            scopes = st.envs[: len(st.envs) - owner_prefix.count(".")]
            closure = dict(scopes[-1]) if scopes and scopes[-1] is not mod.globals else None
        else:
            closure = dict(st.env) if len(st.envs) > 1 or st.env is not mod.globals else None
        fn = FunctionVal(
            qual,
            node,
            mod,
            self._decorator_names(st, node.decorator_list),
            closure=closure,
            defaults=self._nested_defaults(st, node) if closure is not None else None,
        )
        fn.origins = (f"{mod.relpath}:{node.lineno}",)
        if node.decorator_list and owner_prefix == "" and st.env is mod.globals:
            self._register(st, fn, node.decorator_list)
        return fn

    def _nested_defaults(self, st: PathState,
                         node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
                         ) -> dict[str, Value] | None:  # fmt: skip
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
            got = self.ev(st.fork(), d)
            out[p.arg] = got[0][1] if len(got) == 1 else Unknown(f"default of {p.arg}")
        return out or None

    def _register(self, st: PathState, fn: FunctionVal, decorators: list[ast.expr]) -> None:
        """Run the framework's own decorators of a module-level function for what they record
        (a registry's append); the name keeps the function itself, as before."""
        for d in reversed(decorators):
            try:
                heads = self.ev(st.fork(), d)
                dec = self._resolve(heads[0][1]) if len(heads) == 1 else None
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
        closure = dict(st.env) if st.env is not mod.globals else None
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
            bases.append(self._resolve(got[0][1]) if got else Unknown("base"))
        prefix = self.ctx[-1].prefix
        cls = ClassVal(f"{mod.name}:{prefix}{node.name}", node, mod, tuple(bases),
                       decorators=self._decorator_names(st, node.decorator_list))  # fmt: skip
        cls.is_enum = any((isinstance(b, External) and b.name.startswith("enum.")) or
                          (isinstance(b, ClassVal) and b.is_enum) for b in bases)  # fmt: skip
        body_st = PathState(envs=[*st.envs, {}])
        outer = self.ctx[-1]
        self.ctx.append(_Ctx(mod, outer.file, outer.function, f"{prefix}{node.name}."))
        try:
            self._class_body(cls, body_st, node)
        finally:
            self.ctx.pop()
        return cls

    def _class_body(self, cls: ClassVal, st: PathState, node: ast.ClassDef) -> None:
        auto = 0
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                name = stmt.target.id
                if stmt.value is not None:  # a field(...) call gives a records.FieldDefault
                    got = self.ev(st, stmt.value)
                    cls.attrs[name] = got[0][1] if got else Unknown("class attribute")
                cls.attrs.setdefault(f"__field__{name}", Const(name))
                cls.annotations[name] = stmt.annotation
                continue
            try:
                outcomes = self.exec_stmt(st, stmt)
            except BudgetExceeded:
                continue
            if outcomes:
                st = outcomes[0][0]
                st.commit()  # descriptors built in a class body keep what their __init__ set
        for key, val in st.env.items():
            if cls.is_enum and not isinstance(val, FunctionVal) and not key.startswith("_"):
                if isinstance(val, External) and val.name.endswith("auto"):
                    auto += 1
                    val = Const(auto)
                val = EnumMember(cls, key, val)
            cls.attrs[key] = val
        for key, val in list(cls.attrs.items()):
            if isinstance(val, Instance) and val.cls is not None and val.cls.lookup("__set_name__"):
                setter = val.cls.lookup("__set_name__")
                if isinstance(setter, FunctionVal):
                    set_st = PathState(envs=[{}])
                    self._invoke(set_st, setter.bind(val), [cls, Const(key)], {}, None)
                    set_st.commit()

    # --- calls ---------------------------------------------------------------------------------

    def call(self, st: PathState, fn: Value, args: list[Value], kwargs: dict[str, Value],
             node: ast.AST | None) -> Paths:  # fmt: skip
        if st.raising is not None:  # an argument's call raised: this call is never made
            return [(st, Unknown("not reached: an exception was raised"))]
        fn = self._resolve(fn)
        if isinstance(fn, BoundConst):
            if isinstance(fn.target.value, PurePosixPath) and fn.name in _PATH_METHODS:
                return [(st, self.fs_query(_PATH_METHODS[fn.name], fn.target, f"Path.{fn.name}"))]
            if isinstance(fn.target.value, PurePosixPath) and fn.name == "glob":
                pattern = args[0].value if len(args) == 1 and isinstance(args[0], Const) else None
                found = None if pattern is None else \
                    self._listing(str(fn.target.value / str(pattern)), PurePosixPath)  # fmt: skip
                return [(st, found or Unknown("result of Path.glob()"))]
            return [(st, call_bound_const(fn, [snapshot(st, a) for a in args], kwargs))]
        if isinstance(fn, _TensorMethod):
            shape = fn.tensor.shape
            if fn.name == "dim" and shape is not None and not args:
                return [(st, Const(len(shape)))]
            stride = _stride(fn.tensor, args) if fn.name == "stride" else None
            if stride is not None:
                return [(st, stride)]
            if fn.name == "size" and shape is not None and len(args) == 1 and \
                    isinstance(args[0], Const) and isinstance(args[0].value, int) and \
                    -len(shape) <= args[0].value < len(shape):  # fmt: skip
                return [(st, shape[args[0].value])]
            made = fn.tensor.made_at or self._made_at(node)
            same = fn.name in _SAME_SHAPE  # elementwise and dtype changes keep the shape
            dtype = _METHOD_DTYPES.get(fn.name, fn.tensor.dtype if fn.name in _SAME_DTYPE else None)
            flat = fn.name == "contiguous" or (fn.tensor.contiguous and fn.name in _SAME_SHAPE)
            return [(st, Tensor(shape if same else None, dtype,
                                producer=_producer_of([fn.tensor, *args], st.claims),
                                made_at=made, contiguous=flat))]  # fmt: skip
        if isinstance(fn, _DictMethod):
            return [(st, fn.call(st, args, kwargs))]
        if isinstance(fn, _ConfigToDict) and not args and not kwargs:
            return [(st, _config_dict(st, fn.config, JOIN_DEPTH))]
        if isinstance(fn, _ListMethod):
            return [(st, fn.call(self, st, args, kwargs))]
        if isinstance(fn, _ContextVarMethod):
            return [(st, fn.call(st, args))]
        if isinstance(fn, _Register):
            if len(args) >= 2 and isinstance(args[0], Const) and isinstance(args[0].value, str):
                st.write(fn.target, args[0].value, args[1])
            return [(st, Const(None))]
        if isinstance(fn, _SetMethod):
            return [(st, fn.call(st, [snapshot(st, a) for a in args]))]
        if isinstance(fn, _Partial):
            return self.call(st, fn.fn, [*fn.args, *args], {**fn.kwargs, **kwargs}, node)
        if isinstance(fn, External):
            return self._call_external(st, fn, args, kwargs, node)
        if isinstance(fn, FunctionVal):
            outs = self.join(fn.qualname, self._invoke(st, fn, args, kwargs, node))
            # _invoke turns "normal" ends into returns of Const(None): no value here is None
            return self._returned(st, outs, f"{fn.qualname} always raises")
        if isinstance(fn, ClassVal):
            return self._construct(st, fn, args, kwargs, node)
        if isinstance(fn, EnumMember):
            return [(st, Unknown("call of enum member"))]
        reason = fn.reason if isinstance(fn, Unknown) else f"call of {type(fn).__name__}"
        return [(st, Unknown(reason, fn.origins))]

    # --- with statements ---------------------------------------------------------------------

    def ex_With(self, st: PathState, node: ast.With) -> list[Outcome]:
        return self._with_items(st, list(node.items), node.body)

    ex_AsyncWith = ex_With

    def _with_items(self, st: PathState, items: list[ast.withitem],
                    body: list[ast.stmt]) -> list[Outcome]:  # fmt: skip
        """`with a, b: body` as `with a: with b: body`. A @contextmanager generator runs up
        to its yield on entry; what it changed on objects is put back on exit (the save and
        restore such managers do; the code after the yield itself is not run)."""
        if not items:
            return self.exec_block(st, body)
        item, rest = items[0], items[1:]
        out: list[Outcome] = []
        for s, v in self.ev(st, item.context_expr):
            if s.raising is not None:
                out.append((s, "normal", None))  # exec_stmt turns it into the raise
                continue
            if not isinstance(v, _ContextManager):
                if item.optional_vars is not None:
                    self.assign(s, item.optional_vars, Unknown("context manager value"))
                out.extend(self._with_items(s, rest, body))
                continue
            for s2, kind, val, saved in self._enter(s, v, item.context_expr):
                if kind != "yield":
                    out.append((s2, kind, val))
                    continue
                if item.optional_vars is not None:
                    self.assign(s2, item.optional_vars, val or Const(None))
                for s3, k3, v3 in self._with_items(s2, rest, body):
                    _put_back(s3, saved)
                    out.append((s3, k3, v3))
        return out

    def _enter(self, st: PathState, cm: _ContextManager, node: ast.AST
               ) -> list[tuple[PathState, str, Value | None, _Saved]]:  # fmt: skip
        before = dict(st.heap)
        self.entering.append(len(st.frames) + 1)
        try:
            outs = self._invoke_uncached(st, cm.fn, cm.args, cm.kwargs, node)
        finally:
            self.entering.pop()
        entered = []
        for s, kind, val in outs:
            if kind == "yield":
                entered.append((s, kind, val, _changed_since(before, s)))
            elif kind in ("return", "normal"):  # a generator that never yields fails to enter
                entered.append((s, "raise", External("RuntimeError"), []))
            else:
                entered.append((s, kind, val, []))
        return entered

    def _type_hints(self, cls: ClassVal) -> Value:
        """`typing.get_type_hints(cls, include_extras=True)`: every field's annotation evaluated
        in its class's module (once per class; a string annotation is parsed first)."""
        hints: dict[str, Value] = {}
        for c in reversed(cls.mro()):
            for name in list(c.annotations):
                hints[name] = self._annotation(c, name)
        return Instance(None, {repr(k): v for k, v in hints.items()}, "dict")

    def _annotation(self, cls: ClassVal, name: str) -> Value:
        ann = cls.annotations[name]
        if isinstance(ann, Value):
            return ann
        value: Value = Unknown(f"annotation of {name}")
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                ann = ast.parse(ann.value, mode="eval").body
            except SyntaxError:
                ann = None  # type: ignore[assignment]
        if cls.module is not None and ann is not None:
            mod = cls.module
            self.ctx.append(_Ctx(mod, mod.relpath, f"{cls.qualname} annotations"))
            self.budget.push(MODULE_STMT_STEPS, f"the annotation of {name} took too long")
            try:
                paths = self.ev(PathState(envs=[mod.globals]), ann)
                if len(paths) == 1:
                    value = paths[0][1]
            except BudgetExceeded:
                pass
            finally:
                self.budget.pop()
                self.ctx.pop()
        cls.annotations[name] = value
        return value

    def _returned(self, st: PathState, outs: list[Outcome], always: str) -> Paths:
        """The values a call's paths return. A path that raised ends here unless a handler up
        the stack may catch its exception: then it carries the exception to that statement.
        When every path raised and none is caught, the call reads as an Unknown `always`."""
        out: Paths = []
        for s, k, v in outs:
            if k == "raise":
                exc = v or Unknown("an exception")
                if self._caught(s, exc):
                    s.raising = exc
                    out.append((s, Unknown(f"raised {describe(exc)}")))
                continue
            # _invoke turns "normal" ends into returns of Const(None): no value here is None
            out.append((s, cast(Value, v) if k in ("return", "normal") else Unknown(f"raised {v}")))
        return out or [(st, Unknown(always or "always raises"))]

    def _caught(self, st: PathState, exc: Value) -> bool:
        return any(self.exception_matches(exc, h, st) is not False
                   for handlers in self.catching for h in handlers)  # fmt: skip

    def _call_external(self, st: PathState, fn: External, args: list[Value],
                       kwargs: dict[str, Value], node: ast.AST | None) -> Paths:  # fmt: skip
        name = fn.name
        special = self._special_builtin(st, name, args, kwargs)
        if special is not None:
            return special
        if name in self.facts.calls:
            return [(st, self.facts.calls[name])]
        typed = typing_call(name, [self._resolve(a) for a in args])
        if typed is not None:
            return [(st, typed)]
        if name in records.TYPE_HINTS and args and isinstance(self._resolve(args[0]), ClassVal):
            return [(st, self._type_hints(cast(ClassVal, self._resolve(args[0]))))]
        if name in records.NAMES:
            rec = records.call(name, [self._resolve(a) for a in args], kwargs, st,
                               self.ctx[-1].module.name if self.ctx else "")  # fmt: skip
            if rec is not None:
                return [(st, rec)]
        if name == "routescope.namespace":  # summaries build plain objects with it
            return [(st, Instance(None, dict(kwargs), "object"))]
        if name in _IDENTITY_DECORATORS:
            fn_args = [
                a for a in args if isinstance(self._resolve(a), (FunctionVal, _Partial, ClassVal))
            ]
            return [(st, fn_args[0] if fn_args else External(f"{name}#decorator"))]
        if name.endswith("#decorator") and len(args) == 1:
            return [(st, args[0])]
        if name == "property" and args and isinstance(self._resolve(args[0]), FunctionVal):
            getter = cast(
                FunctionVal, self._resolve(args[0])
            )  # property(getter), built at run time
            return [(st, dataclasses.replace(getter, decorators=(*getter.decorators, "property")))]
        if name == "functools.partial" and args:
            return [(st, _Partial(self._resolve(args[0]), list(args[1:]), dict(kwargs)))]
        if name == "contextvars.ContextVar" and args:
            # a context variable: its value on this path, else its default
            default = {"default": kwargs["default"]} if "default" in kwargs else {}
            return [(st, Instance(None, {"name": args[0], **default}, _CONTEXT_VAR))]
        if name in ("re.match", "re.search", "re.fullmatch") and all(
            isinstance(a, Const) for a in args
        ):
            import re as _re

            try:
                m = getattr(_re, name[3:])(*(a.value for a in args))  # type: ignore[attr-defined]
            except Exception:
                return [(st, Unknown(f"{name}() raised"))]
            return [(st, Const(m, merge_origins(*args)))]
        env_value = self._env_call(name, args, kwargs, node)
        if env_value is not None:
            return [(st, env_value)]
        if name == "importlib.util.find_spec" and args and isinstance(args[0], Const) and \
                isinstance(args[0].value, str):  # fmt: skip
            found = self.index.has_module(args[0].value) or \
                self.facts.package_available(args[0].value)  # fmt: skip
            if found is False:
                return [(st, Const(None, (f"package {args[0].value} not importable",)))]
            if found:
                return [(st, External(f"{args[0].value}#spec"))]
        target = args[0].value if len(args) == 1 and isinstance(args[0], Const) else None
        if name == "importlib.import_module" and isinstance(target, str) and target[:1] != ".":
            mod = self._import_module(target)
            if isinstance(mod, _ImportFailure):
                return self._returned(st, [(st, "raise", mod.exc)], f"import of {target} fails")
            return [(st, self._resolve(mod))]
        if name in ("copy.copy", "copy.deepcopy") and len(args) == 1:
            return [(st, _copied(st, self._resolve(args[0]), name == "copy.deepcopy", 4))]
        if name in ("dataclasses.replace", "msgspec.structs.replace") and len(args) == 1:
            obj = self._resolve(args[0])
            if isinstance(obj, Instance) and obj.cls is not None and records.is_record(obj.cls):
                # a new record of the same class: its fields, the changes over them, and
                # the class's own __init__ / __post_init__ run again, as replace() does
                view = st.fields(obj)
                given = {n: view[n] for n in records.field_names(obj.cls) if n in view}
                return self.call(st, obj.cls, [], {**given, **kwargs}, node)
        fs_value = self._fs_call(name, args)
        if fs_value is not None:
            return [(st, fs_value)]
        if _builtin_exception(name) is not None:  # ValueError("...") stands for its class
            return [(st, External(name))]
        over = _over_containers(st, name, args, kwargs)
        if over is not None:
            return [(st, over)]
        if name != "isinstance":  # a list reads as its items on this path (isinstance: as a list)
            args = [snapshot(st, a) for a in args]
        builtin = call_builtin(name, args, kwargs)
        if builtin is not None:
            return [(st, builtin)]
        rule = self.facts.sink_for_external(name)
        if rule is not None:
            return [(st, self._hit_sink(st, name, rule, node, args, kwargs))]
        if name.startswith(_NON_TENSOR_TORCH):
            return [(st, Unknown(f"result of {name}()"))]
        if name in _PARAMETER and args and isinstance(args[0], Tensor):
            return [(st, args[0])]  # a parameter is its data
        if name in _FACTORIES:
            made = _made_tensor(name, args, kwargs, self._made_at(node))
            made.dtype = made.dtype or self.default_dtype
            return [(st, made)]
        if name == "torch.get_default_dtype" and self.default_dtype:
            return [(st, External(self.default_dtype))]
        if name.startswith("torch.") or name.startswith("triton"):
            inherited = _producer_of([*args, *kwargs.values()], st.claims)
            return [(st, Tensor(producer=inherited, made_at=self._made_at(node)))]
        return [(st, Unknown(f"result of {name}()"))]

    def _special_builtin(self, st: PathState, name: str, args: list[Value],
                         kwargs: dict[str, Value]) -> Paths | None:  # fmt: skip
        if name in ("getattr", "hasattr") and len(args) >= 2 and isinstance(args[1], Const):
            results = self.attribute(st, args[0], str(args[1].value))
            out: Paths = []
            for s, v in results:
                missing = isinstance(v, Unknown) and "has no attribute" in v.reason
                if name == "hasattr":
                    if isinstance(args[0], External):
                        full = f"{args[0].name}.{args[1].value}"
                        known = self.facts.attributes.get(f"hasattr({full})")
                        out.append((s, known or Unknown(f"hasattr({full})")))
                    else:
                        out.append(
                            (s, Const(not missing) if missing or not isinstance(v, Unknown) else v)
                        )
                else:
                    out.append((s, args[2] if missing and len(args) > 2 else v))
            return out
        if name in ("object.__getattribute__", "builtins.object.__getattribute__") and (
            len(args) == 2 and isinstance(args[1], Const)
        ):
            return self.attribute(st, args[0], str(args[1].value), hook=False)
        if name in ("object.__setattr__", "builtins.object.__setattr__") and (
            len(args) == 3 and isinstance(args[1], Const)
        ):
            name = "setattr"
        if name == "setattr" and len(args) == 3 and isinstance(args[1], Const):
            self.set_attribute(st, args[0], str(args[1].value), args[2])
            return [(st, Const(None))]
        if name == "super":
            return [(st, self._super())]
        if name == "callable" and len(args) == 1:
            a = self._resolve(args[0])
            if isinstance(a, (FunctionVal, ClassVal, BoundConst, _DictMethod, _ListMethod)):
                return [(st, Const(True))]
            if isinstance(a, Const):
                return [(st, Const(callable(a.value)))]
            if isinstance(a, Instance) and a.cls is not None:
                return [
                    (
                        st,
                        Const(a.cls.lookup("__call__") is not None or bool(a.cls.external_bases())),
                    )
                ]
        if name == "dict" and (
            not args or (isinstance(args[0], Instance) and args[0].label == "dict")
        ):
            fields = dict(st.fields(args[0])) if args and isinstance(args[0], Instance) else {}
            fields.update({repr(k): v for k, v in kwargs.items()})
            return [(st, Instance(None, fields, "dict"))]
        if name in ("list", "tuple") and len(args) <= 1 and not kwargs:
            items = seq_items(st, args[0]) if args else []
            if name == "list" and items is not None:
                return [(st, new_list(items))]  # a new list this path can change
            if name == "tuple" and items is not None and args and not isinstance(args[0], Const):
                if all(isinstance(i, Const) for i in items):
                    return [(st, Const(tuple(i.value for i in items), merge_origins(*items)))]  # type: ignore[attr-defined]
                return [(st, Instance(None, {str(i): v for i, v in enumerate(items)}, "tuple"))]
        if name == "type" and len(args) == 1:
            a = self._resolve(args[0])
            return [(st, a.cls if isinstance(a, Instance) and a.cls else Unknown("type()"))]
        return None

    def _super(self) -> Value:
        frame_self = getattr(self, "_self_stack", [])
        if not frame_self:
            return Unknown("super() outside a method")
        receiver, owner = frame_self[-1]
        if owner is None:
            return Unknown("super() without a class")
        mro = (receiver.cls if isinstance(receiver, Instance) and receiver.cls else owner).mro()
        rest = mro[mro.index(owner) + 1 :] if owner in mro else []
        proxy = ClassVal(f"super({owner.qualname})", None, None, tuple(rest))
        return _SuperProxy(proxy, receiver)

    def _fs_call(self, name: str, args: list[Value]) -> Value | None:
        """pathlib paths of known text are values; the server's filesystem queries about its
        model path are answered from the checkpoint routescope read (else Unknown)."""
        if name in _PATH_TYPES:
            if args and all(isinstance(a, Const) and isinstance(a.value, (str, PurePosixPath))
                            for a in args):  # fmt: skip
                return Const(PurePosixPath(*(a.value for a in args)), merge_origins(*args))  # type: ignore[attr-defined]
            return None
        if name == "glob.glob" and args and isinstance(args[0], Const):
            return self._listing(str(args[0].value), str)
        kind = _FS_QUERIES.get(name)
        if kind is None or len(args) != 1:
            return None
        return self.fs_query(kind, args[0], name)

    def _listing(self, pattern: str, kind: type) -> Value | None:
        """The checkpoint paths matching a glob pattern as a new list of `kind` (str for
        glob.glob, a path for Path.glob); None when the listing is not known."""
        cp = self.facts.checkpoint
        found = cp.listing(pattern) if cp is not None else None
        if found is None:
            return None
        origin = (f"checkpoint {cp.root}: {cp.origin}",)  # type: ignore[union-attr]
        return new_list([Const(kind(f), origin) for f in found])

    def fs_query(self, kind: str, arg: Value, what: str) -> Value:
        cp = self.facts.checkpoint
        if (
            cp is not None
            and isinstance(arg, Const)
            and isinstance(arg.value, (str, PurePosixPath))
        ):
            found = cp.query(kind, str(arg.value))
            if found is not None:
                return Const(found, (f"checkpoint {cp.root}: {cp.origin}",))
        return Unknown(f"result of {what}()")

    def _env_call(self, name: str, args: list[Value], kwargs: dict[str, Value],
                  node: ast.AST | None) -> Value | None:  # fmt: skip
        if name not in ("os.getenv", "os.environ.get", "os.environ.__getitem__",
                        "os.environ.setdefault"):  # fmt: skip
            return None
        if not args or not isinstance(args[0], Const):
            return Unknown("environment variable with an unknown name")
        var = str(args[0].value)
        if var in self.facts.env:
            return Const(self.facts.env[var], (f"--env {var}",))
        default = args[1] if len(args) > 1 else kwargs.get("default")
        if default is None and self.facts.env_unset_means_absent:
            return Const(None, (f"env {var} unset (assumed; give --env {var}=... to change)",))
        if default is None:
            return Unknown(f"environment variable {var} has no default (give --env {var}=...)",
                           (f"env {var}",))  # fmt: skip
        where = f"{self.current_file()}:{getattr(node, 'lineno', 0)}"
        if isinstance(default, Const):
            return Const(default.value, (f"env {var} unset: default at {where}",))
        return default

    def _made_at(self, node: ast.AST | None) -> tuple[str, str, int] | None:
        """Where decode-time torch ops made a tensor; tensors built while constructing the
        model (parameters, buffers) are not routing results."""
        if not self.tracing:
            return None
        return (self.current_function(), self.current_file(), getattr(node, "lineno", 0))

    def _hit_sink(self, st: PathState, name: str, rule: SinkRule, node: ast.AST | None,
                  args: list[Value], kwargs: dict[str, Value]) -> Tensor:  # fmt: skip
        """A routing-capable kernel was called. Its output belongs to whichever sink produced its
        tensor inputs (post-processing of routed ids), else it is itself the producer; tensors it
        receives that no sink wrote yet are its outputs written in place."""
        inputs = [*args, *kwargs.values()]
        inherited = _producer_of(inputs, st.claims)
        if inherited is not None:
            return Tensor(producer=inherited)
        shown = tuple((k, describe(v := self._resolve(kwargs[k])), v.origins)
                      for k in rule.args if k in kwargs)  # fmt: skip
        hit = SinkHit(name, rule.kind, self.current_file(), getattr(node, "lineno", 0),
                      self.current_function(), rule.id, shown)  # fmt: skip
        st.sinks.append(hit)
        for t in _tensors(inputs):
            if t.producer is None and id(t) not in st.claims:
                st.claims[id(t)] = hit  # written in place (preallocated outputs); path-local
                st.claimed.append(t)
        return Tensor(producer=hit)

    def _construct(self, st: PathState, cls: ClassVal, args: list[Value],
                   kwargs: dict[str, Value], node: ast.AST | None) -> Paths:  # fmt: skip
        if cls.is_enum:
            return [(st, self._enum_lookup(cls, args))]
        hook = self.construct_hooks.get(cls)
        if hook is not None:
            return cast(Paths, hook(st, args, kwargs, node))
        inst = Instance(cls, {}, cls.qualname.split(":")[-1])
        if cls in self.not_built or (
            self.only_module is not None
            and cls is not self.only_module
            and any(b in _MODULE_BASES for b in cls.external_bases())
        ):
            self._partly_built(inst)
            return [(st, inst)]  # built separately (the model body while running the model's init)
        if (
            any(
                d.endswith("dataclass") or d.endswith("dataclasses.dataclass")
                for d in cls.decorators
            )
            or any(d.endswith("NamedTuple") for d in cls.external_bases())
            or records.is_struct(cls)
        ):
            self._dataclass_init(cls, inst, args, kwargs)
            post = cls.lookup("__post_init__")
            if isinstance(post, FunctionVal):
                return [(s, inst) for s, _k, _v in self._invoke(st, post.bind(inst), [], {}, node)]
            return [(st, inst)]
        init = cls.lookup("__init__")
        if isinstance(init, FunctionVal):
            outs = self.join(cls.qualname, self._invoke(st, init.bind(inst), args, kwargs, node), 1)
            return [(s, v if s.raising is not None else inst)
                    for s, v in self._returned(st, outs, "")]  # fmt: skip
        return [(st, inst)]

    def _dataclass_init(self, cls: ClassVal, inst: Instance, args: list[Value],
                        kwargs: dict[str, Value]) -> None:  # fmt: skip
        names: list[str] = []
        for c in reversed(cls.mro()):
            for key in c.attrs:
                if key.startswith("__field__") and key[9:] not in names:
                    names.append(key[9:])
        for i, name in enumerate(names):
            if i < len(args):
                inst.fields[name] = args[i]
            elif name in kwargs:
                inst.fields[name] = kwargs[name]
            else:
                default = cls.lookup(name)
                if isinstance(default, records.FieldDefault) and default.factory is not None:
                    made = self.call(PathState(envs=[{}]), default.factory, [], {}, None)
                    inst.fields[name] = made[0][1] if len(made) == 1 else Unknown(f"{name} factory")
                    continue
                if isinstance(default, records.FieldDefault):
                    default = default.default
                if isinstance(default, Const) or (
                    default is not None and not isinstance(default, FunctionVal)
                ):
                    inst.fields[name] = default
                else:
                    inst.fields[name] = Unknown(f"dataclass field {name} without default")

    def _enum_lookup(self, cls: ClassVal, args: list[Value]) -> Value:
        if not args:
            return Unknown("enum()")
        arg = args[0]
        if isinstance(arg, EnumMember):
            return arg
        if isinstance(arg, Const):
            for m in cls.attrs.values():
                if (
                    isinstance(m, EnumMember)
                    and isinstance(m.value, Const)
                    and m.value.value == arg.value
                ):
                    return EnumMember(m.cls, m.name, Const(m.value.value, arg.origins))
            return Unknown(f"{cls.qualname} has no member with value {arg.value!r}")
        return Unknown(f"{cls.qualname}(unknown)", arg.origins)

    def _invoke(self, st: PathState, fn: FunctionVal, args: list[Value], kwargs: dict[str, Value],
                node: ast.AST | None) -> list[Outcome]:  # fmt: skip
        """Enter a framework function, or record it as the sink, or apply its summary."""
        decorated = self.facts.sink_for_decorators(fn.decorators)
        if decorated is not None and decorated.kind != "none":
            out = self._hit_sink(st, fn.qualname, decorated, node, args, kwargs)
            return [(st, "return", out)]
        if any(d.endswith("contextmanager") for d in fn.decorators):
            return [(st, "return", _ContextManager(fn, args, kwargs))]  # runs when entered
        memo_key = self._memo_key(fn, args, kwargs)
        if memo_key is not None and memo_key in self._memo:
            value, decisions, receiver = self._memo[memo_key]
            if receiver is fn.bound:  # the id in the key still names the same receiver
                st.decisions.extend(decisions)
                return [(st, "return", value)]
        if memo_key is not None:
            before = len(st.decisions)
            result = self._invoke_uncached(st, fn, args, kwargs, node)
            if len(result) == 1 and result[0][1] == "return" and result[0][0] is st:
                self._memo[memo_key] = (
                    _as_built(st, result[0][2] or Const(None), JOIN_DEPTH),
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
                    joined = head if all(_same(v, head) for v in vals) else _join_values(
                        vals, [o[0] for o in returned], len(returned), fn.qualname)  # fmt: skip
                    self._memo[memo_key] = (joined, [], fn.bound)
            return result
        return self._invoke_uncached(st, fn, args, kwargs, node)

    def join(
        self, where: str, outs: list[Outcome], threshold: int = JOIN_THRESHOLD
    ) -> list[Outcome]:
        """Merge the returning paths of a call when they reached the same routing kernels: the
        forks inside it did not change what routes, so one path (values joined) stands for all.
        Paths that reached different kernels are kept apart: they are the answer."""
        returning = [o for o in outs if o[1] == "return" and not o[0].stopped]
        if len(returning) <= min(threshold, self.budget.merge_at):
            return outs
        if self.budget.merge_at <= 1:  # set-up phases: join every agreeing path, state and all
            return self._join_states(where, returning) + [o for o in outs if o not in returning]
        groups: dict[tuple[Any, ...], list[Outcome]] = {}
        for o in returning:
            heap = tuple(sorted((k, tuple(sorted((n, _digest(v)) for n, v in d.items())))
                                for k, d in o[0].heap.items()))  # fmt: skip
            key = (tuple(id(h) for h in o[0].sinks), tuple(sorted(o[0].claims.items())), heap,
                   _shape(o[2]))  # fmt: skip
            groups.setdefault(key, []).append(o)
        merged: list[Outcome] = []
        for members in groups.values():
            first_state, _, first_val = members[0]
            vals = [m[2] for m in members]
            value = first_val if all(_same(v, first_val) for v in vals) else _join_values(
                vals, [m[0] for m in members], len(members), where)  # fmt: skip
            if len(members) > 1:
                first_state.assumptions.append(f"{len(members)} paths through {where} joined")
            merged.append((first_state, "return", value))
        return merged + [o for o in outs if o not in returning]

    def _join_states(self, where: str, returning: list[Outcome]) -> list[Outcome]:
        from routescope.analysis.stmts import merge_paths

        groups: dict[tuple[Any, ...], list[Outcome]] = {}
        for o in returning:
            key = (tuple(id(h) for h in o[0].sinks), _shape(o[2]), len(o[0].envs))
            groups.setdefault(key, []).append(o)
        out: list[Outcome] = []
        for members in groups.values():
            vals = [m[2] for m in members]
            first_val = vals[0]
            value = first_val if all(_same(v, first_val) for v in vals) else _join_values(
                vals, [m[0] for m in members], len(members), where)  # fmt: skip
            (state,) = merge_paths([m[0] for m in members], where, force=True)
            out.append((state, "return", value))
        return out

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

        arg_keys = [key(self._resolve(v)) for v in args]
        kw_keys = sorted((k, key(self._resolve(v))) for k, v in kwargs.items())
        if any(k is None for k in arg_keys) or any(k is None for _, k in kw_keys):
            return None
        return (fn.qualname, id(fn.bound), tuple(arg_keys), tuple(kw_keys))

    def _invoke_uncached(
        self,
        st: PathState,
        fn: FunctionVal,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.AST | None,
    ) -> list[Outcome]:
        summary = self.facts.summaries.get(fn.qualname)
        if summary is not None:
            return [(s, "return", v) for s, v in self._summary(st, fn, summary)]
        if self.facts.is_opaque(fn.qualname):
            if fn.qualname.endswith(".__init__") and isinstance(fn.bound, Instance):
                self._partly_built(fn.bound)  # what that constructor sets is not known
            return [(st, "return", Unknown(f"{fn.qualname} is not entered"))]
        if len(st.frames) >= self.budget.max_depth:
            st.stopped = f"call depth {self.budget.max_depth} exceeded at {fn.qualname}"
            return [(st, "stop", Unknown(st.stopped))]
        if any(f.function == fn.qualname for f in st.frames[-4:]) and \
                sum(f.function == fn.qualname for f in st.frames) >= 3:  # fmt: skip
            st.stopped = f"recursion in {fn.qualname} exceeded the budget"
            return [(st, "stop", Unknown(st.stopped))]
        depth = (len(st.frames), len(st.envs))
        env = self._bind(fn, args, kwargs)
        frame = Frame(fn.qualname, fn.module.relpath, fn.node.lineno, self.current_file(),
                      getattr(node, "lineno", 0), fn.decorators)  # fmt: skip
        st.frames.append(frame)
        st.trail.append(frame)
        st.envs.append(env)
        self.ctx.append(_Ctx(fn.module, fn.module.relpath, fn.qualname))
        saved_closure = getattr(self, "_closure_env", None)
        self._closure_env = fn.closure
        stack = getattr(self, "_self_stack", [])
        stack.append((fn.bound, fn.owner or self._owner_of(fn)))
        self._self_stack = stack
        try:
            outcomes: list[Outcome]
            if isinstance(fn.node, ast.Lambda):  # its body is one expression
                outcomes = [(s, "return", v) for s, v in self.ev(st, fn.node.body)]
            else:
                outcomes = self.exec_block(st, list(fn.node.body))
        except BudgetExceeded as exc:
            st.stopped = str(exc)
            outcomes = [(st, "stop", Unknown(str(exc)))]
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

    def _owner_of(self, fn: FunctionVal) -> ClassVal | None:
        recv = fn.bound
        if isinstance(recv, Instance) and recv.cls is not None:
            for c in recv.cls.mro():
                if any(
                    v is fn or (isinstance(v, FunctionVal) and v.node is fn.node)
                    for v in c.attrs.values()
                ):
                    return c
        if isinstance(recv, ClassVal):
            return recv
        return None

    def rule_value(self, text: str, fn: FunctionVal) -> Value:
        """A rule file's expression over the bindings, evaluated where `fn` is defined."""
        got = self._summary(PathState(envs=[{}]), fn, text)
        return got[0][1] if len(got) == 1 else Unknown(f"{text} has several values")

    def _summary(self, st: PathState, fn: FunctionVal, text: str) -> Paths:
        expr = _parsed_summary(text)
        env = self._bind(fn, [], {})
        env.update(self.facts.bindings)
        env["namespace"] = External("routescope.namespace")
        st.envs.append(env)
        self.ctx.append(_Ctx(fn.module, fn.module.relpath, fn.qualname))
        try:
            out = self.ev(st, expr)
        finally:
            self.ctx.pop()
        for s, _v in out:
            if (s.envs and s.envs[-1] is env) or len(s.envs) > 1:
                s.envs.pop()
        return out

    def _bind(
        self, fn: FunctionVal, args: list[Value], kwargs: dict[str, Value]
    ) -> dict[str, Value]:
        node = fn.node
        a = node.args
        params = [*a.posonlyargs, *a.args]
        env: dict[str, Value] = {}
        positional = list(args)
        if fn.bound is not None and params and "staticmethod" not in fn.decorators:
            env[params[0].arg] = fn.bound
            params = params[1:]
        defaults = list(a.defaults)
        first_default = len(params) - len(defaults)
        mod_state = PathState(envs=[fn.module.globals])
        self.ctx.append(_Ctx(fn.module, fn.module.relpath, fn.qualname))
        try:
            for i, p in enumerate(params):
                if i < len(positional):
                    env[p.arg] = positional[i]
                elif p.arg in kwargs:
                    env[p.arg] = kwargs[p.arg]
                elif fn.defaults is not None and p.arg in fn.defaults:
                    env[p.arg] = fn.defaults[p.arg]
                elif i >= first_default:
                    env[p.arg] = self._default(mod_state, defaults[i - first_default], fn, p.arg)
                else:
                    env[p.arg] = Unknown(f"argument {p.arg} not given")
            for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True):
                if p.arg in kwargs:
                    env[p.arg] = kwargs[p.arg]
                elif fn.defaults is not None and p.arg in fn.defaults:
                    env[p.arg] = fn.defaults[p.arg]
                elif d is not None:
                    env[p.arg] = self._default(mod_state, d, fn, p.arg)
                else:
                    env[p.arg] = Unknown(f"argument {p.arg} not given")
            if a.vararg:
                extra = positional[len(params) :]
                env[a.vararg.arg] = Instance(
                    None, {str(i): v for i, v in enumerate(extra)}, "tuple"
                )
            if a.kwarg:
                known = {p.arg for p in [*params, *a.kwonlyargs]}
                rest = {repr(k): v for k, v in kwargs.items() if k not in known}
                env[a.kwarg.arg] = Instance(None, rest, "dict")
        finally:
            self.ctx.pop()
        return env

    def _default(self, st: PathState, node: ast.expr, fn: FunctionVal, name: str) -> Value:
        got = self.ev(st.fork(), node)
        v = got[0][1] if got else Unknown("default")
        where = f"default of {name} at {fn.module.relpath}:{node.lineno}"
        return Const(v.value, (*v.origins, where)) if isinstance(v, Const) else v

    def exception_matches(self, exc: Value | None, handler: ast.ExceptHandler,
                          st: PathState) -> bool | None:  # fmt: skip
        """Whether `handler` catches `exc`: True, False, or None when the exception's class
        is not known well enough to say (an external class may derive from anything)."""
        if handler.type is None:
            return True
        types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        wanted = [self.source_text(t).split(".")[-1] for t in types]
        chain = _exception_chain(exc)
        if chain is None:
            return None
        for name in chain:
            for w in wanted:
                if name == w or _builtin_subclass(name, w):
                    return True
        # no match: certain when the whole ancestry is known (builtins and framework classes)
        return False if _all_known(exc) else None


# tensor methods whose result has the tensor's shape (and, for the second set, its dtype)
_SAME_DTYPE = {
    "contiguous",
    "clone",
    "detach",
    "sigmoid",
    "softmax",
    "abs",
    "neg",
    "exp",
    "relu",
    "sqrt",
    "log",
    "tanh",
    "mul",
    "add",
    "sub",
    "div",
    "masked_fill",
}
_SAME_SHAPE = _SAME_DTYPE | {"float", "half", "bfloat16", "to", "type_as", "int", "long"}
_METHOD_DTYPES = {"float": "torch.float32", "half": "torch.float16", "bfloat16":
                  "torch.bfloat16", "int": "torch.int32", "long": "torch.int64"}  # fmt: skip
_PARAMETER = {"torch.nn.Parameter", "torch.nn.parameter.Parameter", "nn.Parameter"}
# torch factories whose first arguments are the shape (torch.full: then the fill value)
_FACTORIES = {f"torch.{n}" for n in ("empty", "zeros", "ones", "full", "rand", "randn")}


def _made_tensor(name: str, args: list[Value], kwargs: dict[str, Value], made: Any) -> Tensor:
    """A new tensor with the shape and dtype its factory call gives it, where they are known."""
    dims: list[Value] | None = None
    first = args[0] if args else kwargs.get("size")
    if isinstance(first, Const) and isinstance(first.value, (tuple, list)):
        dims = [Const(d, first.origins) for d in first.value]
    elif isinstance(first, Instance) and first.cls is None and first.label in ("tuple", "list"):
        dims = list(first.fields.values())
    elif name != "torch.full":
        dims = [a for a in args if not isinstance(a, Const) or isinstance(a.value, int)]
        if len(dims) != len(args):
            dims = None
    elif first is not None:
        dims = [first]
    dtype = kwargs.get("dtype")
    dname = _torch_dtype_name(dtype) if dtype is not None else None
    return Tensor(tuple(dims) if dims is not None else None, dname, made_at=made, contiguous=True)


def _stride(t: Tensor, args: list[Value]) -> Value | None:
    """t.stride(i) of a row-major tensor of known trailing sizes."""
    if not t.contiguous or t.shape is None or len(args) != 1 or not isinstance(args[0], Const):
        return None
    i = args[0].value
    if not isinstance(i, int) or not -len(t.shape) <= i < len(t.shape):
        return None
    step = 1
    for d in t.shape[i % len(t.shape) + 1 :]:
        if not (isinstance(d, Const) and isinstance(d.value, int)):
            return None
        step *= d.value
    return Const(step)


def _torch_dtype_name(v: Value) -> str | None:
    return v.name if isinstance(v, External) and v.name.startswith("torch.") else None


_Saved = list[tuple[Instance, dict[str, Any]]]  # fields a context manager's entry changed


class _ContextManager(Value):
    """What calling a @contextmanager function returns: the generator, run when entered."""

    def __init__(self, fn: FunctionVal, args: list[Value], kwargs: dict[str, Value]) -> None:
        super().__init__()
        self.fn = fn
        self.args = args
        self.kwargs = kwargs


_ABSENT = object()


def _changed_since(before: dict[int, dict[str, Value]],
                   st: PathState) -> list[tuple[Instance, dict[str, Any]]]:  # fmt: skip
    """The object fields `st` wrote since `before` (a heap snapshot), with their old values."""
    out = []
    for key, fields in st.heap.items():
        prev = before.get(key)
        if prev is fields:
            continue
        obj = st.heap_objs[key]
        base = prev if prev is not None else obj.fields
        old = {n: base.get(n, _ABSENT) for n in {*fields, *base}
               if fields.get(n, _ABSENT) is not base.get(n, _ABSENT)}  # fmt: skip
        if old:
            out.append((obj, old))
    return out


def _put_back(st: PathState, saved: list[tuple[Instance, dict[str, Any]]]) -> None:
    for obj, old in saved:
        own = dict(st.fields(obj))
        for name, value in old.items():
            if value is _ABSENT:
                own.pop(name, None)
            else:
                own[name] = value
        st.replace_fields(obj, own)


# builtins that read their arguments as sequences of items
_SEQUENCE_BUILTINS = frozenset(
    {
        "list",
        "tuple",
        "reversed",
        "set",
        "frozenset",
        "sorted",
        "enumerate",
        "zip",
        "len",
        "any",
        "all",
        "min",
        "max",
        "sum",
    }
)


def _over_containers(st: PathState, name: str, args: list[Value],
                     kwargs: dict[str, Value]) -> Value | None:  # fmt: skip
    """A sequence builtin over tracked containers (lists, tuples, dicts whose items this path
    knows): on their items as constants when every item is one, else structurally (a new list,
    a tuple of the same objects). None when the pure builtin (or nothing) applies."""
    if name in ("list", "set") and not args and not kwargs:
        return new_list([]) if name == "list" else new_set([])  # mutable: tracked
    if name == "set" and len(args) == 1 and isinstance(args[0], Const):
        if not isinstance(args[0].value, (tuple, list, set, frozenset, str, range)):
            return None
        return _set_of([Const(x, args[0].origins) for x in ordered(args[0].value)])
    if name == "set" and len(args) == 1 and isinstance(args[0], Instance) and is_dict(args[0]) \
            and not kwargs:  # fmt: skip
        view = st.fields(args[0])
        rest = view.get(LIST_UNKNOWN)
        if isinstance(rest, OpenKeys):  # the keys of a joined dict: some only perhaps there
            members = {k: _key_value(k) for k in view if k != LIST_UNKNOWN}
            return Instance(None, {**members, LIST_UNKNOWN: rest}, "set")
    if name not in _SEQUENCE_BUILTINS or not args:
        return None
    if name != "list" and all(isinstance(a, Const) for a in args):
        return None
    seqs = [iteration(a, st) for a in args]
    if any(seq is None or len(seq) > SEQ_LIMIT for seq in seqs):
        return None
    items = [cast(list[Value], seq) for seq in seqs]
    if name == "list" and len(items) == 1 and not kwargs:
        return new_list(list(items[0]))
    if name == "set" and len(items) == 1 and not kwargs:
        return _set_of(items[0])
    if all(isinstance(i, Const) for seq in items for i in seq):
        consts = [Const(tuple(i.value for i in seq), merge_origins(*seq)) for seq in items]  # type: ignore[attr-defined]
        return call_builtin(name, cast(list[Value], consts), kwargs)
    if kwargs:
        return None
    first = items[0]
    if name == "len" and len(items) == 1:
        return Const(len(first))
    if name == "list" and len(items) == 1:
        return new_list(list(first))
    if name in ("tuple", "reversed") and len(items) == 1:
        return _tuple(first if name == "tuple" else first[::-1])
    if name == "enumerate" and len(items) == 1:
        return _tuple([_tuple([Const(i), v]) for i, v in enumerate(first)])
    if name == "zip":
        return _tuple([_tuple(list(row)) for row in zip(*items, strict=False)])
    return None


def _as_built(st: PathState, v: Value, depth: int) -> Value:
    """A container as this path built it, as an object of its own: what a cached function
    returns is read later on paths that do not share this one's writes."""
    if not (isinstance(v, Instance) and v.cls is None and depth > 0):
        return v
    view = st.fields(v)
    fields = {k: _as_built(st, x, depth - 1) for k, x in view.items()}
    if view is v.fields and all(fields[k] is view[k] for k in view):
        return v
    return Instance(None, fields, v.label)


def _set_of(items: list[Value]) -> Value:
    try:
        return new_set(items)
    except TypeError:
        return Unknown("set() of unhashable items")


def _tuple(items: list[Value]) -> Instance:
    return Instance(None, {str(i): v for i, v in enumerate(items)}, "tuple")


def _builtin_exception(name: str) -> type[BaseException] | None:
    import builtins

    cls = getattr(builtins, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, BaseException) else None


def _builtin_subclass(name: str, wanted: str) -> bool:
    a, b = _builtin_exception(name), _builtin_exception(wanted)
    return a is not None and b is not None and issubclass(a, b)


def _exception_chain(exc: Value | None) -> list[str] | None:
    """The short names of an exception's class and its ancestors, or None when unknown."""
    if isinstance(exc, External):
        return [exc.name.split(".")[-1]]
    cls = exc.cls if isinstance(exc, Instance) else exc if isinstance(exc, ClassVal) else None
    if cls is None:
        return None
    names = [c.qualname.split(":")[-1].split(".")[-1] for c in cls.mro()]
    names.extend(b.split(".")[-1] for b in cls.external_bases())
    return names


def _all_known(exc: Value | None) -> bool:
    """A framework exception class whose external bases are all builtin exceptions."""
    cls = exc.cls if isinstance(exc, Instance) else exc if isinstance(exc, ClassVal) else None
    if cls is None:
        return isinstance(exc, External) and _builtin_exception(exc.name) is not None
    return all(_builtin_exception(b.split(".")[-1]) is not None for b in cls.external_bases())


# torch namespaces whose calls answer questions about the platform rather than make tensors
_MODULE_BASES = records.MODULE_BASES
_PATH_TYPES = {"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "pathlib.PurePosixPath"}
_FS_QUERIES = {"os.path.exists": "exists", "os.path.isfile": "file", "os.path.isdir": "dir",
               "os.path.lexists": "exists"}  # fmt: skip
_PATH_METHODS = {"exists": "exists", "is_file": "file", "is_dir": "dir"}
_NON_TENSOR_TORCH = ("torch.cuda.", "torch._C.", "torch.version", "torch.backends.",
                     "torch.distributed.", "torch.compiler.", "torch._dynamo.",
                     "torch.library.")  # fmt: skip


def _tensors(vals: list[Value], depth: int = 2) -> list[Tensor]:
    out: list[Tensor] = []
    for v in vals:
        if isinstance(v, Tensor):
            out.append(v)
        elif isinstance(v, Instance) and v.label in ("tuple", "dict", "list") and depth > 0:
            out.extend(_tensors(list(v.fields.values()), depth - 1))
    return out


def _producer_of(vals: list[Value], claims: dict[int, SinkHit]) -> SinkHit | None:
    for t in _tensors(vals):
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


class _ImportFailure(Value):
    """An import of a package the facts say is absent: raising ImportError at that line."""

    def __init__(self, name: str) -> None:
        super().__init__((f"package {name} not importable",))
        self.exc = External("ModuleNotFoundError", self.origins)
        self.name = name


class _LazyModule(Value):
    def __init__(self, engine: Engine, name: str) -> None:
        super().__init__()
        self.engine = engine
        self.name = name

    def resolve(self) -> Value:
        mod = self.engine.load_module(self.name)
        return mod if mod is not None else Unknown(f"module {self.name} not found")


class _LazyName(Value):
    def __init__(self, engine: Engine, module: str, name: str) -> None:
        super().__init__()
        self.engine = engine
        self.module = module
        self.name = name

    def resolve(self) -> Value:
        mod = self.engine.load_module(self.module)
        if mod is None:
            return Unknown(f"module {self.module} not found")
        if self.name in mod.globals:
            v = mod.globals[self.name]
            return (
                v
                if not (
                    isinstance(v, _LazyName) and v.module == self.module and v.name == self.name
                )
                else Unknown("cycle")
            )
        sub = f"{self.module}.{self.name}"
        if self.engine.index.has_module(sub):
            return _LazyModule(self.engine, sub).resolve()
        if self.module in self.engine.loading:
            return Unknown(f"{self.name} not yet defined in {self.module} (import cycle)")
        if "__getattr__" in mod.globals:
            return self.engine.module_attr(mod, self.name)
        return Unknown(f"{self.module} has no name {self.name}")


_IDENTITY_DECORATORS = {"functools.lru_cache", "functools.cache", "functools.wraps",
                        "functools.cached_property", "typing.overload", "typing.final"}  # fmt: skip


def _copied(st: PathState, v: Value, deep: bool, depth: int) -> Value:
    """copy.copy / copy.deepcopy of a tracked object: a new object with this path's fields
    (deep: nested objects copied too, `depth` levels down); values are shared as Python does."""
    if not isinstance(v, Instance):
        if isinstance(v, (Const, EnumMember, External, FunctionVal, ClassVal, ModuleVal)):
            return v  # immutable, or copied as itself (copy of a class, a function, a module)
        return Unknown("copy of an unknown value", v.origins)
    fields = st.fields(v)  # this path's view (its own writes included)
    if deep:
        if depth <= 0:
            return Unknown("deepcopy nested too deeply")
        fields = {k: _copied(st, x, True, depth - 1) for k, x in fields.items()}
    return Instance(v.cls, dict(fields), v.label)


def _join_values(vals: list[Value | None], states: list[PathState], n: int, where: str) -> Value:
    """The return value of joined paths: containers built on each path (a dict of declared
    settings) are joined item by item; anything else that differs is Unknown."""
    return join_values(vals, states, f"differs between the {n} paths through {where}")


class _Partial(Value):
    """functools.partial(fn, *args, **kwargs)."""

    def __init__(self, fn: Value, args: list[Value], kwargs: dict[str, Value]) -> None:
        super().__init__()
        self.fn = fn
        self.args = args
        self.kwargs = kwargs


class _ConfigToDict(Value):
    """`config.to_dict` of the checkpoint's config (a transformers PretrainedConfig)."""

    def __init__(self, config: Instance) -> None:
        super().__init__()
        self.config = config


def _config_dict(st: PathState, config: Instance, depth: int) -> Value:
    """PretrainedConfig.to_dict(): its attributes as a dict, sub-configs as dicts."""
    if depth <= 0:
        return Unknown("to_dict() of a deeply nested config")
    fields: dict[str, Value] = {}
    for k, v in st.fields(config).items():
        if isinstance(v, Instance) and v.cls is None and v.label == "config":
            v = _config_dict(st, v, depth - 1)
        fields[repr(k)] = v
    return Instance(None, fields, "dict")


class _DictMethod(Value):
    """A method of a dict literal the engine tracks key by key (keys stored as repr)."""

    def __init__(self, target: Instance, name: str) -> None:
        super().__init__()
        self.target = target
        self.name = name

    def call(self, st: PathState, args: list[Value], kwargs: dict[str, Value]) -> Value:
        f = st.fields(self.target)
        if self.name in ("update", "pop", "setdefault"):
            f = dict(f)  # this path's own copy: forks may share the old one
            st.replace_fields(self.target, f)
        key = repr(args[0].value) if args and isinstance(args[0], Const) else None
        if self.name == "update":
            if args and isinstance(args[0], Instance) and args[0].label == "dict":
                update_view(f, st.fields(args[0]))
            elif args:
                f[LIST_UNKNOWN] = Unknown("dict updated from an unknown value")
            f.update({repr(k): v for k, v in kwargs.items()})
            return Const(None)
        if self.name in ("get", "pop", "setdefault") and key is not None:
            default = args[1] if len(args) > 1 else Const(None)
            if self.name == "setdefault" and key not in f:
                f[key] = default if key_absent(f, key) else Unknown("dict of unknown contents")
            missing = default if key_absent(f, key) else Unknown("dict of unknown contents")
            value = f.get(key, missing)
            if self.name == "pop":
                f.pop(key, None)
            return value
        if self.name == "get" and args and not f:  # an empty dict holds no key at all
            return args[1] if len(args) > 1 else Const(None)
        if self.name in ("keys", "values", "items") and LIST_UNKNOWN in f:
            return Unknown(f"dict.{self.name}() of a dict of unknown contents")
        if self.name == "keys":
            return Instance(None, {str(i): _key_value(k) for i, k in enumerate(f)}, "tuple")
        if self.name == "values":
            return Instance(None, {str(i): v for i, v in enumerate(f.values())}, "tuple")
        if self.name == "items":
            pairs: dict[str, Value] = {str(i): Instance(None, {"0": _key_value(k), "1": v}, "tuple")
                     for i, (k, v) in enumerate(f.items())}  # fmt: skip
            return Instance(None, pairs, "tuple")
        return Unknown(f"dict.{self.name}()")


_REGISTERS = {"register_buffer", "register_parameter", "add_module", "register_module"}


_CONTEXT_VAR = "ContextVar"


class _ContextVarMethod(Value):
    """get / set / reset of a contextvars.ContextVar: the value lives on the path (as a field
    the path writes), so a `with` block that sets it holds it until its reset."""

    def __init__(self, var: Instance, name: str) -> None:
        super().__init__()
        self.var, self.name = var, name

    def call(self, st: PathState, args: list[Value]) -> Value:
        view = st.fields(self.var)
        if self.name == "get":  # its value, else get()'s default, else its own default
            for got in (view.get("value"), args[0] if args else None, view.get("default")):
                if got is not None:
                    return got
            return Unknown(f"ContextVar {describe(view['name'])} has no value on this path")
        if self.name == "set" and len(args) == 1:
            token = Instance(None, {"old": view["value"]} if "value" in view else {}, "Token")
            st.write(self.var, "value", args[0])
            return token
        if self.name == "reset" and len(args) == 1 and isinstance(args[0], Instance):
            old = st.fields(args[0]).get("old")
            fields = dict(view)
            if old is None:  # back to no value of its own: the default answers again
                fields.pop("value", None)
            else:
                fields["value"] = old
            st.replace_fields(self.var, fields)
            return Const(None)
        return Unknown(f"ContextVar.{self.name}()")


class _Register(Value):
    """nn.Module.register_buffer / register_parameter / add_module of a module instance."""

    def __init__(self, target: Instance) -> None:
        super().__init__()
        self.target = target


class _SetMethod(Value):
    """A method of a tracked set: changes go to the path's own copy of its items."""

    _CHANGES = frozenset({"add", "discard", "remove", "update", "clear", "difference_update",
                          "intersection_update", "symmetric_difference_update", "pop"})  # fmt: skip
    _READS = frozenset({"union", "intersection", "difference", "symmetric_difference",
                        "issubset", "issuperset", "isdisjoint", "copy"})  # fmt: skip

    def __init__(self, target: Instance, name: str) -> None:
        super().__init__()
        self.target = target
        self.name = name

    def call(self, st: PathState, args: list[Value]) -> Value:
        current = snapshot(st, self.target)
        name = self.name
        known = isinstance(current, Const) and all(isinstance(a, Const) for a in args)
        if name in self._READS:
            if not known:
                return Unknown(f"set.{name}() of unknowns")
            try:
                got = getattr(current.value, name)(*(a.value for a in args))  # type: ignore[attr-defined]
            except Exception as exc:
                return Unknown(f"set.{name}() raised {type(exc).__name__}")
            return _set_of([Const(x) for x in ordered(got)]) if isinstance(got, set) else Const(got)
        if name not in self._CHANGES:
            return Unknown(f"set.{name}()")
        if not known or name == "pop":
            st.replace_fields(self.target, {LIST_UNKNOWN: Unknown(f"set.{name}() of unknowns")})
            return Unknown(f"set.{name}()")
        members = set(current.value)  # type: ignore[attr-defined]
        try:
            getattr(members, name)(*(a.value for a in args))  # type: ignore[attr-defined]
        except Exception as exc:
            return Unknown(f"set.{name}() raised {type(exc).__name__}")
        st.replace_fields(self.target, {repr(x): Const(x) for x in members})
        return Const(None)


class _ListMethod(Value):
    """A method of a list the engine tracks item by item: a change goes to the path's own copy
    of the items (copy-on-write), so sibling paths never see it."""

    def __init__(self, target: Instance, name: str) -> None:
        super().__init__()
        self.target = target
        self.name = name

    def call(self, eng: Engine, st: PathState, args: list[Value],
             kwargs: dict[str, Value]) -> Value:  # fmt: skip
        name = self.name
        items = seq_items(st, self.target)

        def store(new: list[Value] | None, why: str = "") -> None:
            st.replace_fields(
                self.target,
                {str(i): v for i, v in enumerate(new)}
                if new is not None
                else {LIST_UNKNOWN: Unknown(why or f"list.{name}()")},
            )

        if name == "clear" and not args:
            store([])
            return Const(None)
        if name == "copy" and not args:
            return new_list(items) if items is not None else _unknown_list()
        if name in ("append", "extend", "insert", "pop", "remove", "reverse", "sort"):
            result = self._change(eng, st, items, args, kwargs)
            if result is None:
                store(None)
                return Unknown(f"list.{name}() of unknown contents")
            new, value = result
            store(new)
            return value
        if name in ("index", "count") and len(args) == 1 and items is not None:
            hits = [eng.compare(ast.Eq(), snapshot(st, v), snapshot(st, args[0])) for v in items]
            if not all(isinstance(h, Const) for h in hits):
                return Unknown(f"list.{name}() of unknowns")
            flags = [bool(h.value) for h in hits]  # type: ignore[attr-defined]
            if name == "count":
                return Const(sum(flags))
            return Const(flags.index(True)) if True in flags else Unknown("list.index() raised")
        return Unknown(f"list.{name}()")

    def _change(self, eng: Engine, st: PathState, items: list[Value] | None, args: list[Value],
                kwargs: dict[str, Value]) -> tuple[list[Value], Value] | None:  # fmt: skip
        """The new items and the call's value; None when the contents are no longer known."""
        name = self.name
        if items is None:
            return None
        if name == "append" and len(args) == 1:
            return [*items, args[0]], Const(None)
        if name == "extend" and len(args) == 1:
            more = args[0]
            extra = (
                [Const(x, more.origins) for x in more.value]
                if isinstance(more, Const) and isinstance(more.value, (tuple, list, str))
                else seq_items(st, more)
            )
            return None if extra is None else ([*items, *extra], Const(None))
        if name == "insert" and len(args) == 2 and _index(args[0]) is not None:
            new = list(items)
            new.insert(cast(int, _index(args[0])), args[1])
            return new, Const(None)
        if name == "pop" and len(args) <= 1:
            at = _index(args[0]) if args else -1
            if at is None or not items or not -len(items) <= at < len(items):
                return None
            new = list(items)
            value = new.pop(at)
            return new, value
        if name == "remove" and len(args) == 1:
            for i, v in enumerate(items):
                hit = eng.compare(ast.Eq(), snapshot(st, v), snapshot(st, args[0]))
                if not isinstance(hit, Const):
                    return None
                if hit.value:
                    return [*items[:i], *items[i + 1 :]], Const(None)
            return None  # ValueError
        if name == "reverse" and not args:
            return items[::-1], Const(None)
        if name == "sort" and not args and not kwargs and all(isinstance(i, Const) for i in items):
            try:
                order = sorted(items, key=lambda i: cast(Const, i).value)
            except TypeError:
                return None
            return order, Const(None)
        return None


def _index(v: Value) -> int | None:
    if isinstance(v, Const) and isinstance(v.value, int) and not isinstance(v.value, bool):
        return v.value
    return None


def _unknown_list() -> Instance:
    return Instance(None, {LIST_UNKNOWN: Unknown("copy of a list of unknown contents")}, "list")


def _key_value(key: str) -> Value:
    import ast as _ast

    try:
        return Const(_ast.literal_eval(key))
    except (ValueError, SyntaxError):
        return Unknown("dict key")


class _TensorMethod(Value):
    def __init__(self, tensor: Tensor, name: str) -> None:
        super().__init__()
        self.tensor = tensor
        self.name = name


class _SuperProxy(Instance):
    def __init__(self, proxy: ClassVal, receiver: Value) -> None:
        super().__init__(proxy, {}, "super")
        self.receiver = receiver
