"""The markdown job summary (appended to $GITHUB_STEP_SUMMARY): a table per model x GPU."""

from __future__ import annotations

from routescope.check.findings import CheckResult, Finding, Outcome
from routescope.check.lock import entry_from_report
from routescope.render.check_common import deployment_label, model_label, shown_path

_ICON = {Outcome.PASS: "✅ pass", Outcome.FAIL: "❌ fail", Outcome.UNDECIDED: "⚠️ undecided"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(result: CheckResult) -> str:
    p = result.policy
    verdict = {0: "passed", 1: "failed", 2: "could not decide"}[int(result.exit_code)]
    out = [
        f"## routescope check {verdict}",
        "",
        f"Policy `{shown_path(p.path)}`, {deployment_label(p)}; lock "
        f"`{shown_path(result.lock_path)}`.",
        "",
        "| model | GPU | sink | kind | OEA | result |",
        "|---|---|---|---|---|---|",
    ]
    by_cell: dict[tuple[str, str], list[Finding]] = {}
    for f in result.findings:
        by_cell.setdefault((f.model, f.gpu), []).append(f)
    for cell in result.cells:
        sink = kind = oea = "—"
        if cell.report is not None:
            e = entry_from_report(cell.model, cell.gpu, cell.report)
            sink, kind = f"`{e.field('sink')}`", str(e.field("sink_kind"))
            oea = "insertable" if e.field("insertable") == "true" else "not insertable"
        found = by_cell.get((cell.model, cell.gpu), [])
        bad = [f for f in found if f.outcome is not Outcome.PASS]
        worst = (
            Outcome.FAIL
            if any(f.outcome is Outcome.FAIL for f in bad)
            else (Outcome.UNDECIDED if bad else Outcome.PASS)
        )
        rules = ", ".join(f.rule for f in bad)
        res = _ICON[worst] + (f" ({rules})" if rules else "")
        out.append(
            f"| {model_label(cell.model)} | {cell.gpu} | {_cell(sink)} | {kind} | {oea} | {res} |"
        )
    problems = [f for f in result.findings if f.outcome is not Outcome.PASS]
    for f in problems:
        out += [
            "",
            f"### {_ICON[f.outcome]}: {f.rule}, {model_label(f.model)} on {f.gpu}",
            "",
            _cell(f.message),
        ]
        if f.details:
            out += ["", "```", *f.details, "```"]
    if result.notes:
        out += ["", *[f"- {n}" for n in result.notes]]
    return "\n".join(out) + "\n\n"
