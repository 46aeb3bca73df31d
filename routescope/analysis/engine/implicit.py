"""A literal a function returns under a branch the deployment decided is the deployment's value
(an implicit flow): `if not cls._supports_current_device(): return False, why` returns False
because of the GPU, though the literal itself came from the source. A stop's guard that reads
such a value (`if supported:` before `raise NotImplementedError`) is then told from a gap of
routescope's (phases/stops.py)."""

from __future__ import annotations

from routescope.analysis.engine.containers import TupleVal
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import Const, Value
from routescope.origins import in_source

# how far back along the path the condition the return is under is looked for
NEAREST = 8


def branch_facts(st: PathState, file: str, function: str, line: int) -> tuple[str, ...]:
    """The deployment facts the nearest decided condition before `line` in this function read
    (what the literal returned at `line` was chosen by); none where it read none, or where the
    nearest one of this function is undecided or not found among the last few decisions."""
    for d in reversed(st.decisions[-NEAREST:]):
        if d.file != file or d.function != function or d.line >= line:
            continue
        if d.value is None:
            return ()
        facts = [o for i in d.inputs for o in i.origins if not in_source(o)]
        return tuple(dict.fromkeys(facts))
    return ()


def returned(st: PathState, v: Value, file: str, function: str, line: int) -> Value:
    """`v` as returned at `line`: a literal without origins of its own (or a tuple's such items)
    takes the facts of the condition it was returned under; any other value is as it is."""
    bare = isinstance(v, Const) and not v.origins
    if not bare and not isinstance(v, TupleVal):
        return v
    facts = branch_facts(st, file, function, line)
    if not facts:
        return v
    if isinstance(v, Const):
        return Const(v.value, facts)
    assert isinstance(v, TupleVal)
    bare_items = (Const(i.value, facts) if isinstance(i, Const) and not i.origins else i
                  for i in v.items)  # fmt: skip
    return TupleVal(bare_items, v.origins)
