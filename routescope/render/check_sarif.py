"""SARIF 2.1.0 for `routescope check --sarif`: a result per failed or undecided finding, on the
policy file's line, with the framework's call path to the top-k sink as a codeFlow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from routescope import __version__
from routescope.check.findings import RULES, CheckResult, Finding, Outcome
from routescope.render.check_common import shown_path

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _location(uri: str, base: str, line: int, text: str | None = None) -> dict[str, Any]:
    # a path outside the working directory is absolute: a file:// URI with no base
    artifact = (
        {"uri": Path(uri).as_uri()} if uri.startswith("/") else {"uri": uri, "uriBaseId": base}
    )
    loc: dict[str, Any] = {
        "physicalLocation": {"artifactLocation": artifact, "region": {"startLine": max(1, line)}}
    }
    if text is not None:
        loc["message"] = {"text": text}
    return loc


def _result(result: CheckResult, f: Finding, index: dict[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": index[f.rule],
        "level": "error" if f.outcome is Outcome.FAIL else "warning",
        "message": {"text": "\n".join((f.message, *f.details))},
        "locations": [_location(shown_path(result.policy.path), "SRCROOT", f.line)],
        "properties": {"model": f.model, "gpu": f.gpu, "outcome": f.outcome.value},
    }
    if f.frames:
        steps = [{"location": _location(fr.file, "FRAMEWORK", fr.line, fr.function)}
                 for fr in f.frames]  # fmt: skip
        out["codeFlows"] = [{
            "message": {"text": f"decode call path, {result.policy.framework} on {f.gpu}"},
            "threadFlows": [{"locations": steps}],
        }]  # fmt: skip
    return out


def render(result: CheckResult) -> str:
    """The SARIF log as JSON text (sorted keys, two-space indent, trailing newline)."""
    index = {r.id: i for i, r in enumerate(RULES)}
    rules = [
        {
            "id": r.id,
            "name": r.title.title().replace(" ", "").replace(".", ""),
            "shortDescription": {"text": r.title + "."},
            "fullDescription": {"text": r.help + "."},
            "defaultConfiguration": {"level": "error"},
        }
        for r in RULES
    ]
    run = {
        "tool": {
            "driver": {
                "name": "routescope",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": rules,
            }
        },
        "originalUriBaseIds": {
            "SRCROOT": {"description": {"text": "The repository holding the policy file."}},
            "FRAMEWORK": {"description": {"text": f"The source of {result.policy.framework}."}},
        },
        "results": [
            _result(result, f, index) for f in result.findings if f.outcome is not Outcome.PASS
        ],
        "columnKind": "unicodeCodePoints",
    }
    log = {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
