"""Apply a policy's rules and the lock to each cell of the matrix."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from routescope.check.findings import Finding, Frame, Outcome
from routescope.check.lock import (
    MAX_GUARD_LINES,
    Lock,
    LockEntry,
    cut_text,
    diff_entries,
    entry_from_report,
    short_function,
)
from routescope.check.matrix import Cell
from routescope.check.policy import BYPASSED, Policy
from routescope.report import FUSED_MOE_KERNEL, way_text


def _frames(report: dict[str, Any]) -> tuple[Frame, ...]:
    paths = report["dispatch"]["paths"]
    if not paths:
        return ()
    path = paths[0]
    frames = [Frame(f["file"], int(f["line"]), f["function"]) for f in path["frames"] if f["file"]]
    sink = path["sink"]
    if sink and sink.get("file"):
        frames.append(Frame(sink["file"], int(sink["line"]), f"{sink['name']} ({sink['kind']})"))
    return tuple(frames)


def evaluate_cell(
    policy: Policy, cell: Cell, lock: Lock | None, lock_note: str | None
) -> list[Finding]:
    """The findings for one cell: selected-path, the enabled rules, then the lock (unless
    `lock` is None and `lock_note` is None: the lock is being written)."""
    rules = ["selected-path"]
    if policy.forbid_blockers:
        rules.append("no-blockers")
    if policy.forbid_sink_kinds:
        rules.append("forbid-sink-kinds")
    if policy.require_oea_insertable:
        rules.append("oea-insertable")
    if lock is not None or lock_note is not None:
        rules.append("lock")
    line = policy.line(f"model:{cell.model}")

    def finding(
        rule: str,
        outcome: Outcome,
        message: str,
        details: tuple[str, ...] = (),
        frames: tuple[Frame, ...] = (),
    ) -> Finding:
        return Finding(cell.model, cell.gpu, rule, outcome, message, details, line, frames)

    if cell.report is None:
        error = f"could not be analysed: {cell.error}"
        return [finding(r, Outcome.UNDECIDED, error) for r in rules]
    dispatch = cell.report["dispatch"]
    frames = _frames(cell.report)
    entry = entry_from_report(cell.model, cell.gpu, cell.report)
    out: list[Finding] = []
    if dispatch["status"] == "selected":
        caveats = tuple(f"weights (said, not decided): {w}" for w in dispatch.get("weights", []))
        out.append(
            finding(
                "selected-path",
                Outcome.PASS,
                f"path selected: {_path_text(entry)}",
                caveats,
                frames=frames,
            )
        )
    else:
        why: list[str] = [
            f"{u['file']}:{u['line']}: {u['condition']} ({u.get('undecided_because') or '?'})"
            for u in dispatch.get("undecided", [])
        ] + [f"incomplete: {i}" for i in dispatch.get("incomplete", [])]
        outcome = Outcome.FAIL if policy.require_selected_path else Outcome.UNDECIDED
        out.append(
            finding(
                "selected-path",
                outcome,
                "the deployment stops before decode (status blocked)"
                if dispatch["status"] == "blocked"
                else f"decode path not decided (status {dispatch['status']})",
                tuple(why),
            )
        )
    blockers = cell.report.get("blockers") or []
    blocked = None
    if policy.forbid_blockers and blockers:  # (a step that raises blocks whatever follows it)
        stops = tuple(
            f"{b['where']}: {b['why']}"
            + (
                f"; way out: {way_text(b['way_out'])}"
                if (b.get("way_out") or {}).get("flags")
                else ""
            )
            for b in blockers
        )
        blocked = finding("no-blockers", Outcome.FAIL, f"blocked: {blockers[0]['what']}", stops,
                          frames)  # fmt: skip
    if dispatch["status"] != "selected":
        return out + [
            blocked
            if r == "no-blockers" and blocked is not None
            else finding(r, Outcome.UNDECIDED, "the decode path is not decided")
            for r in rules[1:]
        ]
    if policy.forbid_blockers:
        out.append(blocked or finding("no-blockers", Outcome.PASS, "no blocker found",
                                      frames=frames))  # fmt: skip
    if "forbid-sink-kinds" in rules:
        kind = entry.field("sink_kind") or BYPASSED
        bad = kind in policy.forbid_sink_kinds or (
            kind == FUSED_MOE_KERNEL and BYPASSED in policy.forbid_sink_kinds
        )
        msg = f"sink {entry.field('sink')} is of kind {kind}" + (
            ", which the policy forbids" if bad else ""
        )
        out.append(
            finding("forbid-sink-kinds", Outcome.FAIL if bad else Outcome.PASS, msg, frames=frames)
        )
    if "oea-insertable" in rules:
        verdict = cell.report.get("verdict") or {}
        ok = verdict.get("insertable") is True
        details: tuple[str, ...] = ()
        switch = verdict.get("switch")
        if not ok and switch:
            flag, now = switch.get("flag"), switch.get("current")
            details = (f"switch: {flag} {switch.get('suggest')} (now {now})",)
        point = verdict.get("insertion_point") or {}
        where = (  # as inspect says it: the line, then the function by its short name
            f"{point['file']}:{point['line']} in {point['function'].rpartition(':')[2]}"
            if point.get("file") and point.get("function") and point.get("line")
            else str(entry.field("insertion_point"))
        )
        msg = (
            f"OEA insertable after {where}"
            if ok
            else f"OEA not insertable: {verdict.get('why', 'no verdict')}"
        )
        out.append(
            finding("oea-insertable", Outcome.PASS if ok else Outcome.FAIL, msg, details, frames)
        )
    if "lock" in rules:
        out.append(_lock_finding(cell, entry, lock, lock_note, finding, frames))
    return out


def _path_text(e: LockEntry) -> str:
    provider = e.field("sink_provider")
    return f"{e.field('sink')} ({e.field('sink_kind')}{', ' + provider if provider else ''})"


def _lock_finding(
    cell: Cell,
    entry: LockEntry,
    lock: Lock | None,
    note: str | None,
    finding: Callable[..., Finding],
    frames: tuple[Frame, ...],
) -> Finding:
    if lock is None:
        return finding("lock", Outcome.UNDECIDED, note or "no lock file")
    before = lock.entries.get((cell.model, cell.gpu))
    if before is None:
        return finding(
            "lock",
            Outcome.FAIL,
            "not in the lock file (new model or GPU); "
            "run `routescope check --update-lock` and review the change",
        )
    change = diff_entries(before, entry)
    if change is None:
        return finding(
            "lock", Outcome.PASS, f"matches the lock: {_path_text(entry)}", frames=frames
        )
    lines = [f"{name}: {old or '(none)'} -> {new or '(none)'}" for name, old, new in change.fields]
    why = [f"chosen before ({lock.framework}) by: {change.chose_before.shown()}"] if (
        change.chose_before) else []  # fmt: skip
    why += [f"chosen now by: {change.chose_after.shown()}"] if change.chose_after else []
    why += [
        f"changed: {cut_text(a.condition)}: {a.value} -> {b.value}"
        f"{f' [{b.parts[-1]}]' if b.parts else ''}"
        f"  ({a.at} -> {b.at}, {short_function(b.function)})"
        for a, b in change.changed
    ]
    # the guards that chose each kernel and those that flipped first, then each side its share
    # of the rest: where the old path went, and where the new one goes
    befores = [f"only before ({lock.framework}): {d.shown()}" for d in change.only_before]
    afters = [f"only after: {d.shown()}" for d in change.only_after]
    room = max(MAX_GUARD_LINES - len(why), 2)
    shown = why[:MAX_GUARD_LINES] + befores[: room // 2] + afters[: room - room // 2]
    hidden = len(why) + len(befores) + len(afters) - len(shown)
    why = [*shown, f"... and {hidden} more guards differ"] if hidden else shown
    lines += why
    what = (
        f"{_path_text(before)} -> {_path_text(entry)}"
        if _path_text(before) != _path_text(entry)
        else f"{_path_text(entry)}: {', '.join(name for name, _, _ in change.fields)}"
    )
    msg = f"path changed: {what}"
    return finding("lock", Outcome.FAIL, msg, tuple(lines), frames)


def stale_entries(policy: Policy, cells: list[Cell], lock: Lock) -> list[Finding]:
    """Lock entries for a model x GPU the policy no longer lists: a change too."""
    live = {(c.model, c.gpu) for c in cells}
    return [
        Finding(
            m,
            g,
            "lock",
            Outcome.FAIL,
            "in the lock but no longer in the policy; run `routescope check --update-lock`",
            (),
            policy.line("models"),
        )
        for (m, g) in sorted(lock.entries)
        if (m, g) not in live
    ]
