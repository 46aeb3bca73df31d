"""The OEA verdict rules (rules/oea/*.toml): constraint ids and each framework's names."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from routescope.rules import load_rule_file, rule_files


@dataclass(frozen=True, slots=True)
class Constraint:
    id: str  # "OEA101", stable
    name: str
    title: str
    doc: str


@dataclass(frozen=True, slots=True)
class OeaRules:
    constraints: dict[str, Constraint]  # by name
    frameworks: dict[str, dict[str, Any]]  # framework -> its table (tensors, calls, ...)
    files: dict[str, str]  # framework -> "rules/oea/NAME.toml"

    def framework(self, name: str) -> dict[str, Any] | None:
        return self.frameworks.get(name)


@cache
def load_oea_rules() -> OeaRules:
    """Every rules/oea/*.toml, validated against rules/schema/oea.json."""
    constraints: dict[str, Constraint] = {}
    frameworks: dict[str, dict[str, Any]] = {}
    files: dict[str, str] = {}
    for path in rule_files("oea"):
        data = load_rule_file(path, "oea")
        for c in data.get("constraint", []):
            constraints[c["name"]] = Constraint(c["id"], c["name"], c["title"], c["doc"])
        if "framework" in data:
            frameworks[data["framework"]] = data
            files[data["framework"]] = f"rules/oea/{path.name}"
    return OeaRules(constraints, frameworks, files)
