"""Real wheels: each patch applies with `git apply`, parses, and its call is OEA or a no-op."""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
import types
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from routescope import api
from routescope.cli import main
from routescope.oea.config import RouterConfig
from routescope.patch.build import OeaPatch, PatchRequest, make_patch
from routescope.source.open import open_source
from tests.conftest import REPO

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.network

CASES = [
    pytest.param("zai-org--GLM-5.json", "0.5.23", id="glm-5-0.5.23"),
    pytest.param("deepseek-ai--DeepSeek-V3.json", "0.5.23", id="deepseek-v3-0.5.23"),
    pytest.param("Qwen--Qwen3-30B-A3B.json", "0.5.23", id="qwen3-30b-a3b-0.5.23"),
    pytest.param("zai-org--GLM-5.json", "0.5.9", id="glm-5-0.5.9"),
]


@cache
def _patch(config: str, version: str) -> OeaPatch:
    req = api.InspectRequest(
        model=str(REPO / "examples" / "configs" / config), framework=f"sglang=={version}",
        gpu="sm120", tp=8,
    )  # fmt: skip
    return make_patch(PatchRequest(req, 5, "free"))


def _applied(tmp: Path, made: OeaPatch, version: str) -> Path:
    tree = open_source(f"sglang=={version}", progress=False)
    rel = made.files[0]
    (tmp / rel).parent.mkdir(parents=True)
    (tmp / rel).write_bytes(tree.read_bytes(rel))
    (tmp / "oea.patch").write_text(made.text)
    run = subprocess.run(
        ["git", "apply", "-v", "oea.patch"], cwd=tmp, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    return tmp


def _router(doc: dict[str, Any]) -> dict[str, Any]:
    return {key: field["value"] for key, field in doc["dispatch"]["router"].items()}


def _inserted(topk_src: str) -> ast.Module:
    for node in ast.walk(ast.parse(topk_src)):
        if isinstance(node, ast.If) and "_routescope_oea.active()" in ast.unparse(node.test):
            return ast.Module(body=[node], type_ignores=[])
    raise AssertionError("no inserted call")


@pytest.mark.parametrize("config,version", CASES)
def test_patch_applies_parses_and_its_call_is_oea(
    config: str, version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = _patch(config, version)
    root = _applied(tmp_path, made, version)
    topk_src = (root / made.files[0]).read_text()
    ast.parse(topk_src)
    ast.parse((root / made.module).read_text())
    assert not any(m == "sglang" or m.startswith("sglang.") for m in sys.modules)
    spec = importlib.util.spec_from_file_location("patched_oea", root / made.module)
    assert spec is not None and spec.loader is not None
    oea = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(oea)

    r = _router(made.report)
    cfg0 = RouterConfig.from_spec(api.inspect_model(str(REPO / "examples" / "configs" / config)))
    s = int(r.get("num_fused_shared_experts") or 0)
    n, k, b, pad = cfg0.num_experts, cfg0.top_k, 16, 13
    gen = torch.Generator().manual_seed(k + n)
    logits = torch.randn(b, n, generator=gen) * 2
    bias = torch.randn(n, generator=gen) * 0.1 if cfg0.has_correction_bias else None
    rsf = r.get("routed_scaling_factor")
    on_output = isinstance(rsf, float)  # traced as undecided; the router folds it in when True
    cfg = RouterConfig(
        num_experts=n, top_k=k, scoring=cfg0.scoring, has_correction_bias=cfg0.has_correction_bias,
        n_group=cfg0.n_group, topk_group=cfg0.topk_group, renormalize=cfg0.renormalize,
        routed_scaling_factor=rsf if on_output else 1.0, num_fused_shared_experts=s,
    )  # fmt: skip
    from routescope.oea.routing import baseline_topk
    from routescope.oea.vectorized import oea_topk

    ids, weights = baseline_topk(logits, cfg, bias)
    scope = {
        "_routescope_oea": oea, "topk_ids": ids.to(torch.int32), "topk_weights": weights,
        "router_logits": logits, "correction_bias": bias,
        "renormalize": r["renormalize"], "routed_scaling_factor": rsf,
        "apply_routed_scaling_factor_on_output": on_output, "num_fused_shared_experts": s,
        "num_expert_group": r.get("num_expert_group"), "topk_group": r.get("topk_group"),
        "num_token_non_padded": torch.tensor(pad), "expert_location_dispatch_info": None,
    }  # fmt: skip
    inserted = _inserted(topk_src)
    for call in (n for n in ast.walk(inserted) if isinstance(n, ast.Call)):
        for kw in call.keywords:  # the router's own names for a value (0.5.23: num_shared_...)
            if kw.arg in scope and isinstance(kw.value, ast.Name) and kw.value.id not in scope:
                scope[kw.value.id] = scope[kw.arg]
    code = compile(inserted, "inserted", "exec")
    flag_module = re.search(r"from ([\w.]+) import \(?\s*(?:# .*\n\s*)?get_is_capture_mode",
                            (root / made.module).read_text())  # fmt: skip
    assert flag_module is not None

    monkeypatch.delenv("SGLANG_OEA_K0", raising=False)
    off = dict(scope)
    exec(code, off)
    assert off["topk_ids"] is scope["topk_ids"] and off["topk_weights"] is scope["topk_weights"]

    fake = types.ModuleType(flag_module.group(1))
    fake.get_is_capture_mode = lambda: True  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    monkeypatch.setenv("SGLANG_OEA_K0", "5")
    on = dict(scope)
    exec(code, on)
    valid = torch.arange(b) < pad
    ref = oea_topk(logits, cfg, 5, valid=valid, correction_bias=bias)
    assert torch.equal(on["topk_ids"][:pad, :k].long(), ref.topk_ids[:pad, :k])
    assert torch.equal(on["topk_weights"][:pad, :k], ref.topk_weights[:pad, :k])
    assert torch.equal(on["topk_ids"][:, k:], scope["topk_ids"][:, k:])  # shared slots untouched
    assert torch.equal(on["topk_ids"][pad:], scope["topk_ids"][pad:])  # padded rows untouched


def test_bypassed_path_is_refused_naming_the_switch(capsys: pytest.CaptureFixture[str]) -> None:
    model = str(REPO / "examples" / "configs" / "Qwen--Qwen3-30B-A3B.json")
    argv = ["patch", model, "--framework", "sglang==0.5.9", "--gpu", "sm100", "--tp", "8"]
    assert main([*argv, "--k0", "5"]) == 2
    err = capsys.readouterr().err
    assert "not insertable" in err and "--moe-runner-backend triton" in err


def test_a_dispatch_that_is_not_selected_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # gpt-oss on 0.5.23 forks on whether triton_kernels is installed: no one path to patch
    model = str(REPO / "examples" / "configs" / "openai--gpt-oss-20b.json")
    argv = ["patch", model, "--framework", "sglang==0.5.23", "--gpu", "sm120", "--tp", "8"]
    assert main([*argv, "--k0", "2"]) == 2
    err = capsys.readouterr().err
    assert "the decode dispatch is forked, not one selected path" in err
    assert "is_triton_kernels_available()" in err
    assert main(["patch", model, "--framework", "sglang-0.5.23", "--k0", "2"]) == 2
    assert "routescope patch supports sglang==V" in capsys.readouterr().err


def test_check_reports_what_moved_from_0_5_9_to_0_5_23(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)  # the example patch names its model relative to the repo
    patch = "examples/patches/glm-5-sglang-0.5.9-sm120.patch"
    assert main(["patch", "--check", patch, "--framework", "sglang==0.5.23"]) == 1
    out = capsys.readouterr().out
    assert "applies: no" in out and "insertion point on the decode path: yes" in out
    assert "point line 986 -> 2962 (+1976)" in out
    assert "OEA110 expert-ids changed" in out  # 0.5.23 remaps after the point, not inside
    assert (
        "statement: +                num_fused_shared_experts=num_shared_topk_slots_for_gate,"
        in out
    )
    assert "inserted code now: +            if _routescope_oea.active():" in out


def test_check_passes_on_its_own_version(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    patch = "examples/patches/glm-5-sglang-0.5.23-sm120.patch"
    assert main(["patch", "--check", patch, "--framework", "sglang==0.5.23"]) == 0
    assert "moved or changed: nothing" in capsys.readouterr().out
