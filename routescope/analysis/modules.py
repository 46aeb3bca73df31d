"""Module name <-> file, and one parsed module (ast, source lines, or why it did not parse)."""

from __future__ import annotations

import ast
import copy
import hashlib
import io
import re
import time
import tokenize
import warnings
from collections import OrderedDict
from dataclasses import dataclass

from routescope.analysis.outline import (
    Outline,
    factories_of,
    lazy_tree,
    make_outline,
    read_outline,
    split_lines,
    write_outline,
)
from routescope.timing import spent

# Parsed trees by content hash. Measured on sglang 0.5.9 (DESIGN.md decision 2 follow-up):
# unpickling a cached ast of deepseek_v2.py (0.025 s) is no faster than ast.parse (0.025 s),
# so trees live in memory only; what the disk keeps is each file's outline (analysis/outline.py),
# so that later parses leave function bodies for when they are read.
_AST_MEMO: OrderedDict[str, tuple[ast.Module, Outline]] = OrderedDict()
_AST_MEMO_SIZE = 512


@dataclass(frozen=True, slots=True)
class ModuleInfo:
    """One module of a source tree: `tree` is None when `unparseable` says why."""

    name: str  # "sglang.srt.layers.moe.topk"
    relpath: str  # "sglang/srt/layers/moe/topk.py"
    is_package: bool  # an __init__.py
    sha256: str
    tree: ast.Module | None
    lines: tuple[str, ...]  # source lines, lines[0] is line 1
    unparseable: str | None
    factories: frozenset[str] | None = None  # its top-level decorator factories
    # `lines` are the parser's lines (str.splitlines also splits at a form feed and other
    # separators the tokenizer reads as text, which shifts the lines after one)
    aligned: bool = True

    def line(self, lineno: int) -> str:
        """The text of 1-based line `lineno` ("" past the end)."""
        return self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""

    def segment(self, node: ast.AST) -> str | None:
        """ast.get_source_segment of a node of this module, from its own lines only (given the
        whole file, it joins and splits every line of it for each node: 20 ms for one line of
        a 180 kB module). Where `lines` are not the parser's (a form feed), the node unparsed."""
        first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        if first is None or last is None or not 0 < first <= last <= len(self.lines):
            return None
        if not self.aligned:
            return ast.unparse(node)
        here = copy.copy(node)
        here.lineno, here.end_lineno = 1, last - first + 1  # type: ignore[attr-defined]
        return ast.get_source_segment("\n".join(self.lines[first - 1 : last]), here)


def module_name(relpath: str) -> str | None:
    """ "a/b/c.py" -> "a.b.c", "a/b/__init__.py" -> "a.b"; None for a path that is no module."""
    if not relpath.endswith(".py"):
        return None
    parts = relpath[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


def parse_module(name: str, relpath: str, data: bytes) -> ModuleInfo:
    """Decode (PEP 263 cookie, else UTF-8) and parse `data`; a failure is recorded, not raised."""
    digest = hashlib.sha256(data).hexdigest()
    is_package = relpath.endswith("/__init__.py") or relpath == "__init__.py"
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        reason = f"not valid text in its declared encoding (UTF-8 by default): {exc}"
        return ModuleInfo(name, relpath, is_package, digest, None, (), reason)
    lines = tuple(text.splitlines())
    parsed = _AST_MEMO.get(digest)
    if parsed is None:
        start = time.perf_counter()
        try:
            parsed = _parse(text, relpath, digest)
        except (SyntaxError, ValueError) as exc:
            where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) else ""
            reason = f"does not parse under this Python: {exc.__class__.__name__}{where}: {exc}"
            return ModuleInfo(name, relpath, is_package, digest, None, lines, reason)
        spent("parsing modules", time.perf_counter() - start)
        _AST_MEMO[digest] = parsed
        if len(_AST_MEMO) > _AST_MEMO_SIZE:
            _AST_MEMO.popitem(last=False)
    tree, outline = parsed
    aligned = _NOT_A_LINE_END_TO_THE_PARSER.search(text) is None
    return ModuleInfo(
        name, relpath, is_package, digest, tree, lines, None, outline.factories, aligned
    )


# what str.splitlines ends a line at and the tokenizer does not
_NOT_A_LINE_END_TO_THE_PARSER = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def _parse(text: str, relpath: str, digest: str) -> tuple[ast.Module, Outline]:
    """The file's tree: its function bodies left for when they are read where its outline is
    cached, else parsed whole (and the outline cached for the next time)."""
    split = split_lines(text)
    outline = read_outline(digest)
    if outline is not None:
        try:
            return lazy_tree(split, outline, relpath), outline
        except (SyntaxError, ValueError):
            pass  # an outline that does not fit the file: parsed whole, and made again
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escape sequences in framework code
        tree = ast.parse(text, filename=relpath)
    outline = make_outline(tree, factories_of(tree), split)
    write_outline(digest, outline)
    return tree, outline
