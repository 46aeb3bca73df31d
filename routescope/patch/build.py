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
from routescope.patch.framework_oea import ENV
from routescope.patch.header import render_header

SUPPORTED = ("0.5.9", "0.5.12")  # versions whose decode dispatch the trace decides
_CAPTURE = "sglang/srt/model_executor/cuda_graph_runner.py"
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
    """ "sglang==V" -> V when the trace decides V's dispatch; else RoutescopeError (exit 2)."""
    m = _FRAMEWORK.match(framework or "")
    if m is None:
        raise RoutescopeError(f"--framework {framework}", "routescope patch supports sglang==V")
    if m.group(1) not in SUPPORTED:
        raise RoutescopeError(
            f"--framework {framework}",
            f"the decode dispatch of this version is provisional or unknown; "
            f"patches are made for {', '.join('sglang==' + v for v in SUPPORTED)} only",
        )
    return m.group(1)


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
    if b"def get_is_capture_mode" not in tree.read_bytes(_CAPTURE):
        raise RoutescopeError(_CAPTURE, "has no get_is_capture_mode(): no decode flag to guard on")
    old = tree.read_bytes(rel).decode()
    plan = C.plan_from(verdict, cfg.scoring, req.policy)
    stmt = C.render_call(plan, C.names_in_scope(old, point["before"]["line"]), ENV)
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
    header = render_header(doc, meta, ENV, module)
    source = (Path(__file__).with_name("framework_oea.py")).read_text()
    text = header + diff.modified(rel, old, new) + diff.added(module, header + source)
    return OeaPatch(text, (rel, module), module, ENV, doc)
