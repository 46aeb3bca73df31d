"""The lock keeps what decides and reviews well (offline, on the GLM-5 / 0.5.9 / SM120 report
snapshot, a real report): no line is compared, each guard once, one line per change."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from routescope.check.evaluate import _lock_finding
from routescope.check.findings import Finding, Outcome
from routescope.check.lock import (
    MAX_GUARD_LINES,
    diff_entries,
    entry_from_report,
    read_lock,
    render_lock,
)
from routescope.check.matrix import Cell
from routescope.errors import RoutescopeError
from routescope.report import deciding_decision

SNAPSHOT = Path(__file__).parents[1] / "render" / "snapshots" / "glm5-sglang-0.5.9-sm120-tp8.json"
MODEL, GPU = "zai-org--GLM-5", "sm120"


def _report() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    return doc


def _moved(doc: dict[str, Any], by: int) -> dict[str, Any]:
    """The same report with every line of the framework's code `by` lines further down (a
    release that adds code above the router and changes no decision)."""
    out = copy.deepcopy(doc)
    path = out["dispatch"]["paths"][0]
    for d in path["decisions"]:
        d["line"] += by
    for f in path["frames"]:
        f["line"] += by
        file, _, line = str(f.get("called_at", "")).rpartition(":")
        if line.isdigit():
            f["called_at"] = f"{file}:{int(line) + by}"
    path["sink"]["line"] += by
    point = out["verdict"]["insertion_point"]
    for k in ("line", "insert_after_line"):
        point[k] += by
    return out


def test_the_lock_keeps_what_decides() -> None:
    doc = _report()
    e = entry_from_report(MODEL, GPU, doc)
    fields = dict(e.path)
    assert fields["sink"] == "sglang.srt.layers.moe.topk:biased_grouped_topk_impl"
    assert fields["sink_kind"] == "torch_compile" and fields["top_k"] == "9"
    # the insertion point by function and statement, no line
    assert (
        fields["insertion_point"]
        == "sglang/srt/layers/moe/topk.py:sglang.srt.layers.moe.topk:select_experts"
    )
    assert fields["insert_after"] == "topk_weights, topk_ids = biased_grouped_topk("
    # each guard once, only those that read a fact and the one that chose the kernel
    keys = [(d.function, d.condition, d.value) for d in e.decisions]
    assert len(keys) == len(set(keys))
    path = doc["dispatch"]["paths"][0]
    assert 0 < len(e.decisions) < len(path["decisions"])
    kernel = path["sink"]
    launch = max(i for i, d in enumerate(path["decisions"])
                 if d["file"] == kernel["file"] and d["line"] <= kernel["line"])  # fmt: skip
    read_facts = {d["condition"] for d in path["decisions"][: launch + 1]
                  if any(i.get("origins") for i in d.get("inputs", []))}  # fmt: skip
    chose = deciding_decision(path)
    assert chose is not None and chose["condition"] == "use_grouped_topk"
    assert {d.condition for d in e.decisions} == read_facts | {chose["condition"]}
    assert launch + 1 < len(path["decisions"])  # what post-processes the ids is left out
    assert "self.topk_config.output_format is not None" not in {d.condition for d in e.decisions}
    text = render_lock("sglang==0.5.9", [e])
    assert len(text.splitlines()) < 40, text
    assert "guards = [" in text and "decisions" not in text


def test_the_lock_reads_back_what_it_wrote(tmp_path: Path) -> None:
    e = entry_from_report(MODEL, GPU, _report())
    path = tmp_path / "routescope.lock"
    path.write_text(render_lock("sglang==0.5.9", [e]), encoding="utf-8")
    lock = read_lock(path)
    assert lock.framework == "sglang==0.5.9"
    assert lock.entries[(MODEL, GPU)] == e


def test_a_version_2_lock_asks_to_be_recorded_again(tmp_path: Path) -> None:
    path = tmp_path / "routescope.lock"
    path.write_text('lock_version = 2\nframework = "sglang==0.5.23"\n', encoding="utf-8")
    with pytest.raises(RoutescopeError, match="written by an older routescope"):
        read_lock(path)


def test_moved_lines_are_no_change() -> None:
    doc = _report()
    before = entry_from_report(MODEL, GPU, doc)
    after = entry_from_report(MODEL, GPU, _moved(doc, 40))
    assert diff_entries(before, after) is None


def test_a_guard_that_read_the_same_way_is_no_change() -> None:
    """An and/or whose operands read otherwise but whose branch is the same is no change
    (a release bump printed "value is None: true -> true")."""
    doc = _report()
    before = entry_from_report(MODEL, GPU, doc)
    moved = copy.deepcopy(doc)
    for d in moved["dispatch"]["paths"][0]["decisions"]:
        for part in d.get("parts", []):
            part["value"] = None
    assert diff_entries(before, entry_from_report(MODEL, GPU, moved)) is None


def _finding(*args: Any, **kwargs: Any) -> Finding:
    return Finding(MODEL, GPU, *args, **kwargs)


def test_a_real_change_is_one_line_each_naming_what_and_why(tmp_path: Path) -> None:
    doc = _report()
    path = tmp_path / "routescope.lock"
    path.write_text(render_lock("sglang==0.5.9", [entry_from_report(MODEL, GPU, doc)]))
    lock = read_lock(path)
    new = _moved(doc, 7)
    p = new["dispatch"]["paths"][0]
    p["sink"].update(name="sglang.kernels.ops.moe.moe_fused_gate:_router_triton_kernel",
                     kind="triton", provider="triton")  # fmt: skip
    flipped = next(
        d for d in p["decisions"] if d["condition"].startswith("_is_cuda and num_experts")
    )
    flipped["value"] = True
    cell = Cell(MODEL, GPU, new)
    entry = entry_from_report(MODEL, GPU, new)
    got = _lock_finding(cell, entry, lock, None, _finding, ())
    assert got.outcome is Outcome.FAIL
    assert got.message == (
        "path changed: sglang.srt.layers.moe.topk:biased_grouped_topk_impl (torch_compile, torch)"
        " -> sglang.kernels.ops.moe.moe_fused_gate:_router_triton_kernel (triton, triton)"
    )
    assert "sink_kind: torch_compile -> triton" in got.details
    assert "sink_provider: torch -> triton" in got.details
    (why,) = [line for line in got.details if line.startswith("changed: ")]
    assert why.startswith("changed: _is_cuda and num_experts == 384")
    assert (
        ": false -> true [num_experts == 384 -> false]  (sglang/srt/layers/moe/topk.py:848 -> "
        in why
    )
    assert len(got.details) <= 4 + MAX_GUARD_LINES + 1
    assert all("\n" not in line for line in got.details)
