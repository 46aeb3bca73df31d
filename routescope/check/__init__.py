"""`routescope check`: the policy's model x GPU matrix, its rules and the lock -> a CheckResult.

Analysis only: rendering (text, annotations, summary, JUnit, SARIF) lives in routescope.render.
"""

from __future__ import annotations

from pathlib import Path

from routescope.check.evaluate import evaluate_cell, stale_entries
from routescope.check.findings import CheckResult, Finding, Outcome
from routescope.check.lock import entry_from_report, read_lock, render_lock
from routescope.check.matrix import run_matrix
from routescope.check.policy import Policy, load_policy
from routescope.fsutil import atomic_write_text

__all__ = ["CheckResult", "Finding", "Outcome", "load_policy", "run_check"]


def run_check(
    policy: Policy,
    lock_path: Path | None = None,
    *,
    update_lock: bool = False,
    offline: bool = False,
) -> CheckResult:
    """Analyse every cell, apply the rules, and compare with (or, with `update_lock`, write)
    the lock. A lock is written only when every cell's path is decided."""
    lock_path = lock_path or policy.path.parent / "routescope.lock"
    cells = run_matrix(policy, offline=offline)
    notes: list[str] = []
    findings: list[Finding] = []
    written = False
    if update_lock:
        decided = all(
            c.report is not None and c.report["dispatch"]["status"] == "selected" for c in cells
        )
        if decided:
            entries = [entry_from_report(c.model, c.gpu, c.report) for c in cells if c.report]
            atomic_write_text(lock_path, render_lock(policy.framework, entries))
            written = True
        else:
            notes.append(f"{lock_path.name} not written: not every cell has one selected path")
        for cell in cells:
            note = None if decided else "not written: not every cell has one selected path"
            findings += evaluate_cell(policy, cell, None, note)
        return CheckResult(policy, lock_path, tuple(cells), tuple(findings), tuple(notes), written)
    lock = None
    note = None
    if lock_path.is_file():
        lock = read_lock(lock_path)
        if lock.framework != policy.framework:
            notes.append(
                f"{lock_path.name} was recorded with {lock.framework}; checking {policy.framework}"
            )
    else:
        note = f"no lock file {lock_path.name}; run `routescope check --update-lock` and commit it"
    for cell in cells:
        findings += evaluate_cell(policy, cell, lock, note)
    if lock is not None:
        findings += stale_entries(policy, cells, lock)
    return CheckResult(policy, lock_path, tuple(cells), tuple(findings), tuple(notes), written)
