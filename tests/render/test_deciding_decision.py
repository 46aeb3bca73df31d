"""The decision that chose a kernel is a branch of the function that calls its launcher, not of
a helper in the same file that the call's arguments ran (vLLM 0.33.0's vllm_topk_softmax calls
the op with `_get_padding_mask(...)` as an argument: that helper's guard chose nothing)."""

from __future__ import annotations

from routescope.report import deciding_decision


def _frame(function: str, file: str, line: int, called_at: str | None = None) -> dict[str, object]:
    return {"function": function, "file": file, "line": line, "called_at": called_at}


def _decision(function: str, line: int, condition: str) -> dict[str, object]:
    return {"file": "r.py", "line": line, "function": function, "condition": condition,
            "value": True}  # fmt: skip


def test_the_choice_is_the_callers_branch() -> None:
    path = {
        "sink": {"called_from": "ops:topk"},
        "frames": [
            _frame("r:route", "r.py", 26),
            _frame("r:padding_mask", "r.py", 19),
            _frame("ops:topk", "ops.py", 5, "r.py:40"),
        ],
        "decisions": [_decision("r:padding_mask", 20, "skip_padding")],
    }
    assert deciding_decision(path) is None  # the helper's guard chose nothing
    path["decisions"].append(_decision("r:route", 33, "use_fused"))
    chosen = deciding_decision(path)
    assert chosen is not None and chosen["condition"] == "use_fused"
