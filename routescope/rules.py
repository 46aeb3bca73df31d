"""Load the schema-validated rule files (rules/ in a checkout, routescope/_rules in a wheel)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

from routescope.errors import RoutescopeError
from routescope.fsutil import atomic_write_bytes, cache_root

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


def schema_path(name: str) -> Path:
    return rules_dir() / "schema" / f"{name}.json"


def load_rule_file(path: Path, schema: str) -> dict[str, Any]:
    """Parse one TOML rule file and validate it against `schema`; errors name the file.

    A file once found valid against the same schema (both by content) is not validated again:
    a stamp named by their hashes under the cache says so (schema validation was most of a
    warm start-up)."""
    try:
        raw = path.read_bytes()
        data: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RoutescopeError(str(path), f"cannot read rule file: {exc}") from None
    schema_raw = schema_path(schema).read_bytes()
    stamp = _stamp(raw, schema_raw)
    if stamp.is_file():
        return data
    import jsonschema

    try:
        jsonschema.validate(data, json.loads(schema_raw))
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise RoutescopeError(str(path), f"invalid rule file at {where}: {exc.message}") from None
    with contextlib.suppress(OSError):  # a read-only cache only costs validating again
        atomic_write_bytes(stamp, b"", durable=False)
    return data


def _stamp(rule: bytes, schema: bytes) -> Path:
    """Where the mark that `rule` is valid against `schema` lives, named by both contents."""
    digest = hashlib.sha256(len(rule).to_bytes(8, "big") + rule + schema).hexdigest()
    return cache_root() / "rules-valid" / digest


def rule_files(kind: str) -> list[Path]:
    return sorted((rules_dir() / kind).glob("*.toml"))
