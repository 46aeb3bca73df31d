"""Unified diffs with git-style a/ b/ paths: `git apply` and `patch -p1` both take them."""

from __future__ import annotations

import difflib


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def modified(path: str, old: str, new: str, context: int = 3) -> str:
    """The diff that turns `old` into `new` for the file at `path` (relative, wheel layout)."""
    body = difflib.unified_diff(
        _lines(old), _lines(new), f"a/{path}", f"b/{path}", n=context, lineterm="\n"
    )
    return f"diff --git a/{path} b/{path}\n" + "".join(body)


def added(path: str, text: str) -> str:
    """The diff that creates `path` holding `text` (which must end with a newline)."""
    lines = _lines(text)
    head = (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n"
        f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n"
    )
    return head + "".join("+" + ln for ln in lines)
