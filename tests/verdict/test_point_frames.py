"""The insertion point walks up from the kernel's call through the frames that called it: where
the path entered one function more than once (vLLM's CustomOp.forward, once for the experts
layer and again for each op inside it), the caller is that function's frame nearest before
the one it called, not its first (vLLM 0.14.0's grouped router: DeepSeek-V3 read 'no
statement binds topk_ids' because the walk jumped to the layer's outermost CustomOp)."""

from __future__ import annotations

import ast
from types import SimpleNamespace
from typing import Any

from routescope.verdict.point import find_point

OP = """\
class CustomOp:
    def forward(self, *args):
        return self.impl(*args)
"""
LAYER = """\
def layer_forward(op, method, x, logits):
    return op.forward(method, x, logits)


def method_forward(router, x, logits):
    topk_weights, topk_ids = router.select(x, logits)
    return topk_ids


def select(op, x, logits):
    return op.forward(x, logits)


def grouped(x, logits):
    return kernel(x, logits)
"""


def _index() -> Any:
    trees = {"op": ast.parse(OP), "layer": ast.parse(LAYER)}
    infos = {k: SimpleNamespace(tree=t, lines=()) for k, t in trees.items()}
    return SimpleNamespace(module=lambda name: infos.get(name))


def _frame(function: str, file: str, line: int, called_at: str | None) -> dict[str, Any]:
    return {"function": function, "file": file, "line": line, "called_at": called_at}


def test_the_caller_is_the_frame_nearest_before_not_the_first_of_its_function() -> None:
    frames = [
        _frame("layer:layer_forward", "layer.py", 1, None),
        _frame("op:CustomOp.forward", "op.py", 2, "layer.py:2"),  # the layer's op
        _frame("layer:method_forward", "layer.py", 5, "op.py:3"),
        _frame("layer:select", "layer.py", 10, "layer.py:6"),
        _frame("op:CustomOp.forward", "op.py", 2, "layer.py:11"),  # the router's op
        _frame("layer:grouped", "layer.py", 14, "op.py:3"),
    ]
    path = {"sink": {"file": "layer.py", "line": 15}, "frames": frames, "decisions": []}
    names = {"ids": ["topk_ids"], "weights": ["topk_weights"]}
    point = find_point(path, _index(), names)
    assert point is not None
    assert (point.function, point.stmt.lineno) == ("layer:method_forward", 6)
    assert point.chain == ("layer:select", "op:CustomOp.forward", "layer:grouped")
