"""A phase that joins its paths at every statement (merge_at 1, as the conversion after the
weights load does) keeps apart the ways that built different objects: joined, the field that
holds the kernel object would be unknown on both, and the kernel each way launches lost."""

from __future__ import annotations

from pathlib import Path

from tests.engine.test_engine_lists import _kinds

CONVERT = """
        class Marlin:
            def __init__(self, scale):
                self.scale = scale

            def apply(self, x):
                return topk_fast(x)

        class Emulated:
            def apply(self, x):
                return torch.topk(x, 2)

        class Layer:
            def __init__(self):
                self.kernel = None

        def convert(layer):
            if os.environ.get("FW_SCALE"):  # a fork that builds alike: joined at once
                scale = 2
            else:
                scale = 1
            if os.environ.get("FW_EMULATE"):
                layer.kernel = {emulated}
            else:
                layer.kernel = Marlin(scale)

        def route(x):
            layer = Layer()
            convert(layer)
            assert layer.kernel is not None
            return layer.kernel.apply(x)
"""


def _joined_at_once(tmp_path: Path, body: str) -> list[str | None]:
    from routescope.analysis.engine.budget import Budget

    budget = Budget()
    budget.merge_at = 1
    return _kinds(tmp_path, body, budget=budget)


def test_ways_that_built_different_kernel_objects_stay_apart(tmp_path: Path) -> None:
    kinds = _joined_at_once(tmp_path, CONVERT.format(emulated="Emulated()"))
    assert sorted(kinds, key=str) == sorted(["cuda_kernel", "torch"], key=str), kinds


def test_ways_that_built_alike_join(tmp_path: Path) -> None:
    """Both ways of each fork build a Marlin (its scale differs): one path, the kernel kept."""
    assert _joined_at_once(tmp_path, CONVERT.format(emulated="Marlin(3)")) == ["cuda_kernel"]


def test_kind_shapes_tell_paths_apart_as_their_own_walking_each_heap_once() -> None:
    """Paths whose heaps hold the same contents see every object alike: one walk serves them,
    and none where every path holds the same; the shapes compare as each path's own do."""
    from routescope.analysis.engine import shapes
    from routescope.analysis.engine.state import PathState
    from routescope.analysis.engine.values import ClassVal, Instance

    kernel, other = ClassVal("fw.k:Kernel", None, None), ClassVal("fw.k:Other", None, None)
    layer = Instance(ClassVal("fw.k:Layer", None, None), {"kernel": Instance(kernel)})
    base = PathState(envs=[{}])
    base.write(layer, "scale", Instance(kernel))
    same = base.fork()  # (the ways of an `if` that wrote nothing)
    changed = base.fork()
    changed.write(layer, "kernel", Instance(other))
    alike = base.fork()
    alike.write(layer, "kernel", layer.fields["kernel"])  # (new contents, the same classes)

    computed: list[PathState] = []
    real = shapes.kind_shape

    def counting(st: PathState) -> tuple[str, ...]:
        computed.append(st)
        return real(st)

    shapes.kind_shape = counting  # type: ignore[assignment]
    try:
        states = [base, same, changed, base.fork(), alike]
        got = shapes.kind_shapes(states)
        walks = list(computed)
        computed.clear()
        none = shapes.kind_shapes([base, same, base.fork()])
    finally:
        shapes.kind_shape = real  # type: ignore[assignment]
    own = [real(s) for s in states]
    assert [[a == b for b in got] for a in got] == [[a == b for b in own] for a in own]
    assert got[0] == got[1] == got[3] == got[4] != got[2]
    assert walks == [base, changed, alike]
    assert none == [(), (), ()] and computed == []


NOT_NONE = """
        def route(x):
            if os.environ.get("FW_SCALE"):
                scale = 2.0
            else:
                scale = torch.empty(4).max().item()
            # (joined at the statement: 2.0 on one way, a tensor's item on the other)
            if {test}:
                return torch.topk(x, 2)
            return topk_fast(x)
"""


def test_paths_joined_where_none_held_none_are_not_none(tmp_path: Path) -> None:
    """vLLM 0.19.1 marlin_utils_fp4.py:368, :103: a scale factor 1.0 or a tensor's item, joined
    where the ways met, then `scale_factor is None` in a loop over every expert."""
    assert _joined_at_once(tmp_path, NOT_NONE.format(test="scale is None")) == ["cuda_kernel"]
    assert _joined_at_once(tmp_path, NOT_NONE.format(test="not scale is not None")) == [
        "cuda_kernel"
    ]


def test_paths_joined_where_one_held_none_may_be_none(tmp_path: Path) -> None:
    body = NOT_NONE.replace("scale = 2.0", "scale = None").format(test="scale is None")
    assert sorted(_joined_at_once(tmp_path, body), key=str) == ["cuda_kernel", "torch"]
