"""Deployment inputs change the traced path the way the framework's own code says they should."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from routescope import api
from routescope.cli import main
from tests.conftest import CONFIGS

DSV3 = str(CONFIGS / "deepseek-ai--DeepSeek-V3.json")


def _dispatch(model: str, version: str, gpu: str, **kw: object) -> dict[str, object]:
    req = api.InspectRequest(model=model, framework=f"sglang=={version}", gpu=gpu, tp=8, **kw)  # type: ignore[arg-type]
    doc = api.inspect(req)
    return doc["dispatch"]  # type: ignore[no-any-return]


@pytest.mark.network
def test_disabling_shared_expert_fusion_changes_top_k_and_kernel() -> None:
    """DeepSeek-V3 on SM120, SGLang 0.5.9: the fused shared slot makes top-k 9, which fails
    flashinfer's `num_fused_shared_experts == 0`; without fusion top-k is 8 and every conjunct of
    that guard holds (256 experts, 8 groups of 32, topk_group 4)."""
    fused = _dispatch(DSV3, "0.5.9", "sm120")
    plain = _dispatch(DSV3, "0.5.9", "sm120", server_args={"disable_shared_experts_fusion": True})
    assert fused["router"]["top_k"]["value"] == 9  # type: ignore[index]
    assert plain["router"]["top_k"]["value"] == 8  # type: ignore[index]
    assert fused["paths"][0]["sink"]["name"] == "sgl_kernel.moe_fused_gate"  # type: ignore[index]
    assert plain["paths"][0]["sink"]["name"] == "flashinfer.fused_moe.fused_topk_deepseek"  # type: ignore[index]


@pytest.mark.network
def test_disabling_shared_expert_fusion_on_0_5_23_moves_the_router_branch() -> None:
    """GLM-5 on SM120, SGLang 0.5.23: the loader's shared-expert layout (resolve_shared_experts_
    config) puts a shared slot in the router (top-k 9), which admits the Triton gate through
    `_jit_gate_ok` (topk > 8). With --set disable_shared_experts_fusion=true the router takes
    top-k 8, `_jit_gate_ok` fails and the ungrouped-sigmoid branch (num_fused_shared_experts
    == 0) routes instead: the same Triton kernel, reached by another guard."""
    glm5 = str(CONFIGS / "zai-org--GLM-5.json")
    fused = _dispatch(glm5, "0.5.23", "sm120")
    plain = _dispatch(
        glm5, "0.5.23", "sm120", server_args={"disable_shared_experts_fusion": "true"}
    )
    assert (fused["status"], plain["status"]) == ("selected", "selected")
    assert fused["router"]["top_k"]["value"] == 9  # type: ignore[index]
    assert plain["router"]["top_k"]["value"] == 8  # type: ignore[index]

    def decided(d: dict[str, object]) -> dict[str, bool]:
        (path,) = d["paths"]  # type: ignore[misc]
        return {x["condition"]: x["value"] for x in path["decisions"]  # type: ignore[index]
                if x["file"].endswith("layers/moe/topk.py")}  # fmt: skip

    assert decided(fused)["_jit_gate_ok"] is True
    assert decided(plain)["_jit_gate_ok"] is False
    ungrouped = next(c for c in decided(plain) if "num_fused_shared_experts == 0" in c
                     and "num_experts <= 512" in c)  # fmt: skip
    assert decided(plain)[ungrouped] is True and ungrouped not in decided(fused)
    for d in (fused, plain):
        sink = d["paths"][0]["sink"]  # type: ignore[index]
        assert sink["name"] == "sglang.kernels.ops.moe.moe_fused_gate:_router_triton_kernel"


@pytest.mark.network
def test_a_server_argument_the_facts_cannot_decide_forks_and_is_named() -> None:
    """gpt-oss on SM120, SGLang 0.5.23: its model override picks the MoE runner from whether
    the triton_kernels package is installed (not a dependency of the wheel) and from the NVIDIA
    driver version (nvidia-smi), neither of which a GPU profile knows. The report forks into
    the Triton router, the triton_kernels routing and torch, and names those conditions as
    server-argument unknowns upstream of every path, not the consequences of joining them."""
    gpt_oss = str(CONFIGS / "openai--gpt-oss-20b.json")
    d = _dispatch(gpt_oss, "0.5.23", "sm120")
    assert d["status"] == "forked" and not d["incomplete"]
    sinks = {p["sink"]["name"] for p in d["paths"] if p["sink"]}  # type: ignore[index,union-attr]
    assert "sglang.kernels.ops.moe.moe_fused_gate:_router_triton_kernel" in sinks
    upstream = [u for u in d["undecided"] if u.get("phase") == "server arguments"]  # type: ignore[union-attr]
    files = {u["file"] for u in upstream}
    assert "sglang/srt/arg_groups/model_overrides/gpt_oss.py" in files
    assert any("is_triton_kernels_available()" in u["condition"] for u in upstream)
    assert not any(u["undecided_because"].startswith(("differs between", "depends on"))
                   for u in upstream)  # fmt: skip
    output_format = d["router"]["output_format"]  # type: ignore[index]
    assert (output_format["kind"], output_format["value"]) == ("unknown", None)
    formats = output_format["repr"]
    assert formats.count("unknown") == 1 and "TRITON_KERNEL" in formats and "STANDARD" in formats


@pytest.mark.network
def test_saying_an_optional_package_is_absent_decides_the_fork() -> None:
    """The same gpt-oss deployment with `--package triton_kernels=false`: the override's
    triton_kernels branch is not taken (the driver version no longer matters), the runner stays
    auto -> Triton and one path is selected; the report's deployment says what was given."""
    gpt_oss = str(CONFIGS / "openai--gpt-oss-20b.json")
    req = api.InspectRequest(model=gpt_oss, framework="sglang==0.5.23", gpu="sm120", tp=8,
                             packages={"triton_kernels": False})  # fmt: skip
    doc = api.inspect(req)
    d = doc["dispatch"]
    assert d["status"] == "selected"
    assert d["paths"][0]["sink"]["name"].endswith("moe_fused_gate:_router_triton_kernel")
    assert d["router"]["output_format"]["value"] == "TopKOutputFormat.STANDARD"
    assert doc["deployment"]["packages"] == {"triton_kernels": False}


def test_package_value_must_be_true_or_false(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["inspect", DSV3, "--package", "triton_kernels=maybe"])
    err = capsys.readouterr().err
    assert code == 2 and "--package triton_kernels=maybe" in err and err.count("\n") == 1


@pytest.mark.network
def test_custom_routing_function_in_plain_torch_is_the_sink() -> None:
    """Phi-3.5-MoE routes with sparsemixer, a custom routing function of torch ops."""
    d = _dispatch(str(CONFIGS / "microsoft--Phi-3.5-MoE-instruct.json"), "0.5.9", "sm120")
    assert d["status"] == "selected"
    sink = d["paths"][0]["sink"]  # type: ignore[index]
    assert sink["kind"] == "torch" and sink["name"].endswith("phimoe:sparsemixer")


@pytest.mark.network
def test_unknown_server_argument_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["inspect", DSV3, "--framework", "sglang==0.5.9", "--set", "no_such_arg=1"])
    err = capsys.readouterr().err
    assert code == 2 and "--set no_such_arg" in err and err.count("\n") == 1


@pytest.mark.network
@pytest.mark.parametrize(
    ("version", "declared_at"),
    [
        ("0.5.23", "sglang/srt/arg_groups/fields/model.py:177"),  # a dataclass field's Arg(...)
        ("0.5.9", "sglang/srt/server_args.py:3067"),  # argparse's add_argument(choices=...)
    ],
)
def test_an_unknown_quant_lists_what_the_release_accepts(
    capsys: pytest.CaptureFixture[str], version: str, declared_at: str
) -> None:
    code = main(["inspect", DSV3, "--framework", f"sglang=={version}", "--quant", "int3"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "--quant int3" in err and "modelopt_fp4" in err and declared_at in err
    assert "nvfp4 (modelopt_fp4)" in err  # the aliases the rules give


@pytest.mark.network
def test_a_server_argument_value_outside_its_choices_is_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["inspect", DSV3, "--framework", "sglang==0.5.23", "--set", "moe_runner_backend=warp"]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "--set moe_runner_backend=warp" in err and "flashinfer_cutlass" in err


@pytest.mark.network
@pytest.mark.parametrize(
    ("flag", "said"),
    [
        # the string 'False' would count as true and flip the CUDA-graph advice
        (["--set", "disable_cuda_graph=maybe"], "ServerArgs.disable_cuda_graph is bool"),
        (["--set", "ep_size=two"], "ServerArgs.ep_size is int (default 1): expected an integer"),
        # parsed by the declaration's own EnvBool.parse (environ.py:143-151), which raises
        (["--env", "SGLANG_OPT_USE_JIT_KERNEL_GROUPED_TOPK=banana"],
         "ValueError raised at sglang/srt/environ.py:150 in EnvBool.parse"),
        (["--env", "not_a_var=1"], "declares no such variable"),
        (["--package", "nosuchpkg=false"], "no module this deployment loads imports it"),
    ],
)  # fmt: skip
def test_a_flag_value_the_release_would_not_take_is_exit_2(
    capsys: pytest.CaptureFixture[str], flag: list[str], said: str
) -> None:
    argv = ["inspect", str(CONFIGS / "zai-org--GLM-5.json"), "--framework", "sglang==0.5.23",
            "--gpu", "sm120", "--tp", "8", *flag]  # fmt: skip
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert flag[1].split("=")[0] in err and said in err, err


@pytest.mark.network
def test_a_boolean_server_argument_is_parsed_as_one() -> None:
    """`--set disable_cuda_graph=False` is False (it used to be the string 'False', true)."""
    for word, captured in (("False", True), ("true", False), ("0", True)):
        doc = api.inspect(api.InspectRequest(
            model=str(CONFIGS / "zai-org--GLM-5.json"), framework="sglang==0.5.23", gpu="sm120",
            tp=8, server_args=api.parse_assignments([f"disable_cuda_graph={word}"], "--set",
                                                    literal=True)))  # fmt: skip
        assert doc["dispatch"]["server_args"]["disable_cuda_graph"]["value"] is (not captured)
        oea106 = next(c for c in doc["verdict"]["constraints"] if c["id"] == "OEA106")
        assert ("inside a captured CUDA graph" in oea106["finding"]) is captured, oea106


@pytest.mark.network
def test_nvfp4_is_the_frameworks_modelopt_fp4() -> None:
    doc = api.inspect(api.InspectRequest(model=DSV3, framework="sglang==0.5.23", gpu="sm120",
                                         tp=8, quant="nvfp4"))  # fmt: skip
    notes = doc["dispatch"]["notes"]
    assert "the server resolves quantization = 'modelopt_fp4' (--quant)" in " ".join(notes), notes


@pytest.mark.network
def test_config_without_architectures_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["inspect", str(CONFIGS / "zai-org--GLM-4.5.json"), "--framework", "sglang==0.5.9"])
    err = capsys.readouterr().err
    assert code == 2 and "no architectures" in err


def test_unknown_framework_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["inspect", DSV3, "--framework", "tgi==1.0"])
    err = capsys.readouterr().err
    assert code == 2 and "no rules for this framework" in err and "sglang" in err


@pytest.mark.network
def test_text_output_names_sink_and_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["inspect", DSV3, "--framework", "sglang==0.5.9", "--gpu", "sm120", "--tp", "8"]
    code = main([*argv, "--explain"])
    out = capsys.readouterr().out
    assert code == 0
    assert "one path selected" in out and "sgl_kernel.moe_fused_gate" in out
    assert "OEA verdict" in out and "\x1b[" not in out
    assert out.index("selected: sgl_kernel.moe_fused_gate") < out.index("one path selected")


@pytest.mark.network
def test_the_answer_comes_first_in_fifteen_lines(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """GLM-5 on 0.5.23 / SM120 at 80 columns: the kernel, the decision that chose it and the
    OEA verdict in the first 15 lines; the details only under --explain; --brief one line."""
    monkeypatch.setenv("COLUMNS", "80")
    glm5 = str(CONFIGS / "zai-org--GLM-5.json")
    argv = ["inspect", glm5, "--framework", "sglang==0.5.23", "--gpu", "sm120", "--tp", "8"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) <= 15, lines
    text = "\n".join(lines)
    assert "selected: sglang.kernels.ops.moe.moe_fused_gate:_router_triton_kernel" in text
    assert "chosen at moe/topk.py:2185  _jit_gate_ok → true" in text
    assert "OEA: insertable after moe/topk.py:2962 in select_experts" in text
    assert "OEA101" in text and "details: --explain" in lines[-1]
    assert main([*argv, "--brief"]) == 0
    (brief,) = capsys.readouterr().out.splitlines()
    assert "selected" in brief and "_router_triton_kernel [triton]" in brief


@pytest.mark.network
def test_json_is_deterministic() -> None:
    a = api.inspect(api.InspectRequest(model=DSV3, framework="sglang==0.5.12", gpu="sm120", tp=8))
    b = api.inspect(api.InspectRequest(model=DSV3, framework="sglang==0.5.12", gpu="sm120", tp=8))
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.mark.network
def test_a_model_the_release_does_not_serve_is_a_clear_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """GLM-5 (GlmMoeDsaForCausalLM) first appears in SGLang 0.5.9: on 0.5.4 no model module's
    EntryClass lists it (models/glm4_moe.py serves only Glm4MoeForCausalLM), so there is no
    decode path to report: one line naming the architecture, exit 2."""
    glm5 = str(CONFIGS / "zai-org--GLM-5.json")
    code = main(["inspect", glm5, "--framework", "sglang==0.5.4", "--gpu", "sm120", "--tp", "8"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().count("\n") == 0 and "GlmMoeDsaForCausalLM" in err
    # nor can its Transformers fallback load it: resolve_transformers_arch (model_loader/
    # utils.py:27) takes the class from the transformers 0.5.4 pins, which has no glm_moe_dsa
    assert "utils.py:27" in err and "transformers==4.57.1" in err
    assert "the release cannot load this model" in err


@pytest.mark.network
def test_a_checkpoint_with_remote_code_is_served_from_it_and_never_run(
    capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    """The same GLM-5 on 0.5.4 with an auto_map (a variation of the real config, written here):
    resolve_transformers_arch then takes the checkpoint's own AutoModel class (utils.py:48-58),
    code routescope never runs: said in one line, exit 2."""
    from pathlib import Path

    config = json.loads((CONFIGS / "zai-org--GLM-5.json").read_text())
    config["auto_map"] = {"AutoModel": "modeling_glm.GlmModel"}
    path = Path(str(tmp_path)) / "config.json"
    path.write_text(json.dumps(config))
    code = main(["inspect", str(path), "--framework", "sglang==0.5.4", "--gpu", "sm120"])
    err = capsys.readouterr().err
    assert code == 2 and err.strip().count("\n") == 0
    assert "auto_map AutoModel = modeling_glm.GlmModel" in err and "never runs" in err


@pytest.mark.network
def test_a_model_served_through_the_transformers_backend_is_traced_in_the_library_code() -> None:
    """dots.llm1 (Dots1ForCausalLM) has no SGLang class in 0.5.23: get_model_architecture sends
    it to resolve_transformers_arch (model_loader/utils.py:230-231), which serves it through
    TransformersMoEForCausalLM (utils.py:79-100) with transformers' own Dots1 code (5.19.0, the
    release's pin). The backend swaps the block's 3-D `experts` for TransformersFusedMoE
    (models/transformers.py:1255-1300); the block's router is transformers' Dots1TopkRouter:
    sigmoid scores plus the correction bias, torch.topk (modeling_dots1.py:284-309). The
    trace goes through the library's code to the kernel, and OEA goes in the block's forward
    right after it binds the ids and weights (modeling_dots1.py:369)."""
    report = api.inspect(
        api.InspectRequest(
            model=str(CONFIGS / "rednote-hilab--dots.llm1.base.json"),
            framework="sglang==0.5.23",
            gpu="sm120",
            tp=8,
        )
    )
    d = report["dispatch"]
    assert d["status"] == "selected", d["notes"]
    (path,) = d["paths"]
    sink = path["sink"]
    assert (sink["name"], sink["kind"]) == ("torch.topk", "torch")
    assert sink["file"] == "transformers/models/dots1/modeling_dots1.py"
    assert sink["called_from"].endswith("modeling_dots1:Dots1TopkRouter.forward")
    assert d["model_class"] == "sglang.srt.models.transformers:TransformersMoEForCausalLM"
    assert d["block_class"] == "transformers.models.dots1.modeling_dots1:Dots1MoE"
    frames = [f["function"] for f in path["frames"]]
    assert "sglang.srt.models.transformers:TransformersFusedMoE.forward" in frames
    assert "sglang.srt.layers.moe.fused_moe_triton.layer:FusedMoE.forward" in frames
    assert d["router"]["top_k"]["value"] == 6
    verdict = report["verdict"]
    assert verdict["insertable"] is True
    point = verdict["insertion_point"]
    assert point["function"] == "transformers.models.dots1.modeling_dots1:Dots1MoE.forward"
    assert point["insert_after_line"] == 369
    scores = next(c for c in verdict["constraints"] if c["id"] == "OEA102")
    assert scores["finding"].startswith("rank by sigmoid(router_logits) + correction_bias")
    columns = next(c for c in verdict["constraints"] if c["id"] == "OEA101")
    assert columns["finding"] == "all 6 columns of topk_ids are routed experts"
    # the sketch names what the point has: the ids as the block binds them, the bias on the
    # router module the block calls (self.gate), the logits said to be out of scope (OEA108)
    sketch = verdict["sketch"]
    compile(textwrap.dedent(sketch), "sketch", "exec")
    assert "rank = s + self.gate.e_score_correction_bias" in sketch
    assert "topk_indices, topk_weights = new_ids, new_w" in sketch
    assert "# not in scope at the point (OEA108)" in sketch


@pytest.mark.network
def test_vllm_says_it_serves_an_unregistered_model_through_its_transformers_backend(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """vLLM 0.33.0 dropped its own Dots1 class (registry.py _PREVIOUSLY_SUPPORTED_MODELS:
    "0.23.0"), but does not refuse dots.llm1: resolve_model_cls sends an architecture its
    registry lacks, with model_impl auto, to _try_resolve_transformers, which serves it through
    the Transformers modeling backend when the installed transformers defines the class. vLLM
    asks a range of transformers (no one version), so the answer says that, and which release
    function decides, instead of "the registry has no model class"."""
    model = str(CONFIGS / "rednote-hilab--dots.llm1.base.json")
    code = main(["inspect", model, "--framework", "vllm==0.33.0", "--gpu", "sm120", "--tp", "8"])
    err = capsys.readouterr().err
    assert code == 2 and err.strip().count("\n") == 0
    assert "Dots1ForCausalLM: the registry (vllm.model_executor.models.registry) has no" in err
    assert "the release serves it through its Transformers modeling backend" in err
    assert "(vllm.model_executor.models.registry:_ModelRegistry._try_resolve_transformers, " in err
    assert "vllm/model_executor/models/registry.py:" in err
    assert "if transformers, as the server has it, defines the class" in err
    assert "pins no exact transformers version" in err


@pytest.mark.network
def test_vllm_says_its_registry_serves_a_model_through_the_transformers_backend(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """vLLM 0.34.0 removed its own OLMoE class: the registry maps OlmoeForCausalLM to
    ("transformers", "TransformersMoEForCausalLM") (registry.py:800), whose MoE layer is vLLM's
    FusedMoE only where MoEBlockFuser matches the library block's torch.fx graph. The rules do
    not follow that backend: the answer says so, with the registry's line, at once (it forked
    on the fx graph until a million-step budget ran out, 10 s, naming set-up conditions that
    decide nothing). 0.33.0 still has its own class, and its answer is unchanged."""
    model = str(CONFIGS / "allenai--OLMoE-1B-7B-0924.json")
    args = ["--gpu", "sm120", "--tp", "8"]
    code = main(["inspect", model, "--framework", "vllm==0.34.0", *args])
    err = capsys.readouterr().err
    assert code == 2 and err.strip().count("\n") == 0
    assert "OlmoeForCausalLM: the registry serves it with TransformersMoEForCausalLM " in err
    assert "(vllm/model_executor/models/registry.py:800): its Transformers modeling backend" in err
    assert "routescope does not follow that backend for this framework yet" in err
    code = main(["inspect", model, "--framework", "vllm==0.33.0", *args, "--brief"])
    out = capsys.readouterr().out
    assert code == 0 and "selected: torch.ops._moe_C.topk_softmax" in out


@pytest.mark.network
def test_a_model_build_that_raises_on_every_way_is_not_selected() -> None:
    """DeepSeek-V3 bf16 on SGLang 0.5.4: building the model asks the quantization config of
    None for its name (models/deepseek_v2.py:2902, determine_num_fused_shared_experts), so the
    server does not start. The report says where, and selects no path."""
    d = _dispatch(DSV3, "0.5.4", "sm120")
    assert d["status"] != "selected"
    (why,) = [n for n in d["incomplete"] if "the model's constructor" in n or "loader" in n]  # type: ignore[union-attr]
    assert "raises AttributeError" in why and "sglang/srt/models/deepseek_v2.py:2902" in why


def test_a_release_no_case_was_read_on_is_noted_not_downgraded() -> None:
    from routescope.analysis.phases.dispatch import uncovered
    from routescope.analysis.phases.frameworks import load_framework

    rules = load_framework("sglang")
    assert uncovered(rules, "0.5.23") == ""  # cases were read on it
    note = uncovered(rules, "0.5.3")
    assert note.startswith("no case in rules/frameworks/sglang.toml was read on sglang 0.5.3")


@pytest.mark.network
def test_a_forked_answer_is_shown_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """gpt-oss on 0.5.23 / SM120 forks on whether triton_kernels imports: the answer is printed
    (what would decide it first), and the exit code says it is not one path."""
    gpt_oss = str(CONFIGS / "openai--gpt-oss-120b.json")
    argv = ["inspect", gpt_oss, "--framework", "sglang==0.5.23", "--gpu", "sm120", "--tp", "8"]
    assert main(argv) == 2
    out = capsys.readouterr().out
    assert "forked:" in out and "would decide:" in out and "gpt_oss.py:103" in out
    assert main([*argv, "--format", "json"]) == 2
    assert json.loads(capsys.readouterr().out)["dispatch"]["status"] == "forked"


@pytest.mark.network
def test_inspect_markdown_is_the_reports_renderer(capsys: pytest.CaptureFixture[str]) -> None:
    from routescope.render.markdown import render

    argv = ["inspect", DSV3, "--framework", "sglang==0.5.9", "--gpu", "sm120", "--tp", "8"]
    assert main([*argv, "--format", "markdown"]) == 0
    doc = api.inspect(api.InspectRequest(model=DSV3, framework="sglang==0.5.9", gpu="sm120", tp=8))
    assert capsys.readouterr().out == render(doc)


@pytest.mark.network
def test_report_takes_the_deployment_options_inspect_takes(tmp_path: object) -> None:
    from pathlib import Path

    out = Path(str(tmp_path)) / "r.md"
    argv = ["report", DSV3, "--framework", "sglang==0.5.23", "--gpu", "sm120", "--tp", "8",
            "--set", "disable_shared_experts_fusion=True", "-o", str(out)]  # fmt: skip
    assert main(argv) == 0
    text = out.read_text()
    assert "disable_shared_experts_fusion" in text
    argv[-3:-2] = ["moe_runner_backend=warp"]
    assert main(argv) == 2  # checked against the release's declared choices, as inspect does


def test_server_arguments_rebuilt_alike_on_every_path_settle_to_that_value(
    tmp_path: Path,
) -> None:
    """Found on sglang 0.5.15 / SM100 (server_args.py:3840-3842): after a fork __post_init__
    rebuilds its declaration stash on each path, with the same entries. Settling compared the
    fields by identity, so the stash became unknown, shared-expert fusion (read from it) was
    built both ways and GLM-5 and DeepSeek-V3 forked; joined with the engine's join, the stash
    is that list, and only what really differs (`other`) is undecided."""
    from routescope.analysis.engine.core import Engine
    from routescope.analysis.engine.facts import Facts
    from routescope.analysis.engine.state import PathState
    from routescope.analysis.engine.values import ClassVal, Const, Instance, Unknown
    from routescope.analysis.phases.setup import settle
    from routescope.analysis.phases.trace import resolve_entry
    from tests.engine.test_engine_synthetic import make_tree

    src = """
    import os
    from dataclasses import dataclass

    def collect(model):
        return [("family", {"page_size": 64})]

    @dataclass
    class Args:
        model: str = "m"
        disable_fusion: bool = False

        def __post_init__(self):
            self.stash = []
            if os.environ.get("FW_X"):
                self.other = 1
            else:
                self.other = 2
            self.stash = collect(self.model)
            self.stash.append(("fusion", {"disable_fusion": True}))

    def flag(args):
        out = args.disable_fusion
        for _src, decl in args.stash:
            if "disable_fusion" in decl:
                out = decl["disable_fusion"]
        return out
    """
    engine = Engine(make_tree(tmp_path, {"args.py": src}), Facts())
    cls = resolve_entry(engine, "fw.args:Args")
    assert isinstance(cls, ClassVal)
    inst = Instance(cls, {}, "server_args")
    engine.dataclass_init(cls, inst, [], {})
    post_init = cls.lookup("__post_init__")
    outs = engine.call(PathState(envs=[{}]), post_init.bind(inst), [], {}, None)  # type: ignore[union-attr]
    states = [s for s, *_ in outs]
    assert len(states) == 2  # FW_X is not given: both ways
    engine.commit_all(states, inst)
    notes: list[str] = []
    settle(inst, states, notes, "__post_init__")
    assert notes == ["__post_init__: undecided for other"]
    assert isinstance(inst.fields["other"], Unknown)
    flag = resolve_entry(engine, "fw.args:flag")
    got = engine.call(PathState(envs=[{}]), flag, [inst], {}, None)
    values = {o[-1].value if isinstance(o[-1], Const) else None for o in got}
    assert values == {True}


@pytest.mark.network
def test_a_wrappers_moe_block_reads_the_text_config_its_language_model_is_handed() -> None:
    """vLLM 0.34.0's Llama-4 wrapper builds its language model with
    `vllm_config.with_hf_config(config.text_config, ...)` (mllama4.py:764-770), and Llama4MoE
    reads `vllm_config.model_config.hf_config.num_experts_per_tok` (llama4.py:89-94). The block
    built on its own was handed the outer configuration: top-k unknown ("config has no attribute
    num_experts_per_tok") and more than 256 paths in the decode forward."""
    scout = str(CONFIGS / "meta-llama--Llama-4-Scout-17B-16E-Instruct.json")
    req = api.InspectRequest(model=scout, framework="vllm==0.34.0", gpu="sm120", tp=8)
    dispatch = api.inspect(req)["dispatch"]
    assert dispatch["router"]["top_k"]["value"] == 1
    assert dispatch["status"] != "unknown"


@pytest.mark.network
def test_ep_on_vllm_is_its_expert_parallel_switch(capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM takes no expert-parallel size: --ep 8 at TP8 turns on enable_expert_parallel (its
    size is TP x DP x PCP, fused_moe/config.py:1235-1268); it exited 2 naming `--set ep_size`,
    which the user never gave. Another size exits 2 naming the one it takes."""
    argv = ["inspect", DSV3, "--framework", "vllm==0.34.0", "--gpu", "sm120", "--tp", "8"]
    doc = api.inspect(api.InspectRequest(model=DSV3, framework="vllm==0.34.0", gpu="sm120",
                                         tp=8, ep=8))  # fmt: skip
    arg = doc["dispatch"]["server_args"]["enable_expert_parallel"]
    assert (arg["value"], arg["origins"]) == (True, ["--ep"])
    assert doc["deployment"]["ep"] == 8 and doc["deployment"]["server_args"] == {}
    assert main([*argv, "--ep", "8"]) == 0
    assert "· TP8 · EP8 · bf16" in capsys.readouterr().out.splitlines()[0]
    assert main([*argv, "--ep", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--ep 4" in err and "--ep takes 8, or 1 for none" in err


@pytest.mark.network
def test_ep_and_a_set_of_its_argument_are_not_both_taken(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["inspect", DSV3, "--framework", "sglang==0.5.23", "--tp", "8", "--ep", "8"]
    assert main([*argv, "--set", "ep_size=4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--ep 8" in err and "--set ep_size" in err


@pytest.mark.network
def test_an_ep_wider_than_tp_stops_where_sglang_checks_its_topology(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """SGLang 0.5.23 at TP4 EP8: the MoE TP width is 4 // 8 = 0 and publish's topology check
    raises ValueError (runtime_context.py:346-350), which its caller re-raises: the blocker is
    that raise, at its line. Before, the re-raise lost its line, and the answer led with a
    later step's RuntimeError on a rank publish never wrote (a consequence)."""
    argv = ["inspect", DSV3, "--framework", "sglang==0.5.23", "--gpu", "sm120", "--tp", "4",
            "--ep", "8"]  # fmt: skip
    assert main(argv) == 0  # blocked: the deployment certainly stops, where the answer says
    out = capsys.readouterr().out
    first = out.split("BLOCKED: ")[1]
    assert "publish: ValueError: parallel topology" in first.replace("\n", "")
    assert "at srt/runtime_context.py:347" in first
    assert out.count("BLOCKED: ") == 1 and "past it, 1 more step(s) raise" in out
    # sharding as wide as TP passes the check; it replaces --ep (both given: exit 2)
    assert "way out: --ep 4 (in place of --ep 8) → " in out
