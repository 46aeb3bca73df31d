"""`function_at` descends only into the statements that cover the line (bodies it does not read
stay unparsed): the answer is the innermost covering def a walk of the whole tree finds."""

from __future__ import annotations

import ast
import glob
import sysconfig
from pathlib import Path
from types import SimpleNamespace

import pytest

from routescope.verdict import source


def _walked(defs: list[ast.FunctionDef | ast.AsyncFunctionDef], line: int) -> ast.AST | None:
    best: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for node in defs:  # (in the walk's order)
        if node.lineno <= line <= (node.end_lineno or node.lineno):
            best = node if best is None or node.lineno > best.lineno else best
    return best


@pytest.mark.parametrize("stem", ["a", "i", "t"])
def test_the_innermost_def_covering_each_line_is_the_walks(stem: str) -> None:
    files = sorted(glob.glob(f"{sysconfig.get_paths()['stdlib']}/{stem}*.py"))
    assert files
    for path in files:
        data = Path(path).read_bytes()
        tree = ast.parse(data)
        defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        info = SimpleNamespace(tree=tree, lines=())
        index = SimpleNamespace(module=lambda _name, info=info: info)
        for line in range(1, len(data.splitlines()) + 1, 7):
            got = source.function_at(index, "pkg/mod.py", line)  # type: ignore[arg-type]
            assert (got.node if got else None) is _walked(defs, line), (path, line)
