"""`routescope check` on the terminal: one line per model x GPU x rule, details under failures
(and under a selected path, its caveats)."""

from __future__ import annotations

from routescope.check.findings import CheckResult, Outcome
from routescope.render.check_common import deployment_label, model_label, shown_path

_MARK = {Outcome.PASS: "ok  ", Outcome.FAIL: "FAIL", Outcome.UNDECIDED: "??  "}


def render(result: CheckResult) -> str:
    """Plain text (no colour) for logs; ends with a one-line summary and the exit code."""
    p = result.policy
    out = [f"routescope check: {shown_path(p.path)} ({deployment_label(p)})"]
    for f in result.findings:
        out.append(f"{_MARK[f.outcome]} {model_label(f.model)} {f.gpu} {f.rule}: {f.message}")
        if f.outcome is not Outcome.PASS or f.rule == "selected-path":  # (a pass's: caveats)
            out += [f"       {line}" for line in f.details]
    out += [f"note: {n}" for n in result.notes]
    if result.lock_written:
        out.append(f"wrote {shown_path(result.lock_path)}")
    counts = ", ".join(f"{result.count(o)} {o.value}" for o in Outcome)
    out.append(f"{counts} -> exit {int(result.exit_code)}")
    return "\n".join(out) + "\n"
