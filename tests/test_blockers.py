"""Blockers: a kernel the path launches that its provider's own source builds for other GPUs,
read at the version the framework pins; the way out found by tracing again. Offline: provider
texts are excerpts of flashinfer 0.7.2's own files (jit/trtllm_gen_metainfo.py:46-48,
data/csrc/trtllm_batched_gemm_runner.cu:48-67), the retrace a stand-in."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from routescope import api, report
from routescope.analysis.engine.state import Decision
from routescope.analysis.engine.values import Const, Tensor
from routescope.analysis.phases.deployment import Deployment
from routescope.blockers import (
    kernel_rule,
    pinned_version,
    read_support,
    report_blockers,
    stop_blocker,
)
from routescope.check.evaluate import evaluate_cell
from routescope.check.matrix import Cell
from routescope.check.policy import load_policy
from routescope.errors import RoutescopeError
from routescope.hardware import resolve_gpu
from routescope.render.markdown import render
from routescope.render.schema import validate_report
from routescope.render.text_summary import brief, summary
from routescope.source.tree import parse_metadata
from routescope.wayout import (
    candidates,
    checkpoint_scheme,
    compared,
    find_way_out,
    switch_by_tracing,
    try_changes,
)
from tests.conftest import CONFIGS

METAINFO = """
# Cubin architectures the *Blackwell* trtllm-gen module can dispatch to.
# Mirrors isArchCompatible() for smVersion in {100, 103}.
BLACKWELL_CUBIN_ARCHS: Tuple[str, ...] = ("Sm100a", "Sm100f", "Sm103a")
"""
RUNNER = """
bool isArchCompatible(int smVersion, tg::CudaArch cubinArch) {
  switch (cubinArch) {
    case tg::CudaArch::Sm100a:
      return smVersion == 100;
    case tg::CudaArch::Sm100f:
      return smVersion == 100 || smVersion == 103;
    case tg::CudaArch::Sm103a:
      return smVersion == 103;
    default:
      return false;
  }
}
"""
FILES = {
    "flashinfer/jit/trtllm_gen_metainfo.py": METAINFO,
    "flashinfer/data/csrc/trtllm_batched_gemm_runner.cu": RUNNER,
}
META = parse_metadata(
    "Name: sglang\nVersion: 0.5.23\nRequires-Dist: flashinfer_python[cu13]==0.7.2\n"
    "Requires-Dist: torch==2.9.1 ; platform_machine == 'x86_64'\n"
)
KERNEL = "flashinfer.fused_moe.trtllm_fp4_block_scale_routed_moe"


def _reader(files: dict[str, str]) -> Any:
    def read(rel: str) -> str:
        if rel not in files:
            raise RoutescopeError("flashinfer-python==0.7.2", f"no file {rel} in the wheel")
        return files[rel]

    return read


def _hit(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "kind": "fused_moe_kernel", "provider": "flashinfer",
            "file": "sglang/srt/layers/moe/moe_runner/flashinfer_trtllm.py", "line": 1593,
            "called_from": "fused_experts_none_to_flashinfer_trtllm_fp4", "rule": "r",
            **extra}  # fmt: skip


def _doc(gpu: str = "sm120", ways: str = "every") -> dict[str, Any]:
    g = resolve_gpu(gpu)
    router = {"name": "sglang.kernels.ops.moe.moe_fused_gate:_router_triton_kernel",
              "kind": "triton", "provider": "triton", "file": "sglang/kernels/ops/moe/x.py",
              "line": 512, "called_from": "moe_fused_gate", "rule": "triton.jit"}  # fmt: skip
    path = {"selected": True, "sink": router, "kernels": [router], "launches": [],
            "experts": [_hit(KERNEL, ways=ways)], "outcome": "return", "stopped": None,
            "equivalent_paths": 0, "frames": [], "decisions": [], "setup_decisions": [],
            "handoff": None}  # fmt: skip
    return {
        "model": {"ref": "nvidia/GLM-5-NVFP4"},
        "topology": "degenerate-grouped",
        "routing": {},
        "deployment": {
            "framework": "sglang",
            "version": "0.5.23",
            "source": "pypi",
            "gpu": {
                "family": g.family,
                "device": g.device,
                "name": g.device_name,
                "capability": list(g.capability),
            },
            "tp": 8,
            "quant": "nvfp4",
            "server_args": {},
            "env": {},
            "packages": {},
        },
        "dispatch": {
            "status": "selected",
            "paths": [path],
            "incomplete": [],
            "undecided": [],
            "router": {"top_k": {"value": 9, "kind": "constant", "repr": "9", "origins": []}},
            "notes": [],
            "block_class": None,
            "server_args": {},
            "assumptions": [],
        },
    }


def test_support_is_read_from_the_provider_source() -> None:
    found = kernel_rule(KERNEL)
    assert found is not None
    support = read_support(_reader(FILES), found[1], "flashinfer-python==0.7.2")
    assert support.archs == ("Sm100a", "Sm100f", "Sm103a")
    assert support.runs_on == frozenset({100, 103})
    assert (
        support.evidence[0] == "flashinfer/jit/trtllm_gen_metainfo.py:4 (flashinfer-python==0.7.2)"
    )


def test_a_file_without_the_statement_is_not_known_never_a_guess() -> None:
    (_, kernel) = kernel_rule(KERNEL) or (None, None)
    assert kernel is not None
    gone = dict(FILES, **{"flashinfer/jit/trtllm_gen_metainfo.py": "# nothing here\n"})
    assert read_support(_reader(gone), kernel, "x==1").runs_on is None
    missing = {k: v for k, v in FILES.items() if k.endswith(".cu")}
    assert read_support(_reader(missing), kernel, "x==1").runs_on is None
    # an architecture the runner file says nothing about: not known
    more = dict(FILES, **{"flashinfer/jit/trtllm_gen_metainfo.py":
                          'BLACKWELL_CUBIN_ARCHS = ("Sm100a", "Sm120a")'})  # fmt: skip
    assert read_support(_reader(more), kernel, "x==1").runs_on is None


def test_the_pin_is_the_framework_metadata_exact_version() -> None:
    assert pinned_version(META, "flashinfer-python") == "0.7.2"
    assert pinned_version(META, "torch") == "2.9.1"
    loose = parse_metadata("Name: x\nRequires-Dist: flashinfer-python>=0.6\n")
    assert pinned_version(loose, "flashinfer-python") is None
    assert pinned_version(None, "flashinfer-python") is None


def test_a_kernel_built_for_other_gpus_blocks_on_sm120_not_on_sm100() -> None:
    doc = _doc("sm120")
    notes, unread = report_blockers(doc, META, lambda d, v: _reader(FILES))
    assert not unread and not notes
    (b,) = doc["blockers"]
    assert b["kind"] == "unsupported_gpu" and b["kernel"] == KERNEL
    assert b["target"] == "sm120" and b["runs_on"] == ["sm100", "sm103"]
    assert b["pinned"] == "flashinfer_python==0.7.2"
    assert b["where"] == "sglang/srt/layers/moe/moe_runner/flashinfer_trtllm.py:1593"
    assert any("trtllm_gen_metainfo.py:4" in e for e in b["evidence"])
    ok = _doc("b200")
    report_blockers(ok, META, lambda d, v: _reader(FILES))
    assert ok["blockers"] == []


def test_a_kernel_only_some_ways_launch_blocks_nothing() -> None:
    doc = _doc("sm120", ways="some")
    report_blockers(doc, META, lambda d, v: _reader(FILES))
    assert doc["blockers"] == []


def test_an_unreadable_provider_is_a_note_and_the_report_is_not_kept() -> None:
    def offline(dist: str, version: str) -> Any:
        raise RoutescopeError(f"{dist}=={version}", "cannot reach the package index")

    doc = _doc("sm120")
    notes, unread = report_blockers(doc, META, offline)
    assert unread and doc["blockers"] == []
    assert "flashinfer-python==0.7.2 could not be read" in notes[0]
    unpinned = parse_metadata("Name: sglang\nVersion: 0\n")
    notes, unread = report_blockers(_doc("sm120"), unpinned, offline)
    assert not unread and "pins no exact version of flashinfer-python" in notes[0]


# the SM120 override in sglang 0.5.23 (arg_groups/overrides.py:1513-1522), as the engine records it
OVERRIDE = (
    'self.moe_runner_backend == "auto" and view.quantization == "modelopt_fp4" '
    "and (get_platform().is_sm120 or get_platform().is_sm110)"
)


def _decision(text: str) -> Decision:
    return Decision("sglang/srt/arg_groups/overrides.py", 1513, "f", text, False)


def test_way_out_candidates_come_from_the_guards_literals() -> None:
    fields = ("quantization", "moe_runner_backend")
    assert compared(OVERRIDE, fields) == [("moe_runner_backend", "auto"),
                                          ("quantization", "modelopt_fp4")]  # fmt: skip
    assert compared('x.quantization in ("fp8", "w8a8_fp8")', fields) == [
        ("quantization", "fp8"), ("quantization", "w8a8_fp8")]  # fmt: skip
    assert compared("not valid python (", fields) == []
    guards = (_decision('self.quantization == "mxfp4"'), _decision(OVERRIDE))
    current = {"quantization": "None", "moe_runner_backend": "'auto'"}
    # a guard reading both arguments first; the value an argument already has is no change
    assert candidates(guards, fields, current) == [("quantization", "modelopt_fp4"),
                                                   ("quantization", "mxfp4")]  # fmt: skip


def test_way_out_is_the_first_candidate_traced_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTESCOPE_JOBS", "1")  # `seen` records trials traced in this process
    fields = ("quantization", "moe_runner_backend")
    guards = (_decision(OVERRIDE), _decision('self.moe_runner_backend == "flashinfer_cutlass"'))
    dep = Deployment(resolve_gpu("sm120"), tp=8)
    blocked, clean = _doc("sm120"), _doc("sm120")
    blocked["blockers"] = [{"what": "x has no kernels for sm120"}]
    clean["blockers"] = []
    seen: list[Deployment] = []

    def retrace(d: Deployment) -> dict[str, Any]:
        seen.append(d)
        if d.quant == "modelopt_fp4":
            return copy.deepcopy(blocked)
        return copy.deepcopy(clean)

    current = {"quantization": "None", "moe_runner_backend": "'auto'"}
    way = find_way_out(guards, fields, "quantization", current, dep, retrace)
    assert way["flags"] == ["--set moe_runner_backend=flashinfer_cutlass"]
    assert way["tried"] == ["--quant modelopt_fp4: blocked too (x has no kernels for sm120)"]
    assert seen[1].server_args == {"moe_runner_backend": "flashinfer_cutlass"}
    # the user chose --quant: the way out keeps it
    chosen = Deployment(resolve_gpu("sm120"), tp=8, quant="nvfp4")
    seen.clear()
    find_way_out(guards, fields, "quantization", {}, chosen, retrace)
    assert all(d.quant == "nvfp4" for d in seen)

    def rejects(d: Deployment) -> dict[str, Any]:
        raise RoutescopeError("--set", "not a declared choice")

    none = find_way_out(guards, fields, "quantization", current, dep, rejects)
    assert none["flags"] == [] and len(none["tried"]) == 2

    def unfinished(d: Deployment) -> dict[str, Any]:  # a change whose trace did not finish
        doc = copy.deepcopy(clean)
        doc["dispatch"]["status"] = "provisional"
        doc["dispatch"]["incomplete"] = ["the experts layer's decode forward did not finish"]
        return doc

    tried = find_way_out(guards, fields, "quantization", current, dep, unfinished)["tried"]
    assert tried[0] == ("--quant modelopt_fp4: provisional (the experts layer's decode forward "
                        "did not finish)")  # fmt: skip


def test_a_stop_where_the_checkpoint_chose_the_quantization_tries_its_scheme_named() -> None:
    """ModelOpt's generic `modelopt` read as FP8 raises for an NVFP4 checkpoint: naming the
    scheme (through the rules' alias) is a change worth tracing; a scheme the rules name no
    method for, one that is the checkpoint's own method, bf16, or a framework without a
    quantization argument is none."""
    aliases = {"nvfp4": "modelopt_fp4"}
    assert checkpoint_scheme("modelopt", "nvfp4", aliases, "quantization") == [
        ("quantization", "modelopt_fp4")]  # fmt: skip
    # a scheme the rules name no method for (its label, `mixed_precision`) is not tried
    assert checkpoint_scheme("modelopt", "mixed_precision", aliases, "quantization") == []
    assert checkpoint_scheme("modelopt_fp4", "nvfp4", aliases, "quantization") == []
    assert checkpoint_scheme(None, "bf16", aliases, "quantization") == []
    assert checkpoint_scheme("modelopt", "nvfp4", aliases, "") == []
    # traced again like any other change: a value the release does not accept is refused
    dep = Deployment(resolve_gpu("sm120"), tp=8)

    def refuses(d: Deployment) -> dict[str, Any]:
        raise RoutescopeError(f"--quant {d.quant}", "this release accepts bf16, fp8")

    way = try_changes([("quantization", "modelopt_fp4")], "quantization", dep, refuses)
    assert way == {"flags": [], "tried": ["--quant modelopt_fp4: this release accepts bf16, fp8"]}


def _blocked_doc() -> dict[str, Any]:
    doc = _doc("sm120")
    report_blockers(doc, META, lambda d, v: _reader(FILES))
    doc["blockers"][0]["way_out"] = {
        "flags": ["--quant modelopt_fp4"], "tried": [], "experts": [],
        "sink": doc["dispatch"]["paths"][0]["sink"],
        "router": {"runner_backend": "MoeRunnerBackend.FLASHINFER_CUTLASS"},
    }  # fmt: skip
    return doc


def test_terminal_summary_shows_the_blocker_and_way_out_in_80_columns() -> None:
    lines = [t.plain for t in summary(_blocked_doc(), width=78)]
    text = "\n".join(lines)
    assert "BLOCKED: trtllm_fp4_block_scale_routed_moe [flashinfer] has no sm120 kernels" in text
    assert "flashinfer 0.7.2 has sm100, sm103" in text
    assert "way out: --quant modelopt_fp4 → FLASHINFER_CUTLASS, _router_triton_kernel" in text
    shown = [line for line in lines if "BLOCKED" in line or line.startswith("  ")]
    assert all(len(line) <= 78 for line in shown) and len(lines) <= 15
    assert "BLOCKED" in brief(_blocked_doc())


def test_a_deployment_that_stops_reads_blocked_first_then_what_lies_past_it() -> None:
    """status blocked: what stops it comes right after the deployment, with the line that
    raised and the way out; the path the trace shows past the raise is labelled as such, in
    the terminal, the one-line form and the markdown."""
    doc = _doc("sm120")
    doc["dispatch"]["status"] = "blocked"
    doc["dispatch"]["paths"][0]["selected"] = False
    stop = {
        "step": "the model loader m:load",
        "file": "fw/models/m.py",
        "line": 2902,
        "function": "m:M.fusion",
        "exception": "AttributeError",
        "message": "NoneType has no attribute get_name",
        "implicit": True,
        "statement": 'elif self.quant_config.get_name() == "w4afp8":',
        "guard": None,
    }
    doc["dispatch"]["stops"] = [stop]
    doc["blockers"] = [stop_blocker(stop, "sglang 0.5.4")]
    doc["blockers"][0]["way_out"] = {
        "flags": ["--set disable_shared_experts_fusion=true"], "tried": [], "experts": [],
        "sink": doc["dispatch"]["paths"][0]["sink"], "router": {},
    }  # fmt: skip
    lines = [t.plain for t in summary(doc, width=100)]
    assert lines[1].startswith("BLOCKED: sglang 0.5.4 stops in the model loader m:load: "
                               "AttributeError: NoneType has no attribute get_name")  # fmt: skip
    assert 'at models/m.py:2902 in `elif self.quant_config.get_name() == "w4afp8":`' in lines[2]
    assert lines[3].startswith("  way out: --set disable_shared_experts_fusion=true")
    assert lines[4].startswith("past it: sglang.kernels.ops.moe.moe_fused_gate")
    assert any(line.startswith("router (past it): top_k=9") for line in lines)
    assert "blocked: sglang.kernels.ops.moe.moe_fused_gate" in brief(doc)
    md = render(doc)
    assert "The deployment stops before decode (see Blockers)" in md
    assert "raises AttributeError in 'elif self.quant_config.get_name()" in md


def test_markdown_has_a_blockers_section() -> None:
    md = render(_blocked_doc())
    assert "## Blockers" in md and "- **Blocked:**" in md
    # what stops the deployment is read right after its status, before the kernel and verdict
    at = [md.index(f"- **{head}:**") for head in ("Dispatch", "Blocked", "Routing kernel")]
    assert at == sorted(at)
    assert "- **Way out:** `--quant modelopt_fp4`" in md
    assert "`flashinfer/jit/trtllm_gen_metainfo.py:4 (flashinfer-python==0.7.2)`" in md


def test_the_weights_caveat_is_said_on_the_terminal_and_in_the_markdown_summary() -> None:
    """A selected path whose experts the release builds unquantized for a quantized
    checkpoint: the terminal answer says it on a line of its own, leading with what is built;
    the markdown summary after the dispatch status, before the kernel."""
    doc = _doc("sm120")
    doc["blockers"] = []
    doc["dispatch"]["weights"] = ["the experts are built unquantized (UnquantizedFusedMoEMethod): "
                                  "the quantization config ..."]  # fmt: skip
    lines = [t.plain for t in summary(doc)]
    assert any(line.startswith("weights: the experts are built unquantized") for line in lines)
    md = render(doc)
    at = [md.index(f"- **{head}:**") for head in ("Dispatch", "Weights", "Routing kernel")]
    assert at == sorted(at)
    doc["dispatch"]["weights"] = []
    assert not any(t.plain.startswith("weights:") for t in summary(doc))
    assert "- **Weights:**" not in render(doc)


def test_report_schema_accepts_blockers() -> None:
    import json

    import jsonschema

    schema = json.loads((Path(__file__).parent.parent / "routescope" / "schema" /
                         "report.schema.json").read_text())  # fmt: skip
    doc = _blocked_doc()
    doc["schema_version"], doc["tool"], doc["notes"] = report.SCHEMA_VERSION, {"name": "routescope",
                                                              "version": "0"}, []  # fmt: skip
    validator = jsonschema.Draft202012Validator(schema)
    errors = [e.message for e in validator.iter_errors(doc) if "blocker" in str(e.path)]
    assert errors == []


def test_check_fails_on_a_blocker_unless_the_policy_allows_it(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    text = 'models = ["m"]\nframework = "sglang==0.5.23"\ngpus = ["sm120"]\n'
    on = tmp_path / "on.toml"
    on.write_text(text)
    off = tmp_path / "off.toml"
    off.write_text(text + "\n[rules]\nforbid_blockers = false\n")
    cell = Cell("m", "sm120", _blocked_doc())
    found = {f.rule: f for f in evaluate_cell(load_policy(on), cell, None, None)}
    assert found["no-blockers"].outcome.value == "fail"
    assert "way out: --quant modelopt_fp4" in found["no-blockers"].details[0]
    assert "no-blockers" not in {f.rule for f in evaluate_cell(load_policy(off), cell, None, None)}
    clean = _doc("sm120")
    clean["blockers"] = []
    found = {f.rule: f for f in evaluate_cell(load_policy(on), Cell("m", "sm120", clean), None,
                                              None)}  # fmt: skip
    assert found["no-blockers"].outcome.value == "pass"
    assert found["selected-path"].details == ()
    # the checkpoint's weights that do not fit the layers built: said beside the pass
    unfit = copy.deepcopy(clean)
    unfit["dispatch"]["weights"] = ["the experts are built unquantized (X)"]
    found = {f.rule: f for f in evaluate_cell(load_policy(on), Cell("m", "sm120", unfit), None,
                                              None)}  # fmt: skip
    assert found["selected-path"].outcome.value == "pass"
    assert found["selected-path"].details == (
        "weights (said, not decided): the experts are built unquantized (X)",
    )
    # a step that raises blocks whatever path follows it: the answer is not selected, and the
    # gate still says why (it said "the decode path is not decided")
    stopped = _doc("sm120")
    stopped["dispatch"]["status"] = "provisional"
    stopped["blockers"] = [stop_blocker({
        "step": "server-argument step __post_init__", "file": "s.py", "line": 1441,
        "function": "m:f", "exception": "ValueError", "message": "only on SM100", "guard": None,
    }, "sglang 0.5.6.post1")]  # fmt: skip
    found = {f.rule: f for f in evaluate_cell(load_policy(on), Cell("m", "sm120", stopped), None,
                                              None)}  # fmt: skip
    assert found["no-blockers"].outcome.value == "fail"
    assert "stops in server-argument step __post_init__: ValueError" in found["no-blockers"].message


@pytest.mark.parametrize("gpu", ["sm120", "rtx-5090"])
def test_every_sm120_device_is_blocked_alike(gpu: str) -> None:
    doc = _doc(gpu)
    report_blockers(doc, META, lambda d, v: _reader(FILES))
    assert [b["target"] for b in doc["blockers"]] == ["sm120"]


# flashinfer's way of declaring support in Python (0.7.2: utils.py:1138, fused_routing_dsv3.py)
FI_INIT = "from .fused_routing_dsv3 import fused_topk_deepseek as fused_topk_deepseek\n"
FI_DSV3 = """
from ..utils import backend_requirement, supported_compute_capability
_CC = [100, 103]


@supported_compute_capability([89, 90, 100, 103, 107, 120, 121])
def _check_default(**kw):
    return True


@supported_compute_capability(_CC)
def _check_cake(**kw):
    return True


@supported_compute_capability([90])
def _check_common(**kw):
    return True


@backend_requirement({"default": _check_default, "cake": _check_cake}, common_check=_check_common)
def fused_topk_deepseek(scores, bias):
    pass


@backend_requirement({}, common_check=_check_common)
def only_common(x):
    pass


@supported_compute_capability([100])
def direct(x):
    pass


def says_nothing(x):
    pass
"""
DECLARED = {"flashinfer/fused_moe/__init__.py": FI_INIT,
            "flashinfer/fused_moe/fused_routing_dsv3.py": FI_DSV3}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "runs_on"),
    [
        # any backend's checker (flashinfer's own is_compute_capability_supported)
        ("flashinfer.fused_moe.fused_topk_deepseek", {89, 90, 100, 103, 107, 120, 121}),
        ("flashinfer.fused_moe.fused_routing_dsv3.only_common", {90}),  # no backends: the common
        ("flashinfer.fused_moe.fused_routing_dsv3.direct", {100}),
        ("flashinfer.fused_moe.fused_routing_dsv3.says_nothing", None),  # no statement
        ("flashinfer.fused_moe.no_such_function", None),
    ],
)
def test_declared_support_is_read_from_the_providers_decorators(
    name: str, runs_on: set[int] | None
) -> None:
    from routescope.blockers import read_declared

    found = kernel_rule(name)
    assert found is not None and found[1]["kind"] == "declared"
    got = read_declared(_reader(DECLARED), found[1], name, "flashinfer-python==0.7.2")
    assert (got.runs_on if got else None) == (frozenset(runs_on) if runs_on else None)
    if got:
        assert got.evidence[0].startswith("flashinfer/fused_moe/fused_routing_dsv3.py:")


def test_a_declared_kernel_on_an_older_gpu_is_a_blocker() -> None:
    doc = _doc("a100")
    path = doc["dispatch"]["paths"][0]
    path["sink"] = dict(path["sink"], name="flashinfer.fused_moe.fused_topk_deepseek",
                        kind="cuda_kernel", provider="flashinfer", called_from="m:f")  # fmt: skip
    path["experts"] = []
    report_blockers(doc, META, lambda d, v: _reader(DECLARED))
    (b,) = doc["blockers"]
    assert b["target"] == "sm80" and "sm89" in b["runs_on"] and "declares support" in b["why"]
    ok = _doc("sm120")
    ok["dispatch"]["paths"][0]["sink"] = path["sink"]
    ok["dispatch"]["paths"][0]["experts"] = []
    report_blockers(ok, META, lambda d, v: _reader(DECLARED))
    assert ok["blockers"] == []


def test_a_step_that_raises_on_every_way_where_python_raises_is_a_blocker(
    tmp_path: Path,
) -> None:
    """A set-up step every way through which reaches `raise E("...")` stops the deployment:
    its place, exception and message as the source writes them, and the condition that led
    there. So does one where Python itself raises on a decided value (`None.get_name()`:
    implicit, with the line that raised). An assert on a value with no provenance, or an
    attribute of an object the engine cannot tell is absent in Python, is not one: those say
    as much about what routescope builds as about the deployment."""
    from routescope.analysis.engine.core import Engine
    from routescope.analysis.engine.facts import Facts
    from routescope.analysis.engine.state import PathState
    from routescope.analysis.engine.values import Unknown
    from routescope.analysis.phases.runphase import run_phase
    from routescope.analysis.phases.stops import explicit_stops
    from routescope.analysis.phases.trace import resolve_entry
    from tests.engine.test_engine_synthetic import make_tree

    src = """
def backend_ok(name, sm):
    if name == "fast" and sm != 100:
        raise ValueError(
            "the fast backend is only supported on SM100. Please use a different backend."
        )
    return name

def asserts(state):
    assert state is not None, "state a running worker holds"

def absent(obj):
    return obj.missing

def message_fails(obj):
    raise ValueError(f"bad {obj.missing}")

def quant_name(quant_config, fused):
    if fused:
        return quant_config.get_name() == "w4afp8"
    return False
"""
    engine = Engine(make_tree(tmp_path, {"steps.py": src}), Facts())
    for entry, args in (
        ("backend_ok", [Const("fast"), Const(120)]),
        ("asserts", [Const(None)]),
        ("absent", [Unknown("an object no phase builds")]),  # may have it: no raise at all
        ("message_fails", [Const(1)]),  # Python's AttributeError, not the ValueError
        ("quant_name", [Const(None), Const(True)]),
    ):
        fn = resolve_entry(engine, f"fw.steps:{entry}")
        run_phase(engine, 10_000, f"step {entry}",
                  lambda f=fn, a=args: engine.call(PathState(envs=[{}]), f, a, {},
                                                   None))  # fmt: skip
    assert [w for w, _ in engine.stops] == ["step backend_ok", "step asserts",
                                            "step message_fails", "step quant_name"]  # fmt: skip
    stop, message, quant = explicit_stops(engine)  # the assert is not one
    assert (stop.file, stop.line, stop.exception) == ("fw/steps.py", 4, "ValueError")
    assert not stop.implicit
    assert stop.message.startswith("the fast backend is only supported on SM100.")
    assert stop.guard is not None and stop.guard.text == "name == 'fast' and sm != 100"
    assert (message.line, message.exception, message.implicit) == (16, "AttributeError", True)
    assert (quant.line, quant.exception, quant.implicit) == (20, "AttributeError", True)
    assert quant.message == "NoneType has no attribute get_name"
    assert quant.statement == 'return quant_config.get_name() == "w4afp8"'
    assert quant.guard is not None and (quant.guard.text, quant.guard.value) == ("fused", True)
    b = stop_blocker(report.stop_dict(stop), "fw 1.0")
    assert b["kind"] == "raises" and b["where"] == "fw/steps.py:4" and b["way_out"] is None
    assert b["what"] == ("fw 1.0 stops in step backend_ok: ValueError: the fast backend is only "
                         "supported on SM100. Please use a different backend.")  # fmt: skip
    assert "`name == 'fast' and sm != 100` is true" in b["why"]
    q = stop_blocker(report.stop_dict(quant), "fw 1.0")
    assert q["what"] == ("fw 1.0 stops in step quant_name: AttributeError: NoneType has no "
                         "attribute get_name")  # fmt: skip
    assert q["statement"] == 'return quant_config.get_name() == "w4afp8"'
    assert "raises AttributeError in `return quant_config.get_name()" in q["why"]


def test_a_staged_block_that_reaches_a_raise_statement_on_every_way_stops(
    tmp_path: Path,
) -> None:
    """A block routescope builds on its own (outside its model) stops the deployment where
    every way reaches a `raise` statement of the framework's after a test decided on the
    deployment's facts (SGLang 0.5.23's NVFP4 MoE method refuses Hopper with a runner backend
    other than Marlin: DeepSeek-V4-Flash NVFP4 on SM90). A test that read a bare default
    (SGLang's layer stack, which make_layers opens around the layers it builds: Mixtral's
    decoder layer built on its own raised there), or an operation Python raises on, stays a
    note, as before."""
    from routescope.analysis.engine.core import Engine
    from routescope.analysis.engine.facts import Facts
    from routescope.analysis.engine.state import PathState
    from routescope.analysis.phases.runphase import run_phase
    from routescope.analysis.phases.stops import explicit_stops
    from routescope.analysis.phases.trace import resolve_entry
    from tests.engine.test_engine_synthetic import make_tree

    src = """
_stack = None

class Method:
    def __init__(self, blackwell, backend):
        if not blackwell and backend != "marlin":
            raise ValueError(f"Current platform does not support NVFP4 with {backend!r}")

class Block:
    def __init__(self, parent):
        self.width = parent.hidden

class Layer:
    def __init__(self):
        if _stack is None:
            raise RuntimeError("needs an open layer stack: build it inside make_layers")
"""
    engine = Engine(make_tree(tmp_path, {"block.py": src}), Facts())
    gpu, backend = Const(False, ("GPU profile sm90: capability",)), Const("auto", ("--set",))
    for what, entry, args, stops in (
        ("building Method", "fw.block:Method", [gpu, backend], True),
        ("building Method (marlin)", "fw.block:Method", [gpu, Const("marlin", ("--set",))], False),
        ("building Method (a bare value)", "fw.block:Method", [Const(False), backend], False),
        ("building Block", "fw.block:Block", [Const(None)], False),
        ("building Layer", "fw.block:Layer", [], False),  # (what make_layers would set up)
    ):
        cls = resolve_entry(engine, entry)
        run_phase(engine, 10_000, what,
                  lambda c=cls, a=args: engine.call(PathState(envs=[{}]), c, a, {}, None),
                  record_inputs=True, as_served=False, raise_stops=True)  # fmt: skip
        assert any(w == what for w, _ in engine.stops) is stops, what
    (stop,) = explicit_stops(engine)
    assert (stop.step, stop.exception, stop.line) == ("building Method", "ValueError", 7)
    assert stop.message == "Current platform does not support NVFP4 with {backend}"  # f-string
    assert stop.raised == "Current platform does not support NVFP4 with 'auto'"  # as made
    assert stop.guard is not None and stop.guard.text.startswith("not blackwell")
    staged = [n.partition(" on its own")[0] for n in engine.staged]
    assert staged == ["building Method (a bare value)", "building Block", "building Layer"]


def test_a_raise_after_a_probe_call_and_a_backend_enum_stops(tmp_path: Path) -> None:
    """SGLang 0.5.15 modelopt_quant.py:1897-1908: the NVFP4 MoE method reads the GPU through a
    cached probe (`is_blackwell_supported()`, an lru_cache wrapper) and the runner backend
    through an enum made from the flag (`MoeRunnerBackend(server_args.moe_runner_backend)`,
    then `backend.is_marlin()`). The probe's result is what the test read (not the wrapper), and
    the member made from the flag keeps where it came from: DeepSeek-V4-Flash NVFP4 on SM90
    stops there; with the Marlin backend it does not."""
    from routescope.analysis.engine.core import Engine
    from routescope.analysis.engine.facts import Facts
    from routescope.analysis.engine.state import PathState
    from routescope.analysis.phases.runphase import run_phase
    from routescope.analysis.phases.stops import explicit_stops
    from routescope.analysis.phases.trace import resolve_entry
    from tests.engine.test_engine_synthetic import make_tree

    src = """
import functools
from enum import Enum

class Backend(Enum):
    AUTO = "auto"
    MARLIN = "marlin"
    ROUTED = "flashinfer_trtllm_routed"

    def is_marlin(self):
        return self == Backend.MARLIN

BACKEND = None
CAPABILITY = None

def configure(flag, capability):
    global BACKEND, CAPABILITY
    BACKEND = Backend(flag)
    CAPABILITY = capability

@functools.lru_cache(maxsize=1)
def is_blackwell_supported():
    return CAPABILITY[0] in (10, 11, 12)

class Method:
    def __init__(self):
        use_marlin_fallback = BACKEND.is_marlin()
        if not is_blackwell_supported() and not use_marlin_fallback:
            raise ValueError("Current platform does not support NVFP4 quantization")
"""
    engine = Engine(make_tree(tmp_path, {"quant.py": src}), Facts())
    configure, method = (
        resolve_entry(engine, "fw.quant:configure"),
        resolve_entry(engine, "fw.quant:Method"),
    )
    sm90 = Const((9, 0), ("GPU profile sm90: capability",))
    for what, flag, stops in (("building Method", "flashinfer_trtllm_routed", True),
                              ("building Method (marlin)", "marlin", False)):  # fmt: skip
        set_up = engine.call(PathState(envs=[{}]), configure, [Const(flag, ("--set",)), sm90],
                             {}, None)  # fmt: skip
        engine.commit_all([st for st, _ in set_up])  # (the state a start-up step leaves)
        run_phase(engine, 10_000, what,
                  lambda: engine.call(PathState(envs=[{}]), method, [], {}, None),
                  record_inputs=True, as_served=False, raise_stops=True)  # fmt: skip
        assert any(w == what for w, _ in engine.stops) is stops, what
    (stop,) = explicit_stops(engine)
    assert (stop.exception, stop.line) == ("ValueError", 29)
    assert stop.guard is not None
    read = {i.text: i.origins for i in stop.guard.inputs}
    assert read == {"is_blackwell_supported()": ("GPU profile sm90: capability",),
                    "use_marlin_fallback": ("--set",)}  # fmt: skip


def test_a_raise_inside_a_condition_on_the_deployment_s_sizes_stops_a_staged_step(
    tmp_path: Path,
) -> None:
    """vLLM 0.34.0 flashinfer_fp4_moe.py:546-558: the NVFP4 scales are padded to 128 rows, and
    `if pad_size > 0: if is_act_and_mul: raise NotImplementedError(...)`. The nearest test read
    only a constant of the source (the model's gated activation); the one the raise sits inside
    read the expert width at this TP (config.json): on every run of this deployment it raises
    (Gemma-4-26B-A4B NVFP4 at TP8: 176 rows, padded to 256). The stop names that test. Where
    the width needs no padding it does not stop, and where the test around it read a bare
    default (what the model would set up) it stays a note."""
    from routescope.analysis.engine.core import Engine
    from routescope.analysis.engine.facts import Facts
    from routescope.analysis.engine.state import PathState
    from routescope.analysis.phases.runphase import run_phase
    from routescope.analysis.phases.stops import explicit_stops
    from routescope.analysis.phases.trace import resolve_entry
    from tests.engine.test_engine_synthetic import make_tree

    src = """
IS_ACT_AND_MUL = True

def round_up(x, y):
    return (x + y - 1) // y * y

class Method:
    def __init__(self, rows):
        is_act_and_mul = IS_ACT_AND_MUL
        pad_size = round_up(rows, 128) - rows
        if pad_size > 0:
            if is_act_and_mul:
                raise NotImplementedError("Intermediate size padding for w1 and w3")
"""
    engine = Engine(make_tree(tmp_path, {"quant.py": src}), Facts())
    method = resolve_entry(engine, "fw.quant:Method")
    width = ("config.json: text_config.moe_intermediate_size",)
    for what, rows, stops in (
        ("building Method", Const(176, width), True),  # 2 x 704 / 8
        ("building Method (EP)", Const(1408, width), False),  # 2 x 704: whole 128-row blocks
        ("building Method (a bare value)", Const(176), False),
    ):
        run_phase(engine, 10_000, what,
                  lambda r=rows: engine.call(PathState(envs=[{}]), method, [r], {}, None),
                  record_inputs=True, as_served=False, raise_stops=True)  # fmt: skip
        assert any(w == what for w, _ in engine.stops) is stops, what
    (stop,) = explicit_stops(engine)
    assert (stop.exception, stop.line) == ("NotImplementedError", 13)
    assert stop.guard is not None and stop.guard.text == "pad_size > 0"
    staged = [n.partition(" on its own")[0] for n in engine.staged]
    assert staged == ["building Method (a bare value)"]


def test_an_assert_on_the_deployment_s_own_sizes_stops_a_staged_step(tmp_path: Path) -> None:
    """vLLM 0.10.2 modelopt.py:1353 (process_weights_after_loading, CUTLASS NVFP4): `assert
    layer.w2_weight_scale.shape[2] % 16 == 0` fails for Qwen3-30B-A3B-NVFP4 at TP8 (768 / 8 /
    16 = 6): every value the condition read is a size from config.json and --tp, so the step
    stops the deployment, with the assert's message and its own condition as the guard. An
    assert that read a tensor of unknown shape, or a bare value with no provenance, stays a
    note: it says as much about what routescope builds."""
    from routescope.analysis.engine.core import Engine
    from routescope.analysis.engine.facts import Facts
    from routescope.analysis.engine.state import PathState
    from routescope.analysis.phases.runphase import run_phase
    from routescope.analysis.phases.stops import explicit_stops
    from routescope.analysis.phases.trace import resolve_entry
    from tests.engine.test_engine_synthetic import make_tree

    src = """
import torch

class Layer:
    pass

def convert(experts, hidden, width, tp):
    layer = Layer()
    layer.w2_weight_scale = torch.empty(experts, hidden, width // tp // 16)
    assert (layer.w2_weight_scale.shape[2] % 16 == 0), (
        "Expected weight_scale.dim(1) to be divisible by 16")

def contiguous(x):
    assert x.shape[1] == 16, "Hidden size mismatch"

def bare(n):
    assert n % 16 == 0
"""
    engine = Engine(make_tree(tmp_path, {"load.py": src}), Facts())
    sizes = [
        Const(128, ("config.json: num_experts",)),
        Const(2048, ("config.json: hidden",)),
        Const(768, ("config.json: moe_intermediate_size",)),
        Const(8, ("--tp",)),
    ]
    for what, entry, args, stops in (
        ("converting at TP8", "fw.load:convert", sizes, True),
        ("converting at TP1", "fw.load:convert", [*sizes[:3], Const(1, ("--tp",))], False),
        ("a tensor of unknown shape", "fw.load:contiguous", [Tensor()], False),
        ("a bare value", "fw.load:bare", [Const(6)], False),
    ):
        fn = resolve_entry(engine, entry)
        run_phase(engine, 10_000, what,
                  lambda f=fn, a=args: engine.call(PathState(envs=[{}]), f, a, {}, None),
                  record_inputs=True, as_served=False, raise_stops=True)  # fmt: skip
        assert any(w == what for w, _ in engine.stops) is stops, what
    (stop,) = explicit_stops(engine)
    assert (stop.step, stop.exception, stop.line) == ("converting at TP8", "AssertionError", 10)
    assert stop.message == "Expected weight_scale.dim(1) to be divisible by 16"
    assert stop.guard is not None and stop.guard.value is False
    assert stop.guard.text == "layer.w2_weight_scale.shape[2] % 16 == 0"
    b = stop_blocker(report.stop_dict(stop), "fw 1.0")
    assert b["why"] == ("every way through converting at TP8 fails the assert at fw/load.py:10, "
                        "after `layer.w2_weight_scale.shape[2] % 16 == 0` is false")  # fmt: skip
    assert b["evidence"][-1].startswith("fw/load.py:10: assert fails: AssertionError: Expected")
    # what the deployment decided in it, with the facts each value came from
    assert b["evidence"][1] == ("fw/load.py:10: layer.w2_weight_scale.shape = (128, 2048, 6), "
                                "from config.json: num_experts; config.json: hidden; "
                                "config.json: moe_intermediate_size; --tp")  # fmt: skip


def test_an_assert_on_a_flag_an_environment_default_made_stops(tmp_path: Path) -> None:
    """vLLM 0.12.0 modelopt.py:1526: `assert self.allow_flashinfer and self.flashinfer_moe_backend
    == FlashinferMoeBackend.CUTLASS` for a non-gated activation (Nemotron-3-Nano's relu2).
    allow_flashinfer is `cutlass_supported and (envs.VLLM_USE_FLASHINFER_MOE_FP4 and ...)`
    (nvfp4_moe_support.py:36-39, flashinfer_fp4_moe.py:37-44), the variable read as
    `bool(int(os.getenv(name, "0")))` (envs.py:1213-1214): false by default, a value the
    deployment decides, so the assert stops it. The `and` is decided by its first operand:
    the enum compared in the second, which Python never reads, does not count. With the
    variable set, the flag is true and the backend compared is one the release chose by a
    default no fact carries: not a stop (unknown, as before)."""
    from routescope.analysis.engine.core import Engine
    from routescope.analysis.engine.facts import Facts
    from routescope.analysis.engine.state import PathState
    from routescope.analysis.phases.runphase import run_phase
    from routescope.analysis.phases.stops import explicit_stops
    from routescope.analysis.phases.trace import resolve_entry
    from tests.engine.test_engine_synthetic import make_tree

    src = """
import enum
import os

class Backend(enum.Enum):
    CUTLASS = "throughput"
    TRTLLM = "latency"

def allowed(supported):
    return supported and bool(int(os.getenv("USE_FI_FP4", "0")))

class Method:
    def __init__(self, supported):
        self.allow = allowed(supported)
        self.backend = None
        if self.allow:
            self.backend = Backend.TRTLLM

    def apply(self):
        assert self.allow and self.backend == Backend.CUTLASS, "only the CUTLASS backend"

def run(supported):
    Method(supported).apply()
"""
    tree = make_tree(tmp_path, {"method.py": src})
    for env, stops in (({}, True), ({"USE_FI_FP4": "1"}, False)):
        engine = Engine(tree, Facts(env=env))
        fn = resolve_entry(engine, "fw.method:run")
        run_phase(engine, 10_000, "decode",
                  lambda e=engine, f=fn: e.call(PathState(envs=[{}]), f,
                                                [Const(True, ("GPU profile sm100: capability",))],
                                                {}, None),
                  record_inputs=True, as_served=False, raise_stops=True)  # fmt: skip
        assert any(w == "decode" for w, _ in engine.raises), env  # it raises either way
        found = explicit_stops(engine)
        assert bool(found) is stops, env
        if stops:
            (stop,) = found
            assert (stop.exception, stop.line) == ("AssertionError", 20)
            assert stop.guard is not None
            (flag,) = [i for i in stop.guard.inputs if i.text == "self.allow"]
            assert flag.data == ("constant", False)
            assert flag.origins == ("env USE_FI_FP4 unset: default at fw/method.py:10",)
            b = stop_blocker(report.stop_dict(stop), "fw 1.0")
            assert b["evidence"][1] == ("fw/method.py:20: self.allow = False, from env USE_FI_FP4 "
                                        "unset: default at fw/method.py:10")  # fmt: skip


def test_a_way_past_a_stop_sets_the_environment_variable_a_guard_read() -> None:
    """Past a stop whose guard read a value made from an environment variable: the variable
    set the other way (a boolean: "1" where it is false, "0" where true), or to another value
    the guard compares it against; a value already given is no change. Traced again as
    --env, as a user would set it."""
    from routescope.analysis.engine.state import Input
    from routescope.wayout import ENV, changed, flag_text, past_a_stop_env

    def read(text: str, value: object, *origins: str) -> Input:
        return Input(text, repr(value), origins, ("constant", value))

    flag = read("self.allow_flashinfer", False,
                "env VLLM_USE_FLASHINFER_MOE_FP4 unset: default at vllm/envs.py:1214")  # fmt: skip
    backend = read("envs.VLLM_FLASHINFER_MOE_BACKEND", "latency",
                   "--env VLLM_FLASHINFER_MOE_BACKEND")  # fmt: skip
    source = read("self.use_marlin", False, "vllm/model_executor/layers/x.py:12")
    guards = (
        Decision("m.py", 1, "m:f", "self.allow_flashinfer and self.use_marlin", False,
                 (flag, source)),
        Decision("m.py", 2, "m:f", "envs.VLLM_FLASHINFER_MOE_BACKEND in ('throughput', "
                 "'latency')", True, (backend,)),
        Decision("m.py", 3, "m:f", "self.allow_flashinfer", False, (flag,)),
    )  # fmt: skip
    assert past_a_stop_env(guards, {}) == [
        (ENV + "VLLM_USE_FLASHINFER_MOE_FP4", "1"),
        (ENV + "VLLM_FLASHINFER_MOE_BACKEND", "throughput"),
    ]
    assert past_a_stop_env(guards, {"VLLM_USE_FLASHINFER_MOE_FP4": "1"}) == [
        (ENV + "VLLM_FLASHINFER_MOE_BACKEND", "throughput")
    ]
    name = ENV + "VLLM_USE_FLASHINFER_MOE_FP4"
    assert flag_text(name, "1", "quantization") == "--env VLLM_USE_FLASHINFER_MOE_FP4=1"
    dep = changed(
        Deployment(gpu=resolve_gpu("sm100"), tp=8, env={"A": "x"}), name, "1", "quantization"
    )
    assert dep.env == {"A": "x", "VLLM_USE_FLASHINFER_MOE_FP4": "1"} and dep.server_args == {}


def test_a_way_past_a_stop_flips_the_boolean_a_guard_reads() -> None:
    """The candidates past a step that raises: a boolean server argument a decided guard reads,
    flipped, and values a guard compares a kernel-choosing argument against; an argument the
    trace does not follow the effect of (an attention backend) offers no value."""
    from routescope.analysis.engine.state import Decision
    from routescope.wayout import past_a_stop

    def guard(text: str, value: bool) -> Decision:
        return Decision("m.py", 1, "m:f", text, value)

    args = {"disable_shared_experts_fusion": False, "moe_runner_backend": "auto",
            "attention_backend": "trtllm_mha", "tp_size": 8}  # fmt: skip
    guards = (
        guard("self.attention_backend == 'trtllm_mha'", True),
        guard("get_global_server_args().disable_shared_experts_fusion", False),
        guard("server_args.moe_runner_backend in ('triton', 'auto')", True),
        guard("self.tp_size > 1", True),
    )
    got = past_a_stop(guards, args, ("quantization", "moe_runner_backend"))
    assert got == [("disable_shared_experts_fusion", "true"), ("moe_runner_backend", "triton")]
    # up to 0.5.3 the layers read a dict of the arguments (global_server_args_dict)
    read = guard("global_server_args_dict['disable_shared_experts_fusion']", False)
    assert past_a_stop((read,), args, ()) == [("disable_shared_experts_fusion", "true")]


def test_a_way_past_a_stop_on_a_size_tp_split_shards_the_experts_otherwise() -> None:
    """vLLM 0.24.0, Qwen3-30B-A3B-FP8 at TP8: fp8.py:563 raises where each rank's share of the
    expert width (768 / 8 = 96) is not a multiple of the 128-wide weight block. The rules'
    `sharding` (expert parallelism) is tried past it, and only where the guard nearest the
    raise read a value made from --tp; a setting already made is no change."""
    from routescope.analysis.engine.state import Decision, Input
    from routescope.wayout import past_a_split

    def guard(origins: tuple[str, ...]) -> Decision:
        read = (Input("intermediate_size_per_partition", "96", origins, ("constant", 96)),)
        return Decision("fp8.py", 563, "m:f", "intermediate_size_per_partition % block_n != 0",
                        True, read)  # fmt: skip

    split = guard(("config.json: moe_intermediate_size", "--tp"))
    sharding = {"enable_expert_parallel": "true", "ep_size": "@tp"}
    args = {"enable_expert_parallel": False, "ep_size": 1}
    got = past_a_split((split,), args, sharding, 8)
    assert got == [("enable_expert_parallel", "true"), ("ep_size", "8")]
    assert past_a_split((guard(("config.json: moe_intermediate_size",)),), args, sharding, 8) == []
    assert past_a_split((split,), {"enable_expert_parallel": True}, sharding, 8) == []
    assert past_a_split((), args, sharding, 8) == []
    # a way out's value is read as --set reads it: SGLang's ep_size is an int field
    from routescope.wayout import changed

    dep = Deployment(resolve_gpu("sm120"), tp=8)
    pairs = (("ep_size", "8"), ("moe_runner_backend", "marlin"), ("enable_eplb", "true"))
    got = [changed(dep, n, v, "quantization").server_args for n, v in pairs]
    assert got == [{"ep_size": 8}, {"moe_runner_backend": "marlin"}, {"enable_eplb": True}]
    assert changed(dep, "quantization", "modelopt_fp4", "quantization").quant == "modelopt_fp4"


def test_a_topology_check_an_ep_fails_is_passed_by_sharding_as_wide_as_tp() -> None:
    """SGLang 0.5.23 at TP4 EP8: publish's topology check raises (runtime_context.py:346-350)
    after `if problems:`, a list with no origins; the guard that made it, in the same
    function (:306 `tp_size != m_ep * m_dp * m_tp`), read --tp and --ep. Guards decided in the
    function that raised count (the nearest first); one in a caller does not."""
    from routescope.analysis.engine.state import Decision, Input
    from routescope.wayout import past_a_split

    def guard(fn: str, line: int, origins: tuple[str, ...]) -> Decision:
        read = (Input("x", "0", origins, ("constant", 0)),)
        return Decision("runtime_context.py", line, fn, "x", True, read)

    problems = guard("m:_validate_parallel", 346, ())
    sizes = guard("m:_validate_parallel", 306, ("--tp", "--ep"))
    caller = guard("m:publish", 200, ("--ep",))
    sharding, args = {"ep_size": "@tp"}, {"ep_size": 8}
    assert past_a_split((problems, sizes), args, sharding, 4) == [("ep_size", "4")]
    assert past_a_split((problems, caller), args, sharding, 4) == []


def test_a_way_past_a_stop_is_first_what_its_message_says_to_set() -> None:
    """SGLang 0.5.23's NVFP4 MoE method raises on Hopper "... or use moe_runner_backend=marlin
    on SM80+" (its guard reads a local the method computed, naming no value): the message's
    own settings are candidates, in the forms messages write them, for a release's argument
    and a value it does not have; a string value only for a kernel-choosing argument, as
    past_a_stop has it; a word after a name without `--` is no value."""
    from routescope.wayout import advised

    args = {"moe_runner_backend": "flashinfer_trtllm_routed", "disable_cuda_graph": False,
            "enable_dp_attention": True, "attention_backend": "fa3", "tp_size": 8}  # fmt: skip
    chooses = ("quantization", "moe_runner_backend")
    nvfp4 = (
        "Current platform does not support NVFP4 quantization with the selected MoE backend. "
        "Please use Blackwell and above, or use moe_runner_backend=marlin on SM80+."
    )
    assert advised(nvfp4, args, chooses) == [("moe_runner_backend", "marlin")]
    two = "pass --moe-runner-backend triton, or add --disable-cuda-graph."
    assert advised(two, args, chooses) == [
        ("moe_runner_backend", "triton"),
        ("disable_cuda_graph", "true"),
    ]
    for cutlass in ("set --moe-runner-backend='cutlass'", "set --moe-runner-backend to 'cutlass'"):
        assert advised(cutlass, args, chooses) == [("moe_runner_backend", "cutlass")], cutlass
    assert advised("disable_cuda_graph=True is required", args, chooses) == [
        ("disable_cuda_graph", "true")
    ]
    for none in (
        "use --moe-runner-backend flashinfer_trtllm_routed",  # the value it has
        "tp_size must divide the experts",  # no `--`: a word, not a value
        "use --attention-backend triton",  # not a kernel-choosing argument
        "use --enable-dp-attention",  # a boolean already true
        "use --no-such-flag x",
        # words of the sentence, and what a message refuses or retires (a review's examples)
        "--moe-runner-backend is not supported on this GPU",
        "set --moe-runner-backend to one of triton, cutlass",
        "--moe-runner-backend must be given",
        "do not use --disable-cuda-graph with this model",
        "--disable-cuda-graph is deprecated",
        "moe_runner_backend=cutlass requires SM100",
    ):
        assert advised(none, args, chooses) == [], none
    many = "use --moe-runner-backend triton, or cutlass=1, or moe_runner_backend=marlin, " \
           "or moe_runner_backend=cutlass, or --disable-cuda-graph"  # fmt: skip
    assert len(advised(many, args, chooses)) == 2  # advice takes at most two of the traces


@pytest.mark.network
def test_sglang_0_5_6_post1_does_not_start_for_qwen3_on_sm120() -> None:
    """Read in the source: 0.5.6.post1 gives an MHA model on any Blackwell trtllm_mha
    (server_args.py:1352-1353, is_blackwell: capability 10 or 12, utils/common.py:220-223) and
    then refuses it off SM100 (:1435-1443): the server does not start on an RTX PRO 6000. With
    --set attention_backend=triton it starts, and the path is selected."""
    qwen3 = str(CONFIGS / "Qwen--Qwen3-30B-A3B.json")
    req = api.InspectRequest(model=qwen3, framework="sglang==0.5.6.post1", gpu="sm120", tp=8)
    doc = api.inspect(req)
    validate_report(doc)  # dispatch.stops and its guard as the schema says
    (b,) = doc["blockers"]
    assert (b["kind"], b["where"], b["exception"]) == (
        "raises",
        "sglang/srt/server_args.py:1441",
        "ValueError",
    )
    assert "TRTLLM MHA backend is only supported on Blackwell GPUs (SM100)" in b["what"]
    fixed = api.inspect(dataclasses.replace(req, server_args={"attention_backend": "triton"}))
    assert fixed["dispatch"]["status"] == "selected" and fixed["blockers"] == []


def _fused(insertable: bool | None, sink_kind: str) -> dict[str, Any]:
    point = {"file": "runner.py", "line": 635, "function": "m:Runner.apply"}
    return {
        "deployment": {"framework": "vllm"},
        "dispatch": {"status": "selected", "paths": [{"sink": {
            "name": "flashinfer.fused_moe.trtllm_bf16_moe" if sink_kind == "fused_moe_kernel"
            else "torch.ops._moe_C.grouped_topk", "kind": sink_kind, "file": "k.py", "line": 300,
        }}]},
        "verdict": {"insertable": insertable, "why": "routing is fused", "switch": None,
                    "insertion_point": point if insertable else None},
    }  # fmt: skip


def test_a_switch_no_guard_names_is_found_by_tracing_each_preferred_value() -> None:
    """vLLM's oracle picks the experts from --moe-backend with no `get_x().is_y()` guard: each
    value the rules prefer is traced again, the first whose path is insertable is the switch."""
    fw = {"switch": {"prefer": ["triton", "flashinfer_cutlass"], "server_arg": "moe_backend",
                     "gives_up": [{"value": "auto", "text": "the TRT-LLM kernel"}]}}  # fmt: skip
    dep = Deployment(resolve_gpu("sm100"), tp=8)
    seen: list[Deployment] = []

    def retrace(d: Deployment) -> dict[str, Any]:
        seen.append(d)
        if d.server_args["moe_backend"] == "triton":
            raise RoutescopeError("--set moe_backend", "not a declared choice")
        return _fused(True, "cuda_kernel")

    doc = _fused(False, "fused_moe_kernel")
    switch_by_tracing(doc, fw, {"moe_backend": "auto"}, "quantization", dep, retrace)
    sw = doc["verdict"]["switch"]
    assert (sw["flag"], sw["suggest"], sw["current"]) == ("--moe-backend", "flashinfer_cutlass",
                                                          "auto")  # fmt: skip
    assert sw["excluded"] == ["--set moe_backend=triton"] and sw["gives_up"] == "the TRT-LLM kernel"
    assert "torch.ops._moe_C.grouped_topk [cuda_kernel]" in sw["evidence"][0]
    assert doc["verdict"]["why"].endswith(
        "--moe-backend flashinfer_cutlass selects the decomposed path"
    )
    # nothing to do: an insertable path, rules that declare no argument
    done = _fused(True, "cuda_kernel")
    seen.clear()
    switch_by_tracing(done, fw, {}, "quantization", dep, retrace)
    assert done["verdict"]["switch"] is None and not seen
    # a kernel that is no fused MoE kernel, on a path where no statement binds the router's
    # ids (gpt-oss on vLLM SM90: the routing inside the OAI Triton experts' call) is searched too
    inside = _fused(False, "cuda_kernel")
    switch_by_tracing(inside, fw, {}, "quantization", dep, retrace)
    sw = inside["verdict"]["switch"]
    assert sw["suggest"] == "flashinfer_cutlass" and sw["chosen_by"]["condition"].endswith(
        "no statement binds the ids"
    )
    assert sw["gives_up"].startswith("the experts' own routing (torch.ops._moe_C.grouped_topk)")
    bare = _fused(False, "fused_moe_kernel")
    switch_by_tracing(bare, {"switch": {"prefer": ["triton"]}}, {}, "quantization", dep, retrace)
    assert bare["verdict"]["switch"] is None
    # no value leads to an insertable path: no switch, the verdict unchanged
    stuck = _fused(False, "fused_moe_kernel")
    switch_by_tracing(stuck, fw, {}, "quantization", dep,
                      lambda d: _fused(False, "fused_moe_kernel"))  # fmt: skip
    assert stuck["verdict"]["switch"] is None and stuck["verdict"]["why"] == "routing is fused"


def test_a_quantized_checkpoint_the_release_builds_unquantized_is_said() -> None:
    """vLLM 0.10.0 reads no hf_quant_config.json: a ModelOpt NVFP4 checkpoint that has only
    that file is built with no quantization config, and the report says its weights do not fit
    those layers (loading is not traced); nothing is said where --quant was given or a
    quantization config was built."""
    from types import SimpleNamespace

    from routescope.analysis.engine.values import Const, Instance
    from routescope.analysis.phases.checkpoint import served_unquantized
    from routescope.intake.quant import QuantInfo

    info = QuantInfo("nvfp4", None, "NVFP4", None, (), "hf_quant_config.json", "quantization")
    spec: Any = SimpleNamespace(quant=info)
    said = served_unquantized(spec, None, Const(None))
    assert said is not None and "declares nvfp4 (hf_quant_config.json)" in said
    in_config = QuantInfo("fp8", "fp8", None, None, (), "config.json", "quantization_config")
    assert served_unquantized(SimpleNamespace(quant=in_config), None, Const(None)) is None  # type: ignore[arg-type]
    assert served_unquantized(spec, "modelopt_fp4", Const(None)) is None
    assert served_unquantized(spec, None, Instance(None, {}, "quant_config")) is None
    assert served_unquantized(SimpleNamespace(quant=None), None, Const(None)) is None  # type: ignore[arg-type]


def test_quantized_experts_the_release_builds_unquantized_are_said() -> None:
    """vLLM 0.20.0 builds ModelOpt's MIXED_PRECISION config for NVIDIA's Qwen3.6 NVFP4
    checkpoint, but its get_quant_method knows the per-layer algorithms FP8 and NVFP4 only
    (modelopt.py:2188-2199): the experts' W4A16_NVFP4 gets None, and FusedMoE builds them with
    UnquantizedFusedMoEMethod (fused_moe/layer.py:532-533). The report says so as its weights
    caveat, leading with what is built; nothing is said for another method, --quant bf16, a
    checkpoint that excludes its experts, or no quantization config at all (the sidecar note
    says that)."""
    from types import SimpleNamespace

    from routescope.analysis.engine.values import ClassVal, Const, Instance
    from routescope.analysis.phases.checkpoint import experts_unquantized_note
    from routescope.intake.quant import QuantInfo

    def method(name: str) -> Instance:
        return Instance(ClassVal(f"vllm.model_executor.layers.fused_moe.layer:{name}", None, None))

    plain = ("UnquantizedFusedMoEMethod",)
    info = QuantInfo("mixed_precision", "modelopt", "MIXED_PRECISION", None, ("mtp*",),
                     "config.json", "quantization_config")  # fmt: skip
    spec: Any = SimpleNamespace(quant=info)
    config = Instance(ClassVal("vllm.q:ModelOptMixedPrecisionConfig", None, None))
    unquantized = method("UnquantizedFusedMoEMethod")
    said = experts_unquantized_note(spec, None, config, unquantized, plain, False)
    assert said is not None and said.startswith(
        "the experts are built unquantized (UnquantizedFusedMoEMethod): the quantization "
        "config this release builds for the checkpoint's mixed_precision (config.json) "
        "(ModelOptMixedPrecisionConfig) gives them no method of its own"
    )
    guessed = experts_unquantized_note(spec, None, config, unquantized, plain, True)
    assert guessed is not None and guessed.endswith("is routescope's guess (see the note on it)")
    fp4 = method("ModelOptNvFp4FusedMoE")
    assert experts_unquantized_note(spec, None, config, fp4, plain, False) is None
    assert experts_unquantized_note(spec, "bf16", config, unquantized, plain, False) is None
    assert experts_unquantized_note(spec, None, Const(None), unquantized, plain, False) is None
    kept = SimpleNamespace(quant=dataclasses.replace(info, excluded=("*mlp.experts*",)))
    assert experts_unquantized_note(kept, None, config, unquantized, plain, False) is None  # type: ignore[arg-type]
    # excluding the shared experts (GLM-5.1, Kimi-K2.6, DeepSeek-V4 NVFP4) leaves the routed ones
    shared = SimpleNamespace(
        quant=dataclasses.replace(info, excluded=("*.shared_experts.*", "*mlp.shared_expert*"))
    )
    assert experts_unquantized_note(shared, None, config, unquantized, plain, False) == said  # type: ignore[arg-type]
    bf16: Any = SimpleNamespace(quant=None)
    assert experts_unquantized_note(bf16, None, config, unquantized, plain, False) is None


def test_a_stop_says_its_message_with_the_values_it_was_made_with(tmp_path: Path) -> None:
    """SGLang's FP8 MoE method refuses a TP slice of the experts that is not a whole number of
    weight blocks with `raise ValueError(f"... = {intermediate_size_per_partition} is not
    divisible by ... block_n = {block_n}.")` (quantization/fp8.py:1402-1407 in 0.5.21): the
    blocker says the numbers (96, 128), the report keeps the source's text beside them, and
    the schema takes both. A message with a part the facts do not decide is left as written."""
    import json

    import jsonschema

    from routescope.analysis.engine.core import Engine
    from routescope.analysis.engine.facts import Facts
    from routescope.analysis.engine.state import PathState
    from routescope.analysis.engine.values import Unknown
    from routescope.analysis.phases.runphase import run_phase
    from routescope.analysis.phases.stops import explicit_stops
    from routescope.analysis.phases.trace import resolve_entry
    from tests.engine.test_engine_synthetic import make_tree

    src = """
def create_weights(intermediate_size, tp, block_n, where):
    intermediate_size_per_partition = intermediate_size // tp
    if intermediate_size_per_partition % block_n != 0:
        raise ValueError(
            f"The output_size of gate's and up's weight = "
            f"{intermediate_size_per_partition} is not divisible by "
            f"weight quantization block_n = {block_n} ({where})."
        )
"""
    engine = Engine(make_tree(tmp_path, {"fp8.py": src}), Facts())
    fn = resolve_entry(engine, "fw.fp8:create_weights")
    args = [Const(768, ("config.json: moe_intermediate_size",)), Const(8, ("--tp",)),
            Const(128, ("config.json: quantization_config",)), Const("layer 3")]  # fmt: skip
    run_phase(engine, 10_000, "step known",
              lambda: engine.call(PathState(envs=[{}]), fn, args, {}, None))  # fmt: skip
    stops = {s.step: s for s in explicit_stops(engine)}
    stop = stops["step known"]
    assert stop.message == ("The output_size of gate's and up's weight = "
                            "{intermediate_size_per_partition} is not divisible by weight "
                            "quantization block_n = {block_n} ({where}).")  # fmt: skip
    said = ("The output_size of gate's and up's weight = 96 is not divisible by weight "
            "quantization block_n = 128 (layer 3).")  # fmt: skip
    assert stop.raised == said
    as_json = report.stop_dict(stop)
    assert as_json["message"] == stop.message and as_json["message_raised"] == said
    assert (
        stop_blocker(as_json, "fw 1.0")["what"] == f"fw 1.0 stops in step known: ValueError: {said}"
    )
    schema = json.loads((Path(__file__).parent.parent / "routescope" / "schema" /
                         "report.schema.json").read_text())  # fmt: skip
    stops_schema = schema["properties"]["dispatch"]["properties"]["stops"]["items"]
    jsonschema.validate(json.loads(json.dumps(as_json)), {**schema, **stops_schema})
    engine2 = Engine(make_tree(tmp_path / "b", {"fp8.py": src}), Facts())
    fn2 = resolve_entry(engine2, "fw.fp8:create_weights")
    args = [*args[:3], Unknown("a name")]
    run_phase(engine2, 10_000, "step unknown",
              lambda: engine2.call(PathState(envs=[{}]), fn2, args, {}, None))  # fmt: skip
    (unknown,) = explicit_stops(engine2)
    assert unknown.raised == "" and "message_raised" not in report.stop_dict(unknown)
    assert (
        "{intermediate_size_per_partition}" in stop_blocker(report.stop_dict(unknown), "fw")["what"]
    )


def test_a_decode_step_that_raises_on_every_way_is_a_stop(tmp_path: Path) -> None:
    """The decode forward raising on every way at a `raise` statement, after a test decided on
    the deployment's facts, stops the deployment as a set-up step does: its exception and
    message as the source writes them. The call's outcome carries the exception; before
    2026-12-07 the path's end state did not, so a decode raise was never read as a stop."""
    from routescope.analysis.engine.core import Engine
    from routescope.analysis.engine.facts import Facts
    from routescope.analysis.phases.stops import explicit_stops
    from routescope.analysis.phases.trace import resolve_entry, trace_serving
    from tests.engine.test_engine_synthetic import make_tree

    src = """
def forward(x, gated):
    if not gated:
        raise NotImplementedError("non-gated activations need the CUTLASS backend")
    return x
"""
    engine = Engine(make_tree(tmp_path, {"moe.py": src}), Facts())
    fn = resolve_entry(engine, "fw.moe:forward")
    gated = Const(False, ("config.json hidden_act",))
    traced = trace_serving(engine, fn, [Const(1), gated], {}, None, "the decode forward")
    assert traced and [w for w, _ in engine.stops] == ["the decode forward"]
    (stop,) = explicit_stops(engine)
    assert (stop.step, stop.exception, stop.line) == (
        "the decode forward",
        "NotImplementedError",
        4,
    )
    assert stop.message == "non-gated activations need the CUTLASS backend"
    assert stop.guard is not None and stop.guard.text == "not gated"


def test_an_assert_on_a_key_config_json_lacks_stops_set_up_code(tmp_path: Path) -> None:
    """vLLM 0.20.0 models/config.py:34-35: `is_v32 = hasattr(hf_config, "index_topk")` then
    `assert is_v32` while the server configuration is made. For a config.json without the key
    (and a config class without a default for it) hasattr is False because of the file: the
    answer carries that origin, and the assert stops the deployment. Set-up code runs without
    reading its guards' inputs; when every way raises it runs once more reading them, or the
    stop could not be told from a gap of routescope's. With the key there it does not raise."""
    from routescope.analysis.engine.core import Engine
    from routescope.analysis.engine.facts import Facts
    from routescope.analysis.engine.state import PathState
    from routescope.analysis.engine.values import Instance
    from routescope.analysis.phases.runphase import run_phase
    from routescope.analysis.phases.stops import explicit_stops
    from routescope.analysis.phases.trace import resolve_entry
    from tests.engine.test_engine_synthetic import make_tree

    src = """
class DeepseekV32:
    @classmethod
    def verify_and_update_config(cls, hf_config):
        is_v32 = hasattr(hf_config, "index_topk")
        assert is_v32
        return hf_config

def create_engine_config(hf_config):
    return DeepseekV32.verify_and_update_config(hf_config)
"""
    tree = make_tree(tmp_path, {"config.py": src})
    for fields, stops in (({"n_group": Const(8)}, True), ({"index_topk": Const(2048)}, False)):
        engine = Engine(tree, Facts())
        fn = resolve_entry(engine, "fw.config:create_engine_config")
        cfg = Instance(None, dict(fields), "config")  # the checkpoint's config object
        recording: list[bool] = []  # whether each run of the step recorded its guards' inputs

        def run(
            e: Engine = engine, f: Any = fn, c: Instance = cfg, r: list[bool] = recording
        ) -> Any:
            r.append(e.record_inputs)
            return e.call(PathState(envs=[{}]), f, [c], {}, None)

        run_phase(engine, 10_000, "server configuration", run, record_inputs=False)
        found = explicit_stops(engine)
        assert bool(found) is stops, fields
        assert bool(engine.fatal) is stops
        # raising on every way: once more reading the guards, then past the raise as at first
        assert recording == ([False, True, False] if stops else [False])
        if stops:
            (stop,) = found
            assert (stop.exception, stop.line) == ("AssertionError", 6)
            assert stop.guard is not None
            (flag,) = stop.guard.inputs
            assert (flag.text, flag.data) == ("is_v32", ("constant", False))
            assert flag.origins == ("config.json: no index_topk",)


def test_a_literal_returned_under_a_condition_on_the_gpu_is_the_gpu_s(tmp_path: Path) -> None:
    """vLLM 0.22.0 oracle/nvfp4.py:311-331: each backend's `supported, reason =
    k_cls.is_supported_config(...)`, where the kernel class answers `return False, why` under
    `if not cls._supports_current_device()`; none supported: `raise NotImplementedError`. The
    False is a literal, but returned because of the GPU, so it carries the condition's facts
    and the raise, read by a staged step, stops the deployment (NVIDIA's DeepSeek-V4 NVFP4 on
    SM120, whose swiglu_limit leaves only the SM100 TRT-LLM backend). On a GPU that passes, the
    step does not raise; a literal returned under no condition on a fact stays without one."""
    from routescope.analysis.engine.core import Engine
    from routescope.analysis.engine.facts import Facts
    from routescope.analysis.engine.state import PathState
    from routescope.analysis.phases.runphase import run_phase
    from routescope.analysis.phases.stops import explicit_stops
    from routescope.analysis.phases.trace import resolve_entry
    from tests.engine.test_engine_synthetic import make_tree

    src = """
class Kernel:
    @classmethod
    def is_supported_config(cls, capability):
        if not capability == 100:
            return False, "the device"
        return True, None

def plain():
    return False

def select(capability):
    for k_cls in [Kernel]:
        supported, reason = k_cls.is_supported_config(capability)
        if supported:
            return k_cls
    raise NotImplementedError("No backend supports the deployment configuration.")
"""
    tree = make_tree(tmp_path, {"oracle.py": src})
    for capability, stops in ((120, True), (100, False)):
        engine = Engine(tree, Facts())
        fn = resolve_entry(engine, "fw.oracle:select")
        cap = Const(capability, ("GPU profile sm120: capability",))
        run_phase(engine, 10_000, "building the block",
                  lambda e=engine, f=fn, c=cap: e.call(PathState(envs=[{}]), f, [c], {}, None),
                  record_inputs=True, as_served=False, raise_stops=True)  # fmt: skip
        found = explicit_stops(engine)
        assert bool(found) is stops, capability
        if stops:
            (stop,) = found
            assert (stop.exception, stop.line) == ("NotImplementedError", 17)
            assert stop.guard is not None
            (flag,) = [i for i in stop.guard.inputs if i.text == "supported"]
            assert flag.origins == ("GPU profile sm120: capability",)
    engine = Engine(tree, Facts())
    ((_, value),) = engine.call(PathState(envs=[{}]), resolve_entry(engine, "fw.oracle:plain"),
                                [], {}, None)  # fmt: skip
    assert isinstance(value, Const) and value.origins == ()
