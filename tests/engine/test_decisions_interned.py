"""Set-up code's decisions (record_inputs off: no inputs, no parts) are interned per test,
function and outcome: the same values as a Decision made afresh, one object per outcome."""

from __future__ import annotations

from pathlib import Path

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.facts import Facts
from routescope.analysis.engine.state import Decision
from routescope.analysis.phases.trace import resolve_entry, trace_call
from tests.engine.test_engine_synthetic import SINKS, make_tree

SOURCE = """
def scan(stash, key):
    for _source, declared in reversed(stash):
        if key in declared:
            return declared[key]
    return None

def main():
    stash = [("a", {"x": 1}), ("b", {"y": 2}), ("c", {"z": 3})]
    return scan(stash, "x"), scan(stash, "q"), scan(stash, "y")
"""


def _decisions(tmp_path: Path, record_inputs: bool) -> list[Decision]:
    engine = Engine(make_tree(tmp_path, {"m.py": SOURCE}), Facts(sinks=SINKS))
    engine.record_inputs = record_inputs
    paths = trace_call(engine, resolve_entry(engine, "fw.m:main"), [], {})
    assert len(paths) == 1
    return [d for d in paths[0].decisions if d.function == "fw.m:scan"]


def test_interned_decisions_are_the_decisions_made_afresh(tmp_path: Path) -> None:
    interned = _decisions(tmp_path / "a", record_inputs=False)
    afresh = _decisions(tmp_path / "b", record_inputs=True)
    # (afresh ones carry what the test read; with that set aside they are the same records)
    assert [(d.file, d.line, d.function, d.text, d.value, d.reason, d.kind) for d in interned] == [
        (d.file, d.line, d.function, d.text, d.value, d.reason, d.kind) for d in afresh
    ]
    assert all(not d.inputs and not d.parts for d in interned)
    assert [d.value for d in interned] == [False, False, True, False, False, False, False, True]
    false = [d for d in interned if d.value is False]
    assert all(d is false[0] for d in false)  # one record for every pass that went on
    true = [d for d in interned if d.value is True]
    assert true[0] is true[1] and true[0] is not false[0]
    assert true[0] == Decision(true[0].file, true[0].line, "fw.m:scan", "key in declared", True)
