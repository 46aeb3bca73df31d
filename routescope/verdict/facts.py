"""Small readers over a report: router settings, decision inputs, evidence strings."""

from __future__ import annotations

from typing import Any


def setting(doc: dict[str, Any], name: str) -> tuple[Any, str, list[str]]:
    """A router setting as (Python value or None when not a literal, raw text, origins)."""
    router = (doc.get("dispatch") or {}).get("router") or {}
    item = router.get(name)
    if item is None:
        return None, "absent", []
    value = item["value"] if item.get("kind") == "constant" else None
    return value, str(item["repr"]), list(item["origins"])


def traced_value(doc: dict[str, Any], name: str) -> tuple[Any, str] | None:
    """A variable's value as the selected path's decisions read it (`name` exactly), with where:
    for what the router does not keep as a setting (0.5.20+ read the fused shared-expert count
    from the runtime context). None unless every reading agrees on one literal."""
    paths = (doc.get("dispatch") or {}).get("paths") or []
    if len(paths) != 1:
        return None
    seen: list[tuple[str, str, Any]] = []
    for d in paths[0]["decisions"]:
        for i in d.get("inputs", []):
            if i["expr"] == name:
                seen.append((i["repr"], f"{d['file']}:{d['line']}", i))
    if not seen or len({r for r, _, _ in seen}) != 1 or seen[0][2].get("kind") != "constant":
        return None
    text, at, item = seen[0]
    return item["value"], f"{at}: {name} = {text} (as the trace read it)"


def known(raw: str) -> bool:
    return raw not in ("absent",) and not raw.startswith("unknown")


def cite_setting(doc: dict[str, Any], name: str) -> str:
    _, raw, origins = setting(doc, name)
    where = "; ".join(origins) if origins else "as the router was built"
    return f"router {name} = {raw} ({where})"


def routing_field(doc: dict[str, Any], name: str) -> tuple[Any, str]:
    item = (doc.get("routing") or {}).get(name) or {}
    origin = str(item.get("origin", "absent"))
    key = item.get("key")
    return item.get("value"), f"{origin}: {key}" if key else origin


def input_value(path: dict[str, Any], expr: str) -> tuple[str, list[str]] | None:
    """The first value the path's decisions record for expression `expr`."""
    for d in [*path["decisions"], *path["setup_decisions"]]:
        for i in d.get("inputs", []):
            if i["expr"] == expr:
                return str(i["repr"]), list(i["origins"])
    return None


def at(file: str, line: int) -> str:
    return f"{file}:{line}"
