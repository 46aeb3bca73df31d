"""The published JSON Schema of the report (routescope/schema/report.schema.json)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any


@cache
def report_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(
        (Path(__file__).parent.parent / "schema" / "report.schema.json").read_text("utf-8")
    )
    return schema


def validate_report(doc: dict[str, Any]) -> None:
    """Raise jsonschema.ValidationError when `doc` does not match the published schema."""
    import jsonschema

    jsonschema.Draft202012Validator(report_schema()).validate(doc)
