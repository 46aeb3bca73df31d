"""on_reserved_stack: a trace's frames in one reserved chunk of CPython's frame stack."""

from __future__ import annotations

import sys

import pytest

from routescope.analysis.engine import stack
from routescope.analysis.engine.stack import RESERVED_SLOTS, on_reserved_stack


def test_the_reserving_frame_asks_for_the_reserved_slots() -> None:
    # its frame is what opens the chunk: CPython sizes a new chunk for the frame that needs it
    assert stack._reserving.__code__.co_stacksize >= RESERVED_SLOTS


def test_the_call_is_the_functions_own() -> None:
    @on_reserved_stack
    def add(a: int, b: int = 0, *, c: int = 0) -> int:
        """Adds."""
        return a + b + c

    assert add(1, 2, c=3) == 6
    assert add.__name__ == "add" and add.__doc__ == "Adds."


def test_an_exception_passes_through() -> None:
    @on_reserved_stack
    def fails() -> None:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        fails()


def test_deep_recursion_above_the_reserve_runs_as_without_it() -> None:
    def depth(n: int) -> int:
        return 0 if n == 0 else 1 + depth(n - 1)

    n = min(sys.getrecursionlimit() - 100, 800)
    assert on_reserved_stack(depth)(n) == depth(n) == n
    assert on_reserved_stack(on_reserved_stack(depth))(n) == n  # nested reserves: two chunks
