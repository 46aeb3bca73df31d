"""What `inspect` is doing, on one line of an interactive terminal, while it traces.

A trace takes seconds, and a blocked deployment's way-out search as many again for each
candidate it traces: at a terminal that was silence. The line is written on stderr, rewritten
as the work moves on and cleared before the answer is printed, so nothing of it stays on the
screen or reaches a pipe. Only where the CLI turns it on (`inspect`) and only on a terminal:
never in CI logs (CI set), a pipe, a dumb terminal, or a library caller's process.
"""

from __future__ import annotations

import os
import shutil
import sys

_on = False
_shown = False


def enable() -> None:
    """Show the status line if stderr is an interactive terminal (the CLI's `inspect`)."""
    global _on
    _on = sys.stderr.isatty() and not os.environ.get("CI") and os.environ.get("TERM") != "dumb"


def disable() -> None:
    """No status line from this process (a forked copy tracing beside its parent)."""
    global _on, _shown
    _on = _shown = False


def show(text: str) -> None:
    """Replace the status line with `text` (cut to the terminal's width)."""
    global _shown
    if not _on:
        return
    try:
        width = os.get_terminal_size(sys.stderr.fileno()).columns  # (the line's own terminal)
    except (OSError, ValueError, AttributeError):
        width = 0
    if width <= 0:  # (not known: a terminal of no size, as a pseudo-terminal may report)
        width = shutil.get_terminal_size((80, 24)).columns
    line = text if len(text) < width else text[: max(width - 2, 10)] + "…"
    sys.stderr.write("\r\x1b[K" + line)
    sys.stderr.flush()
    _shown = True


def clear() -> None:
    """Remove the status line, if one is shown (before the answer is printed)."""
    global _shown
    if _shown:
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()
        _shown = False
