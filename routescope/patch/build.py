"""A traced deployment -> a ready OEA patch (unified diff, wheel paths), or a refusal."""

from __future__ import annotations

import posixpath
import re
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

# the decode flag the patched call guards on, and where the framework keeps it
_FLAG = "get_is_capture_mode"
_FLAG_DIR = "sglang/srt/model_executor/"
# the variable that turns the patched call on; framework_oea.py (copied as it is into the
# framework, and importing torch) holds the same literal, checked by tests/patch
ENV = "SGLANG_OEA_K0"
_TEMPLATE_FLAG_MODULE = "sglang.srt.model_executor.cuda_graph_runner"  # framework_oea.py's import
_FRAMEWORK = re.compile(r"^sglang==([\w.\-+]+)$")


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


def supported_version(framework: str | None) -> str:
    """ "sglang==V" -> V; else RoutescopeError (exit 2). Whether V's decode dispatch can be
    patched is for its trace to say (make_patch refuses a path that is not selected)."""
    m = _FRAMEWORK.match(framework or "")
    if m is None:
        raise RoutescopeError(f"--framework {framework}", "routescope patch supports sglang==V")
    return m.group(1)


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


def _flag_module(tree: Any) -> str:
    """The module that defines the decode flag in this release (0.5.9: cuda_graph_runner;
    0.5.16+: runner_utils/capture_mode), found by reading the model executor's files, the ones
    named after capture or CUDA graphs first."""
    files = sorted((f for f in tree.files() if f.startswith(_FLAG_DIR) and f.endswith(".py")),
                   key=lambda f: ("capture" not in f, "cuda_graph" not in f, f))  # fmt: skip
    for rel in files:
        if f"def {_FLAG}(".encode() in tree.read_bytes(rel):
            return str(rel).removesuffix(".py").replace("/", ".")
    raise RoutescopeError(
        _FLAG_DIR, f"no {_FLAG}() in the model executor: no decode flag to guard on"
    )


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
    supported_version(req.deployment.framework)
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
    flag_module = _flag_module(tree)
    old = tree.read_bytes(rel).decode()
    plan = C.plan_from(verdict, cfg.scoring, req.policy)
    stmt = C.render_call(plan, C.names_in_scope(old, point["before"]["line"]), ENV,
                         C.router_arguments(point["before"]["text"]))  # fmt: skip
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
    header = render_header(doc, meta, ENV, module, f"{flag_module}.{_FLAG}()")
    source = (Path(__file__).with_name("framework_oea.py")).read_text()
    source = source.replace(_TEMPLATE_FLAG_MODULE, flag_module)
    text = header + diff.modified(rel, old, new) + diff.added(module, header + source)
    return OeaPatch(text, (rel, module), module, ENV, doc)
