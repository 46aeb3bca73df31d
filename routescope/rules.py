"""Load the schema-validated rule files (rules/ in a checkout, routescope/_rules in a wheel)."""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

from routescope.errors import RoutescopeError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@cache
def rules_dir() -> Path:
    """Where the rules live: packaged next to the code, or at the top of a source checkout."""
    packaged = Path(__file__).parent / "_rules"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "rules"


def load_schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((rules_dir() / "schema" / f"{name}.json").read_text())
    return schema


def load_rule_file(path: Path, schema: str) -> dict[str, Any]:
    """Parse one TOML rule file and validate it against `schema`; errors name the file."""
    import jsonschema

    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RoutescopeError(str(path), f"cannot read rule file: {exc}") from None
    try:
        jsonschema.validate(data, load_schema(schema))
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise RoutescopeError(str(path), f"invalid rule file at {where}: {exc.message}") from None
    return data


def rule_files(kind: str) -> list[Path]:
    return sorted((rules_dir() / kind).glob("*.toml"))
