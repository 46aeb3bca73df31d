"""Check results: one Finding per model x GPU x rule, and the exit code they add up to."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from routescope.check.matrix import Cell
from routescope.check.policy import Policy
from routescope.errors import ExitCode


class Outcome(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    UNDECIDED = "undecided"  # the path is not decided, or the cell could not be analysed


@dataclass(frozen=True, slots=True)
class RuleInfo:
    id: str
    title: str
    help: str


RULES = (
    RuleInfo(
        "selected-path",
        "decode path decided",
        "every condition on the decode path is decided (dispatch status 'selected')",
    ),
    RuleInfo(
        "no-blockers",
        "nothing stops the deployment",
        "no kernel the decode path launches is one its provider's source builds for other GPUs "
        "(rules.forbid_blockers, default true)",
    ),
    RuleInfo(
        "forbid-sink-kinds",
        "no forbidden sink kind",
        "the top-k sink's kind is not in rules.forbid_sink_kinds",
    ),
    RuleInfo(
        "oea-insertable",
        "OEA insertable",
        "the OEA verdict finds a Python point where topk_ids and topk_weights exist",
    ),
    RuleInfo(
        "lock",
        "path matches routescope.lock",
        "sink, kind, top_k, output format and OEA insertion point equal the recorded ones",
    ),
)


@dataclass(frozen=True, slots=True)
class Frame:
    """One step of the framework's call path (for SARIF codeFlows)."""

    file: str
    line: int
    function: str


@dataclass(frozen=True, slots=True)
class Finding:
    model: str
    gpu: str
    rule: str  # a RULES id
    outcome: Outcome
    message: str  # one line
    details: tuple[str, ...] = ()  # before/after, decisions that changed, why
    line: int = 1  # the policy-file line this finding is about
    frames: tuple[Frame, ...] = ()


@dataclass(frozen=True, slots=True)
class CheckResult:
    policy: Policy
    lock_path: Path
    cells: tuple[Cell, ...]
    findings: tuple[Finding, ...]
    notes: tuple[str, ...] = ()
    lock_written: bool = False

    @property
    def exit_code(self) -> ExitCode:
        """1 when any rule failed (the gate is definitely closed); else 2 when any could not be
        decided; else 0. Never 0 with an undecided cell."""
        outcomes = {f.outcome for f in self.findings}
        if Outcome.FAIL in outcomes:
            return ExitCode.CHECK_FAILED
        if Outcome.UNDECIDED in outcomes or not self.findings:
            return ExitCode.ERROR
        return ExitCode.OK

    def count(self, outcome: Outcome) -> int:
        return sum(1 for f in self.findings if f.outcome is outcome)
