"""Whether a called function is a generator: a function whose source lines never say `yield` is
not walked, and the answer is always the walk's."""

from __future__ import annotations

import ast
import glob
import sysconfig
from pathlib import Path

import pytest

from routescope.analysis import modules
from routescope.analysis.engine.generators import _walk_yields, is_generator
from routescope.analysis.modules import parse_module

SOURCE = """
def plain(a):
    return [a for a in range(3)]


def gen(a):
    if a:
        yield a


def outer():
    def inner():
        yield 1
    return inner


def says_it_only():
    return "yield"  # the word, not a yield: walked, and not a generator


class C:
    async def agen(self):
        await x
        yield 2
"""


def _defs(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {
        n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def test_the_answer_is_the_walks_with_lines_or_without() -> None:
    lines = tuple(SOURCE.splitlines())
    for lined in (True, False):
        defs = _defs(ast.parse(SOURCE))  # fresh nodes: nothing remembered between the two
        got = {name: is_generator(d, lines if lined else None) for name, d in defs.items()}
        assert got == {"plain": False, "gen": True, "outer": False, "inner": True,
                       "says_it_only": False, "agen": True}  # fmt: skip


def test_lines_that_are_not_this_defs_are_not_trusted() -> None:
    defs = _defs(ast.parse(SOURCE))
    shifted = ("",) * 3 + tuple(SOURCE.splitlines())  # as a form feed above would shift them
    assert is_generator(defs["gen"], shifted) is True  # its def line is not there: walked
    assert is_generator(defs["agen"], ("x",)) is True  # past the end: walked


def test_a_form_feed_marks_the_lines_as_not_the_parsers(isolated_cache: Path) -> None:
    modules._AST_MEMO.clear()
    plain = parse_module("m", "m.py", b"x = 1\ndef f():\n    yield 1\n")
    fed = parse_module("n", "n.py", b"x = 1\n\x0c\ndef f():\n    yield 1\n")
    assert plain.aligned and not fed.aligned


@pytest.mark.parametrize("stem", ["a", "c", "s", "t"])
def test_standard_library_functions_answer_as_the_walk(stem: str, isolated_cache: Path) -> None:
    files = sorted(glob.glob(f"{sysconfig.get_paths()['stdlib']}/{stem}*.py"))
    assert files
    for path in files:
        data = Path(path).read_bytes()
        modules._AST_MEMO.clear()
        info = parse_module("m", "m.py", data)
        if info.tree is None or not info.aligned:
            continue
        full = _defs(ast.parse(data))
        for node in ast.walk(info.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                twin = full[node.name]  # (a name defined twice: the walk tells them apart)
                if (twin.lineno, twin.col_offset) != (node.lineno, node.col_offset):
                    continue
                assert is_generator(node, info.lines) == _walk_yields(twin), (path, node.name)
