"""Where a raise is said to happen: a handler that re-raises (`raise`, or `raise e` of what it
caught) raises at the statement that first raised, as the traceback CPython prints ends there;
a new exception raised in a handler is raised at its own statement. A blocker names that
statement (SGLang 0.5.23's `_validate_parallel` raises ValueError at runtime_context.py:347,
which its caller logs and re-raises: the report named no line and showed a later step's error
first)."""

from __future__ import annotations

from pathlib import Path

from routescope.analysis.engine.values import Unknown
from tests.engine.test_engine_soundness import run

CHECK = """
def check(n):
    if n > 3:
        raise ValueError("too many")
    return n
"""


def _raised(tmp_path: Path, main: str) -> set[tuple[str, int]]:
    paths = run(tmp_path, {"main.py": CHECK + main}, Unknown("n"))
    return {(p.result, p.raised_at[1]) for p in paths if p.outcome == "raise" and p.raised_at}


def test_a_bare_reraise_is_raised_where_it_first_was(tmp_path: Path) -> None:
    main = """
def main(n):
    try:
        return check(n)
    except ValueError:
        print("logged")
        raise
"""
    assert _raised(tmp_path, main) == {("ValueError", 4)}


def test_reraising_the_caught_name_is_raised_where_it_first_was(tmp_path: Path) -> None:
    main = """
def main(n):
    try:
        return check(n)
    except ValueError as e:
        raise e
"""
    assert _raised(tmp_path, main) == {("ValueError", 4)}


def test_a_new_exception_in_a_handler_is_raised_at_its_own_statement(tmp_path: Path) -> None:
    main = """
def main(n):
    try:
        return check(n)
    except ValueError as e:
        raise RuntimeError("wrapped") from e
"""
    assert _raised(tmp_path, main) == {("RuntimeError", 11)}


def test_a_nested_handler_gives_back_the_outer_exception_site(tmp_path: Path) -> None:
    # the inner handler's exception (raised at 12) is handled and done with; the bare raise
    # after it re-raises the outer one, raised in check at 4
    main = """
def main(n):
    try:
        return check(n)
    except ValueError:
        try:
            raise KeyError("inner")
        except KeyError:
            pass
        raise
"""
    assert _raised(tmp_path, main) == {("ValueError", 4)}


def test_reraising_a_caught_exception_of_unknown_class_is_raised_where_it_first_was(
    tmp_path: Path,
) -> None:
    # what `E(...)` makes is not known (E is an input); `raise e` of it, caught, is still the
    # same exception, raised at line 4, as a bare `raise` of it is
    main = """
def check(n, E):
    if n > 3:
        raise E("too many")
    return n


def main(n, E):
    try:
        return check(n, E)
    except Exception as e:
        raise e
"""
    paths = run(tmp_path, {"main.py": main}, Unknown("n"), Unknown("E"))
    assert {p.raised_at[1] for p in paths if p.outcome == "raise" and p.raised_at} == {4}
