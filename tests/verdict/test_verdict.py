"""The OEA verdict on real framework source: rule cases, the GLM-5 point, a fused router."""

from __future__ import annotations

import textwrap

import pytest

from routescope.verdict.rules import load_oea_rules
from tests.verdict.conftest import report

CASES = [{**c, "framework": name} for name, fw in load_oea_rules().frameworks.items()
         for c in fw.get("case", [])]  # fmt: skip


def test_rule_ids_are_unique_and_stable() -> None:
    ids = [c.id for c in load_oea_rules().constraints.values()]
    assert len(ids) == len(set(ids)) == 10
    assert load_oea_rules().constraints["routed-columns"].id == "OEA101"


@pytest.mark.network
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_rule_cases(case: dict[str, object]) -> None:
    doc = report(
        str(case["model"]),
        str(case["version"]),
        str(case["gpu"]),
        int(case.get("tp", 1)),  # type: ignore[call-overload]
        case.get("quant"),  # type: ignore[arg-type]
        str(case["framework"]),
    )
    v = doc["verdict"]
    if case["insertable"] != "any":
        assert v["insertable"] is case["insertable"], v["why"]
    if "function" in case:
        assert v["insertion_point"]["function"] == case["function"]
    found = {c["id"]: c["finding"] for c in v["constraints"]}
    for rule, text in case.get("findings", {}).items():  # type: ignore[attr-defined]
        assert text in found.get(rule, ""), (rule, found.get(rule))
    if "switch" in case:
        assert (v["switch"] or {}).get("flag") == case["switch"], v["switch"]
    if v["sketch"]:  # Python that compiles, with the framework's own names at the point
        compile(textwrap.dedent(v["sketch"]), f"sketch of {case['id']}", "exec")
    for text in case.get("sketch", []):  # type: ignore[attr-defined]
        assert text in (v["sketch"] or ""), v["sketch"]


@pytest.mark.network
def test_glm5_insertion_point_is_after_the_router_call_in_select_experts() -> None:
    v = report("examples/configs/zai-org--GLM-5.json", "0.5.9", "sm120")["verdict"]
    p = v["insertion_point"]
    assert v["insertable"] is True
    assert p["before"]["text"].lstrip().startswith("topk_weights, topk_ids = biased_grouped_topk(")
    assert "on_select_experts" in p["after"]["text"]
    assert [s["text"] for s in p["skipped"]] == ["if num_fused_shared_experts > 0 and _use_aiter:"]
    assert [c["call"] for c in p["post_processing"]] == ["on_select_experts", "capture"]
    found = {c["name"]: c["finding"] for c in v["constraints"]}
    assert found["routed-columns"].startswith("topk_ids[:, :8] are routed")
    assert "sigmoid(router_logits) + correction_bias" in found["scores"]
    assert "no group mask" in found["groups"]
    assert "already remapped" in found["expert-ids"]
    assert "plain eager Python" in found["opaque"]
    assert "topk_ids[:, :k - 1] = new_ids" in v["sketch"]


@pytest.mark.network
def test_glm5_on_0_5_23_sm120_every_item_with_evidence() -> None:
    """The acceptance reading: GLM-5, SGLang 0.5.23, SM120, TP8. The loader fuses the shared
    expert (top-k 9), the Triton gate routes, and OEA goes in select_experts after the router
    returns and before _post_process_topk_ids, on the routed columns only, capture-safe, with
    scores recomputed from the logits."""
    doc = report("examples/configs/zai-org--GLM-5.json", "0.5.23", "sm120", 8)
    assert doc["dispatch"]["status"] == "selected"
    v = doc["verdict"]
    p = v["insertion_point"]
    assert v["insertable"] is True
    assert p["function"] == "sglang.srt.layers.moe.topk:select_experts"
    assert "topk_weights, topk_ids = biased_grouped_topk(" in p["before"]["text"]
    assert (
        p["after"]["text"].lstrip().startswith("topk_ids, topk_weights, recorder_topk_ids = _post")
    )
    assert p["post_processing"][0]["call"] == "_post_process_topk_ids"
    found = {c["name"]: c for c in v["constraints"]}
    assert found["routed-columns"]["finding"].startswith("topk_ids[:, :8] are routed; the last 1")
    assert found["cuda-graph"]["finding"].startswith("decode runs inside a captured CUDA graph")
    assert found["scores-available"]["finding"].startswith("the router returns only")
    assert "recompute scores from `router_logits`" in found["scores-available"]["finding"]
    assert "applied to the MoE output" in found["scaling-factor"]["finding"]
    for c in v["constraints"]:
        assert c["evidence"], c["id"]


@pytest.mark.network
def test_fused_router_on_0_5_23_names_the_switch() -> None:
    """Qwen3-30B-A3B on SM100, SGLang 0.5.23: the Qwen3 override picks flashinfer_trtllm, the
    experts bind the router to it and TopK decides BYPASSED at bind time; the switch is the
    server argument whose resolved value is that backend."""
    doc = report("examples/configs/Qwen--Qwen3-30B-A3B.json", "0.5.23", "sm100", 8)
    v = doc["verdict"]
    assert v["insertable"] is False
    # the override that fired: the Qwen3 model override sets the backend on Blackwell
    backend = doc["dispatch"]["server_args"]["moe_runner_backend"]
    assert (backend["value"], backend["repr"]) == ("flashinfer_trtllm", "'flashinfer_trtllm'")
    assert backend["origins"] == ["sglang/srt/arg_groups/model_overrides/qwen3_moe.py:86"]
    sw = v["switch"]
    assert (sw["flag"], sw["current"], sw["suggest"]) == (
        "--moe-runner-backend",
        "flashinfer_trtllm",
        "triton",
    )
    assert sw["chosen_by"]["file"].endswith("layers/moe/topk.py")
    assert "is_flashinfer_trtllm()" in sw["chosen_by"]["condition"]


@pytest.mark.network
def test_fused_router_names_the_switch() -> None:
    """Qwen3-30B-A3B bf16 on sm100 with SGLang 0.5.9: the server's Qwen3 rule picks the
    flashinfer_trtllm runner, the router returns BypassedTopKOutput, and the trace follows it into
    the experts layer, where the TRT-LLM MoE kernel routes with the method the layer was built
    with. Not insertable as it stands; the verdict names the kernel and the switch."""
    doc = report("examples/configs/Qwen--Qwen3-30B-A3B.json", "0.5.9", "sm100", 8)
    assert doc["dispatch"]["status"] == "selected"
    (path,) = doc["dispatch"]["paths"]
    sink = path["sink"]
    assert (sink["name"], sink["kind"]) == (
        "flashinfer.fused_moe.trtllm_bf16_moe",
        "fused_moe_kernel",
    )
    given = {a["name"]: a["value"] for a in sink["args"]}
    assert given["routing_method_type"] == "RoutingMethodType.Renormalize"
    assert given["top_k"] == 8
    assert path["handoff"]["to"].endswith("FusedMoE.forward")
    v = doc["verdict"]
    assert v["insertable"] is False
    assert "BypassedTopKOutput" in v["why"] and "trtllm_bf16_moe" in v["why"]
    assert "routing_method_type=RoutingMethodType.Renormalize" in v["why"]
    assert v["switch"]["flag"] == "--moe-runner-backend"
    assert v["switch"]["current"] == "flashinfer_trtllm"
    assert v["switch"]["suggest"] not in v["switch"]["excluded"]
    assert v["switch"]["chosen_by"]["file"].endswith("layers/moe/topk.py")


@pytest.mark.network
def test_a_fork_is_undecided_not_guessed() -> None:
    """gpt-oss-120b on sm120 with SGLang 0.5.23: whether triton_kernels imports on the server
    decides the router, the profile cannot know it, so the dispatch forks and the verdict stays
    undecided instead of picking one path."""
    doc = report("examples/configs/openai--gpt-oss-120b.json", "0.5.23", "sm120", 8)
    assert doc["dispatch"]["status"] == "forked"
    assert doc["verdict"]["insertable"] is None
    # said in words every format shows, each path's verdict named (not a JSON field's name)
    why = doc["verdict"]["why"]
    assert "dispatch.undecided" not in why and "'would decide'" in why
    assert "per path: " in why and "none" not in why.split("per path: ")[1].split(";")[0]


@pytest.mark.network
def test_server_resolved_quantization_builds_the_model() -> None:
    """DeepSeek-V3 with no quantization on sm100, SGLang 0.5.9: the server makes it fp8
    (server_args.py:1295), so the MoE layer is built with SGLang's Fp8Config: the router is
    BYPASSED; the fp8 TRT-LLM path asserts on weight scales the loader sets, so the kernel is not
    named and a note says why."""
    doc = report("examples/configs/deepseek-ai--DeepSeek-V3.json", "0.5.9", "sm100", 8)
    disp = doc["dispatch"]
    assert disp["status"] == "selected"
    assert "the server resolves quantization = 'fp8'" in " ".join(disp["notes"])
    assert any("reached no kernel" in n for n in disp["notes"])
    (path,) = disp["paths"]
    assert path["sink"] is None and path["outcome"] == "return"
    assert doc["verdict"]["insertable"] is False


@pytest.mark.network
def test_online_fp8_on_trtllm_names_the_assert_that_stops_the_kernel() -> None:
    """Qwen3-30B-A3B with --quant fp8 (a bf16 checkpoint quantized online) on SM100, 0.5.23: the
    router is BYPASSED into flashinfer_trtllm, whose per-tensor fp8 path asserts on an input
    scale that only a static-scale checkpoint provides. The kernel is not named; the note says
    which assert stopped the trace, and the verdict still says routing is fused."""
    doc = report("examples/configs/Qwen--Qwen3-30B-A3B.json", "0.5.23", "sm100", 8, "fp8")
    disp = doc["dispatch"]
    (path,) = disp["paths"]
    assert path["sink"] is None and path["outcome"] == "return"
    assert any("`assert quant_info.w13_input_scale is not None` fails at" in n
               and "flashinfer_trtllm.py" in n for n in disp["notes"])  # fmt: skip
    assert doc["verdict"]["insertable"] is False


def test_a_sqrtsoftplus_router_gets_its_own_scores_in_the_sketch() -> None:
    """DeepSeek-V4 routes by sqrt(softplus(logits)) (sglang 0.5.23 moe_fused_gate.py:108
    SCORING_FUNC 1): the sketch computes that, not the sigmoid of the biased routers, and is
    valid Python; sigmoid and softmax are unchanged."""
    import ast

    from routescope.verdict.sketch import sketch

    kw = {"k": 6, "shared": 0, "renorm": True, "scale": True, "grouped": False, "pad": None}
    v4 = sketch("", biased=True, score="sqrtsoftplus", logits="router_logits", **kw)  # type: ignore[arg-type]
    assert "softplus(router_logits.float()).sqrt()" in v4 and "sigmoid" not in v4
    ast.parse(v4)
    assert "router_logits.float().sigmoid()" in sketch("", biased=True, score="sigmoid",
                                                       logits="router_logits", **kw)  # type: ignore[arg-type]  # fmt: skip
    assert ".softmax(dim=-1)" in sketch("", biased=False, score="softmax", logits="x", **kw)  # type: ignore[arg-type]


@pytest.mark.network
def test_routing_inside_the_experts_call_names_the_switch() -> None:
    """gpt-oss-120b on SM90, SGLang 0.5.23, with triton_kernels installed: the gpt-oss override
    picks the triton_kernel runner (arg_groups/model_overrides/gpt_oss.py:102-120) and TopK
    routes with triton_kernels' `routing` (moe/topk.py:906), whose ids no statement binds; the
    verdict names the runner switch the path's guards read, as it does for a fused kernel."""
    from routescope import api
    from tests.conftest import REPO

    doc = api.inspect(api.InspectRequest(
        model=str(REPO / "examples/checkpoints/openai--gpt-oss-120b"), framework="sglang==0.5.23",
        gpu="sm90", tp=8, packages={"triton_kernels": True}))  # fmt: skip
    v = doc["verdict"]
    assert v["insertable"] is False and "no statement on the path binds" in v["why"]
    sw = v["switch"]
    assert (sw["flag"], sw["current"], sw["suggest"]) == (
        "--moe-runner-backend", "triton_kernel", "triton")  # fmt: skip
    assert v["why"].endswith("--moe-runner-backend triton selects the decomposed path")


def test_the_score_a_router_computes_on_every_run_and_its_callers_score() -> None:
    """A router kernel whose code computes one score on every run decides OEA102 (Llama-4's
    custom_routing_function, sglang 0.5.23 llama4.py:85); one that computes a score in a branch
    is told which (moe_fused_gate's `if SCORING_FUNC == ...`); a kernel that only selects is
    scored by its caller, on what it hands the kernel or takes back, not on other tensors."""
    import ast

    from routescope.verdict.constraints import score_calls, scored_around
    from routescope.verdict.source import FunctionSource

    def fn(text: str) -> FunctionSource:
        node = ast.parse(textwrap.dedent(text)).body[0]
        return FunctionSource(module=None, node=node)  # type: ignore[arg-type]

    llama4 = fn("""
        def custom_routing_function(hidden_states, gating_output, topk, renormalize):
            scores, ids = fast_topk(gating_output, topk, dim=-1)
            scores = torch.sigmoid(scores.float()).to(hidden_states.dtype)
            shared = torch.sigmoid(hidden_states)
            return scores, ids
    """)
    assert score_calls(llama4, always=True) == [("sigmoid", 4), ("sigmoid", 5)]
    assert scored_around(llama4, "fast_topk") == [("sigmoid", 4)]  # not the shared gate's
    before = fn("""
        def route(x, k):
            p = x.softmax(dim=-1)
            if k > 1:
                q = torch.sigmoid(x)
            return topk(p, k)
    """)
    assert scored_around(before, "topk") == [("softmax", 3)]
    branch = fn("""
        def kernel(x, SCORING):
            if SCORING == 0:
                s = tl.sigmoid(x)
            else:
                s = x
            return s
    """)
    assert score_calls(branch) == [("sigmoid", 4)] and score_calls(branch, always=True) == []
