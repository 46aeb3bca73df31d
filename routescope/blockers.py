"""What would stop a traced deployment from serving decode: kernels its path launches that their
provider's own source (in the wheel of the version the framework pins) builds for other GPUs.

Provider facts are never written down as verdicts: rules/providers/*.toml name the file and the
pattern in the provider's wheel where the fact is stated, and it is read there, at the pinned
version, each time (cached with the wheel). What cannot be read is "not known", noted, never a
blocker."""

from __future__ import annotations

import ast
import fnmatch
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from routescope.errors import RoutescopeError
from routescope.origins import in_source
from routescope.rules import load_rule_file, rule_files

KIND_UNSUPPORTED_GPU = "unsupported_gpu"
KIND_RAISES = "raises"


@dataclass(frozen=True, slots=True)
class Support:
    """Which SM versions a provider's kernel runs on at one version, read from its source."""

    runs_on: frozenset[int] | None  # None: not known (the note says why)
    archs: tuple[str, ...]
    evidence: tuple[str, ...]  # "file:line (dist==version)"
    note: str = ""


@cache
def providers() -> tuple[dict[str, Any], ...]:
    return tuple(load_rule_file(p, "provider") for p in rule_files("providers"))


def kernel_rule(name: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The provider and kernel entry whose `calls` match a launched kernel's name: a kernel
    entry (the architectures its build lists), else a `declared` entry (what its Python says)."""
    for key in ("kernels", "declared"):
        for prov in providers():
            for k in prov.get(key, ()):
                if any(fnmatch.fnmatchcase(name, g) for g in k["calls"]):
                    return prov, {**k, "kind": key}
    return None


def pinned_version(metadata: Any, distribution: str) -> str | None:
    """The exact version a framework's METADATA pins `distribution` to (None: no METADATA)."""
    return metadata.pinned(distribution) if metadata is not None else None


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def read_support(read: Any, kernel: dict[str, Any], subject: str) -> Support:
    """Which SM versions `kernel` runs on, read with `read(relpath) -> str` from the provider's
    wheel (`subject`: "flashinfer-python==0.7.2", for the evidence)."""
    archs_rule, runs_rule = kernel["archs"], kernel["runs_on"]
    try:
        archs_text = read(archs_rule["file"])
        runs_text = read(runs_rule["file"])
    except RoutescopeError as exc:
        return Support(None, (), (), f"{subject}: {exc.message}")
    m = re.search(archs_rule["pattern"], archs_text)
    if m is None:
        return Support(None, (), (), f"{subject}: {archs_rule['file']} states no architecture "
                       "list where the rule looks for it")  # fmt: skip
    archs = tuple(re.findall(r"[\"']([^\"']+)[\"']", m.group(1)))
    evidence = [f"{archs_rule['file']}:{_line_of(archs_text, m.start())} ({subject})"]
    runs_on: set[int] = set()
    for arch in archs:
        case = next((c for c in re.finditer(runs_rule["pattern"], runs_text)
                     if c.group(1) == arch), None)  # fmt: skip
        if case is None:
            return Support(None, archs, tuple(evidence), f"{subject}: {runs_rule['file']} does "
                           f"not say which GPUs {arch} runs on")  # fmt: skip
        runs_on.update(int(v) for v in re.findall(runs_rule["sm"], case.group(2)))
        evidence.append(f"{runs_rule['file']}:{_line_of(runs_text, case.start())} ({subject})")
    return Support(frozenset(runs_on), archs, tuple(dict.fromkeys(evidence)))


def _module_files(dotted: str) -> list[str]:
    path = dotted.replace(".", "/")
    return [f"{path}/__init__.py", f"{path}.py"]


Found = tuple[str, ast.Module, ast.FunctionDef]


def _definition(read: Any, dotted: str, name: str, hops: int = 4) -> Found | None:
    """Where `dotted.name` is defined in the provider's wheel, following the re-exports of its
    package (`from .mod import name [as name]`): (file, tree, def)."""
    for rel in _module_files(dotted):
        try:
            text = read(rel)
        except RoutescopeError:
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return None
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return rel, tree, node
        package = dotted if rel.endswith("__init__.py") else dotted.rpartition(".")[0]
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or hops <= 0:
                continue
            for alias in node.names:
                if (alias.asname or alias.name) != name:
                    continue
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    root = ".".join(parts[: len(parts) - node.level + 1])
                    base = f"{root}.{base}" if base else root
                return _definition(read, base, alias.name, hops - 1)
        return None
    return None


def _decorator(node: ast.FunctionDef, name: str) -> ast.Call | None:
    for d in node.decorator_list:
        if isinstance(d, ast.Call):
            f = d.func
            if (isinstance(f, ast.Name) and f.id == name) or (
                isinstance(f, ast.Attribute) and f.attr == name
            ):
                return d
    return None


def _int_list(tree: ast.Module, node: ast.expr) -> list[int] | None:
    if isinstance(node, ast.Name):  # a module-level constant
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign):
                targets, value = stmt.targets, stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                targets, value = [stmt.target], stmt.value
            else:
                continue
            if any(isinstance(t, ast.Name) and t.id == node.id for t in targets):
                return _int_list(tree, value)
        return None
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    if isinstance(value, (list, tuple, set)) and all(isinstance(v, int) for v in value):
        return list(value)
    return None


def read_declared(read: Any, rule: dict[str, Any], name: str, subject: str) -> Support | None:
    """The SM versions `name` declares it runs on: its own `@supported_compute_capability([..])`,
    or, through `@backend_requirement(backends, common_check=...)`, any backend's checker's
    (the provider's own is_compute_capability_supported), else the common check's. None: the
    function declares nothing (no statement to read)."""
    module, _, func = name.rpartition(".")
    found = _definition(read, module, func)
    if found is None:
        return None
    rel, tree, node = found
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

    def own(fn: ast.FunctionDef) -> tuple[list[int], int] | None:
        call = _decorator(fn, rule["decorator"])
        got = _int_list(tree, call.args[0]) if call is not None and call.args else None
        return (got, call.lineno) if got is not None and call is not None else None

    direct = own(node)
    checks: list[ast.FunctionDef] = []
    req = _decorator(node, rule["requirement"])
    if direct is None and req is not None:
        backends = req.args[0] if req.args else None
        if isinstance(backends, ast.Dict):
            checks = [defs[v.id] for v in backends.values
                      if isinstance(v, ast.Name) and v.id in defs]  # fmt: skip
        if not checks:
            common = next((k.value for k in req.keywords if k.arg == "common_check"), None)
            if isinstance(common, ast.Name) and common.id in defs:
                checks = [defs[common.id]]
    declared = [d for d in ([direct] if direct else [own(c) for c in checks]) if d]
    if not declared:
        return None
    runs_on = frozenset(v for ccs, _ in declared for v in ccs)
    evidence = tuple(dict.fromkeys(f"{rel}:{line} ({subject})" for _, line in declared))
    return Support(runs_on, (), evidence, "")


def _sm(capability: list[int] | tuple[int, ...]) -> int:
    return int(capability[0]) * 10 + int(capability[1])


def _where(h: dict[str, Any]) -> str:
    return f"{h['file']}:{h['line']}"


def path_blockers(
    path: dict[str, Any],
    capability: list[int],
    gpu_name: str,
    support_of: Any,
    notes: list[str],
) -> list[dict[str, Any]]:
    """The blockers of one reported path: a kernel it (or every way through its experts layer)
    launches that its provider's source builds for no GPU of the target's SM version.
    `support_of(provider, kernel, name) -> (Support, why_pinned, "dist==version")`; what is not
    known goes to `notes`."""
    sm = _sm(capability)
    launched = [h for h in (path.get("sink"), *path.get("launches", ())) if h]
    launched += [h for h in path.get("experts", ()) if h.get("ways") == "every"]
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for h in launched:
        found = kernel_rule(h["name"])
        if found is None or h["name"] in seen:
            continue
        seen.add(h["name"])
        prov, kernel = found
        support, pinned, pin = support_of(prov, kernel, h["name"])
        if support is None:
            if pinned:
                notes.append(f"{h['name']} at {_where(h)}: {pinned}")
            continue
        if support.runs_on is None:
            notes.append(f"whether {h['name']} runs on sm{sm} is not known: {support.note}")
            continue
        if sm in support.runs_on:
            continue
        ons = ", ".join(f"sm{v}" for v in sorted(support.runs_on))
        why = (f"its {kernel['what']} is built for {', '.join(support.archs)}, which run on "
               f"{ons} only" if support.archs else
               f"it declares support for {ons} only ({kernel['what']})")  # fmt: skip
        out.append({
            "kind": KIND_UNSUPPORTED_GPU,
            "what": f"{h['name']} ({kernel['what']}) has no kernels for sm{sm} ({gpu_name})",
            "where": _where(h),
            "why": f"{pinned}; {why}",
            "evidence": [f"{_where(h)}: launched by {h['called_from']}", *support.evidence],
            "kernel": h["name"],
            "provider": prov["id"],
            "pinned": pin,
            "runs_on": [f"sm{v}" for v in sorted(support.runs_on)],
            "target": f"sm{sm}",
            "way_out": None,
        })  # fmt: skip
    return out


def stop_blocker(stop: dict[str, Any], framework: str) -> dict[str, Any]:
    """A step every way through which raises, at a `raise` statement, an assert on the
    deployment's own values, or (implicit) where Python raises on a decided value: the
    deployment stops there (the server does not start, or the decode step fails)."""
    where = f"{stop['file']}:{stop['line']}"
    message = stop.get("message_raised") or stop["message"]  # with its values, where known
    said = f"{stop['exception']}: {message}" if message else stop["exception"]
    guard = stop.get("guard")
    if stop.get("implicit"):
        line = stop.get("statement") or "the statement"
        why = f"every way through {stop['step']} raises {stop['exception']} in `{line}` at {where}"
        evidence = [f"{where}: {line} raises {said} (in {stop['function']})"]
    elif str(stop.get("statement", "")).startswith("assert"):  # its guard is its condition
        why = f"every way through {stop['step']} fails the assert at {where}"
        evidence = [f"{where}: assert fails: {said} (in {stop['function']})"]
    else:
        raised = f"`raise {stop['exception']}(...)`"
        why = f"every way through {stop['step']} reaches {raised} at {where}"
        evidence = [f"{where}: raise {said} (in {stop['function']})"]
    after = ""
    if guard:
        word = {True: "true", False: "false"}[guard["value"]]
        after = f"`{guard['condition']}` is {word}"
        why += f", after {after}"
        evidence[:0] = [f"{guard['file']}:{guard['line']}: {guard['condition']} -> {word}",
                        *_deployment_inputs(guard)]  # fmt: skip
    return {
        "kind": KIND_RAISES,
        "what": f"{framework} stops in {stop['step']}: {said}",
        "where": where,
        "why": why,
        "evidence": evidence,
        "exception": stop["exception"],
        "step": stop["step"],
        **({"statement": stop["statement"]} if stop.get("implicit") else {}),
        "after": after,
        "way_out": None,
    }


def _deployment_inputs(guard: dict[str, Any], most: int = 3) -> list[str]:
    """What the guard before a stop read that the deployment decided: each known value with
    the facts it came from (`self.allow_flashinfer = False, from env
    VLLM_USE_FLASHINFER_MOE_FP4 unset: default at vllm/envs.py:1214`)."""
    out: list[str] = []
    for i in guard.get("inputs", []):
        facts = [o for o in i.get("origins", []) if not in_source(o)]
        if facts and i.get("kind") in ("constant", "enum"):
            out.append(f"{guard['file']}:{guard['line']}: {i['expr']} = {i['repr']}, from "
                       + "; ".join(facts[:5]))  # fmt: skip
    return out[:most]


def report_blockers(
    doc: dict[str, Any], metadata: Any, read_provider: Any
) -> tuple[list[str], bool]:
    """Fill `blockers` into each path of `doc` and, for a selected answer, at the top level.
    `read_provider(distribution, version) -> read(relpath) -> str`. Returns the notes, and
    whether a provider's wheel could not be read (the answer then must not be kept)."""
    dispatch, dep = doc.get("dispatch"), doc.get("deployment")
    if not dispatch or not dep:
        return [], False
    notes: list[str] = []
    unread: list[str] = []
    framework = f"{dep['framework']} {dep['version']}"
    supports: dict[tuple[str, str], tuple[Support | None, str, str]] = {}
    readers: dict[str, Any] = {}

    def support_of(
        prov: dict[str, Any], kernel: dict[str, Any], name: str
    ) -> tuple[Support | None, str, str]:
        key = (prov["id"], kernel["id"] if kernel["kind"] == "kernels" else name)
        if key not in supports:
            dist = prov["distribution"]
            version = pinned_version(metadata, dist)
            if version is None:
                why = (f"{framework} pins no exact version of {dist}: which kernels it ships "
                       "is not known") if kernel["kind"] == "kernels" else ""  # fmt: skip
                supports[key] = (None, why, "")
            else:
                line = metadata.requirement(dist)
                subject = f"{dist}=={version}"
                try:
                    if subject not in readers:
                        readers[subject] = read_provider(dist, version)
                    reader = readers[subject]
                except RoutescopeError as exc:
                    unread.append(subject)
                    supports[key] = (None, f"{subject} could not be read: {exc.message}", "")
                else:
                    req = line.split(";")[0].strip()
                    pin = f"{framework} pins {req}"
                    named = re.split(r"[\[=<>!~ ]", req, maxsplit=1)[0] + f"=={version}"
                    if kernel["kind"] == "kernels":
                        supports[key] = (read_support(reader, kernel, subject), pin, named)
                    else:  # a function that declares nothing is no statement: nothing noted
                        got = read_declared(reader, kernel, name, subject)
                        supports[key] = (got, pin if got is not None else "", named)
        return supports[key]

    capability, gpu = dep["gpu"]["capability"], dep["gpu"]["device"]
    for p in dispatch["paths"]:
        p["blockers"] = path_blockers(p, capability, gpu, support_of, notes)
    selected = [p for p in dispatch["paths"] if p["selected"]]
    doc["blockers"] = selected[0]["blockers"] if selected else []
    # a step that raises on every way stops the deployment whatever path follows it
    doc["blockers"] = [*(stop_blocker(s, framework) for s in dispatch.get("stops", ())),
                       *doc["blockers"]]  # fmt: skip
    return list(dict.fromkeys(notes)), bool(unread)
