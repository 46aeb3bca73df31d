"""Exit codes and the one error type that the CLI turns into a clear line and exit 2."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Documented process exit codes (DESIGN.md, decision 9)."""

    OK = 0
    CHECK_FAILED = 1
    ERROR = 2  # could not decide, bad input, or an operational failure


class RoutescopeError(Exception):
    """A failure the user can act on: bad input, an unreachable registry, a corrupt cache.

    `subject` names the input at fault (a path, a model id, a GPU name); the CLI prints
    `routescope: error: <subject>: <message>` on one line and exits 2.
    """

    def __init__(self, subject: str, message: str) -> None:
        super().__init__(f"{subject}: {message}")
        self.subject = subject
        self.message = message
