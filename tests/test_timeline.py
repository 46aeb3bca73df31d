"""`routescope timeline`: releases grouped by path and the decisions that changed between them.
Offline: the grouping, the decision diff and the renderers on reports shaped as inspect writes
them; the network test traces GLM-5 on SGLang 0.5.16 and 0.5.17 (SM120), where the router moves
from the torch.compile fallback to SGLang's Triton router."""

from __future__ import annotations

import json
from typing import Any

import pytest

from routescope import api
from routescope.cli import main
from routescope.errors import RoutescopeError
from routescope.render import timeline as render
from routescope.timeline import build_timeline, decisions_changed, releases_between, summarise
from tests.conftest import CONFIGS


def _d(fn: str, cond: str, value: bool | None, line: int) -> dict[str, Any]:
    return {"file": "sglang/srt/layers/moe/topk.py", "line": line, "function": f"m:{fn}",
            "condition": cond, "value": value}  # fmt: skip


def _report(sink: str, kind: str, decisions: list[dict[str, Any]],
            launch_at: int = 0, caller: str = "m:none") -> dict[str, Any]:  # fmt: skip
    """A report whose path calls the kernel's launcher `m:launch` from topk.py:`launch_at`,
    inside `caller` (frames as a trace records them)."""
    top = "sglang/srt/layers/moe/topk.py"
    frames = [
        {"function": caller, "file": top, "line": 1500, "called_at": f"{top}:900"},
        {"function": "m:launch", "file": "k.py", "line": 1, "called_at": f"{top}:{launch_at}"},
    ]
    path = {"selected": True, "sink": {"name": sink, "kind": kind, "called_from": "m:launch"},
            "decisions": decisions, "setup_decisions": [], "stopped": None,
            "frames": frames}  # fmt: skip
    router = {"top_k": {"value": 9, "kind": "constant", "repr": "9"},
              "output_format": {"value": "TopKOutputFormat.STANDARD", "kind": "enum",
                                "repr": "TopKOutputFormat.STANDARD"}}  # fmt: skip
    return {"dispatch": {"status": "selected", "paths": [path], "router": router}}


OLD = _report("topk:biased_grouped_topk_impl", "torch_compile", [
    _d("select_experts", "use_grouped_topk", True, 955),
    _d("biased_grouped_topk_gpu", "num_experts == 384", False, 1546),
    _d("biased_grouped_topk_gpu", "num_experts <= 512 and fused == 0", False, 1586),
])  # fmt: skip
NEW = _report("moe_fused_gate:_router_triton_kernel", "triton", [
    _d("select_experts", "use_grouped_topk", True, 960),
    _d("biased_grouped_topk_gpu", "_jit_gate_ok", True, 1592),
    _d("moe_fused_gate", "use_pdl", True, 342),  # the new kernel's own launcher: not the cause
], launch_at=1595, caller="m:biased_grouped_topk_gpu")  # fmt: skip


def test_the_decision_that_changed_is_where_the_paths_part() -> None:
    (block,) = decisions_changed(OLD["dispatch"]["paths"][0], NEW["dispatch"]["paths"][0])
    assert [d["condition"] for d in block["before"]] == [
        "num_experts == 384", "num_experts <= 512 and fused == 0"]  # fmt: skip
    assert [(d["condition"], d["value"], d["at"]) for d in block["after"]] == [
        ("_jit_gate_ok", True, "sglang/srt/layers/moe/topk.py:1592")]  # fmt: skip


def test_a_guard_that_moved_lines_is_no_change() -> None:
    shifted = [{**d, "line": d["line"] + 40} for d in OLD["dispatch"]["paths"][0]["decisions"]]
    moved = _report("topk:biased_grouped_topk_impl", "torch_compile", shifted)
    assert decisions_changed(OLD["dispatch"]["paths"][0], moved["dispatch"]["paths"][0]) == []


def test_releases_group_by_path_and_each_change_is_explained(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    by_version = {"0.5.15": OLD, "0.5.16": OLD, "0.5.17": NEW, "0.5.18": NEW}

    def fake(req: api.InspectRequest) -> dict[str, Any]:
        return {"report": by_version[req.framework.partition("==")[2]]}  # type: ignore[union-attr]

    monkeypatch.setattr("routescope.timeline._one", fake)
    req = api.InspectRequest(model="glm5", framework="sglang", gpu="RTX 5090", tp=8)
    t = build_timeline(req, list(by_version), jobs=1)
    assert [g["versions"] for g in t["groups"]] == [["0.5.15", "0.5.16"], ["0.5.17", "0.5.18"]]
    # the GPU as given, and the profile it names, shown as inspect shows it
    assert t["deployment"]["gpu"] == "RTX 5090"
    assert t["deployment"]["gpu_profile"]["family"] == "sm120"
    assert render.text(t).startswith("glm5 · sglang · sm120 (rtx-5090) · TP8")
    (change,) = t["changes"]
    assert (change["from_version"], change["to_version"]) == ("0.5.16", "0.5.17")
    assert change["fields"][0]["field"] == "sink"
    assert change["after"]["router"] == {"top_k": "9", "output_format": "STANDARD"}
    json.dumps(t)  # JSON as it is printed
    text = render.text(t)
    assert "0.5.15 .. 0.5.16" in text and "0.5.16 → 0.5.17:" in text
    assert "+ 0.5.17: _jit_gate_ok → true  (sglang/srt/layers/moe/topk.py:1592)" in text
    # the branch that chose the new kernel, as inspect's "chosen at" finds it; the old path
    # (no launcher call recorded) names none
    assert change["chosen"]["after"]["at"] == "sglang/srt/layers/moe/topk.py:1592"
    assert change["chosen"]["before"] is None
    assert (
        "0.5.17 chose its kernel at _jit_gate_ok → true  (sglang/srt/layers/moe/topk.py:1592)"
        in text
    )
    md = render.markdown(t)
    assert "- 0.5.17 chose its kernel at `sglang/srt/layers/moe/topk.py:1592`: `_jit_gate_ok`" in md
    assert "| 0.5.17 .. 0.5.18 | selected | moe_fused_gate:_router_triton_kernel [triton] |" in md
    assert "## 0.5.16 → 0.5.17" in md and "`_jit_gate_ok` → **true**" in md


def test_a_router_field_only_one_release_has_is_no_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """0.5.23's router gained runner_backend; 0.5.22's has none: the same path, one group. A
    field both have and that differs is a change."""
    newer = json.loads(json.dumps(NEW))
    triton = "MoeRunnerBackend.TRITON"
    newer["dispatch"]["router"]["runner_backend"] = {
        "value": triton,
        "kind": "enum",
        "repr": triton,
    }
    other = json.loads(json.dumps(NEW))
    other["dispatch"]["router"]["top_k"] = {"value": 8, "kind": "constant", "repr": "8"}
    by_version = {"0.5.22": NEW, "0.5.23": newer, "0.5.24": other}

    def fake(req: api.InspectRequest) -> dict[str, Any]:
        return {"report": by_version[req.framework.partition("==")[2]]}  # type: ignore[union-attr]

    monkeypatch.setattr("routescope.timeline._one", fake)
    req = api.InspectRequest(model="glm5", framework="sglang", gpu="sm120", tp=8)
    t = build_timeline(req, list(by_version), jobs=1)
    assert [g["versions"] for g in t["groups"]] == [["0.5.22", "0.5.23"], ["0.5.24"]]
    (change,) = t["changes"]
    assert [f["field"] for f in change["fields"]] == ["router"]


def test_a_release_that_cannot_be_traced_is_its_own_group() -> None:
    r = summarise("0.5.4", {"error": "model: the release serves no GlmMoeDsaForCausalLM"})
    assert r.status == "error" and "GlmMoeDsaForCausalLM" in r.error


def test_one_error_at_moved_lines_and_other_pins_is_one_group() -> None:
    """GLM-5 on 0.5.4 .. 0.5.8: the same "cannot load" with the resolver at utils.py:27, 28 or
    29 and transformers 4.57.1 or 5.0.0rc0: one answer, not a change per release."""
    said = ("X: no model class; its generic backend (r, sglang/srt/model_loader/utils.py:{line}) "
            "takes the class from transformers, and transformers=={pin}, which it pins, has no "
            "m.py: the release cannot load this model")  # fmt: skip
    a = summarise("0.5.5", {"error": said.format(line=27, pin="4.57.1")})
    b = summarise("0.5.6.post1", {"error": said.format(line=29, pin="5.0.0rc0")})
    assert a.same_path(b)
    other = summarise("0.5.9", {"error": "X: sglang==0.5.9 not cached, and --offline"})
    assert not a.same_path(other)


def test_a_step_that_raises_is_a_blocker_of_the_release() -> None:
    """A `raises` blocker names no kernel: the release's group says which exception stops it
    and in which step (it raised KeyError on the missing kernel)."""
    doc = json.loads(json.dumps(NEW))
    doc["blockers"] = [{"kind": "raises", "exception": "ValueError", "where": "s.py:1441",
                        "step": "server-argument step __post_init__"}]  # fmt: skip
    r = summarise("0.5.6.post1", {"report": doc})
    assert r.blockers == ("ValueError in server-argument step __post_init__",)
    moved = json.loads(json.dumps(doc))
    moved["blockers"][0]["where"] = "s.py:1450"
    assert r.same_path(summarise("0.5.6.post2", {"report": moved}))


def test_a_change_in_what_stops_says_where_each_release_stops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """vLLM 0.11.0 -> 0.11.1 for Qwen3-30B-A3B-NVFP4 at TP8: 0.11.0 stops in the weights'
    conversion at an assert 0.11.1 no longer makes. The paths past it are alike, so no path
    decision differs; the change says where the release stopped, and after which guard."""
    stopped = json.loads(json.dumps(OLD))
    stopped["dispatch"]["status"] = "blocked"
    stopped["blockers"] = [{
        "kind": "raises", "exception": "AssertionError", "where": "modelopt.py:1384",
        "step": "process_weights_after_loading on the built block",
        "after": "`layer.w2_weight_scale.shape[2] % 16 == 0` is false",
        "what": "vllm 0.11.0 stops in process_weights_after_loading: AssertionError",
    }]  # fmt: skip
    by_version = {"0.11.0": stopped, "0.11.1": OLD}

    def fake(req: api.InspectRequest) -> dict[str, Any]:
        return {"report": by_version[req.framework.partition("==")[2]]}  # type: ignore[union-attr]

    monkeypatch.setattr("routescope.timeline._one", fake)
    req = api.InspectRequest(model="qwen3", framework="vllm", gpu="sm120", tp=8)
    t = build_timeline(req, list(by_version), jobs=1)
    (change,) = t["changes"]
    assert change["stopped"] == {"before": {
        "at": "modelopt.py:1384", "after": "`layer.w2_weight_scale.shape[2] % 16 == 0` is false",
        "what": "vllm 0.11.0 stops in process_weights_after_loading: AssertionError"}}  # fmt: skip
    text = render.text(t)
    assert ("0.11.0 stops at modelopt.py:1384, after `layer.w2_weight_scale.shape[2] % 16 == 0` "
            "is false") in text  # fmt: skip
    assert "- 0.11.0 stops at `modelopt.py:1384`, after" in render.markdown(t)


def test_range_is_final_releases_and_an_unknown_bound_is_exit_2() -> None:
    versions = ["0.5.8", "0.5.9", "0.5.10rc1", "0.5.10", "0.5.11", "0.4.0.post1"]
    assert releases_between("sglang", versions, "0.5.9", "0.5.10") == ["0.5.9", "0.5.10"]
    assert releases_between("sglang", versions, None, "0.5.8") == ["0.4.0.post1", "0.5.8"]
    with pytest.raises(RoutescopeError) as err:
        releases_between("sglang", versions, "0.5.99", None)
    assert err.value.subject == "--from 0.5.99" and "0.5.11" in err.value.message


@pytest.mark.network
def test_glm5_moves_to_the_triton_router_at_0_5_17(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["timeline", str(CONFIGS / "zai-org--GLM-5.json"), "--framework", "sglang",
            "--gpu", "sm120", "--tp", "8", "--from", "0.5.16", "--to", "0.5.17", "--format",
            "json"]  # fmt: skip
    assert main(argv) == 0
    t = json.loads(capsys.readouterr().out)
    (change,) = t["changes"]
    assert (
        change["before"]["sink"]
        == "sglang.srt.layers.moe.topk:biased_grouped_topk_impl [torch_compile]"
    )
    assert change["after"]["sink"] == (
        "sglang.kernels.ops.moe.moe_fused_gate:_router_triton_kernel [triton]")  # fmt: skip
    block = change["decisions"][0]
    # 0.5.16 launches the Triton router for 384 experts only; 0.5.17's _jit_gate_ok admits GLM-5
    assert block["before"][0]["condition"].startswith("_is_cuda and num_experts == 384")
    assert block["before"][0]["value"] is False
    assert (block["after"][0]["condition"], block["after"][0]["value"]) == ("_jit_gate_ok", True)
    assert block["after"][0]["at"].startswith("sglang/srt/layers/moe/topk.py:")


def test_timeline_takes_a_name_not_a_pin(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["timeline", str(CONFIGS / "zai-org--GLM-5.json"), "--framework", "sglang==0.5.9"])
    assert code == 2 and "give the name only" in capsys.readouterr().err


def test_a_change_from_a_release_that_cannot_be_traced_reads_as_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """GLM-5 on vLLM 0.15.1 (its registry has no GlmMoeDsaForCausalLM) then 0.16.0: the change
    names the fields in words (no Python dict, no empty value) and says the older release could
    not be traced instead of looking for a guard that differs."""
    by_version = {"0.15.1": {"error": "GlmMoeDsaForCausalLM: the registry has no model class"},
                  "0.16.0": {"report": NEW}}  # fmt: skip

    def fake(req: api.InspectRequest) -> dict[str, Any]:
        return by_version[req.framework.partition("==")[2]]  # type: ignore[union-attr]

    monkeypatch.setattr("routescope.timeline._one", fake)
    req = api.InspectRequest(model="glm5", framework="vllm", gpu="sm120", tp=8)
    t = build_timeline(req, list(by_version), jobs=1)
    shown = render.text(t)
    assert "router: none → top_k=9, output_format=STANDARD" in shown
    assert "sink: none → moe_fused_gate:_router_triton_kernel [triton]" in shown
    assert "(0.15.1 could not be traced: its error is above)" in shown
    assert "{" not in shown and "no decision on the two paths" not in shown
    assert "- **router:** none → top_k=9, output_format=STANDARD" in render.markdown(t)
