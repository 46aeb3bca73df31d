"""The one rich Console: colour only on a terminal, never when NO_COLOR is set."""

from __future__ import annotations

import os
import sys

from rich.console import Console


def console(stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    no_color = "NO_COLOR" in os.environ or not stream.isatty()
    return Console(
        file=stream,
        no_color=no_color,
        highlight=False,
        soft_wrap=False,
        # a terminal's own width; piped, $COLUMNS when set (as rich reads it), else 120
        width=None if stream.isatty() or "COLUMNS" in os.environ else 120,
    )
