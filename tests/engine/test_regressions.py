"""Every distinct minimal program the differential campaigns found failing (tests/engine/
regressions/, as the campaign wrote each: the program, its inputs and the discrepancy it showed
then) runs through the same checks again: CPython and the engine must agree on each now. Those
under regressions/known/ are found and not yet mended: each must still disagree (a strict
expected failure), so that mending one is noticed and it moves up."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine import differential as D

CORPUS = sorted((Path(__file__).parent / "regressions").glob("*.txt"))
KNOWN = sorted((Path(__file__).parent / "regressions" / "known").glob("*.txt"))


def test_the_corpus_is_there() -> None:
    assert len(CORPUS) >= 150


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_a_program_a_campaign_found_failing_agrees_with_cpython(path: Path) -> None:
    program = D.program_from_text(path.read_text())
    report = D.check_program(program, known_runs=3)
    failures = report.failures(precision=True)
    assert not failures, "\n".join(str(d) for d in failures)


@pytest.mark.parametrize("path", KNOWN, ids=[p.stem for p in KNOWN])
@pytest.mark.xfail(strict=True, reason="found by a campaign (2026-12-05), not yet mended")
def test_a_program_not_yet_mended_still_disagrees(path: Path) -> None:
    test_a_program_a_campaign_found_failing_agrees_with_cpython(path)
