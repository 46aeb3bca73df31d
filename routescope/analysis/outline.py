"""Function bodies parsed when first read, not with their module.

A trace executes every module it imports but calls a fifth of the functions they define (one
trace of the newest release read: 319 modules, 150k lines, 98k of them in function bodies, 19k
of those called). The first parse of a file records its outline (where each outermost
function's body lies, its decorator factories), kept in the cache by
the file's sha256 and the Python version. Later parses read the file with those bodies blanked
out (a third of the text), and each such function's `body` is parsed from the file's own lines
the first time anything reads it, at its own line and column: a lazy node becomes an ordinary
FunctionDef then, so code that reads trees (the engine, ast.walk, ast.unparse) sees the same
tree as a full parse would give, node for node, with every position.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import json
import sys
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routescope.fsutil import atomic_write_bytes, cache_root
from routescope.timing import spent

# the outline's format and the Python whose parser made it (positions could differ between them)
_VERSION = f"v3-{sys.implementation.name}-{sys.hexversion:x}"


# the fields of a statement that hold statements (an except's and a case's hold them in `body`)
BLOCKS = ("body", "orelse", "handlers", "finalbody", "cases")


@dataclass(frozen=True, slots=True)
class Outline:
    """Where a file's outermost function bodies lie and what summaries of the whole file say.
    stubs: (def line, body's first line, body's column, last line, last column) each."""

    stubs: tuple[tuple[int, int, int, int, int], ...]
    factories: frozenset[str]  # its top-level decorator factories


def outline_path(digest: str, kind: str = "") -> Path:
    """Where the outline of the file with this sha256 is kept; with `kind`, a summary of it."""
    name = f"{digest}.{kind}.json" if kind else f"{digest}.json"
    return cache_root() / "outlines" / _VERSION / digest[:2] / name


def _checksum(*parts: Any) -> str:
    """Over the file's sha256 and what is kept of it: a corrupt entry is never used."""
    return hashlib.sha256(json.dumps(list(parts)).encode()).hexdigest()


def _check(digest: str, data: dict[str, Any]) -> str:
    return _checksum(digest, data["stubs"], data["factories"])


def read_outline(digest: str) -> Outline | None:
    """The cached outline of the file with this sha256 (None: none, or unreadable)."""
    try:
        data = json.loads(outline_path(digest).read_text(encoding="utf-8"))
        if data.get("check") != _check(digest, data):
            return None
        stubs = tuple(tuple(int(x) for x in s) for s in data["stubs"])
        if not all(len(s) == 5 for s in stubs):
            return None
        return Outline(stubs, frozenset(str(n) for n in data["factories"]))  # type: ignore[arg-type]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # missing or corrupt: the file is parsed whole, and the outline made again


def write_outline(digest: str, outline: Outline) -> None:
    data: dict[str, Any] = {
        "stubs": [list(s) for s in outline.stubs],
        "factories": sorted(outline.factories),
    }
    data["check"] = _check(digest, data)
    text = json.dumps(data, separators=(",", ":"))
    with contextlib.suppress(OSError):  # a read-only cache: the next parse is whole again
        # no fsync: an entry torn by a crash fails its checksum and is made again
        atomic_write_bytes(outline_path(digest), text.encode(), durable=False)


def file_summary(digest: str, kind: str, compute: Callable[[], frozenset[str]]) -> frozenset[str]:
    """A set of strings computed from a file's whole tree, kept beside its outline by the file's
    sha256 and the Python version: a summary that walks every function body would otherwise
    parse a lazily parsed file's bodies again in every process. `kind` names the summary and
    its format (a change of what it computes gets a new kind); an entry that fails its checksum
    is computed again."""
    path = outline_path(digest, kind)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        names = data["names"]
        if data.get("check") == _checksum(digest, kind, names) and all(
            isinstance(n, str) for n in names
        ):
            return frozenset(names)
    except (OSError, ValueError, KeyError, TypeError):
        pass  # missing or corrupt: computed, and written again
    got = compute()
    names = sorted(got)
    text = json.dumps({"names": names, "check": _checksum(digest, kind, names)})
    with contextlib.suppress(OSError):  # a read-only cache: computed again next time
        atomic_write_bytes(path, text.encode(), durable=False)
    return got


def make_outline(tree: ast.Module, factories: frozenset[str], lines: list[str]) -> Outline:
    """The outline of a fully parsed file (`lines` as the tokenizer splits them)."""
    stubs = []
    for fn in outermost_functions(tree.body):
        first = fn.body[0]
        start = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", ()))])
        end, end_col = fn.end_lineno, fn.end_col_offset
        if start <= fn.lineno or end is None or end_col is None or end <= start:
            continue  # a body on the def's own line, or one line long: nothing to gain
        if lines[start - 1][: first.col_offset].strip():
            continue  # the signature ends on the body's first line
        if lines[fn.lineno - 1][: fn.col_offset].strip(" \t") or lines[end - 1].rstrip(
            "\r\n"
        ).endswith("\\"):
            continue  # a form feed before the def; a last line continued past the def's end
        stubs.append((fn.lineno, start, first.col_offset, end, end_col))
    return Outline(tuple(stubs), factories)


def outermost_functions(stmts: list[ast.stmt]) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The function definitions not inside another function: at module level, in class bodies
    and in the compound statements around them."""
    out: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    todo = list(stmts)
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(stmt)
            continue
        for field in BLOCKS:
            for sub in getattr(stmt, field, ()) or ():
                if isinstance(sub, (ast.ExceptHandler, ast.match_case)):
                    todo.extend(sub.body)
                elif isinstance(sub, ast.stmt):
                    todo.append(sub)
    return out


def decorator_factory(node: ast.stmt) -> bool:
    """`def register(key): def decorator(fn): ...; return decorator`: a function that returns
    a function it defines (what a registering decorator with arguments looks like)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    inner = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return any(
        isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and n.value.id in inner
        for n in node.body
    )


def factories_of(tree: ast.Module) -> frozenset[str]:
    """The file's top-level decorator factories."""
    return frozenset(n.name for n in tree.body if decorator_factory(n))  # type: ignore[attr-defined]


def split_lines(text: str) -> list[str]:
    """Lines as Python's tokenizer counts them (\\n, \\r\\n, \\r), each with its ending."""
    return io.StringIO(text, newline="").readlines()


def stubbed(lines: list[str], outline: Outline) -> str:
    """The file with each outlined body replaced by `...` on its first line, blank after."""
    out = list(lines)
    for _, start, col, end, _ in outline.stubs:
        out[start - 1] = out[start - 1][:col] + "...\n"
        for i in range(start, end):
            out[i] = "\n"
    return "".join(out)


def _set_body(node: ast.AST, value: list[ast.stmt]) -> None:
    node.__dict__["body"] = value


# a function's `body`, parsed when first read: then the node is an ordinary FunctionDef
LAZY_BODY = property(lambda node: _materialize(node), _set_body)


class FunctionDef(ast.FunctionDef):
    """A FunctionDef whose body is parsed when first read (then it is an ast.FunctionDef)."""

    __slots__ = ()
    body = LAZY_BODY


class AsyncFunctionDef(ast.AsyncFunctionDef):
    """An AsyncFunctionDef whose body is parsed when first read."""

    __slots__ = ()
    body = LAZY_BODY


_SOURCE = "_routescope_source"  # where a lazy node keeps its file's lines


def lazy_tree(lines: list[str], outline: Outline, filename: str) -> ast.Module:
    """Parse the stubbed file; its outlined functions' bodies are parsed when read."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(stubbed(lines, outline), filename=filename)
    ends = {(line, start): (end, end_col) for line, start, _, end, end_col in outline.stubs}
    found = 0
    for fn in outermost_functions(tree.body):
        first = fn.body[0]
        key = (fn.lineno, first.lineno)
        if key not in ends:
            continue
        fn.end_lineno, fn.end_col_offset = ends[key]
        fn.__dict__[_SOURCE] = (lines, filename)
        fn.__class__ = AsyncFunctionDef if isinstance(fn, ast.AsyncFunctionDef) else FunctionDef
        found += 1
    if found != len(ends):
        raise ValueError("the outline does not match the file")  # the caller parses it whole
    for stmt in tree.body:
        _end_of(stmt)
    return tree


def _end_of(node: ast.AST) -> tuple[int, int]:
    """Set a compound statement's end where its last statement ends (a blanked body ended it
    early), and return it; a lazy function's own end is its body's, set from the outline."""
    end = (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return end  # (a function's body is not blanked inside: only outermost ones are)
    for field in BLOCKS:
        for sub in getattr(node, field, ()) or ():
            if isinstance(sub, (ast.stmt, ast.ExceptHandler, ast.match_case)):
                end = max(end, _end_of(sub))
    if isinstance(node, (ast.stmt, ast.ExceptHandler)) and end > (
        node.end_lineno or 0,
        node.end_col_offset or 0,
    ):
        node.end_lineno, node.end_col_offset = end
    return end


_PARSING = threading.Lock()  # two threads reading one lazy body parse it once


def _materialize(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    with _PARSING:
        if _SOURCE not in node.__dict__:  # another thread parsed it meanwhile
            return node.__dict__["body"]  # type: ignore[no-any-return]
        return _parse_body(node)


def _parse_body(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """The def's own lines parsed at their place (indented ones under an `if 1:` line); where
    that does not give this def back, the whole file, and its def at this line and column."""
    begun = time.perf_counter()
    lines, filename = node.__dict__[_SOURCE]
    first, col, last = node.lineno, node.col_offset, node.end_lineno or node.lineno
    head = "\n" * (first - 1) if col == 0 else "\n" * max(first - 2, 0) + "if 1:\n"
    parsed = _the_def(head + "".join(lines[first - 1 : last]), filename, node)
    if parsed is None:
        parsed = _the_def("".join(lines), filename, node)
    if parsed is None:  # the file parsed whole before: it cannot come to this
        raise AssertionError(f"{filename}:{first}: a lazy function body did not parse back")
    node.__dict__["body"] = parsed.body  # before the class changes: no reader sees the stub
    del node.__dict__[_SOURCE]
    node.__class__ = type(parsed)
    spent("parsing function bodies when read", time.perf_counter() - begun)
    return parsed.body


def _the_def(
    text: str, filename: str, node: ast.FunctionDef | ast.AsyncFunctionDef
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The def in `text` at `node`'s line and column, with its name; None when there is none
    or the text does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = ast.parse(text, filename=filename)
    except (SyntaxError, ValueError):
        return None
    want = (node.lineno, node.col_offset, node.name, type(node).__mro__[1])
    for found in outermost_functions(module.body):
        if (found.lineno, found.col_offset, found.name, type(found)) == want:
            return found
    return None
