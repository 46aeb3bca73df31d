"""The LibCST codemod: one import at the top of the module, one guarded call after the point.

Format-preserving: every other byte of the framework file stays as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from routescope.errors import RoutescopeError


class _InsertAfter(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, first: int, last: int, expected: str, call: cst.BaseStatement) -> None:
        self.first, self.last, self.expected, self.call = first, last, expected, call
        self.found = 0
        self.module: cst.Module | None = None

    def visit_Module(self, node: cst.Module) -> bool:
        self.module = node
        return True

    def _insert(
        self, original: Sequence[cst.BaseStatement], body: Sequence[cst.BaseStatement]
    ) -> tuple[list[cst.BaseStatement], bool]:
        out: list[cst.BaseStatement] = []
        hit = False
        # Positions are keyed by the original nodes.
        for stmt, new in zip(original, body, strict=True):
            out.append(new)
            pos = self.get_metadata(PositionProvider, stmt, None)
            if pos is None or (pos.start.line, pos.end.line) != (self.first, self.last):
                continue
            assert self.module is not None
            text = self.module.code_for_node(stmt)
            if _norm(text) != _norm(self.expected):
                raise RoutescopeError(
                    f"line {self.first}",
                    "the insertion point's source differs from what the trace read; "
                    "re-run the trace on this tree",
                )
            out.append(self.call)
            hit = True
        return out, hit

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body, hit = self._insert(original_node.body, updated_node.body)
        if not hit:
            return updated_node
        self.found += 1
        return updated_node.with_changes(body=body)


def _norm(text: str) -> str:
    # The statement's text without its indentation or the comment lines LibCST attaches above.
    lines = [ln.strip() for ln in text.splitlines()]
    return "\n".join(ln for ln in lines if ln and not ln.startswith("#"))


def _after_imports(module: cst.Module, stmt: cst.BaseStatement) -> cst.Module:
    """`stmt` after the module's leading run of imports (docstring and __future__ first)."""
    body = list(module.body)
    at = 0
    for i, node in enumerate(body):
        small = node.body if isinstance(node, cst.SimpleStatementLine) else []
        if small and all(isinstance(s, (cst.Import, cst.ImportFrom, cst.Expr)) for s in small):
            at = i + 1
            continue
        break
    return module.with_changes(body=[*body[:at], stmt, *body[at:]])


def insert_call(
    source: str, first: int, last: int, expected: str, import_line: str, call: str
) -> str:
    """`source` with `import_line` after its imports and `call` right after the statement at
    lines first..last, whose text must equal `expected` (else RoutescopeError)."""
    module = cst.parse_module(source)
    tool = _InsertAfter(first, last, expected, cst.parse_statement(call))
    new = MetadataWrapper(module).visit(tool)
    if tool.found != 1:
        raise RoutescopeError(
            f"line {first}", "no statement spans exactly the insertion point's lines"
        )
    return _after_imports(new, cst.parse_statement(import_line)).code
