"""Modules and imports: module bodies evaluated once, lazy names, imports for side effects."""

from __future__ import annotations

import ast

from routescope.analysis.engine.base import Ctx, EngineBase, Outcome
from routescope.analysis.engine.budget import BudgetExceeded
from routescope.analysis.engine.containers import Entries, str_dict
from routescope.analysis.engine.join import join_states
from routescope.analysis.engine.modnames import (
    ANY,
    STAR,
    names_bound,
    names_bound_kind,
    names_read,
    names_read_kind,
)
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.sysmodules import ModuleTable, aliased
from routescope.analysis.engine.values import (
    Const,
    External,
    ExternalModule,
    FunctionVal,
    Instance,
    ModuleVal,
    Unknown,
    UnknownKind,
    Value,
    raises,
)
from routescope.analysis.outline import factories_of, file_summary

MODULE_STMT_STEPS = 80_000


class ImportsMixin(EngineBase):
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
                f"{info.relpath} does not parse: {info.unparseable}", kind=UnknownKind.UNSUPPORTED
            )
            return mod
        self._lines[info.relpath] = info.lines
        if info.aligned:
            self._aligned.add(info.relpath)
        self.loading.add(name)
        st = PathState(envs=[mod.globals])
        self.ctx.append(Ctx(mod, info.relpath, f"{name}:<module>"))
        # An import completes whatever phase triggered it: a phase's deadline must not leave a
        # module half-evaluated for the phases after it (statements have their own budget).
        outer, self.budget.local = self.budget.local, []
        # the body runs when a name from it is first read: the handlers around that read are
        # not around the import (an ImportError in the body fails the import, as at start-up)
        catching, self.catching = self.catching, []
        started = self.budget.steps
        try:
            for stmt in info.tree.body:
                self._module_stmt(mod, st, stmt)
                if mod.error is not None:  # the import raises: the rest of the body never runs
                    break
        finally:
            spent = self.budget.steps - started  # the importing phase does not pay for the import
            self.budget.local = [(limit + spent, why) for limit, why in outer]
            self.catching = catching
            self.ctx.pop()
            self.loading.discard(name)
        # Registries filled by decorators at import time (`@register_fused_func("none",
        # "flashinfer_trtllm")`): the server has imported the modules that register long before
        # it reads the registry (through import chains this engine resolves lazily), so the
        # modules beside this one that decorate with one of its decorator factories are loaded
        # with it, and a lookup finds what they registered.
        factories = info.factories if info.factories is not None else factories_of(info.tree)
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
                    mod.globals[sub.id] = Unknown(str(exc), kind=UnknownKind.BUDGET)
            return
        finally:
            self.budget.pop()
        normal = [s for s, kind, _ in outcomes if kind == "normal"]
        if not normal:
            raised = next(((s, v) for s, kind, v in outcomes if kind == "raise" and v), None)
            if raised is not None and raised[1] is not None:
                mod.error = raised[1]
                self.import_errors.append((mod.name, raised[1], raised[0].raised_at))
            return
        # an undecided branch at import time: one state covering both ways, objects included
        state = join_states(normal, f"depends on the undecided condition at {where}")
        names = dict(state.envs[0])
        self.commit(state)  # objects configured at import time keep their state
        if names is not mod.globals:
            mod.globals.clear()
            mod.globals.update(names)
        st.envs[0] = mod.globals
        del st.envs[1:]
        st.heap.clear()
        st.heap_objs.clear()
        st.memo.update(state.memo)

    def do_import(self, st: PathState, node: ast.Import | ast.ImportFrom) -> list[Outcome]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = self.through_sys_modules(alias.name)
                top = alias.name.split(".")[0]
                target = name if alias.asname else self.through_sys_modules(top)
                val = self.import_module(target)
                if isinstance(val, ImportFailure):
                    return [(st, "raise", val.exc)]
                st.env[alias.asname or top] = val
                self._for_side_effects(name, alias.asname or alias.name)
            return [(st, "normal", None)]
        base = self.through_sys_modules(self._absolute(node))
        raised: list[Outcome] = []
        for alias in node.names:
            if alias.name != "*":
                self._for_side_effects(f"{base}.{alias.name}", alias.asname or alias.name)
            if alias.name == "*":
                mod = self.load_module(base) if self.index.has_module(base) else None
                if mod is not None:
                    st.env.update({k: v for k, v in mod.globals.items() if not k.startswith("_")})
                continue
            val = self._import_name(base, alias.name)
            if isinstance(val, LazyName) and self.catching:
                val = self._name_or_failure(st, val)
            if isinstance(val, PerhapsMissing):  # one way it raises, the other goes on
                raised.append((st.fork(), "raise", val.missing.exc))
                val = val.name
            if isinstance(val, ImportFailure):
                return [*raised, (st, "raise", val.exc)]
            st.env[alias.asname or alias.name] = val
        return [*raised, (st, "normal", None)]

    def _name_or_failure(self, st: PathState, val: LazyName) -> Value:
        """`from m import name` where a handler may catch the ImportError (feature detection:
        `try: from pkg.tensor import SparseMatrix` / `except ImportError:`): Python runs m
        there and raises when it has no such name, submodule or module `__getattr__`, so m
        runs now (unless its top level surely binds the name) and is asked; where m may bind
        names no statement spells, a name it lacks perhaps raises (PerhapsMissing). Elsewhere
        the name stays lazy (m runs when it is first read)."""
        if val.module in self.loading or not self._caught(st, External("ImportError")):
            return val
        bound = self._names_bound(val.module)
        if ANY not in bound and (val.name in bound or "__getattr__" in bound):
            return val  # (its top level surely binds the name, or answers any: no need to run it)
        if self.index.has_module(f"{val.module}.{val.name}"):
            return val
        mod = self.load_module(val.module)
        if mod is None or mod.error is not None or "__getattr__" in mod.globals:
            return val
        if st.global_value(mod, val.name) is not None:
            return val
        missing = ImportFailure(f"{val.module}.{val.name}", "ImportError")
        return PerhapsMissing(val, missing) if ANY in bound else missing

    def sys_modules(self) -> ModuleTable:
        """`sys.modules`, the process's table of imported modules (see ModuleTable). What code
        writes into it reads back, and imports go through it as Python's do:
        `sys.modules["pkg"] = vendored_pkg` makes `import pkg.sub` load the vendored package's
        own `sub`. Every other key is unknown (a module the process may have imported)."""
        if self._sys_modules is None:
            rest = Unknown("a module the process may have imported", kind=UnknownKind.OPAQUE)
            self._sys_modules = ModuleTable(Entries({}, rest))
        return self._sys_modules

    def through_sys_modules(self, dotted: str) -> str:
        """The framework module an import of `dotted` loads (see sysmodules.aliased)."""
        table = self._sys_modules
        return dotted if table is None else aliased(table, dotted, self.resolved)

    def partly_built(self, obj: Instance) -> None:
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
        if got is None:  # (the walk would parse a lazily parsed file's bodies: kept on disk)
            info = self.index.module(module)
            tree = info.tree if info is not None else None
            if info is None or tree is None:
                got = frozenset()
            else:
                got = file_summary(info.sha256, names_read_kind(), lambda: names_read(tree))
            self._reads[module] = got
        return got

    def _names_bound(self, module: str) -> frozenset[str]:
        """What a framework module's top level binds (modnames.names_bound, kept on disk by the
        file's sha256: a module no trace ran is not parsed for it), a `from m import *` of a
        framework module read as what m binds."""
        got = self._bound.get(module)
        if got is not None:
            return got
        self._bound[module] = frozenset({ANY})  # (a star-import cycle, a file gone: not told)
        digest, relpath = self.index.digest(module), self.index.relpath(module)
        if digest is None or relpath is None:
            return self._bound[module]
        is_package = relpath.endswith("__init__.py")

        def compute() -> frozenset[str]:
            info = self.index.module(module)
            if info is None or info.tree is None:
                return frozenset({ANY})
            return names_bound(info.tree, info.lines, module, is_package)

        # (the module's name is part of the summary's kind: a star import is kept absolute)
        own = file_summary(digest, f"{names_bound_kind()}.{module}", compute)
        names = {n for n in own if not n.startswith(STAR)}
        for star in own - names:
            other = star[len(STAR) :]
            theirs = self._names_bound(other) if self.index.has_module(other) else {ANY}
            if "__all__" not in theirs:  # (with __all__ the star gives what it lists: not told)
                names |= {n for n in theirs if not n.startswith("_") or n == ANY}
        self._bound[module] = got = frozenset(names)
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

    def import_module(self, name: str) -> Value:
        if self.index.has_module(name):
            return LazyModule(self, name)
        avail = self.facts.package_available(name)
        if avail is False:
            return ImportFailure(name)
        if avail is None:
            self.facts.package_assumed(name)
        origin = (f"package {name.split('.')[0]} assumed importable",) if avail is None else ()
        return ExternalModule(name, origin)

    def _import_name(self, base: str, name: str) -> Value:
        full = f"{base}.{name}"
        if self.index.has_module(full):
            return LazyModule(self, full)
        if self.index.has_module(base):
            return LazyName(self, base, name)
        if full == "sys.modules":
            return self.sys_modules()
        avail = self.facts.package_available(full)
        if avail is False:
            return ImportFailure(full)
        return self.facts.attribute_fact(full) or External(full)

    def module_attr(self, mod: ModuleVal, name: str, st: PathState | None = None) -> Value:
        found = st.global_value(mod, name) if st is not None else mod.globals.get(name)
        if found is not None:
            return self.resolved(found)
        sub = f"{mod.name}.{name}"
        if self.index.has_module(sub):
            return self.resolved(LazyModule(self, sub))
        if name == "__dict__":  # the module's namespace (a LazyLoader copies it onto itself)
            return str_dict({k: v for k, v in mod.globals.items() if isinstance(k, str)})
        hook = mod.globals.get("__getattr__")
        if isinstance(hook, FunctionVal) and name not in self._in_module_getattr:
            self._in_module_getattr.add(name)  # PEP 562 lazy attributes (current_platform)
            try:
                # on the path itself: what the hook caches in the module's globals (the
                # platform object it made) is there for the next read, as one object
                on = st.fork() if st is not None else PathState(envs=[{}])
                outs = self.invoke(on, hook, [Const(name)], {}, None)
                got = [(s, v) for s, k, v in outs if k == "return" and v is not None]
            finally:
                self._in_module_getattr.discard(name)
            if len(got) == 1 and len(outs) == 1:
                if st is not None:
                    st.adopt(got[0][0])
                else:  # an import binding the name (`from m import x`) runs it once, at import
                    got[0][0].commit()
                return got[0][1]
            if got and all(v is got[0][1] for _, v in got):
                return got[0][1]
        if mod.name in self.loading:
            return LazyName(self, mod.name, name)
        return Unknown(f"{mod.name} has no attribute {name}", kind=UnknownKind.ABSENT)

    def resolved(self, v: Value) -> Value:
        for _ in range(16):
            if isinstance(v, (LazyModule, LazyName)):
                v = v.resolve()
            else:
                return v
        return Unknown("import cycle", kind=UnknownKind.UNSUPPORTED)

    # --- names and attributes ---------------------------------------------------------------


class PerhapsMissing(Value):
    """A name a module may or may not have when imported (it binds names dynamically)."""

    def __init__(self, name: LazyName, missing: ImportFailure) -> None:
        super().__init__()
        self.name, self.missing = name, missing


class ImportFailure(Value):
    """An import of a package the facts say is absent (ModuleNotFoundError at that line), or
    of a name its module does not have (ImportError)."""

    def __init__(self, name: str, exc: str = "ModuleNotFoundError") -> None:
        why = "package {} not importable" if exc == "ModuleNotFoundError" else "no {} to import"
        super().__init__((why.format(name),))
        self.exc = External(exc, self.origins)
        self.name = name


class LazyModule(Value):
    def __init__(self, engine: EngineBase, name: str) -> None:
        super().__init__()
        self.engine = engine
        self.name = name

    def resolve(self) -> Value:
        mod = self.engine.load_module(self.name)
        if mod is not None and mod.error is not None:
            return raises(mod.error, f"importing {self.name} raises")
        return (
            mod
            if mod is not None
            else Unknown(f"module {self.name} not found", kind=UnknownKind.ABSENT)
        )


class LazyName(Value):
    def __init__(self, engine: EngineBase, module: str, name: str) -> None:
        super().__init__()
        self.engine = engine
        self.module = module
        self.name = name

    def resolve(self) -> Value:
        mod = self.engine.load_module(self.module)
        if mod is None:
            return Unknown(f"module {self.module} not found", kind=UnknownKind.ABSENT)
        if mod.error is not None:
            return raises(mod.error, f"importing {self.module} raises")
        if self.name in mod.globals:
            v = mod.globals[self.name]
            return (
                v
                if not (isinstance(v, LazyName) and v.module == self.module and v.name == self.name)
                else Unknown("cycle", kind=UnknownKind.UNSUPPORTED)
            )
        sub = f"{self.module}.{self.name}"
        if self.engine.index.has_module(sub):
            return LazyModule(self.engine, sub).resolve()
        if self.module in self.engine.loading:
            return Unknown(
                f"{self.name} not yet defined in {self.module} (import cycle)",
                kind=UnknownKind.UNSUPPORTED,
            )
        if "__getattr__" in mod.globals:
            return self.engine.module_attr(mod, self.name)
        return Unknown(f"{self.module} has no name {self.name}", kind=UnknownKind.ABSENT)
