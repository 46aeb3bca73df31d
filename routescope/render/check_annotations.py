"""GitHub Actions workflow commands: one `::error`/`::warning` per failed or undecided finding,
on the policy file's line for that model (escaping as documented for workflow commands)."""

from __future__ import annotations

from pathlib import Path

from routescope.check.findings import CheckResult, Outcome
from routescope.render.check_common import shown_path, title

_MAX_DETAILS = 12  # an annotation is a pointer; the job log has the whole diff


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, file: str, line: int, heading: str, message: str) -> str:
    props = f"file={escape_property(file)},line={line},title={escape_property(heading)}"
    return f"::{level} {props}::{escape_data(message)}"


def render(result: CheckResult) -> str:
    out = []
    file = shown_path(result.policy.path)
    for f in result.findings:
        if f.outcome is Outcome.PASS:
            continue
        level = "error" if f.outcome is Outcome.FAIL else "warning"
        details = list(f.details[:_MAX_DETAILS])
        if len(f.details) > _MAX_DETAILS:
            details.append(f"... {len(f.details) - _MAX_DETAILS} more lines in the job log")
        message = "\n".join((f.message, *details))
        out.append(command(level, file, f.line, title(f), message))
    return "".join(line + "\n" for line in out)


def render_error(path: Path, line: int, message: str) -> str:
    """The annotation for a policy error (exit 2 before anything ran)."""
    return command("error", shown_path(path), line, "routescope: bad policy", message) + "\n"
