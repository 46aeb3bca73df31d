"""Every case in rules/frameworks/*.toml, traced from the real published framework source.

One generic test: a case names a framework version, a model config from examples/configs, a GPU
and a deployment, and the decode path that a reading of the source established. Cases marked
`known_gap` must fail (strict xfail), so closing a gap is noticed.
"""

from __future__ import annotations

import os
import textwrap
from typing import Any

import pytest

from routescope import api
from routescope.analysis.phases.frameworks import load_framework
from routescope.render.schema import validate_report
from tests.conftest import CONFIGS

FRAMEWORKS = ["sglang", "vllm"]


def _cases() -> list[Any]:
    params = []
    for name in FRAMEWORKS:
        for case in load_framework(name).cases:
            model = case["model"].removesuffix(".json").replace("/", "--")
            cid = f"{name}-{case['version']}-{model}-{case['gpu']}"
            marks = [pytest.mark.network]
            if "known_gap" in case:
                # a strict expected failure, so a fix shows; each costs a trace that runs out
                # its budget, so they run when asked (ROUTESCOPE_KNOWN_GAPS=1)
                marks.append(pytest.mark.xfail(reason=case["known_gap"], strict=True))
                if os.environ.get("ROUTESCOPE_KNOWN_GAPS") != "1":
                    marks.append(pytest.mark.skip(reason="a known gap (ROUTESCOPE_KNOWN_GAPS=1)"))
            params.append(pytest.param(name, case, id=cid, marks=marks))
    return params


def _holding(path: dict[str, Any]) -> set[str]:
    """Every guard and guard part evaluated True on the path or while its router was built."""
    out = set()
    for d in (*path["decisions"], *path["setup_decisions"]):
        if d["value"] is True:
            out.add(d["condition"])
        out.update(p["condition"] for p in d.get("parts", []) if p["value"] is True)
    return out


def _failing_parts(path: dict[str, Any]) -> set[str]:
    return {p["condition"] for d in path["decisions"] for p in d.get("parts", [])
            if p["value"] is False}  # fmt: skip


def _model(name: str) -> str:
    """An examples/configs file name, or a checkpoint directory under examples/."""
    return str(CONFIGS.parent / name) if "/" in name else str(CONFIGS / name)


@pytest.mark.parametrize(("framework", "case"), _cases())
def test_case(framework: str, case: dict[str, Any]) -> None:
    req = api.InspectRequest(
        model=_model(case["model"]), framework=f"{framework}=={case['version']}",
        gpu=case["gpu"], tp=case.get("tp", 1), quant=case.get("quant"),
        server_args=dict(case.get("set", {})), env=dict(case.get("env", {})),
    )  # fmt: skip
    report = api.inspect(req)
    validate_report(report)  # every case's JSON is the schema's (a kind it lacked slipped by)
    dispatch = report["dispatch"]
    sketch = (report.get("verdict") or {}).get("sketch")
    if sketch:  # the verdict's code sketch is Python that compiles
        compile(textwrap.dedent(sketch), f"sketch of {case['model']}", "exec")
    want = case.get("status", "selected")
    assert dispatch["status"] == want, (dispatch["status"], dispatch["notes"])
    (path,) = dispatch["paths"]  # blocked: the one path past what stops it
    # what stops the deployment: none unless the case names it (read in the source)
    blockers = report.get("blockers", [])
    named = [b.get("kernel") or f"{b['exception']} at {b['where']}" for b in blockers]
    assert named == case.get("blockers", []), blockers
    if "way_out" in case:
        assert blockers[0]["way_out"]["flags"] == case["way_out"], blockers[0]["way_out"]
    # what the checkpoint's weights do not fit: none unless the case says (read in the source)
    weights = dispatch.get("weights", [])
    assert (
        (bool(weights) and case["weights"] in weights[0]) if "weights" in case else not weights
    ), weights
    if "experts" in case:
        every = {h["name"] for h in path["experts"] if h["ways"] == "every"}
        assert set(case["experts"]) <= every, path["experts"]
    sink = path["sink"]
    if sink is None and want == "blocked" and case.get("past") == "unknown":
        # past the stop the block is half built (the constructor that raised left it so): the
        # router named is the one the way out reaches
        assert path["outcome"] != "sink", path
        sink = blockers[0]["way_out"]["sink"]
    if case["kind"] == "bypassed":  # the router routes nothing and the kernel is not named
        assert sink is None and path["outcome"] == "return"
    else:
        assert sink is not None
        assert (sink["name"], sink["kind"]) == (case["sink"], case["kind"])
        if "provider" in case:
            assert sink["provider"] == case["provider"], (sink["provider"], case["provider"])
    if "routing_method" in case:  # what a fused MoE kernel is told to do
        given = {a["name"]: a["repr"] for a in sink.get("args", [])}
        assert given["routing_method_type"].rsplit(".", 1)[-1] == case["routing_method"]
        if load_framework(framework).data["router"].get("entry") != "consumer":
            assert path["handoff"] is not None  # the router handed its logits on
    if "router_top_k" in case:
        assert dispatch["router"]["top_k"]["value"] == case["router_top_k"]
    for setting in ("output_format", "runner_backend"):  # enum members: compare by name
        if setting in case:
            assert setting in dispatch["router"], f"the router records no {setting}"
            got = dispatch["router"][setting]["repr"].rsplit(".", 1)[-1]
            assert got == case[setting], (setting, got)
    for condition in case.get("decisive", []):
        assert condition in _failing_parts(path), f"{condition!r} is not a failing guard"
    holding = _holding(path)
    for condition in case.get("holds", []):
        assert condition in holding, f"{condition!r} is not a guard that held"
