"""A path whose router returns its inputs (routing fused into the MoE kernel): which server
argument chose it, and what to set to get the decomposed path back. All read from the source.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from routescope.analysis.index import Index
from routescope.verdict.source import FunctionSource, function_at, function_named

_ACCESSOR = re.compile(r"\b([A-Za-z_]\w*)\(\)\.(is_\w+)\(\)")


def returned(path: dict[str, Any], index: Index) -> tuple[str, str] | None:
    """The last decided-true branch on the path that returns a call: (callee, file:line)."""
    for d in reversed(path["decisions"]):
        if d["value"] is not True:
            continue
        fn = function_at(index, d["file"], d["line"])
        if fn is None:
            continue
        for node in ast.walk(fn.node):
            if isinstance(node, ast.If) and d["line"] in (node.lineno, node.test.lineno):
                for stmt in node.body:
                    if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Call):
                        name = ast.unparse(stmt.value.func)
                        return name, f"{d['file']}:{stmt.lineno}"
    return None


def _global_of(fn: FunctionSource) -> str | None:
    for node in ast.walk(fn.node):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
            return node.value.id
    return None


def _server_arg(fn: FunctionSource, global_name: str) -> tuple[str, int] | None:
    """The server argument the module global is set from: `G = X(server_args.attr)`."""
    tree = fn.module.tree
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == global_name for t in node.targets
        ):
            for sub in ast.walk(node.value):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == "server_args"
                ):
                    return sub.attr, node.lineno
    return None


def _members(
    fn: FunctionSource, index: Index
) -> tuple[str, dict[str, str], dict[str, set[str]]] | None:
    """The accessor's enum: (class name, member -> value, is_method -> value)."""
    ret = fn.node.returns
    cls_name = ast.unparse(ret) if ret is not None else ""
    return _enum(index, [fn.module.name], cls_name)


def _enum(index: Index, modules: list[str],
          cls_name: str) -> tuple[str, dict[str, str], dict[str, set[str]]] | None:  # fmt: skip
    """An enum class as one of `modules` sees it: (name, member -> value, is_method -> value);
    the is_* predicates may live in a base class (0.5.23's _MoeRunnerBackendPredicates)."""
    sym = next((x for x in (index.resolve(m, cls_name) for m in modules if cls_name) if x), None)
    if sym is None or not isinstance(sym.node, ast.ClassDef):
        return None
    members: dict[str, str] = {}
    for stmt in sym.node.body:
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
            and isinstance(stmt.targets[0], ast.Name)
        ):
            members[stmt.targets[0].id] = stmt.value.value
    classes = [sym.node]
    for base in sym.node.bases:
        found = index.resolve(sym.module, ast.unparse(base))
        if found is not None and isinstance(found.node, ast.ClassDef):
            classes.append(found.node)
    checks: dict[str, set[str]] = {}  # a predicate may accept several members
    for cls in classes:
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name.startswith("is_"):
                for node in ast.walk(stmt):
                    if isinstance(node, ast.Attribute) and node.attr in members:
                        checks.setdefault(stmt.name, set()).add(members[node.attr])
    return cls_name, members, checks


def switch_from_router(doc: dict[str, Any], path: dict[str, Any], index: Index,
                       fw: dict[str, Any]) -> dict[str, Any] | None:  # fmt: skip
    """The switch for a router bound to its experts' runner backend (SGLang 0.5.23): the
    backend the router holds, the guard that turned it into a fused path, and the server
    argument whose resolved value is that backend."""
    held = ((doc.get("dispatch") or {}).get("router") or {}).get("runner_backend") or {}
    cls_name, _, member = str(held.get("repr", "")).rpartition(".")
    if not cls_name or not member:
        return None
    decided = [*path["setup_decisions"], *path["decisions"]]
    modules = list(dict.fromkeys([
        *(f["function"].split(":")[0] for f in path["frames"]),
        *(d["file"].removesuffix(".py").replace("/", ".") for d in decided),
    ]))  # fmt: skip
    enum = _enum(index, modules, cls_name)
    if enum is None:
        return None
    _, values, checks = enum
    current = values.get(member)
    accepting = sorted((len(v), m) for m, v in checks.items() if current in v)
    method = accepting[0][1] if accepting else None
    chosen = [d for d in decided
              if method and f".{method}()" in d["condition"] and d["value"] is True]  # fmt: skip
    if current is None or not chosen:
        return None
    # the guard in the router's own code (the decode path's files up to where the router hands
    # its result to the experts layer) before the experts' others
    handoff = path.get("handoff")
    frames = path["frames"][: handoff["frame"]] if handoff else path["frames"]
    decode_files = {f["file"] for f in frames}
    chosen.sort(key=lambda d: d["file"] not in decode_files)
    args = (doc.get("dispatch") or {}).get("server_args") or {}
    arg = next((n for n, v in args.items() if str(v["repr"]).strip("'\"") == current), None)
    excluded = sorted(
        {x for m, v in checks.items() if f".{m}()" in chosen[0]["condition"] for x in v}
    )
    prefer = [v for v in fw["switch"]["prefer"] if v in values.values() and v not in excluded]
    gives = {g["value"]: g["text"] for g in fw["switch"].get("gives_up", [])}
    d = chosen[0]
    out: dict[str, Any] = {
        "server_arg": arg,
        "flag": "--" + arg.replace("_", "-") if arg else None,
        "current": current,
        "chosen_by": {"file": d["file"], "line": d["line"], "condition": d["condition"]},
        "excluded": excluded,
        "suggest": prefer[0] if prefer else None,
        "gives_up": gives.get(current, f"the fused {current} MoE kernel that routes internally"),
        "evidence": [f"{d['file']}:{d['line']}: {d['condition']} -> true",
                     f"router runner_backend = {held.get('repr')} (bound from its experts)"],
    }  # fmt: skip
    if arg:
        out["evidence"].append(f"server argument {arg} resolves to {args[arg]['repr']}")
    return out


def way_out(switch: dict[str, Any] | None) -> str:
    """What a verdict's reason adds for the switch it names ("" when it names none)."""
    if not (switch and switch.get("flag") and switch.get("suggest")):
        return ""
    return f"; {switch['flag']} {switch['suggest']} selects the decomposed path"


def find_switch(path: dict[str, Any], index: Index, fw: dict[str, Any]) -> dict[str, Any] | None:
    """The switch that routed this path around select_experts, or None when none is found."""
    frames = {f["function"].split(":")[-1].split(".")[-1]: f for f in path["frames"]}
    chosen: list[dict[str, Any]] = []
    accessor: FunctionSource | None = None
    excluded: list[str] = []
    for d in path["decisions"]:
        for name, method in _ACCESSOR.findall(d["condition"]):
            frame = frames.get(name)
            fn = function_named(index, frame["function"]) if frame else None
            if fn is None:
                continue
            accessor = fn
            excluded.append(method)
            if d["value"] is True:
                chosen.append(d)
    if accessor is None or not chosen:
        return None
    global_name = _global_of(accessor)
    arg = _server_arg(accessor, global_name) if global_name else None
    enum = _members(accessor, index)
    current = None
    for d in [*path["decisions"], *path["setup_decisions"]]:
        for i in d.get("inputs", []):
            if i["expr"] == global_name:
                current = str(i["repr"]).split(".")[-1]
    values = enum[1] if enum else {}
    checks = enum[2] if enum else {}
    current_value = values.get(current or "", current)
    excluded_values = sorted({x for m in excluded if m in checks for x in checks[m]})
    prefer = [
        v for v in fw["switch"]["prefer"] if v in values.values() and v not in excluded_values
    ]
    gives = {g["value"]: g["text"] for g in fw["switch"].get("gives_up", [])}
    d = chosen[0]
    out: dict[str, Any] = {
        "server_arg": arg[0] if arg else None,
        "flag": "--" + arg[0].replace("_", "-") if arg else None,
        "current": current_value,
        "chosen_by": {"file": d["file"], "line": d["line"], "condition": d["condition"]},
        "excluded": excluded_values,
        "suggest": prefer[0] if prefer else None,
        "gives_up": gives.get(
            str(current_value), f"the fused {current_value} MoE kernel that routes internally"
        ),
        "evidence": [f"{d['file']}:{d['line']}: {d['condition']} -> true"],
    }
    if arg:
        out["evidence"].append(
            f"{accessor.module.relpath}:{arg[1]}: {global_name} set from server_args.{arg[0]}"
        )
    return out
