"""What a name resolves to, and the source text that proves it (file:line evidence)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Literal

SymbolKind = Literal["module", "class", "function", "assignment", "external"]


@dataclass(frozen=True, slots=True)
class Symbol:
    """A resolved name. For kind "external", `module` is the outside module ("torch") and
    `name` the attribute imported from it ("" for the module itself); relpath is None."""

    kind: SymbolKind
    module: str  # the defining module, absolute
    name: str  # qualified name inside `module`: "TopK", "TopK.forward_cuda", "" for a module
    relpath: str | None
    line: int | None
    node: ast.AST | None
    conditional: bool = False  # bound under if/try, or bound more than once
    decorators: tuple[str, ...] = ()

    @property
    def qualname(self) -> str:
        """ "pkg.mod:Class.method" (the form find_function takes)."""
        return f"{self.module}:{self.name}" if self.name else self.module

    @property
    def location(self) -> str:
        """ "pkg/layers/moe/topk.py:812", or the module name for an external symbol."""
        if self.relpath is None:
            return self.module
        return f"{self.relpath}:{self.line}" if self.line else self.relpath


@dataclass(frozen=True, slots=True)
class SourceSpan:
    """A definition's source: lines first..last (1-based, decorators included)."""

    relpath: str
    first: int
    last: int
    text: tuple[str, ...]

    def numbered(self) -> str:
        """The text with real line numbers in a left gutter."""
        width = len(str(self.last))
        return "\n".join(
            f"{n:>{width}}  {line}" for n, line in enumerate(self.text, start=self.first)
        )


def decorator_texts(node: ast.AST) -> tuple[str, ...]:
    """The decorators of a def or class as source text ("torch.compile(dynamic=True)")."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return tuple(ast.unparse(d) for d in node.decorator_list)
    return ()
