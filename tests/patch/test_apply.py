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
    pytest.param("sglang", "zai-org--GLM-5.json", "0.5.23", id="sglang-glm-5-0.5.23"),
    pytest.param(
        "sglang", "deepseek-ai--DeepSeek-V3.json", "0.5.23", id="sglang-deepseek-v3-0.5.23"
    ),
    pytest.param("sglang", "Qwen--Qwen3-30B-A3B.json", "0.5.23", id="sglang-qwen3-30b-a3b-0.5.23"),
    pytest.param("sglang", "zai-org--GLM-5.json", "0.5.9", id="sglang-glm-5-0.5.9"),
    # vLLM: the router object's attributes at the point (0.33.0 MoERunner._apply_quant_method),
    # and before the runner existed (0.15.1 FusedMoE.forward_impl, EPLB switched by enable_eplb)
    pytest.param("vllm", "zai-org--GLM-5.json", "0.33.0", id="vllm-glm-5-0.33.0"),
    pytest.param("vllm", "Qwen--Qwen3-30B-A3B.json", "0.33.0", id="vllm-qwen3-30b-a3b-0.33.0"),
    pytest.param("vllm", "MiniMaxAI--MiniMax-M2.5.json", "0.27.0", id="vllm-minimax-m2.5-0.27.0"),
    pytest.param("vllm", "Qwen--Qwen3-30B-A3B.json", "0.15.1", id="vllm-qwen3-30b-a3b-0.15.1"),
]
# the framework's decode flag as the added module reads it, faked on (a decode step) and off
B = 16
FLAGS = {
    "sglang": ({"get_is_capture_mode": lambda: True}, {"get_is_capture_mode": lambda: False}),
    "vllm": tuple(
        {
            "is_forward_context_available": lambda: True,
            "get_forward_context": lambda u=uniform: types.SimpleNamespace(
                batch_descriptor=types.SimpleNamespace(uniform=u, num_reqs=B, num_tokens=B)
            ),
        }
        for uniform in (True, False)
    ),
}
# the arguments of oea_select in order, then by keyword: OEA's name for each value
POSITIONAL = ("topk_weights", "topk_ids", "router_logits", "correction_bias")


@cache
def _patch(framework: str, config: str, version: str) -> OeaPatch:
    req = api.InspectRequest(
        model=str(REPO / "examples" / "configs" / config), framework=f"{framework}=={version}",
        gpu="sm120", tp=8,
    )  # fmt: skip
    return make_patch(PatchRequest(req, 5, "free"))


def _applied(tmp: Path, made: OeaPatch, framework: str, version: str) -> Path:
    tree = open_source(f"{framework}=={version}", progress=False)
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


def _bind(scope: dict[str, Any], expr: ast.expr, value: Any) -> None:
    """Make `expr` (a name, or an attribute chain such as self.router.renormalize) evaluate to
    `value` in `scope`, creating the objects on the way."""
    if isinstance(expr, ast.Name):
        scope.setdefault(expr.id, value)
    elif isinstance(expr, ast.Attribute):
        chain = []
        while isinstance(expr, ast.Attribute):
            chain.append(expr.attr)
            expr = expr.value
        assert isinstance(expr, ast.Name), ast.unparse(expr)
        obj = scope.setdefault(expr.id, types.SimpleNamespace())
        for attr in reversed(chain[1:]):
            if not hasattr(obj, attr):
                setattr(obj, attr, types.SimpleNamespace())
            obj = getattr(obj, attr)
        setattr(obj, chain[0], value)


@pytest.mark.parametrize("framework,config,version", CASES)
def test_patch_applies_parses_and_its_call_is_oea(
    framework: str, config: str, version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = _patch(framework, config, version)
    root = _applied(tmp_path, made, framework, version)
    topk_src = (root / made.files[0]).read_text()
    ast.parse(topk_src)
    added = (root / made.module).read_text()
    ast.parse(added)
    assert not any(m == framework or m.startswith(framework + ".") for m in sys.modules)
    spec = importlib.util.spec_from_file_location("patched_oea", root / made.module)
    assert spec is not None and spec.loader is not None
    oea = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(oea)

    r = _router(made.report)
    cfg0 = RouterConfig.from_spec(api.inspect_model(str(REPO / "examples" / "configs" / config)))
    s = int(r.get("num_fused_shared_experts") or 0)
    n, k, b, pad = cfg0.num_experts, cfg0.top_k, B, 13
    gen = torch.Generator().manual_seed(k + n)
    logits = torch.randn(b, n, generator=gen) * 2
    bias = torch.randn(n, generator=gen) * 0.1 if cfg0.has_correction_bias else None
    rsf = r.get("routed_scaling_factor")
    # the router folds the factor into its weights where it has one (SGLang: traced undecided)
    on_output = isinstance(rsf, float) and rsf != 1.0
    cfg = RouterConfig(
        num_experts=n, top_k=k, scoring=cfg0.scoring, has_correction_bias=cfg0.has_correction_bias,
        n_group=cfg0.n_group, topk_group=cfg0.topk_group, renormalize=cfg0.renormalize,
        routed_scaling_factor=rsf if on_output else 1.0, num_fused_shared_experts=s,
    )  # fmt: skip
    from routescope.oea.routing import baseline_topk
    from routescope.oea.vectorized import oea_topk

    ids, weights = baseline_topk(logits, cfg, bias)
    ids = ids.to(torch.int32)
    padded = framework == "vllm"  # vLLM's router marks padded rows -1 (VLLM_MOE_SKIP_PADDING)
    if padded:
        ids[pad:], weights[pad:] = -1, 0.0
    values = {
        "topk_ids": ids, "topk_weights": weights, "router_logits": logits, "correction_bias": bias,
        "renormalize": r["renormalize"], "routed_scaling_factor": rsf,
        "apply_routed_scaling_factor_on_output": on_output, "num_fused_shared_experts": s,
        "num_expert_group": r.get("num_expert_group"), "topk_group": r.get("topk_group"),
        "num_token_non_padded": torch.tensor(pad),
    }  # fmt: skip
    inserted = _inserted(topk_src)
    scope: dict[str, Any] = {"_routescope_oea": oea, **values}
    guard = inserted.body[0].test  # type: ignore[attr-defined]
    for part in guard.values if isinstance(guard, ast.BoolOp) else [guard]:  # EPLB off
        if isinstance(part, ast.Compare):
            _bind(scope, part.left, None)
        elif isinstance(part, ast.UnaryOp):
            _bind(scope, part.operand, False)
    call = next(c for c in ast.walk(inserted) if isinstance(c, ast.Call)
                and ast.unparse(c.func).endswith("oea_select"))  # fmt: skip
    for name, arg in [
        *zip(POSITIONAL, call.args, strict=False),
        *((kw.arg, kw.value) for kw in call.keywords),
    ]:
        if name in values and isinstance(arg, (ast.Name, ast.Attribute)):
            _bind(scope, arg, values[name])
    for name in ("topk_ids", "topk_weights"):
        scope[name] = values[name]
    code = compile(inserted, "inserted", "exec")
    flag_module = re.search(r"def decode_step\(\) -> bool:\n    from ([\w.]+) import", added)
    assert flag_module is not None
    env = made.env
    monkeypatch.delenv(env, raising=False)
    off = dict(scope)
    exec(code, off)
    assert off["topk_ids"] is scope["topk_ids"] and off["topk_weights"] is scope["topk_weights"]

    on_flag, off_flag = FLAGS[framework]
    for attrs, oea_runs in ((off_flag, False), (on_flag, True)):
        fake = types.ModuleType(flag_module.group(1))
        fake.__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, fake.__name__, fake)
        monkeypatch.setenv(env, "5")
        for name, value in oea.RUN_WITH.items():
            monkeypatch.setenv(name, value)
        on = dict(scope)
        exec(code, on)
        assert (on["topk_ids"] is not scope["topk_ids"]) == oea_runs, attrs
    valid = torch.arange(b) < pad
    ref = oea_topk(logits, cfg, 5, valid=valid, correction_bias=bias)
    assert torch.equal(on["topk_ids"][:pad, :k].long(), ref.topk_ids[:pad, :k])
    assert torch.equal(on["topk_weights"][:pad, :k], ref.topk_weights[:pad, :k])
    assert torch.equal(on["topk_ids"][:, k:], scope["topk_ids"][:, k:])  # shared slots untouched
    assert torch.equal(on["topk_ids"][pad:], scope["topk_ids"][pad:])  # padded rows untouched


def test_a_flag_that_needs_more_environment_warns_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM's V2 model runner never marks a batch uniform: OEA on without
    VLLM_USE_V2_MODEL_RUNNER=0 says so once instead of staying off in silence."""
    made = _patch("vllm", "Qwen--Qwen3-30B-A3B.json", "0.33.0")
    assert "run with: VLLM_USE_V2_MODEL_RUNNER=0" in made.text
    assert "(declared at vllm/envs.py:2149)" in made.text.replace("\n# ", " ")
    root = _applied(tmp_path, made, "vllm", "0.33.0")
    spec = importlib.util.spec_from_file_location("oea_mod", root / made.module)
    assert spec is not None and spec.loader is not None
    oea = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(oea)
    monkeypatch.setattr(oea, "decode_step", lambda: True)
    monkeypatch.setenv("VLLM_OEA_K0", "3")
    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    with pytest.warns(
        UserWarning, match="VLLM_OEA_K0 is set, but OEA needs VLLM_USE_V2_MODEL_RUNNER=0"
    ):
        assert oea.active()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert oea.active()  # once


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
    assert "routescope patch supports sglang, vllm (NAME==V)" in capsys.readouterr().err


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


def test_a_release_without_the_runner_the_decode_check_needs_is_refused() -> None:
    """vLLM 0.34.0 removed the V1 model runner (platforms/interface.py:1476-1485 rejects
    VLLM_USE_V2_MODEL_RUNNER other than 1; envs.py no longer declares it), the only one whose
    forward context marks a uniform decode batch (the V2 runner captures FULL graphs with no
    batch descriptor: v1/worker/gpu/cudagraph_utils.py:814-828). A patch that could not tell
    a decode step is not written: the error names the variable and why."""
    from routescope.errors import RoutescopeError

    with pytest.raises(RoutescopeError, match=r"declares no VLLM_USE_V2_MODEL_RUNNER.*decode"):
        _patch("vllm", "zai-org--GLM-5.json", "0.34.0")
