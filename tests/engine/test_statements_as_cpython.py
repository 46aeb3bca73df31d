"""Statements as CPython runs them: `del` (a dict's key, KeyError where it is missing, perhaps
where the contents do not tell; a list's item or slice; an attribute; names; an object's
__delitem__), a def statement whose default raises on some inputs, an augmented assignment whose
target's parts are evaluated once, before its value (`d[k] += f()` where f changes k). Each
program runs in CPython and in the engine (tests/engine/differential.py): with every input
known the engine's one path is CPython's, with inputs unknown its paths cover CPython's outcome
under every input."""

from __future__ import annotations

import pytest

from tests.engine import differential as D

HEAD = "# ---- fw/__init__.py\n\n\n# ---- fw/main.py\ndef main(a, b, c):\n"
TAIL = (
    "\n\n# inputs a: [0, 5], b: [0, 1], c: [0]\n"
    "# unknown-input check: unknown ['a', 'b'], fixed {'c': 0}\n"
)

PROGRAMS = {
    "attr": """
    class K:
        pass
    k = K()
    k.x = 1
    del k.x
    return hasattr(k, 'x')
""",
    "augassign_key_first": """
    K = [0]

    def bump():
        K[0] += 1
        return 10

    D = {0: 1}
    D[K[0]] += bump()
    return (D, K)
""",
    "augassign_attr_once": """
    class C:
        def __init__(self):
            self.v = 1

    made = []

    def obj():
        made.append(1)
        return c

    c = C()
    obj().v += 2
    return (c.v, len(made))
""",
    "delitem": """
    class M:
        def __init__(self):
            self.d = {'a': 1}
        def __delitem__(self, k):
            del self.d[k]
    m = M()
    del m['a']
    return m.d
""",
    "known_key": """
    D = {'a': 1, 'b': 2}
    del D['a']
    return ('a' in D, len(D), D)
""",
    "list_index": """
    L = [1, 2, 3]
    del L[0]
    del L[-1]
    return L
""",
    "list_oob": """
    L = [1]
    del L[a]
    return L
""",
    "list_slice_step_zero": """
    L = [1, 2, 3]
    try:
        del L[::0]
    except ValueError:
        return 'raised'
    return L
""",
    "list_slice": """
    L = [1, 2, 3]
    del L[1:]
    return len(L) >= 0
""",
    "missing_key": """
    D = {'a': 1}
    try:
        del D['z']
    except KeyError:
        return 'raised'
    return D
""",
    "names": """
    x = 1
    y = 2
    del x, y
    z = 3
    return z
""",
    "perhaps_key": """
    D = {}
    if b:
        D['k'] = 1
    del D['k']
    return D
""",
    "tuple_items": """
    D = {'a': 1, 'b': 2, 'c': 3}
    del D['a'], D['b']
    return D
""",
    "unknown_key": """
    D = {'a': 1, 'b': 2}
    del D[a]
    return ('a' in D, 'b' in D)
""",
    "def_default_raises": """
    D = {'a': 0}

    def inner(z, k=D[a]):
        return k
    return inner(1)
""",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_engine_runs_the_statement_as_cpython_does(name: str) -> None:
    program = D.program_from_text(HEAD + PROGRAMS[name].strip("\n") + TAIL)
    failures = D.check_program(program, known_runs=2).failures(precision=True)
    assert not failures, "\n".join(str(d) for d in failures)
