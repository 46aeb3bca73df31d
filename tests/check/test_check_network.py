"""`routescope check` end to end on real SGLang wheels (0.5.9 to 0.5.23): lock, rules, exits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from routescope import api
from routescope.check import load_policy
from routescope.check.matrix import run_matrix
from routescope.errors import ExitCode
from tests.check.conftest import DSV3, GLM5, policy_text, run, write_policy
from tests.conftest import CONFIGS

pytestmark = pytest.mark.network


def test_lock_from_0_5_12_fails_on_0_5_9_and_names_the_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_policy(tmp_path, policy_text([DSV3], "sglang==0.5.12", ["sm120"]))
    code, out, _ = run(["check", "--policy", str(path), "--update-lock"], capsys)
    assert code == ExitCode.OK, out
    lock = (tmp_path / "routescope.lock").read_text()
    assert 'sink = "flashinfer.fused_moe.fused_topk_deepseek"' in lock
    assert 'sink_kind = "cuda_kernel"' in lock and 'sink_provider = "flashinfer"' in lock
    assert 'top_k = "9"' in lock

    code, out, _ = run(["check", "--policy", str(path)], capsys)
    assert code == ExitCode.OK, out  # same version: same path

    path.write_text(path.read_text().replace("0.5.12", "0.5.9"))
    code, out, _ = run(["check", "--policy", str(path)], capsys)
    assert code == ExitCode.CHECK_FAILED, out
    assert (
        "path changed: flashinfer.fused_moe.fused_topk_deepseek (cuda_kernel, flashinfer) -> "
        "sgl_kernel.moe_fused_gate (cuda_kernel, sgl_kernel)"
    ) in out
    assert "sink_provider: flashinfer -> sgl_kernel" in out
    # the decisive guards: 0.5.12's flashinfer guard held; 0.5.9's refuses the fused shared
    # expert slot and its moe_fused_gate guard holds
    assert (
        "chosen before (sglang==0.5.12) by: _is_cuda and fused_topk_deepseek is not None and" in out
    )
    assert "num_fused_shared_experts == 0 -> false" in out
    assert (
        "only after: _is_cuda and experts_per_group <= 32 and is_power_of_two(num_experts) -> true"
        in out
    )
    assert "note: routescope.lock was recorded with sglang==0.5.12; checking sglang==0.5.9" in out
    assert (tmp_path / "routescope.lock").read_text() == lock  # a check never rewrites the lock


def test_lock_from_0_5_23_fails_on_0_5_9_triton_router_to_torch_compile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GLM-5 on SM120: 0.5.23 routes in the Triton gate (its `_jit_gate_ok` admits the fused
    shared slot, top-k 9); 0.5.9 falls back to the torch.compile'd biased_grouped_topk_impl."""
    path = write_policy(tmp_path, policy_text([GLM5], "sglang==0.5.23", ["sm120"]))
    code, out, _ = run(["check", "--policy", str(path), "--update-lock"], capsys)
    assert code == ExitCode.OK, out
    lock = (tmp_path / "routescope.lock").read_text()
    assert 'sink = "sglang.kernels.ops.moe.moe_fused_gate:_router_triton_kernel"' in lock
    assert 'sink_kind = "triton"' in lock and 'top_k = "9"' in lock

    code, out, _ = run(["check", "--policy", str(path)], capsys)
    assert code == ExitCode.OK, out  # same version: same path

    path.write_text(path.read_text().replace("0.5.23", "0.5.9"))
    code, out, _ = run(["check", "--policy", str(path)], capsys)
    assert code == ExitCode.CHECK_FAILED, out
    assert (
        "path changed: sglang.kernels.ops.moe.moe_fused_gate:_router_triton_kernel (triton, triton)"
        " -> sglang.srt.layers.moe.topk:biased_grouped_topk_impl (torch_compile, torch)"
    ) in out
    assert "sink_kind: triton -> torch_compile" in out
    assert "chosen before (sglang==0.5.23) by: _jit_gate_ok -> true" in out  # the decisive guard
    assert len([line for line in out.splitlines() if line.startswith("       ")]) <= 3 + 6 + 1
    assert "note: routescope.lock was recorded with sglang==0.5.23; checking sglang==0.5.9" in out


def test_a_bump_that_moves_code_but_changes_no_decision_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GLM-5 on SM120 routes in the same Triton gate on 0.5.20 and 0.5.23, from code that moved
    (the insertion statement, the guards) and a router that gained a runner_backend field:
    a lock recorded on one passes on the other (it failed with "path changed: X -> X")."""
    path = write_policy(tmp_path, policy_text([GLM5], "sglang==0.5.23", ["sm120"]))
    code, out, _ = run(["check", "--policy", str(path), "--update-lock"], capsys)
    assert code == ExitCode.OK, out
    lock = (tmp_path / "routescope.lock").read_text()
    assert len(lock.splitlines()) < 80 and "insert_after = " in lock
    path.write_text(path.read_text().replace("0.5.23", "0.5.20"))
    code, out, _ = run(["check", "--policy", str(path)], capsys)
    assert code == ExitCode.OK, out
    assert "path changed" not in out


def test_the_example_lock_is_current(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/ci/routescope.lock is what `--update-lock` writes for its policy today."""
    policy = Path(__file__).parents[2] / "examples" / "ci" / "routescope.toml"
    code, out, _ = run(["check", "--policy", str(policy)], capsys)
    assert code == ExitCode.OK, out


def test_forbidden_torch_compile_passes_glm5_on_0_5_23(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = 'forbid_sink_kinds = ["torch_compile"]\n'
    path = write_policy(tmp_path, policy_text([GLM5], "sglang==0.5.23", ["sm120"], rules))
    code, out, _ = run(["check", "--policy", str(path), "--update-lock"], capsys)
    assert code == ExitCode.OK, out
    assert "forbid-sink-kinds" not in out or "FAIL" not in out
    assert "FAIL" not in out and "forbid-sink-kinds: sink" in out  # the rule ran, and held


def test_forbidden_torch_compile_fails_glm5_on_0_5_9(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = 'forbid_sink_kinds = ["torch_compile"]\n'
    path = write_policy(tmp_path, policy_text([GLM5], "sglang==0.5.9", ["sm120"], rules))
    code, out, _ = run(["check", "--policy", str(path), "--update-lock"], capsys)
    assert code == ExitCode.CHECK_FAILED, out
    assert (
        "FAIL zai-org--GLM-5 sm120 forbid-sink-kinds: sink "
        "sglang.srt.layers.moe.topk:biased_grouped_topk_impl is of kind torch_compile, "
        "which the policy forbids"
    ) in out


def test_glm5_sm100_0_5_12_is_not_insertable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # forbidding "bypassed" (routing inside the MoE kernel) also forbids a named fused MoE kernel
    rules = 'forbid_sink_kinds = ["bypassed"]\nrequire_oea_insertable = true\n'
    path = write_policy(tmp_path, policy_text([GLM5], "sglang==0.5.12", ["sm100"], rules))
    junit = tmp_path / "out.xml"
    code, out, _ = run(
        ["check", "--policy", str(path), "--update-lock", "--junit", str(junit)], capsys
    )
    assert code == ExitCode.CHECK_FAILED, out
    assert "FAIL zai-org--GLM-5 sm100 oea-insertable: OEA not insertable: routing is fused" in out
    assert "is of kind fused_moe_kernel, which the policy forbids" in out
    assert "BypassedTopKOutput" in out and "flashinfer.fused_moe.trtllm_bf16_moe" in out
    assert "switch: --moe-runner-backend triton (now flashinfer_trtllm)" in out
    lock = (tmp_path / "routescope.lock").read_text()
    assert 'sink = "flashinfer.fused_moe.trtllm_bf16_moe"' in lock
    assert 'sink_kind = "fused_moe_kernel"' in lock and "insertion_point" not in lock
    assert "routing_method_type=RoutingMethodType.DeepSeekV3" in lock  # sink_args


def test_no_lock_is_could_not_decide(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_policy(tmp_path, policy_text([GLM5], "sglang==0.5.12", ["sm120"]))
    code, out, _ = run(["check", "--policy", str(path)], capsys)
    assert code == ExitCode.ERROR
    assert "no lock file routescope.lock; run `routescope check --update-lock`" in out


def test_a_new_gpu_is_a_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_policy(tmp_path, policy_text([GLM5], "sglang==0.5.12", ["sm120"]))
    assert run(["check", "--policy", str(path), "--update-lock"], capsys)[0] == ExitCode.OK
    path.write_text(path.read_text().replace('["sm120"]', '["sm120", "sm90"]'))
    code, out, _ = run(["check", "--policy", str(path)], capsys)
    assert code == ExitCode.CHECK_FAILED and "sm90 lock: not in the lock file" in out
    path.write_text(path.read_text().replace('["sm120", "sm90"]', '["sm90"]'))
    code, out, _ = run(["check", "--policy", str(path)], capsys)
    assert code == ExitCode.CHECK_FAILED and "in the lock but no longer in the policy" in out


def test_shared_index_gives_the_same_report_as_inspect(tmp_path: Path) -> None:
    policy = load_policy(
        write_policy(tmp_path, policy_text([GLM5, DSV3], "sglang==0.5.12", ["sm120", "sm100"]))
    )
    cells = run_matrix(policy)
    assert [(c.model, c.gpu) for c in cells] == [
        (GLM5, "sm120"), (GLM5, "sm100"), (DSV3, "sm120"), (DSV3, "sm100"),
    ]  # fmt: skip
    for cell in cells:
        req = api.InspectRequest(model=cell.model, framework="sglang==0.5.12", gpu=cell.gpu, tp=8)
        expected = api.inspect(req)
        got = cell.report
        assert got is not None
        for doc in (expected, got):
            doc["dispatch"]["notes"] = [n for n in doc["dispatch"]["notes"] if "seconds" not in n]
        assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True)


def test_outputs_are_byte_identical_across_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rules = 'forbid_sink_kinds = ["torch_compile"]\nrequire_oea_insertable = true\n'
    path = write_policy(
        tmp_path, policy_text([GLM5, DSV3], "sglang==0.5.12", ["sm120", "sm100"], rules)
    )
    outputs = []
    for i in range(2):
        summary = tmp_path / f"summary{i}.md"
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
        args = ["check", "--policy", str(path), "--update-lock", "--annotations",
                "--junit", f"j{i}.xml", "--sarif", f"s{i}.sarif"]  # fmt: skip
        code, out, _ = run(args, capsys)
        assert code == ExitCode.CHECK_FAILED
        files = [
            (tmp_path / n).read_bytes() for n in (f"j{i}.xml", f"s{i}.sarif", "routescope.lock")
        ]
        outputs.append((out, summary.read_text(), *files))
    assert outputs[0] == outputs[1]
    assert (
        "::error file=routescope.toml,line=2,title=routescope forbid-sink-kinds%3A zai-org--GLM-5"
        in outputs[0][0]
    )
    assert "## routescope check failed" in outputs[0][1]
    assert (
        "| zai-org--GLM-5 | sm100 | `flashinfer.fused_moe.trtllm_bf16_moe` | fused_moe_kernel "
        "| not insertable | ❌ fail (oea-insertable) |" in outputs[0][1]
    )


def test_a_deployment_that_does_not_start_never_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """DeepSeek-V3 bf16 on 0.5.4: building the model raises (deepseek_v2.py:2902 asks a
    quantization config of None for its name), so the server never starts: the answer is
    decided (blocked), no path is selected, the lock is not written, and the gate fails (exit
    1) on the blocker whether or not a selected path is required, naming the way out."""
    text = policy_text([DSV3], "sglang==0.5.4", ["sm120"], "require_selected_path = false\n")
    path = write_policy(tmp_path, text)
    code, out, _ = run(["check", "--policy", str(path), "--update-lock"], capsys)
    assert code == ExitCode.CHECK_FAILED, out
    assert "routescope.lock not written" in out and not (tmp_path / "routescope.lock").exists()
    assert "way out: --set disable_shared_experts_fusion=true" in out
    path.write_text(text.replace("false", "true"))
    code, out, _ = run(["check", "--policy", str(path), "--update-lock"], capsys)
    assert code == ExitCode.CHECK_FAILED and "the deployment stops before decode" in out
    assert "deepseek_v2.py:2902" in out


def test_policy_packages_decide_a_fork(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """gpt-oss on SM120, 0.5.23 forks on whether triton_kernels imports on the server: the
    selected-path rule (on by default) fails. The policy's [packages] says it does not import,
    as `inspect --package` would: one path, and the deployment shows in the output."""
    gpt_oss = str(CONFIGS / "openai--gpt-oss-20b.json")
    text = policy_text([gpt_oss], "sglang==0.5.23", ["sm120"])
    path = write_policy(tmp_path, text)
    code, out, _ = run(["check", "--policy", str(path), "--update-lock"], capsys)
    assert code == ExitCode.CHECK_FAILED and "decode path not decided" in out, out
    path.write_text(text + "\n[packages]\ntriton_kernels = false\n")
    code, out, _ = run(["check", "--policy", str(path), "--update-lock"], capsys)
    assert code == ExitCode.OK, out
    assert "(sglang==0.5.23, tp=8, package triton_kernels=false)" in out
    lock = (tmp_path / "routescope.lock").read_text()
    assert 'status = "selected"' in lock and "_router_triton_kernel" in lock


def test_vllm_deployments_are_checked_and_locked_as_sglang_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """vLLM 0.33.0, DeepSeek-V3: on SM120 the router runs in Python (modular experts) and OEA
    has a point, said as inspect says it; on SM100 the TRT-LLM bf16 experts route inside and the
    failure names vLLM's own switch."""
    rules = "require_oea_insertable = true\n"
    path = write_policy(tmp_path, policy_text([DSV3], "vllm==0.33.0", ["sm120", "sm100"], rules))
    code, out, _ = run(["check", "--policy", str(path), "--update-lock"], capsys)
    assert code == ExitCode.CHECK_FAILED, out
    assert ("ok   deepseek-ai--DeepSeek-V3 sm120 oea-insertable: OEA insertable after "
            "vllm/model_executor/layers/fused_moe/runner/moe_runner.py:") in out  # fmt: skip
    assert "in MoERunner._apply_quant_method" in out
    assert "FAIL deepseek-ai--DeepSeek-V3 sm100 oea-insertable: OEA not insertable" in out
    assert "switch: --moe-backend triton (now auto)" in out
    lock = (tmp_path / "routescope.lock").read_text()
    assert 'framework = "vllm==0.33.0"' in lock
    assert 'sink = "torch.ops._moe_C.grouped_topk"' in lock
    assert 'sink = "flashinfer.fused_moe.trtllm_bf16_moe"' in lock
    code, out, _ = run(["check", "--policy", str(path)], capsys)  # against its own lock
    assert code == ExitCode.CHECK_FAILED, out  # the SM100 verdict still fails the policy
    assert out.count("lock: matches the lock") == 2


def test_with_the_timings_on_each_workers_cells_show_their_phases(tmp_path: Path) -> None:
    from routescope import timing

    policy = load_policy(
        write_policy(tmp_path, policy_text([GLM5, DSV3], "sglang==0.5.9", ["sm120"]))
    )
    timing.enable(True)
    try:
        cells = run_matrix(policy, workers=2)
        table = timing.table()
    finally:
        timing.enable(False)
    assert all(c.report is not None for c in cells)
    lines = table.splitlines()
    assert any(line.startswith("  source: open sglang==0.5.9") for line in lines)
    for i, cell in ((1, GLM5), (2, DSV3)):
        at = next(n for n, line in enumerate(lines) if f"worker {i} of 2 (1 cell" in line)
        label = lines[at + 1].strip().rsplit(" ", 1)[0].strip()  # nested under its worker
        head, _, tail = label.partition("…")
        assert f"{cell} on sm120".startswith(head) and f"{cell} on sm120".endswith(tail)


def test_a_selected_path_says_the_weights_that_do_not_fit_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """NVIDIA's Qwen3.6 NVFP4 on vLLM 0.20.0: the path is selected, and its experts are built
    unquantized (the release's MIXED_PRECISION config has no method for W4A16_NVFP4): the
    check passes the path and says the caveat under it, as inspect does."""
    model = str(CONFIGS.parent / "checkpoints" / "nvidia--Qwen3.6-35B-A3B-NVFP4")
    path = write_policy(tmp_path, policy_text([model], "vllm==0.20.0", ["sm120"]))
    code, out, _ = run(["check", "--policy", str(path), "--update-lock"], capsys)
    assert code == ExitCode.OK, out
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if " selected-path: path selected: " in line)
    assert lines[at].startswith("ok   nvidia--Qwen3.6-35B-A3B-NVFP4 sm120 selected-path")
    assert lines[at + 1].startswith(
        "       weights (said, not decided): the experts are built unquantized "
        "(UnquantizedFusedMoEMethod)"
    )


def test_a_policys_ep_reaches_each_cell_as_inspect_takes_it(tmp_path: Path) -> None:
    """`ep = 8` in a vLLM policy turns on enable_expert_parallel (its size is TP x DP x PCP);
    `ep = 4` at TP8 is a size vLLM cannot be given: that cell says so, as inspect exits 2."""
    text = policy_text([DSV3], "vllm==0.34.0", ["sm120"])  # tp = 8
    cell = run_matrix(load_policy(write_policy(tmp_path, text + "ep = 8\n")))[0]
    assert cell.report is not None
    arg = cell.report["dispatch"]["server_args"]["enable_expert_parallel"]
    assert (arg["value"], arg["origins"], cell.report["deployment"]["ep"]) == (True, ["--ep"], 8)
    cell = run_matrix(load_policy(write_policy(tmp_path, text + "ep = 4\n")))[0]
    assert cell.report is None and cell.error is not None
    assert "--ep 4" in cell.error and "--ep takes 8" in cell.error
