"""The answer's OEA line says the verdict as the markdown matrix does: a forked dispatch's
verdict is undecided (each path has its own), not "not insertable"; a decided false is."""

from __future__ import annotations

from routescope.render.text_summary import _verdict


def test_a_forked_verdict_reads_undecided_and_a_decided_false_not_insertable() -> None:
    forked = {"insertable": None, "why": "the dispatch is forked: 4 feasible path(s)"}
    (line,) = [t.plain for t in _verdict(forked, 80)]
    assert line.startswith("OEA: undecided: the dispatch is forked")
    fused = {"insertable": False, "why": "routing is fused into the MoE kernel"}
    (line,) = [t.plain for t in _verdict(fused, 80)]
    assert line.startswith("OEA: not insertable: routing is fused")


def test_what_the_experts_launch_reads_every_way_first_then_some() -> None:
    """The summary's experts line: each kernel every way launches past the router, with its
    kind, then the ones only some ways launch, by their short names, at most `limit` each;
    nothing where the trace followed no launch (a kernel that routes inside is the sink)."""
    from routescope.report import experts_text

    def h(name: str, kind: str, ways: str) -> dict[str, str]:
        return {"name": name, "kind": kind, "ways": ways}

    path = {"experts": [
        h("sglang.kernels.ops.moe.align:_moe_align_kernel", "triton", "some"),
        h("sglang.kernels.ops.moe.fused:fused_moe_kernel", "triton", "every"),
        h("sgl_kernel.moe_sum_reduce", "cuda_kernel", "some"),
    ]}  # fmt: skip
    assert experts_text(path) == (
        "fused_moe_kernel [triton]; on some ways _moe_align_kernel, moe_sum_reduce"
    )
    assert experts_text(path, limit=1) == (
        "fused_moe_kernel [triton]; on some ways _moe_align_kernel and 1 more"
    )
    assert experts_text(path, brief=True) == "fused_moe_kernel [triton] (+2 on some ways)"
    assert experts_text({"experts": []}) == "" and experts_text({}) == ""
    some_only = {"experts": [h("m:k", "", "some")]}
    assert experts_text(some_only, brief=True) == "on some ways k"
