"""Snapshots of the Markdown and JSON reports (GLM-5, SGLang 0.5.9, sm120, TP8); schema checks.

The Markdown snapshot ends in .txt so that no formatter rewrites its code blocks.
Refresh the snapshots with ROUTESCOPE_UPDATE_SNAPSHOTS=1 after an intended change.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from routescope.render.markdown import render
from routescope.render.report_md import render_matrix
from routescope.render.schema import report_schema, validate_report
from tests.verdict.conftest import report

SNAP = Path(__file__).parent / "snapshots"
GLM5 = ("examples/configs/zai-org--GLM-5.json", "0.5.9", "sm120")


def _check(name: str, text: str) -> None:
    path = SNAP / name
    if os.environ.get("ROUTESCOPE_UPDATE_SNAPSHOTS"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {name}: run with ROUTESCOPE_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8")


def test_schema_is_valid_draft_2020_12() -> None:
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(report_schema())


@pytest.mark.network
def test_markdown_snapshot() -> None:
    _check("glm5-sglang-0.5.9-sm120-tp8.md.txt", render(report(*GLM5)))


@pytest.mark.network
def test_json_snapshot_and_schema() -> None:
    doc = report(*GLM5)
    validate_report(doc)
    _check("glm5-sglang-0.5.9-sm120-tp8.json", json.dumps(doc, indent=2) + "\n")


@pytest.mark.network
def test_json_values_are_typed() -> None:
    """A program reads 9, not "9": every value the trace read is {value, kind, repr, origins}
    with value as JSON holds it; the text Python shows stays in repr."""
    doc = report(*GLM5)
    router = doc["dispatch"]["router"]
    assert router["top_k"] == {"value": 9, "kind": "constant", "repr": "9",
                               "origins": ["config.json: num_experts_per_tok",
                                           "config.json: n_shared_experts"]}  # fmt: skip
    assert router["renormalize"]["value"] is True
    assert router["routed_scaling_factor"]["value"] == 2.5
    assert router["scoring_func"]["value"] == "softmax"
    assert router["scoring_func"]["repr"] == "'softmax'"
    assert router["custom_routing_function"]["value"] is None
    assert router["custom_routing_function"]["kind"] == "constant"
    assert router["output_format"] == {**router["output_format"], "kind": "enum",
                                       "value": "TopKOutputFormat.STANDARD"}  # fmt: skip
    assert (router["correction_bias"]["kind"], router["correction_bias"]["value"]) == (
        "tensor",
        None,
    )
    args = doc["dispatch"]["server_args"]
    assert (args["ep_size"]["value"], args["ep_size"]["kind"]) == (1, "constant")
    assert args["disable_cuda_graph"]["value"] is False
    assert (args["moe_runner_backend"]["value"], args["quantization"]["value"]) == ("auto", None)
    inputs = [i for p in doc["dispatch"]["paths"] for d in p["decisions"] for i in d["inputs"]]
    assert inputs and all({"expr", "value", "kind", "repr", "origins"} <= set(i) for i in inputs)
    assert all(i["value"] is None for i in inputs if i["kind"] in ("tensor", "object", "unknown"))


@pytest.mark.network
def test_forked_and_fused_kernel_reports_match_the_schema() -> None:
    validate_report(report("examples/configs/openai--gpt-oss-120b.json", "0.5.23", "sm120", 8))
    fused = report("examples/configs/Qwen--Qwen3-30B-A3B.json", "0.5.23", "sm100", 8)
    (path,) = fused["dispatch"]["paths"]
    assert path["sink"]["args"] and path["handoff"]  # the kernel's routing arguments, the handoff
    validate_report(fused)


@pytest.mark.network
def test_matrix_links_every_section() -> None:
    docs = [
        report(*GLM5),
        report("examples/configs/openai--gpt-oss-120b.json", "0.5.23", "sm120", 8),
    ]
    text = render_matrix(docs)
    assert text.count("](#") == 2
    # GLM-5 on sm120 is decided; gpt-oss on sm120 forks on whether triton_kernels imports on the
    # server (a fact the GPU profile cannot know), so its verdict is undecided rather than guessed
    assert "**insertable**" in text and "**undecided**" in text


@pytest.mark.network
def test_matrix_row_says_a_deployment_is_blocked() -> None:
    """NVIDIA's NVFP4 GLM-5 on a DGX Spark: the path is decided, but the experts kernel it
    launches has no sm121 build (a blocker); on a B300 it runs. The summary table says so in
    the row, not only in the section below it."""
    docs = [
        report("examples/checkpoints/nvidia--GLM-5-NVFP4", "0.5.23", gpu, 8)
        for gpu in ("sm121", "sm103")
    ]
    rows = [line for line in render_matrix(docs).splitlines() if line.startswith("| [")]
    assert "| sm121 |" in rows[0] and "| selected, **blocked** |" in rows[0]
    assert "| sm103 |" in rows[1] and "| selected |" in rows[1]


def test_a_dunder_name_in_prose_is_not_bold() -> None:
    """A blocker names the step `__post_init__`: in prose, Markdown would make it bold
    `post_init`; in a code span it stays as written."""
    from markdown_it import MarkdownIt

    from routescope.render.markdown import cell, code

    html = MarkdownIt("commonmark").render(
        f"stops in {cell('__post_init__')}: {code('a.__dict__')}"
    )
    assert "<strong>" not in html and "__post_init__" in html
    assert "<code>a.__dict__</code>" in html


@pytest.mark.network
def test_markdown_lists_the_notes_the_text_report_shows() -> None:
    """A provisional answer says "see notes": the Markdown report lists every note of the
    dispatch (GLM-5 on 0.5.9: a server-argument field its post-processing leaves undecided,
    the MoE block built from the values), in a section of its own, one line each."""
    from markdown_it import MarkdownIt

    doc = report(*GLM5)
    notes = doc["dispatch"]["notes"]
    assert notes
    text = render(doc)
    section = text.split("\n## Notes\n", 1)[1]
    items = [line for line in section.splitlines() if line.startswith("- ")]
    assert len(items) == len(notes)
    html = MarkdownIt("commonmark").render(text)
    assert "<strong>post_init</strong>" not in html


def test_every_assumption_kind_the_engine_lists_is_one_the_schema_declares() -> None:
    # "module field" (a module-tree field unread code made, taken as no module) was listed in
    # reports since 93a7bf8 but not declared: such a report failed its own schema
    from routescope.analysis.engine.facts import ASSUMPTION_KINDS, Facts

    props = report_schema()["properties"]["dispatch"]["properties"]["assumptions"]
    assert tuple(props["items"]["properties"]["kind"]["enum"]) == ASSUMPTION_KINDS
    with pytest.raises(AssertionError):
        Facts().assume("a kind nobody declared", "x", "y", "z")
