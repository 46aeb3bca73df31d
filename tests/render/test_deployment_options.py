"""What a deployment was given beyond GPU, TP and quantization (--ep, --set, --env, --package)
changes the answer, so every heading names it: the answer's first line, the path tree's, the
markdown section's, a report's, and a timeline's (text and markdown). `inspect --ep 8` once
printed `TP8 · nvfp4`, the same heading as without it, over a different kernel."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from routescope.render import timeline
from routescope.render.markdown import given_options, render
from routescope.render.report_md import render_matrix
from routescope.render.schema import validate_report
from routescope.render.text_report import render_dispatch
from routescope.render.text_summary import summary

SNAPSHOT = Path(__file__).parent / "snapshots" / "glm5-sglang-0.5.9-sm120-tp8.json"
GIVEN = " · EP8 · set moe_runner_backend=triton · env SGLANG_X=1 · package triton_kernels=false"


def _doc() -> dict[str, Any]:
    doc = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    doc["deployment"].update(ep=8, server_args={"moe_runner_backend": "triton"},
                             env={"SGLANG_X": "1"}, packages={"triton_kernels": False})  # fmt: skip
    return doc


def test_the_options_read_in_the_order_given() -> None:
    assert given_options(_doc()["deployment"]) == GIVEN
    assert given_options({"tp": 8, "ep": None, "server_args": {}, "env": {}}) == ""


def test_every_report_heading_names_them() -> None:
    doc = _doc()
    validate_report(doc)
    assert f"TP8{GIVEN} · bf16" in summary(doc, 200)[0].plain
    console = Console(width=300, record=True)
    console.print(render_dispatch(doc))
    assert f"TP8{GIVEN} · bf16" in console.export_text()
    assert f"TP8{GIVEN} · bf16" in render(doc)
    assert f"TP8{GIVEN} · bf16" in render_matrix([doc, copy.deepcopy(doc)])


def test_a_timeline_heading_names_them() -> None:
    given = {k: v for k, v in _doc()["deployment"].items()
             if k in ("ep", "server_args", "env", "packages")}  # fmt: skip
    profile = {"family": "sm120", "device": "rtx-pro-6000"}
    dep = {"gpu": "sm120", "gpu_profile": profile, "tp": 8, **given, "quant": None}
    t = {"model": "m", "framework": "sglang", "deployment": dep, "groups": [], "changes": []}
    assert timeline.text(t).splitlines()[0] == f"m · sglang · sm120 (rtx-pro-6000) · TP8{GIVEN}"
    assert f"sm120 (rtx-pro-6000), TP8{GIVEN}" in timeline.markdown(t)


def _stop(step: str, line: int) -> dict[str, Any]:
    return {"kind": "raises", "what": f"sglang 0.5.23 stops in {step}: ValueError: bad",
            "where": f"sglang/srt/runtime_context.py:{line}", "statement": "raise ValueError(",
            "after": "`problems` is true", "way_out": None, "why": "raised",
            "evidence": []}  # fmt: skip


def test_the_answer_leads_with_the_first_step_that_stops_and_counts_the_rest() -> None:
    # the server stops at the first; the steps after it were traced past it, on what it left
    # unfinished: they are counted, not shown as blockers of their own
    doc = _doc()
    doc["dispatch"]["status"] = "blocked"
    doc["blockers"] = [_stop("publish", 347), _stop("initialize_dp_attention", 392),
                       _stop("the model loader", 392)]  # fmt: skip
    lines = [t.plain for t in summary(doc, 200)]
    blocked = [line for line in lines if line.startswith("BLOCKED: ")]
    assert blocked == ["BLOCKED: sglang 0.5.23 stops in publish: ValueError: bad"], lines
    assert "  past it, 2 more step(s) raise (--explain)" in lines
    doc["blockers"][0]["way_out"] = doc["blockers"][1]["way_out"] = {"flags": ["--set a=1"],
                                                                      "tried": []}  # fmt: skip
    md = render(doc)
    assert md.count("- **Blocked:** ") == 1 and md.count("- **Past it, raises too:** ") == 2
    assert md.count("; way out: `--set a=1`") == 1  # said once, at the step that stops
    assert md.index("stops in publish") < md.index("stops in initialize_dp_attention")
