"""Function bodies parsed when first read: once read, a lazily parsed file is the same tree as a
full parse, node for node, with every line and column; the outline is cached by content and a
bad one is never used."""

from __future__ import annotations

import ast
import hashlib
import os
import sysconfig
from pathlib import Path

import pytest

from routescope.analysis import modules, outline
from routescope.analysis.modules import parse_module

TRICKY = '''"""module doc"""
import os


def top(a,
        b=1) -> int:
    """doc
at column 0 inside a function
"""
    x = a + b
    return x


def one_line(): return 1


def sig_on_body_line(a,
                     b): return a; b


class T:
\tdef tabbed(self):
\t\treturn 1


class K:
    @staticmethod
    @other(
        1)
    def deco(x):
        @inner
        def nested(y):
            return y
        return nested

    async def coro(self):
        async with self as s:
            await s

    if os.name:
        def conditional(self):
            return 2
    else:
        def conditional(self):
            return 3


def register(key):
    def decorator(fn):
        return fn
    return decorator


try:
    def in_try():
        return os.sep
except ImportError:
    def in_try():
        return None


def last_line_without_newline():
    return "end"'''


def full_dump(text: str) -> str:
    return ast.dump(ast.parse(text), include_attributes=True)


def lazy_dump(text: str) -> tuple[str, int]:
    tree = ast.parse(text)
    lines = outline.split_lines(text)
    made = outline.make_outline(tree, outline.factories_of(tree), lines)
    lazy = outline.lazy_tree(lines, made, "<test>")
    return ast.dump(lazy, include_attributes=True), len(made.stubs)


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_a_tricky_file_reads_back_as_its_full_parse(ending: str) -> None:
    text = TRICKY.replace("\n", ending)
    got, stubbed = lazy_dump(text)
    assert got == full_dump(text)
    assert stubbed == 4  # top, deco, coro, register: the others' bodies are one line long


def test_files_of_the_standard_library_read_back_as_their_full_parse() -> None:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted([*(root / "json").glob("*.py"), *(root / "email").glob("*.py"),
                    *(root / "asyncio").glob("*.py"), root / "typing.py", root / "dataclasses.py",
                    root / "argparse.py"])  # fmt: skip
    assert len(files) > 40
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert lazy_dump(text)[0] == full_dump(text), path


def test_a_body_is_parsed_only_when_read_and_then_is_an_ordinary_function() -> None:
    lines = outline.split_lines(TRICKY)
    tree = ast.parse(TRICKY)
    made = outline.make_outline(tree, frozenset(), lines)
    lazy = outline.lazy_tree(lines, made, "<test>")
    top = next(n for n in lazy.body if isinstance(n, ast.FunctionDef) and n.name == "top")
    assert type(top) is outline.FunctionDef and type(top).__name__ == "FunctionDef"
    assert isinstance(top.body[0], ast.Expr) and len(top.body) == 3  # read: parsed now
    assert type(top) is ast.FunctionDef and top.end_lineno == 11


def _tricky_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, str]:
    """TRICKY's bytes and sha256, with a cache of its own and nothing parsed in memory."""
    monkeypatch.setenv("ROUTESCOPE_CACHE", str(tmp_path))
    modules._AST_MEMO.clear()
    data = TRICKY.encode()
    return data, hashlib.sha256(data).hexdigest()


def test_the_outline_is_cached_by_content_and_the_next_parse_is_lazy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, digest = _tricky_in(tmp_path, monkeypatch)
    first = parse_module("m", "m.py", data)
    assert outline.outline_path(digest).is_file()
    assert not any(type(n) is outline.FunctionDef for n in first.tree.body)  # type: ignore[union-attr]
    modules._AST_MEMO.clear()
    second = parse_module("m", "m.py", data)
    assert any(type(n) is outline.FunctionDef for n in second.tree.body)  # type: ignore[union-attr]
    assert second.factories == first.factories == frozenset({"register"})
    assert ast.dump(second.tree) == ast.dump(first.tree)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad",
    [b"not json", b'{"stubs": [[1, 2]], "factories": []}',
     b'{"stubs": [[5, 7, 4, 11, 5]], "factories": [], "check": "0"}',
     "fits no function"],
    ids=["corrupt", "malformed", "checksum", "does not fit the file"],
)  # fmt: skip
def test_a_bad_outline_is_never_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: bytes | str
) -> None:
    monkeypatch.setenv("ROUTESCOPE_CACHE", str(tmp_path))
    data = TRICKY.encode()
    digest = hashlib.sha256(data).hexdigest()
    path = outline.outline_path(digest)
    path.parent.mkdir(parents=True)
    if isinstance(bad, bytes):
        path.write_bytes(bad)
    else:  # well formed, its checksum right, but its lines hold no such function
        outline.write_outline(digest, outline.Outline(((20, 22, 8, 24, 9),), frozenset()))
        assert outline.read_outline(digest) is not None
    modules._AST_MEMO.clear()
    info = parse_module("m", "m.py", data)
    assert info.tree is not None
    assert ast.dump(info.tree, include_attributes=True) == full_dump(TRICKY)
    assert outline.read_outline(hashlib.sha256(data).hexdigest()) is not None  # made again


EDGES = {
    "a last line continued past the def's end": "def f():\n    a = 0\n    x = 1 \\\n  # c\ny = 2\n",
    "the same in a class": (
        "class C:\n    def f(self):\n        a = 0\n        x = 1 \\\n  # c\n    y = 2\n"
    ),
    "a form feed before the def": "x = 1\n\x0cdef f():\n    a = 0\n    return 1\n",
    "a form feed before a decorated def": "@d\n\x0cdef f():\n    a = 0\n    return 1\n",
}


@pytest.mark.parametrize("text", list(EDGES.values()), ids=list(EDGES))
def test_what_its_own_lines_cannot_parse_is_never_left_for_later(text: str) -> None:
    assert lazy_dump(text) == (full_dump(text), 0)


def test_a_def_its_own_lines_do_not_give_back_is_read_from_the_whole_file() -> None:
    text = EDGES["a last line continued past the def's end"]
    lines = outline.split_lines(text)
    forced = outline.Outline(((1, 2, 4, 3, 9),), frozenset())  # as if stubbed after all
    tree = outline.lazy_tree(lines, forced, "<test>")
    assert ast.dump(tree, include_attributes=True) == full_dump(text)


def test_a_file_summary_is_kept_by_content_and_a_bad_one_is_computed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from routescope.analysis.engine.modnames import names_read, names_read_kind

    data, digest = _tricky_in(tmp_path, monkeypatch)
    parse_module("m", "m.py", data)  # the outline made
    modules._AST_MEMO.clear()
    lazy = parse_module("m", "m.py", data).tree
    assert lazy is not None
    whole = names_read(ast.parse(TRICKY))
    assert {"a", "b", "x", "os"} <= whole
    calls: list[int] = []

    def compute() -> frozenset[str]:
        calls.append(1)
        return names_read(lazy)

    assert outline.file_summary(digest, names_read_kind(), compute) == whole
    modules._AST_MEMO.clear()
    again = parse_module("m", "m.py", data).tree
    assert again is not None and type(again.body[2]) is outline.FunctionDef
    assert outline.file_summary(digest, names_read_kind(), compute) == whole
    assert len(calls) == 1  # read back, not computed
    assert type(again.body[2]) is outline.FunctionDef  # and no body of the file was parsed
    path = outline.outline_path(digest, names_read_kind())
    for bad in (b"not json", path.read_bytes().replace(b'"a"', b'"zz"')):
        path.write_bytes(bad)
        assert outline.file_summary(digest, names_read_kind(), compute) == whole
    assert len(calls) == 3
    assert outline.file_summary(digest, "other-kind", lambda: frozenset({"q"})) == {"q"}


def test_the_summary_kind_is_names_reads_code_in_every_process() -> None:
    """Kept summaries are keyed by names_read's code: the same in every process (no constant
    whose marshalled order follows the string hash seed), so they are read back, not remade."""
    import subprocess
    import sys

    code = "from routescope.analysis.engine.imports import names_read_kind as k; print(k())"
    kinds = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert len(kinds) == 1 and next(iter(kinds)).startswith("names-read-")


def test_a_segment_is_what_get_source_segment_gives_from_the_whole_file() -> None:
    # (it reads only the node's own lines: non-ASCII columns, continued lines)
    text = (
        "x = 1\nclass A:\n    def f(self):\n        é, z = (1,\n  2)\n"
        "        if a  and \\\n   b: pass\ny = {'k': [1,\n 2]}\n"
    )
    mod = parse_module("m", "m.py", text.encode())
    nodes = [n for n in ast.walk(ast.parse(text)) if isinstance(n, (ast.expr, ast.stmt))]
    assert len(nodes) > 20
    for node in nodes:
        assert mod.segment(node) == ast.get_source_segment(text, node)
    assert mod.segment(ast.Name("x")) is None  # (a node made by hand has no place)
    # where the lines are not the parser's, the node as written again, never another line's text
    fed = "x = 1\x0c\ny = {'k': [1,\n 2]}\n"
    odd = parse_module("m", "m.py", fed.encode())
    assert not odd.aligned
    node = ast.parse(fed).body[1]
    assert odd.segment(node) == ast.unparse(node) == "y = {'k': [1, 2]}"


def test_walked_gives_ast_walk_order_once_per_tree_and_stays_bounded(monkeypatch) -> None:
    from routescope.analysis import walked as w

    tree = ast.parse(TRICKY)
    first = w.walked(tree)
    assert list(first) == list(ast.walk(tree))
    assert w.walked(tree) is first  # the same tree: walked once
    other = ast.parse(TRICKY)  # an equal tree is another tree
    assert w.walked(other) is not first and list(map(type, w.walked(other))) == list(
        map(type, first)
    )
    monkeypatch.setattr(w, "_SIZE", 2)
    w._WALKED.clear()
    for _ in range(5):
        w.walked(ast.parse("x = 1"))
    assert len(w._WALKED) <= 2


def test_walking_a_lazy_tree_reads_its_bodies(tmp_path: Path, monkeypatch) -> None:
    from routescope.analysis.walked import walked

    monkeypatch.setenv("ROUTESCOPE_CACHE", str(tmp_path))
    modules._AST_MEMO.clear()
    parse_module("m", "m.py", TRICKY.encode())  # (the outline is made)
    modules._AST_MEMO.clear()
    lazy = parse_module("m", "m.py", TRICKY.encode()).tree
    assert lazy is not None and any(type(n) is outline.FunctionDef for n in lazy.body)
    full = ast.parse(TRICKY)
    assert [ast.dump(n) for n in walked(lazy)] == [ast.dump(n) for n in ast.walk(full)]
