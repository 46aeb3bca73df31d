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
