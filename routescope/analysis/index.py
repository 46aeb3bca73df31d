"""Index of a SourceTree: modules parsed on demand, names resolved through imports, methods
looked up through base classes. The trace engine and `routescope source` read code through it.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import replace

from routescope.analysis.modules import ModuleInfo, module_name, parse_module
from routescope.analysis.namespace import Binding, bindings
from routescope.analysis.symbols import SourceSpan, Symbol, decorator_texts
from routescope.errors import RoutescopeError
from routescope.source.tree import SourceTree

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
# a top-level decorator that is a call: `@register(...)` or `@pool.register(...)` -> "register"
_DECORATOR_CALL = re.compile(rb"^@(?:\w+\.)*(\w+)\(", re.M)


def _decorator_calls(text: bytes) -> frozenset[str]:
    return frozenset(m.decode() for m in _DECORATOR_CALL.findall(text))


class Index:
    """Modules and symbols of `tree`; each file is read and parsed when first asked for."""

    def __init__(self, tree: SourceTree) -> None:
        self.tree = tree
        self._paths: dict[str, str] = {}
        for relpath in tree.files():
            name = module_name(relpath)
            if name is not None:
                self._paths[name] = relpath
        self._modules: dict[str, ModuleInfo] = {}
        self._bindings: dict[str, dict[str, list[Binding]]] = {}
        self._decorators: dict[str, dict[str, frozenset[str]]] = {}  # directory -> module -> names

    def overlay(self, other: SourceTree, prefix: str) -> None:
        """Serve the directory `prefix` of another distribution beside this tree's modules (the
        library classes a generic backend builds a model from); its modules are parsed on
        demand like the others, and its files read from `other`."""
        from routescope.source.tree import OverlaidTree

        if any(relpath.startswith(prefix) for relpath in self._paths.values()):
            return  # already there (or the tree has it itself)
        self.tree = OverlaidTree(self.tree, other, prefix)  # type: ignore[assignment]
        for relpath in other.files():
            name = module_name(relpath) if relpath.startswith(prefix) else None
            if name is not None:
                self._paths[name] = relpath

    def module_names(self) -> list[str]:
        return sorted(self._paths)

    def has_module(self, name: str) -> bool:
        return name in self._paths

    def relpath(self, name: str) -> str | None:
        return self._paths.get(name)

    def module(self, name: str) -> ModuleInfo | None:
        """The parsed module `name`, or None when the tree has no such module."""
        info = self._modules.get(name)
        if info is None and name in self._paths:
            relpath = self._paths[name]
            info = parse_module(name, relpath, self.tree.read_bytes(relpath))
            self._modules[name] = info
        return info

    def digest(self, name: str) -> str | None:
        """The sha256 of module `name`'s file, read without parsing it (a summary kept by it
        is then read instead of the tree); None when the tree has no such module."""
        info = self._modules.get(name)
        if info is not None:
            return info.sha256
        relpath = self._paths.get(name)
        return hashlib.sha256(self.tree.read_bytes(relpath)).hexdigest() if relpath else None

    def decorator_users(self, module: str, names: frozenset[str]) -> list[str]:
        """The other modules of `module`'s directory that decorate a top-level definition with a
        call of one of `names` (`@register_fused_func("none", ...)` at column 0). A text scan:
        nothing is parsed, and each directory is read once."""
        relpath = self._paths.get(module)
        if relpath is None or not names:
            return []
        directory = relpath.rpartition("/")[0]
        found = self._decorators.get(directory)
        if found is None:
            beside = {
                n: r
                for n, r in self._paths.items()
                if r.rpartition("/")[0] == directory and r.endswith(".py")
            }
            self.tree.prefetch(beside.values())  # a remote tree: one transfer, not one per file
            found = {n: _decorator_calls(self.tree.read_bytes(r)) for n, r in beside.items()}
            self._decorators[directory] = found
        return sorted(n for n, used in found.items() if n != module and used & names)

    def unparseable(self) -> dict[str, str]:
        """Modules read so far that did not parse, with the reason."""
        return {n: m.unparseable for n, m in self._modules.items() if m.unparseable}

    def bindings(self, name: str) -> dict[str, list[Binding]]:
        """Top-level bindings of module `name` ({} when absent or unparseable)."""
        if name not in self._bindings:
            info = self.module(name)
            tree = info.tree if info else None
            self._bindings[name] = bindings(tree, name, info.is_package) if info and tree else {}
        return self._bindings[name]

    def resolve(self, module: str, name: str) -> Symbol | None:
        """What `name` means at the top level of `module`, following imports and re-exports
        to the defining module; an import from outside the tree gives an "external" symbol."""
        return self.resolved(module, name, set())

    def resolved(self, module: str, name: str, seen: set[tuple[str, str]]) -> Symbol | None:
        if (module, name) in seen:
            return None  # an import cycle that never defines the name
        seen.add((module, name))
        if not self.has_module(module):
            return Symbol("external", module, name, None, None, None)
        found = self.bindings(module).get(name)
        if not found:
            if self.has_module(f"{module}.{name}"):
                return self.module_symbol(f"{module}.{name}")
            for star in self.bindings(module).get("*", []):
                if star.module and self.has_module(star.module):
                    hit = self.resolved(star.module, name, seen)
                    if hit is not None:
                        return hit
            return None
        b = found[-1]
        conditional = b.conditional or len(found) > 1
        if b.kind in ("def", "class", "assign"):
            return self.symbol_of(module, b, conditional)
        assert b.module is not None
        hit = self._follow(b, name, seen)
        # an import under if/try makes the name conditional here, wherever it is defined
        return replace(hit, conditional=True) if hit and conditional else hit

    def _follow(self, b: Binding, name: str, seen: set[tuple[str, str]]) -> Symbol | None:
        assert b.module is not None
        if b.kind == "import":
            return self.module_symbol(b.module)
        imported = b.imported or name
        if not self.has_module(b.module):
            return Symbol("external", b.module, imported, None, None, None)
        # `from X import Y`: X's attribute Y first, else the submodule X.Y (as Python does)
        hit = self.resolved(b.module, imported, seen)
        if hit is None and self.has_module(f"{b.module}.{imported}"):
            hit = self.module_symbol(f"{b.module}.{imported}")
        return hit

    def module_symbol(self, name: str) -> Symbol:
        """A module as a symbol (external when it is not part of the tree)."""
        if not self.has_module(name):
            return Symbol("external", name, "", None, None, None)
        return Symbol("module", name, "", self._paths[name], 1, None)

    def symbol_of(self, module: str, b: Binding, conditional: bool | None = None) -> Symbol:
        """The definition one top-level `def`, `class` or assignment binding of `module` makes
        (`conditional`: whether the name may mean something else; default the binding's own)."""
        kind = {"def": "function", "class": "class", "assign": "assignment"}[b.kind]
        return Symbol(
            kind,  # type: ignore[arg-type]
            module,
            b.name,
            self._paths[module],
            b.line,
            b.node,
            b.conditional if conditional is None else conditional,
            decorator_texts(b.node),
        )

    def line_text(self, module: str, line: int) -> str:
        """Line `line` of `module`'s source, stripped ("" when it has none)."""
        info = self.module(module)
        return info.lines[line - 1].strip() if info and 0 < line <= len(info.lines) else ""

    def find(self, qualified: str) -> Symbol | None:
        """ "pkg.mod:Name.attr" -> the symbol, through re-exports, submodules and bases."""
        if ":" not in qualified:
            return self.module_symbol(qualified) if self.has_module(qualified) else None
        module, _, qual = qualified.partition(":")
        parts = qual.split(".")
        sym = self.resolve(module, parts[0])
        for part in parts[1:]:
            if sym is None:
                return None
            if sym.kind == "class":
                sym = self.lookup_method(sym, part)
            elif sym.kind == "module":
                sym = self.resolve(sym.module, part)
            else:
                return None
        return sym

    def find_function(self, qualified: str) -> Symbol | None:
        """Like find(), but only a function or method: "pkg.mod:func", "pkg.mod:Class.meth"."""
        sym = self.find(qualified)
        return sym if sym is not None and sym.kind == "function" else None

    def require_function(self, qualified: str) -> Symbol:
        """find_function(), raising a RoutescopeError that says what was found instead."""
        sym = self.find_function(qualified)
        if sym is None:
            module = qualified.partition(":")[0]
            what = "no such module" if not self.has_module(module) else "no such function"
            raise RoutescopeError(qualified, f"{what} in {self.tree.origin}")
        return sym

    def source(self, sym: Symbol) -> SourceSpan:
        """The source lines of a definition (decorators included) with real line numbers."""
        info = self.module(sym.module)
        node = sym.node
        if info is None or node is None or not hasattr(node, "lineno"):
            raise RoutescopeError(sym.qualname, "no source (external or a whole module)")
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        last = getattr(node, "end_lineno", None) or node.lineno
        return SourceSpan(info.relpath, first, last, info.lines[first - 1 : last])

    def lookup_method(self, cls: Symbol, name: str) -> Symbol | None:
        """`name` on class `cls` or the first base (C3 order) that defines it."""
        from routescope.analysis.classes import class_member, mro

        for klass in mro(self, cls):
            hit = class_member(klass, name)
            if hit is not None:
                return hit
        return None
