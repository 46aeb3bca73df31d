"""A framework class's own operators run as Python runs them: `a | b` calls `a.__or__(b)`
(a mapper merged with another at class level), the reflected `__ror__` where the left operand
has none or answers NotImplemented, `a |= b` its `__ior__` first, then `__or__`."""

from __future__ import annotations

from pathlib import Path

from tests.engine.test_engine_lists import _kinds

CLASSES = """
        class Mapper:
            def __init__(self, prefixes):
                self.prefixes = prefixes

            def __or__(self, other):
                if not isinstance(other, Mapper):
                    return NotImplemented
                return Mapper({**self.prefixes, **other.prefixes})

        class Scale:
            def __init__(self, k):
                self.k = k

            def __rmul__(self, n):
                return n * self.k

        class Counter:
            def __init__(self):
                self.n = 0

            def __iadd__(self, k):
                self.n = self.n + k
                return self

        BASE = Mapper({"model.language_model.": "model."})
        MERGED = BASE | Mapper({"mtp.": None})
"""


def test_binary_operators_call_the_class_methods(tmp_path: Path) -> None:
    body = (
        CLASSES
        + """
        def route(x):
            c = Counter()
            c += 2
            c += 3
            if MERGED.prefixes == {"model.language_model.": "model.", "mtp.": None} and (
                3 * Scale(4) == 12 and c.n == 5 and isinstance(c, Counter)
            ):
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    )
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_not_implemented_falls_to_the_reflected_method_or_raises(tmp_path: Path) -> None:
    """`Mapper | 1` answers NotImplemented and int has no `__ror__` for it: TypeError."""
    body = (
        CLASSES
        + """
        def route(x):
            try:
                BASE | 1
            except TypeError:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    )
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_the_reflected_method_is_not_tried_between_instances_of_one_class(
    tmp_path: Path,
) -> None:
    """Python tries `b.__ror__(a)` only where `b` is of another class: `Mapper() | Mapper()`
    whose `__or__` answers NotImplemented raises TypeError, even though `__ror__` exists."""
    body = """
        class Mapper:
            def __or__(self, other):
                return NotImplemented

            def __ror__(self, other):
                return self

        def route(x):
            try:
                Mapper() | Mapper()
            except TypeError:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    assert _kinds(tmp_path, body) == ["cuda_kernel"]
