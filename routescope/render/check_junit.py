"""JUnit XML for `routescope check --junit`: one testcase per model x GPU x rule.

A failed rule is a <failure>; a rule that could not be decided is an <error>. No timings, so
the same inputs give the same bytes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from routescope.check.findings import CheckResult, Outcome
from routescope.render.check_common import model_label, shown_path


def render(result: CheckResult) -> str:
    n = len(result.findings)
    failures, errors = result.count(Outcome.FAIL), result.count(Outcome.UNDECIDED)
    counts = {"tests": str(n), "failures": str(failures), "errors": str(errors), "skipped": "0"}
    root = ET.Element("testsuites", {"name": "routescope check", **counts})
    name = f"routescope check {shown_path(result.policy.path)} ({result.policy.framework})"
    suite = ET.SubElement(root, "testsuite", {"name": name, **counts})
    for f in result.findings:
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": f"routescope.{model_label(f.model)}",
                "name": f"{f.gpu} {f.rule}",
                "file": shown_path(result.policy.path),
                "line": str(f.line),
            },
        )
        if f.outcome is Outcome.PASS:
            continue
        tag, kind = (
            ("failure", "check-failed") if f.outcome is Outcome.FAIL else ("error", "undecided")
        )
        child = ET.SubElement(case, tag, {"message": f.message, "type": kind})
        child.text = "\n".join((f.message, *f.details))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
