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


def router_attribute(router: dict[str, Any], fw: dict[str, Any], name: str) -> str | None:
    """The router attribute that holds OEA's `name` on this path: `name` itself, else the first
    of the framework's names for it (rules/oea: router_fields) the traced router has."""
    if name in router:
        return name
    names = ((fw.get("router_fields") or {}).get(name) or {}).get("names", [])
    return next((n for n in names if n in router), None)


def router_absent(fw: dict[str, Any], name: str) -> tuple[bool, Any, str]:
    """(declared, value, why): what a router with no attribute for `name` has, as the rules
    declare it from the source."""
    decl = (fw.get("router_fields") or {}).get(name) or {}
    if decl.get("absent_none"):
        return True, None, str(decl["why"])
    if "absent" in decl:
        return True, decl["absent"], str(decl["why"])
    return False, None, ""


def with_router_fields(doc: dict[str, Any], fw: dict[str, Any], rules_file: str) -> dict[str, Any]:
    """The report with its router settings also under OEA's names (correction_bias, ...), each
    found under the framework's own attribute name or, for a router without one, the value the
    rules declare (with the declaration as its origin). The report itself is left as it is."""
    disp = doc.get("dispatch") or {}
    router = disp.get("router")
    if not router or not fw.get("router_fields"):
        return doc
    view = dict(router)
    for name in fw["router_fields"]:
        attr = router_attribute(router, fw, name)
        if attr == name:
            continue
        if attr is not None:
            item = router[attr]
            view[name] = {**item, "origins": [f"the router's {attr}", *item["origins"]]}
            continue
        declared, value, why = router_absent(fw, name)
        if declared:
            view[name] = {"value": value, "kind": "constant", "repr": repr(value),
                          "origins": [f"{rules_file}: {why}"]}  # fmt: skip
    return {**doc, "dispatch": {**disp, "router": view, "router_as_built": router}}
