"""Line numbers of keys and values in a TOML file's text (tomllib keeps no positions)."""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(
    r"""^\s*((?:[A-Za-z0-9_\-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_\-]+|"[^"]*"|'[^']*'))*)\s*="""
)
_STRING = re.compile(r""""(?:[^"\\]|\\.)*"|'[^']*'""")


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(
        p.strip().strip("\"'")
        for p in re.split(r"\.(?=(?:[^\"']*[\"'][^\"']*[\"'])*[^\"']*$)", dotted)
    )


class KeyLines:
    """Where each key (as a dotted path from the document root) is first written, 1-based.

    A table header counts as the line of the table's key. Lines inside a multi-line array are
    never mistaken for keys.
    """

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self._at: dict[tuple[str, ...], int] = {}
        self._end: dict[tuple[str, ...], int] = {}
        table: tuple[str, ...] = ()
        depth = 0
        open_key: tuple[str, ...] | None = None
        for n, line in enumerate(self.lines, start=1):
            bare = _STRING.sub('""', _strip_comment(line))
            if depth == 0:
                header = _HEADER.match(line)
                if header and "=" not in bare:
                    table = _parts(header.group(1))
                    self._at.setdefault(table, n)
                    continue
                key = _KEY.match(line)
                if key:
                    open_key = table + _parts(key.group(1))
                    self._at.setdefault(open_key, n)
            depth = max(
                0, depth + bare.count("[") + bare.count("{") - bare.count("]") - bare.count("}")
            )
            if open_key is not None:
                self._end[open_key] = n
                if depth == 0:
                    open_key = None

    def line(self, *path: str) -> int | None:
        """The line of `path` (e.g. "tool", "routescope", "gpus"), or None when not written."""
        return self._at.get(tuple(path))

    def value_line(self, path: tuple[str, ...], literal: str) -> int | None:
        """The line where the string `literal` is written inside the value of `path`."""
        start = self._at.get(path)
        if start is None:
            return None
        end = self._end.get(path, start)
        for n in range(start, end + 1):
            for m in _STRING.finditer(self.lines[n - 1]):
                if m.group(0)[1:-1] == literal:
                    return n
        return start


def _strip_comment(line: str) -> str:
    """The line without a trailing comment, keeping a # that sits inside a string."""
    out, quote = [], ""
    for ch in line:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            break
        out.append(ch)
    return "".join(out)
