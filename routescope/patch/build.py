"""A traced deployment -> a ready OEA patch (unified diff, wheel paths), or a refusal."""

from __future__ import annotations

import posixpath
import re
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from routescope import api
from routescope.errors import RoutescopeError
from routescope.oea.config import GroupPolicy, RouterConfig
from routescope.patch import call as C
from routescope.patch import diff
from routescope.patch.codemod import insert_call
from routescope.patch.header import render_header
from routescope.verdict.facts import router_absent, router_attribute
from routescope.verdict.rules import load_oea_rules

_FRAMEWORK = re.compile(r"^([a-z0-9][a-z0-9-]*)==([\w.\-+]+)$")
_TEMPLATE = Path(__file__).with_name("framework_oea.py")  # copied into the framework, with
_FLAG_START, _FLAG_END = "# >>> decode flag", "# <<< decode flag"  # the flag written in


@dataclass(frozen=True, slots=True)
class PatchRequest:
    deployment: api.InspectRequest
    k0: int
    policy: GroupPolicy = "free"


@dataclass(frozen=True, slots=True)
class OeaPatch:
    text: str  # header + unified diff
    files: tuple[str, ...]  # wheel-relative paths the diff touches
    module: str  # the added module
    env: str
    report: dict[str, Any]


def patch_rules(framework: str | None) -> tuple[str, dict[str, Any]]:
    """ "NAME==V" -> (V, NAME's OEA rules); RoutescopeError (exit 2) unless the rules say how to
    patch NAME. Whether V's decode dispatch can be patched is for its trace to say (make_patch
    refuses a path that is not selected)."""
    m = _FRAMEWORK.match(framework or "")
    fw = load_oea_rules().framework(m.group(1)) if m else None
    if m is None or fw is None or "patch" not in fw:
        can = sorted(n for n, f in load_oea_rules().frameworks.items() if "patch" in f)
        raise RoutescopeError(
            f"--framework {framework}", f"routescope patch supports {', '.join(can)} (NAME==V)"
        )
    return m.group(2), fw


def supported_version(framework: str | None) -> str:
    """ "NAME==V" -> V for a framework the patch supports; else RoutescopeError (exit 2)."""
    return patch_rules(framework)[0]


def refuse_unless_selected(doc: dict[str, Any], framework: str | None) -> None:
    """RoutescopeError unless the trace selected one decode path: a patch goes on that path."""
    disp = doc["dispatch"]
    if disp["status"] == "selected":
        return
    decide = "; ".join(f"{u['file']}:{u['line']} {u['condition'][:80]}"
                       for u in disp["undecided"][:3])  # fmt: skip
    why = f" (would decide: {decide})" if decide else ""
    if disp["incomplete"]:
        why = f" ({disp['incomplete'][0]})"
    raise RoutescopeError(
        f"--framework {framework}",
        f"the decode dispatch is {disp['status']}, not one selected path: nothing to patch{why}",
    )


def _flag_module(tree: Any, flag: dict[str, Any]) -> str:
    """The module that defines the decode flag's function in this release (SGLang 0.5.9:
    cuda_graph_runner; 0.5.16+: its capture-mode module), found by reading the files under the
    declared folder, those named after a preferred word first; every other name the flag reads
    must be defined there too."""
    under, fn, prefer = flag["under"], flag["function"], flag.get("prefer", [])
    files = sorted((f for f in tree.files() if f.startswith(under) and f.endswith(".py")),
                   key=lambda f: ([w not in f for w in prefer], f))  # fmt: skip
    for rel in files:
        text = tree.read_bytes(rel)
        if f"def {fn}(".encode() not in text:
            continue
        lacking = [n for n in flag.get("also", []) if f"def {n}(".encode() not in text]
        if lacking:
            raise RoutescopeError(rel, f"defines {fn}() but not {', '.join(lacking)}(): no "
                                  "decode flag to guard on")  # fmt: skip
        return str(rel).removesuffix(".py").replace("/", ".")
    raise RoutescopeError(under, f"no {fn}() in the release: no decode flag to guard on")


def _run_with(tree: Any, fw: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(env, value, why at file:line) for each variable the flag needs, where the release
    declares it; RoutescopeError when the release does not read it."""
    out = []
    for need in fw["patch"].get("run_with", []):
        rel, name = need["declared_in"], need["env"]
        lines = tree.read_bytes(rel).decode().splitlines() if rel in set(tree.files()) else []
        line = next((i for i, s in enumerate(lines, 1) if f'"{name}"' in s), None)
        if line is None:  # the release cannot run as the patch's decode check needs
            raise RoutescopeError(
                rel,
                f"declares no {name}, which the patch would set to {need['value']} "
                f"({need['why']}): this release cannot run so, and the patch could not tell "
                "a decode step "
                f"(rules/oea/{fw['framework']}.toml [[patch.run_with]])",
            )
        out.append(
            (
                name,
                need["value"],
                f"{name}={need['value']}: {need['why']} (declared at {rel}:{line})",
            )
        )
    return out


def _module_text(fw: dict[str, Any], flag_module: str, run_with: list[tuple[str, str, str]]) -> str:
    """framework_oea.py with the framework's variable, environment and decode flag written in."""
    text = _TEMPLATE.read_text()
    head, rest = text.split(_FLAG_START, 1)
    _, tail = rest.split(_FLAG_END, 1)
    body = textwrap.indent(textwrap.dedent(fw["patch"]["flag"]["body"]).strip(), "    ")
    names = ", ".join([fw["patch"]["flag"]["function"], *fw["patch"]["flag"].get("also", [])])
    flag = (f"{_FLAG_START} ({fw['framework']}: rules/oea/{fw['framework']}.toml [patch.flag])\n"
            f"def decode_step() -> bool:\n    from {flag_module} import {names}\n\n{body}\n\n\n"
            f"{_FLAG_END}")  # fmt: skip
    env = {name: value for name, value, _ in run_with}
    for was, now in (
        ('ENV = "SGLANG_OEA_K0"', f'ENV = "{fw["patch"]["env"]}"'),
        ("RUN_WITH: dict[str, str] = {}", f"RUN_WITH: dict[str, str] = {env!r}"),
    ):
        assert was in head, was  # the template's own lines
        head = head.replace(was, now, 1)
    return head + flag + tail


def refuse_unless_insertable(verdict: dict[str, Any]) -> None:
    """RoutescopeError naming the switch (when there is one) unless the path is insertable."""
    if verdict["insertable"] is True:
        return
    sw = verdict.get("switch")
    hint = ""
    if sw and sw.get("flag"):
        hint = f"; switch: {sw['flag']} {sw.get('suggest') or ''}".rstrip()
        hint += f" (now {sw.get('current')})" if sw.get("current") else ""
    raise RoutescopeError("verdict", f"OEA is not insertable on this path: {verdict['why']}{hint}")


def make_patch(req: PatchRequest) -> OeaPatch:
    """Trace the deployment, check the verdict, run the codemod; RoutescopeError refuses."""
    _, fw = patch_rules(req.deployment.framework)
    doc = api.inspect(replace(req.deployment, framework_src=None))
    refuse_unless_selected(doc, req.deployment.framework)
    verdict = doc["verdict"]
    refuse_unless_insertable(verdict)
    spec = api.inspect_model(req.deployment.model, offline=req.deployment.offline)
    cfg = RouterConfig.from_spec(spec)
    if not 1 <= req.k0 < cfg.top_k:
        raise RoutescopeError("--k0", f"must be in 1..{cfg.top_k - 1} (top_k = {cfg.top_k})")
    from routescope.source.open import open_source

    tree = open_source(
        req.deployment.framework or "", offline=req.deployment.offline, progress=False
    )
    point = verdict["insertion_point"]
    rel: str = point["file"]
    module = posixpath.join(posixpath.dirname(rel), "oea.py")
    if module in set(tree.files()):
        raise RoutescopeError(module, "already exists in the framework tree")
    flag_module = _flag_module(tree, fw["patch"]["flag"])
    run_with = _run_with(tree, fw)
    old = tree.read_bytes(rel).decode()
    remap_info = fw["calls"]["remap_info"]
    plan = C.plan_from(verdict, cfg.scoring, req.policy)
    through = (point.get("router_call") or {}).get("through", ())
    given, on = C.router_call(point["before"]["text"], through)
    router = doc["dispatch"].get("router") or {}
    scope = C.names_in_scope(old, point["before"]["line"])

    def values(names: list[str]) -> dict[str, str]:
        return C.runtime_values(names, scope, given, on,
                                lambda name: router_attribute(router, fw, name),
                                lambda name: router_absent(fw, name)[:2])  # fmt: skip

    remap_off = None
    if plan.physical_ids:  # the router's own switch for EPLB (vLLM 0.15.1: enable_eplb), else
        switch = router_attribute(router, fw, "remap_on") if on else None  # its info is None
        remap_off = (
            f"not {on}.{switch}" if switch else f"{values([remap_info])[remap_info]} is None"
        )
    env = fw["patch"]["env"]
    stmt = C.render_call(plan, values(C.needed(plan)), env, remap_off)
    package = posixpath.dirname(rel).replace("/", ".")
    new = insert_call(
        old,
        point["before"]["line"],
        point["before"]["end_line"],
        point["before"]["text"],
        f"from {package} import oea as {C.ALIAS}\n",
        stmt,
    )
    meta = {
        "model": req.deployment.model,
        "framework": req.deployment.framework,
        "gpu": req.deployment.gpu,
        "tp": req.deployment.tp,
        "ep": req.deployment.ep,
        "quant": req.deployment.quant,
        "k0": req.k0,
        "policy": req.policy,
        "point": {k: point[k] for k in ("file", "function", "line")}
        | {"before": point["before"]["text"]},
    }
    decode = fw["patch"]["decode"].format(flag=f"{flag_module}.{fw['patch']['flag']['function']}()")
    header = render_header(doc, meta, env, module, decode, [w for _, _, w in run_with])
    source = _module_text(fw, flag_module, run_with)
    text = header + diff.modified(rel, old, new) + diff.added(module, header + source)
    return OeaPatch(text, (rel, module), module, env, doc)
