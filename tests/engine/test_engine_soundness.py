"""Soundness: where Python's result depends on an unknown, the engine must not report one path.

Each test isolates one construct a review of the engine found it got wrong (ENGINE.md, "What a
review of the current engine found"); each failed on the engine before the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.facts import Facts
from routescope.analysis.engine.fixpoint import covers
from routescope.analysis.engine.join import join_values
from routescope.analysis.engine.sinks import CompiledFunction, CompiledModule
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import AtLeast, Const, Tensor, Unknown, UnknownKind, Value
from routescope.analysis.library.paths import UnknownPath
from routescope.analysis.phases.trace import TracedPath, resolve_entry, trace_call
from tests.engine.test_engine_synthetic import make_tree


def run(tmp_path: Path, files: dict[str, str], *args: Value, facts: Facts | None = None,
        entry: str = "fw.main:main") -> list[TracedPath]:  # fmt: skip
    engine = Engine(make_tree(tmp_path, files), facts or Facts())
    return trace_call(engine, resolve_entry(engine, entry), list(args), {})


def returned(paths: list[TracedPath]) -> list[Any]:
    """Each path's returned constant (None stands for an Unknown value)."""
    out = []
    for p in paths:
        assert p.outcome == "return", (p.outcome, p.stopped)
        out.append(p.value.value if isinstance(p.value, Const) else None)
    return out


def test_runtime_classes_resolve_methods_in_c3_order(tmp_path: Path) -> None:
    # D(B, C) with B(A): C3 gives D, B, A, C; a breadth-first search finds C first
    paths = run(
        tmp_path,
        {
            "main.py": """
        class A:
            tag = "A"
            def who(self):
                return "A.who"
        class B(A):
            pass
        class C:
            tag = "C"
            def who(self):
                return "C.who"
        class D(B, C):
            pass
        def main():
            return (D.tag, D().who())
    """
        },
    )
    assert returned(paths) == [("A", "A.who")]


def test_loop_of_unknown_trip_count_forgets_object_fields(tmp_path: Path) -> None:
    paths = run(
        tmp_path,
        {
            "main.py": """
        class Box:
            def __init__(self):
                self.found = False
        def main(items):
            box = Box()
            for _ in items:
                box.found = True
            return box.found
    """
        },
        Unknown("items"),
    )
    assert None in returned(paths) or sorted(returned(paths)) == [False, True]


def test_loop_of_unknown_trip_count_forgets_dict_items(tmp_path: Path) -> None:
    paths = run(
        tmp_path,
        {
            "main.py": """
        def main(items):
            seen = {}
            for _ in items:
                seen["k"] = 1
            return "k" in seen
    """
        },
        Unknown("items"),
    )
    assert set(returned(paths)) != {True}


def test_loop_keeps_every_path_that_falls_through(tmp_path: Path) -> None:
    # the body's two branches write different values; keeping the first path loses the other
    paths = run(
        tmp_path,
        {
            "main.py": """
        class Box:
            def __init__(self):
                self.v = 0
        def main(items):
            box = Box()
            for x in items:
                if x:
                    box.v = 1
                else:
                    box.v = 2
            return box.v
    """
        },
        Unknown("items"),
    )
    got = returned(paths)
    assert None in got or {0, 1, 2} <= set(got)


def test_while_loop_of_unknown_condition_keeps_zero_iterations(tmp_path: Path) -> None:
    paths = run(
        tmp_path,
        {
            "main.py": """
        class Box:
            def __init__(self):
                self.n = "start"
        def main(go):
            box = Box()
            while go:
                box.n = "ran"
                go = False
            return box.n
    """
        },
        Unknown("go"),
    )
    got = returned(paths)
    assert None in got or {"start", "ran"} <= set(got)


def test_module_level_fork_joins_object_writes(tmp_path: Path) -> None:
    paths = run(
        tmp_path,
        {
            "main.py": """
        import os
        class Cfg:
            pass
        cfg = Cfg()
        cfg.mode = "a"
        if os.environ.get("FW_MODE"):
            cfg.mode = "b"
        def main():
            return cfg.mode
    """
        },
    )
    got = returned(paths)
    assert None in got or {"a", "b"} <= set(got)


def test_functools_cache_is_scoped_to_the_path(tmp_path: Path) -> None:
    paths = run(
        tmp_path,
        {
            "main.py": """
        import functools
        class S:
            pass
        s = S()
        s.mode = "x"
        @functools.cache
        def mode():
            return s.mode
        def main(flag):
            if flag:
                s.mode = "y"
                return mode()
            return mode()
    """
        },
        Unknown("flag"),
    )
    assert sorted(returned(paths)) == ["x", "y"]


def test_functools_cache_returns_the_same_object_on_the_path(tmp_path: Path) -> None:
    paths = run(
        tmp_path,
        {
            "main.py": """
        import functools
        @functools.lru_cache(maxsize=None)
        def registry():
            return {}
        def main():
            registry()["a"] = 1
            return registry().get("a")
    """
        },
    )
    assert returned(paths) == [1]


def test_unknown_and_false_is_false(tmp_path: Path) -> None:
    paths = run(
        tmp_path,
        {
            "main.py": """
        def main(a):
            if a and False:
                return "impossible"
            if a or True:
                return "always"
            return "impossible"
    """
        },
        Unknown("a"),
    )
    assert returned(paths) == ["always"]
    assert all(d.value is not None for d in paths[0].decisions)


def test_and_keeps_the_value_of_the_operand_that_decided(tmp_path: Path) -> None:
    paths = run(
        tmp_path,
        {
            "main.py": """
        def main(a):
            x = a and 0
            return x == 0 or x is None or not x
    """
        },
        Unknown("a"),
    )
    assert set(returned(paths)) <= {True, None}


def test_dict_keys_compare_by_value(tmp_path: Path) -> None:
    paths = run(
        tmp_path,
        {
            "main.py": """
        def main():
            d = {1: "a"}
            d[True] = "b"
            d[1.0] = "c"
            return (len(d), d[1], list(d.keys()) == [1], True in d, "1" in d)
    """
        },
    )
    assert returned(paths) == [(1, "c", True, True, False)]


def test_set_members_compare_by_value(tmp_path: Path) -> None:
    paths = run(
        tmp_path,
        {
            "main.py": """
        def main():
            s = {1, True, 1.0, 2}
            return (len(s), 1.0 in s)
    """
        },
    )
    assert returned(paths) == [(2, True)]


def test_unknowns_carry_a_kind_and_decisions_never_read_their_wording(tmp_path: Path) -> None:
    # a value whose reason reads like a missing attribute is still a value that is there
    facts = Facts(calls={"ext.probe": Unknown("the probe has no attribute to report")})
    paths = run(
        tmp_path,
        {
            "main.py": """
        import ext
        class Holder:
            def __init__(self):
                self.v = ext.probe()
        def main():
            return getattr(Holder(), "v", "fallback")
    """
        },
        facts=facts,
    )
    (path,) = paths
    assert isinstance(path.value, Unknown)
    assert isinstance(path.value.kind, UnknownKind)


def test_a_missing_attribute_is_known_absent_by_kind(tmp_path: Path) -> None:
    paths = run(
        tmp_path,
        {
            "main.py": """
        class Holder:
            pass
        def main():
            return (getattr(Holder(), "v", "fallback"), hasattr(Holder(), "v"))
    """
        },
    )
    assert returned(paths) == [("fallback", False)]


def test_lists_of_different_lengths_join_as_items_perhaps_there(tmp_path: Path) -> None:
    # A declaration stash some paths appended to and others did not, joined (the set-up phases
    # join every fork): what no path declared is read through it without a fork, what one
    # path declared is perhaps there, and a value no path had is never invented.
    engine = Engine(
        make_tree(
            tmp_path,
            {
                "main.py": """
        def declare(stash, src, **kw):
            stash.append((src, dict(kw)))
        def read(stash, name, default):
            for _src, declared in reversed(stash or ()):
                if name in declared:
                    return declared[name]
            return default
        def build(a, b):
            stash = []
            declare(stash, "first", x=1)
            if a:
                declare(stash, "second", y=2)
            if b:
                declare(stash, "third", y=3, z=4)
            declare(stash, "last", w=5)
            return stash
    """
            },
        ),
        Facts(),
    )
    unknown = [Unknown("a", kind=UnknownKind.INPUT), Unknown("b", kind=UnknownKind.INPUT)]
    ways = trace_call(engine, resolve_entry(engine, "fw.main:build"), unknown, {})
    assert len(ways) == 4 and len({id(w.value) for w in ways}) == 1  # one list, four contents
    engine.commit_all([w.end for w in ways if w.end is not None])  # as a set-up phase ends
    read = resolve_entry(engine, "fw.main:read")

    def read_back(name: str) -> list[Any]:
        args = [ways[0].value, Const(name), Const(0)]
        return returned(trace_call(engine, read, args, {}))  # type: ignore[list-item]

    assert read_back("tp") == [0]  # no fork for what no path declared
    assert read_back("x") == [1] and read_back("w") == [5]
    assert sorted(read_back("y")) == [0, 2, 3]  # one of the ways, nothing else
    assert sorted(read_back("z")) == [0, 4]


def test_forks_inside_one_call_expression_are_merged_not_multiplied(tmp_path: Path) -> None:
    # each argument forks two ways that leave the path alike: 2**16 ways unmerged; merged as the
    # arguments are evaluated, the call sees a few paths and each argument keeps what it can be
    paths = run(
        tmp_path,
        {
            "main.py": """
        def pick(flag, name):
            if flag:
                return name
            return name
        def gather(*args):
            return len(args), args[0]
        def main(flag):
            return gather(*[pick(flag, "a")] * 1, pick(flag, "b"), pick(flag, "c"), pick(flag, "d"),
                          pick(flag, "e"), pick(flag, "f"), pick(flag, "g"), pick(flag, "h"),
                          pick(flag, "i"), pick(flag, "j"), pick(flag, "k"), pick(flag, "l"),
                          pick(flag, "m"), pick(flag, "n"), pick(flag, "o"), pick(flag, "p"))
    """
        },
        Unknown("flag", kind=UnknownKind.INPUT),
    )
    assert 1 <= len(paths) <= 32
    assert set(returned(paths)) == {(16, "a")}


def test_the_facts_a_trace_reads_are_its_assumptions(tmp_path: Path) -> None:
    facts = Facts(calls={"ext.capability": Const((12, 0), ("the GPU profile",))},
                  packages={"optional_pkg": False}, source="rules/frameworks/fw.toml")  # fmt: skip
    paths = run(
        tmp_path,
        {
            "main.py": """
        import ext
        try:
            import optional_pkg
            HAVE = True
        except ImportError:
            HAVE = False
        def main():
            return ext.capability(), HAVE
    """
        },
        facts=facts,
    )
    assert returned(paths) == [((12, 0), False)]
    used = {(a.kind, a.name): a for a in facts.used.values()}
    assert used[("platform", "ext.capability()")].value == "(12, 0)"
    assert (
        used[("platform", "ext.capability()")].source == "rules/frameworks/fw.toml platform.calls"
    )
    assert used[("package", "optional_pkg")].value == "not installed"


def test_an_assignment_whose_value_raises_binds_nothing(tmp_path: Path) -> None:
    # found by the differential campaign: `r = f(items[0])` with items empty raises IndexError
    # before anything is bound, and a later part of a call is not evaluated (no side effect)
    paths = run(
        tmp_path,
        {
            "main.py": """
        LOG = []
        def note(x):
            LOG.append(x)
            return x
        def main():
            r = 0
            empty = []
            try:
                r = max(empty[0], note(1))
            except ValueError:
                r = 1
            except Exception:
                pass
            return r, len(LOG)
    """
        },
    )
    assert returned(paths) == [(0, 0)]


def test_a_way_that_raises_never_joins_one_that_goes_on(tmp_path: Path) -> None:
    # found on sglang 0.5.16 (ModelConfig._derive_model_shapes, `hidden // num_heads` with the
    # heads unknown): joined part-way through a call, the way that raises took the way that goes
    # on with it, and the whole start-up read "every way through raises"
    paths = run(
        tmp_path,
        {
            "main.py": """
        def pick(flag, name):
            if flag:
                return name
            return name
        def gather(*args):
            return len(args)
        def main(flag, heads):
            try:
                return gather(pick(flag, "a"), pick(flag, "b"), pick(flag, "c"), pick(flag, "d"),
                              64 // heads, pick(flag, "e"), pick(flag, "f"), pick(flag, "g"),
                              pick(flag, "h"), pick(flag, "i"), pick(flag, "j"))
            except ZeroDivisionError:
                return "raised"
    """
        },
        Unknown("flag", kind=UnknownKind.INPUT),
        Unknown("heads", kind=UnknownKind.INPUT),
    )
    assert set(returned(paths)) == {11, "raised"}


def test_an_item_of_a_list_a_loop_may_have_emptied_may_raise(tmp_path: Path) -> None:
    # found by the differential campaign (seed 7): after `for x in c: L.pop()` the list may be
    # empty, so `L[0]` raises IndexError on some inputs (c of one item) and not on others
    paths = run(
        tmp_path,
        {
            "main.py": """
        def main(c):
            items = [1]
            for x in c:
                items.pop()
            try:
                return items[0]
            except IndexError:
                return "raised"
    """
        },
        Unknown("c", kind=UnknownKind.INPUT),
    )
    got = returned([p for p in paths if p.outcome == "return"])
    assert "raised" in got and len(got) == 2, got
    # and a second pass pops from the list the first emptied (c of two items): IndexError in
    # the loop, where nothing catches it
    assert "raise" in [p.outcome for p in paths]


def test_a_pop_or_remove_the_contents_do_not_decide_may_raise(tmp_path: Path) -> None:
    # found by the differential campaign (2026-12-05, regressions/known then): after a loop of
    # unknown trip count that pops, the list may be empty (list.pop: IndexError); an item may
    # be missing from a list or dict a loop filled (list.remove: ValueError, dict.pop:
    # KeyError). Python raises on some inputs, not others: each is a way of its own.
    body = {
        "pop": "items = [1]\n    for x in c:\n        items.pop()\n    return items.pop()",
        "remove": "items = []\n    for x in c:\n        items.append(x)\n"
        "    items.remove(9)\n    return 1",
        "dict_pop": "d = {}\n    for x in c:\n        d[x] = 1\n    return d.pop(7)",
    }
    for name, text in body.items():
        paths = run(
            tmp_path / name,
            {"main.py": "def main(c):\n    " + text + "\n"},
            Unknown("c", kind=UnknownKind.INPUT),
        )
        outcomes = sorted({p.outcome for p in paths})
        assert outcomes == ["raise", "return"], (name, outcomes)
    sure = run(  # an item certainly there: no KeyError
        tmp_path / "sure",
        {
            "main.py": "def main(c):\n    d = {7: 1}\n    for x in c:\n        d[x] = 2\n"
            "    return d.pop(7)\n"
        },
        Unknown("c", kind=UnknownKind.INPUT),
    )
    assert {p.outcome for p in sure} == {"return"}


def test_a_list_known_up_to_an_index_gives_its_item(tmp_path: Path) -> None:
    paths = run(
        tmp_path,
        {
            "main.py": """
        def main(flag):
            items = [1, 2]
            if flag:
                items.append(3)
            return items[1]
    """
        },
        Unknown("flag", kind=UnknownKind.INPUT),
    )
    assert set(returned(paths)) == {2}


def test_an_attribute_a_constant_lacks_raises(tmp_path: Path) -> None:
    # found on sglang 0.5.4 (deepseek_v2.py:2902, `self.quant_config.get_name()` with no quant
    # config): `None.get_name` raises AttributeError; it is no unknown a comparison could fork on
    paths = run(
        tmp_path,
        {
            "main.py": """
        def main(config):
            if getattr(config, "name", "dflt") != "dflt" or hasattr(config, "name"):
                return "seen"
            try:
                return config.get_name() == "w4afp8"
            except AttributeError:
                return "raised"
    """
        },
        Const(None),
    )
    assert returned(paths) == ["raised"]


def test_a_comprehension_filter_the_facts_do_not_decide_keeps_the_item_perhaps(
    tmp_path: Path,
) -> None:
    # found on sglang 0.5.19 (arg_groups/overrides.py:259-263, a dict comprehension filtered on
    # `getattr(server_args, name) is not previous`): one undecided filter made the whole dict
    # unknown, and every later read of the declaration stash forked
    paths = run(
        tmp_path,
        {
            "main.py": """
        def main(flag):
            d = {k: v for k, v in (("a", 1), ("b", 2)) if k == "a" or flag}
            xs = [v for v in (1, 2, 3) if v != 2 or flag]
            return "a" in d, "c" in d, "b" in d, xs[0], xs[1]
    """
        },
        Unknown("flag", kind=UnknownKind.INPUT),
    )
    (path,) = paths
    a, c, b, first, second = path.value.items  # type: ignore[attr-defined]
    assert (a, c, first) == (Const(True), Const(False), Const(1)) or (
        (a.value, c.value, first.value) == (True, False, 1)
    )
    assert isinstance(b, Unknown) and isinstance(second, Unknown)  # "b" and 2 are perhaps there


def test_a_key_a_comprehension_perhaps_kept_holds_its_item(tmp_path: Path) -> None:
    """`{k: v for k, v in items if flag(k)}` with the filter unknown: each key is perhaps there,
    and where it is, it holds its item (sglang 0.5.19 reads its server arguments through such a
    declaration: `tp_size` read back Unknown, the model path too, and the whole start-up ran on
    an unknown checkpoint until it outgrew its budget)."""
    paths = run(
        tmp_path,
        {
            "main.py": """
        import os
        def main():
            declared = {k: v for k, v in (("tp_size", 8), ("dp", 2)) if os.environ.get(k)}
            if "tp_size" in declared:
                return declared["tp_size"]
            return "absent"
    """
        },
    )
    # the membership test does not tell the subscript the key is there (it may raise KeyError,
    # as far as the engine knows), but where it goes on it reads the item
    back = {p.value.value for p in paths if p.outcome == "return" and isinstance(p.value, Const)}
    assert back == {8, "absent"}
    assert all(p.outcome in ("return", "raise") for p in paths)


def test_an_update_with_a_key_perhaps_there_perhaps_overwrites(tmp_path: Path) -> None:
    """`a.update(b)` where b perhaps holds a key of a's with another value: a's item is one of
    the two, not a's alone (it read 1)."""
    paths = run(
        tmp_path,
        {
            "main.py": """
        import os
        def main():
            a = {"k": 1}
            a.update({k: v for k, v in (("k", 2),) if os.environ.get("X")})
            return a["k"]
    """
        },
    )
    assert returned(paths) == [None]  # 1 or 2: not one value


def test_get_of_a_key_perhaps_there_may_give_its_default(tmp_path: Path) -> None:
    """`d.get(k, 0)` for a key a comprehension perhaps kept is its item or the default, not
    the item alone; a subscript of it outside a membership test may raise KeyError."""
    paths = run(
        tmp_path,
        {
            "main.py": """
        import os
        def main():
            d = {k: v for k, v in (("a", 1),) if os.environ.get("X")}
            return d.get("a", 0)
    """
        },
    )
    assert (returned(paths) != [1] and None in returned(paths)) or sorted(returned(paths)) == [0, 1]
    raised = run(
        tmp_path / "b",
        {
            "main.py": """
        import os
        def main():
            d = {k: v for k, v in (("a", 1),) if os.environ.get("X")}
            return d["a"]
    """
        },
    )
    assert sorted(p.outcome for p in raised) == ["raise", "return"]
    assert [p.value.value for p in raised if p.outcome == "return"] == [1]  # type: ignore[union-attr]


def test_an_object_made_on_each_path_is_one_object_after_a_join(tmp_path: Path) -> None:
    """SGLang 0.5.19's config bags: a child bag made on each path is put in its parent's
    registry and written through a variable. Joining the paths made one copy per reference, so
    writes through the variable never reached the registry's copy (the `exec.moe` bag kept one
    leaf of 115, and every read of `moe_runner_backend` raised AttributeError)."""
    from routescope.analysis.engine.budget import Budget

    src = """
    import os

    class Bag:
        def __init__(self):
            self.fields = {}

    def main():
        tops = {}
        for name in ["a", "b", "c", "d", "e", "f"]:
            x = 1 if os.environ.get("FW_" + name) else 2
            bag = tops.get("moe")
            if bag is None:
                bag = Bag()
                tops["moe"] = bag
            y = 1 if os.environ.get("FW_AGAIN_" + name) else 2
            bag.fields[name] = x + y
        return ("a" in tops["moe"].fields, len(tops["moe"].fields), tops["moe"] is bag)
    """
    budget = Budget(10**6)
    budget.merge_at = 2  # join as set-up phases do
    engine = Engine(make_tree(tmp_path, {"main.py": src}), Facts(), budget)
    paths = trace_call(engine, resolve_entry(engine, "fw.main:main"), [], {})
    assert set(returned(paths)) == {(True, 6, True)}


def test_a_builtin_raise_on_decided_values_names_python_s_exception(tmp_path: Path) -> None:
    """What Python raises from a builtin operation on known values is certain (a blocker may
    rest on it), so its class must be Python's: an unhashable key is a TypeError before any
    lookup, not a KeyError; a missing key a KeyError naming the key."""
    from routescope.analysis.engine.values import PythonRaise

    paths = run(
        tmp_path,
        {
            "main.py": """
        def main(which):
            table = {"a": 1}
            if which:
                return table[["a"]]
            return table["b"]
    """
        },
        Unknown("which", kind=UnknownKind.INPUT),
    )
    raised = sorted((p.value.name, p.value.message) for p in paths
                    if isinstance(p.value, PythonRaise))  # fmt: skip
    assert [name for name, _ in raised] == ["KeyError", "TypeError"]
    assert "'b'" in raised[0][1]


def test_nonlocal_write_after_the_enclosing_call_returned_is_not_a_guess(tmp_path: Path) -> None:
    """A closure called after its enclosing function returned writes a cell the engine does not
    keep past that frame: the call's own value is exact, a later call's is unknown, never the
    value as it was at the definition (before `nonlocal` was read, every write was lost and
    each call returned 1)."""
    files = {
        "main.py": """
        def make_counter():
            count = 0
            def bump():
                nonlocal count
                count += 1
                return count
            return bump
        def first():
            return make_counter()()
        def second():
            bump = make_counter()
            bump()
            return bump()
    """
    }
    assert returned(run(tmp_path, files, entry="fw.main:first")) == [1]
    assert returned(run(tmp_path / "2", files, entry="fw.main:second")) in ([None], [2])


def test_f_strings_of_known_values_read_as_python_makes_them(tmp_path: Path) -> None:
    """An f-string whose parts are all known is the string Python makes, conversions and format
    specs included (a raise's message names the sizes it refuses: `= 96 is not divisible by
    block_n = 128`); a part of another type, or a spec Python refuses, leaves it unknown."""
    body = """
def main(n, name, ratio, flag):
    width = 8
    return (
        f"= {n} is not divisible by {width * 16}.",
        f"{name!r} / {name!s} / {name!a} / {n:>5} / {ratio:.2f} / {n:{width}d} / {flag}",
        f"{None} {n!r:>4} {'x'!r}",
    )
"""
    facts = (Const(96), Const("flashinfer_ü"), Const(0.3333), Const(True))
    namespace: dict[str, Any] = {}
    exec(body, namespace)  # the test's own snippet, run by Python to compare
    want = namespace["main"](*(f.value for f in facts))
    assert returned(run(tmp_path, {"main.py": body}, *facts)) == [want]
    odd = """
def main(n, size):
    return f"{n:.2f}", f"{size}", f"{n:q}"
"""
    got = run(tmp_path / "odd", {"main.py": odd}, Const("text"), Unknown("size"))
    assert returned(got) == [None]  # a tuple holding unknowns: not one known constant
    (value,) = [p.value for p in got]
    assert all(isinstance(v, Unknown) for v in value.items), value  # type: ignore[attr-defined]


def test_only_a_number_divides_by_an_unknown(tmp_path: Path) -> None:
    # `"%d experts" % n` formats: it raises no ZeroDivisionError whatever the unknown on the
    # right (it once forked a way that raised); `n / sub` of unknown numbers may
    paths = run(
        tmp_path,
        {
            "main.py": """
        def main(n, d, sub):
            msg = "%d experts on %s" % (n, d)
            one = "%d experts" % n
            if d == "divide":
                return n / sub
            return "formatted"
    """
        },
        Unknown("n"),
        Unknown("d"),
        Unknown("sub"),
    )
    assert sorted(p.outcome for p in paths) == ["raise", "return", "return"]
    returned_values = [p.value.value for p in paths if isinstance(p.value, Const)]
    assert returned_values == ["formatted"]


def test_a_path_whose_text_is_not_known_is_joined_not_divided(tmp_path: Path) -> None:
    # SGLang 0.5.14 jit_kernel/utils.py:101 `(path.parent / include).resolve()`, `path` from
    # `pathlib.Path(...).resolve()` of a directory not known: a path joined with a name raises
    # no ZeroDivisionError (it once forked a way that raised), a path is true, and `/` of
    # unknown numbers still may raise
    paths = run(
        tmp_path,
        {
            "main.py": """
        import pathlib
        def main(src, include, n, sub):
            root = pathlib.Path(src).resolve()
            header = (root.parent / include).resolve()
            here = pathlib.Path("/opt/pkg") / include
            if not root or not here:
                return "never"
            if header.is_file():
                found = header
            else:
                found = root.with_suffix(".h")
            joined = found.parent / "csrc" / include
            if n == "divide":
                return n / sub
            return "joined"
    """
        },
        *(Unknown(name) for name in ("src", "include", "n", "sub")),
    )
    raised = {(p.result, p.raised_at[:2]) for p in paths if p.raised_at}
    assert raised == {("ZeroDivisionError", ("fw/main.py", 15))}  # n / sub, and only there
    assert all(p.outcome in ("raise", "return") for p in paths)
    ends = {
        p.value.value if isinstance(p.value, Const) else None for p in paths if p.raised_at is None
    }
    assert ends == {"joined", None}  # (None: n / sub's quotient)


def test_ways_that_hold_compiled_modules_or_unknown_paths_join_into_one() -> None:
    # a join (of the many ways through a call) keeps what every way holds: a compiled module
    # (its functions are kernels), one function of such modules by name, a path
    states = [PathState(envs=[{}]), PathState(envs=[{}])]
    prebuilt, built = CompiledModule("prebuilt"), CompiledModule("built")
    module = join_values([prebuilt, built], states, "why")
    assert isinstance(module, CompiledModule) and module.name == "built or prebuilt"
    fn = join_values([CompiledFunction(prebuilt, "topk"), CompiledFunction(built, "topk")],
                     states, "why")  # fmt: skip
    assert isinstance(fn, CompiledFunction) and fn.name == "topk"
    assert isinstance(fn.module, CompiledModule)
    other = join_values([CompiledFunction(prebuilt, "topk"), CompiledFunction(built, "sort")],
                        states, "why")  # fmt: skip
    assert type(other) is Unknown
    path = join_values([UnknownPath("a"), UnknownPath("b")], states, "differs")
    assert isinstance(path, UnknownPath) and path.truthy is True
    assert type(join_values([UnknownPath("a"), Unknown("b")], states, "differs")) is Unknown


def test_a_module_built_or_loaded_prebuilt_is_one_compiled_module(tmp_path: Path) -> None:
    # SGLang 0.5.14 jit_kernel/utils.py:285-316: a prebuilt .so is loaded (tvm_ffi.load_module)
    # where one is on disk, else the sources are built (load_inline): either way a module whose
    # functions are kernels, once the two ways are joined (they forked into a way whose call
    # was "not recognised as a kernel")
    paths = run(
        tmp_path,
        {
            "main.py": """
        import pathlib
        from tvm_ffi import load_module
        from tvm_ffi.cpp import load_inline
        def build(where):
            prebuilt = pathlib.Path(where) / "grouped_topk.so"
            if prebuilt.is_file():
                return load_module(str(prebuilt))
            return load_inline("grouped_topk", cuda_sources=["topk.cuh"])
        def main(where, scores):
            module = build(where)
            module.grouped_topk(scores)
            return "routed"
    """
        },
        Unknown("where"),
        Tensor(role="scores"),
    )
    assert set(returned(paths)) == {"routed"}
    assert [[k.rule for k in p.kernels] for p in paths] == [["jit-module"]] * len(paths)


def test_every_undecided_condition_says_why(tmp_path: Path) -> None:
    # SGLang 0.5.14 jit_kernel/utils.py:81 `while stack:` (a list the loop before it filled)
    # and :187 `if version:` (a package's attribute) were listed under "would decide" with no
    # reason at all
    paths = run(
        tmp_path,
        {
            "main.py": """
        import tvm_ffi
        def main(items, n):
            stack = []
            for item in items:
                stack.append(item)
            if stack:
                pass
            version = getattr(tvm_ffi, "__version__", None)
            if version:
                return "versioned"
            return "unversioned"
    """
        },
        Unknown("items"),
        Unknown("n"),
    )
    reasons = {d.text: d.reason for p in paths for d in p.decisions if d.value is None}
    assert set(reasons) == {"stack", "version"}
    assert all(reasons.values()), reasons
    assert "tvm_ffi.__version__" in reasons["version"]


WORKLIST = """
        import pathlib
        def main(root, names, sub):
            stack = [pathlib.Path(r).resolve() for r in [root, root]]
            seen = set()
            while stack:
                path = stack.pop()
                if path in seen or not path.is_file():
                    continue
                seen.add(path)
                for name in names:
                    found = (path.parent / name).resolve()
                    if found.is_file():
                        stack.append({appended})
            return "hashed"
    """


def test_a_worklist_of_paths_pops_a_path_and_pops_only_what_it_holds(tmp_path: Path) -> None:
    # SGLang 0.5.13-0.5.15 jit_kernel/utils.py:73-109, the JIT sources' hash: `while stack:` then
    # `stack.pop()` does not raise IndexError (the truth test said the list holds an item), and
    # what it pops is a path even after the loop forgot how many it holds, so `path.parent /
    # name` joins; it forked two ways that raised (IndexError, ZeroDivisionError)
    files = {"main.py": WORKLIST.format(appended="found")}
    paths = run(tmp_path, files, Unknown("root"), Unknown("names"), Unknown("sub"))
    assert [(p.outcome, p.raised_at) for p in paths] == [("return", None)] * len(paths)
    assert set(returned(paths)) == {"hashed"}


def test_a_worklist_that_took_a_number_may_divide_by_zero(tmp_path: Path) -> None:
    # the same loop appending something that may be a number: what it pops is no longer known
    # to be a path, and `path.parent / name` may raise as a division does
    files = {"main.py": WORKLIST.format(appended="sub")}
    paths = run(tmp_path, files, Unknown("root"), Unknown("names"), Unknown("sub"))
    raised = {(p.result, p.raised_at[1]) for p in paths if p.raised_at}
    assert ("ZeroDivisionError", 12) in raised
    assert "hashed" in returned([p for p in paths if p.outcome == "return"])


def test_a_list_popped_without_a_test_may_still_be_empty(tmp_path: Path) -> None:
    # no truth test went true: a pop from a list a loop may have emptied may raise IndexError
    paths = run(
        tmp_path,
        {
            "main.py": """
        def main(items):
            stack = ["a"]
            for item in items:
                stack.pop()
            return stack.pop()
    """
        },
        Unknown("items"),
    )
    assert {p.result for p in paths if p.outcome == "raise"} == {"IndexError"}
    assert "a" in returned([p for p in paths if p.outcome == "return"])


def test_a_path_a_loop_may_replace_is_no_longer_known_to_be_one(tmp_path: Path) -> None:
    # a loop's fixpoint took any unknown as covering any other: a path before the loop, which
    # a pass may make any value, stayed a path after it (a division that may raise was missed)
    paths = run(
        tmp_path,
        {
            "main.py": """
        import pathlib
        def main(src, items, sub, name):
            where = pathlib.Path(src)
            for item in items:
                where = sub
            return where / name
    """
        },
        Unknown("src"),
        Unknown("items"),
        Unknown("sub"),
        Unknown("name"),
    )
    assert {(p.result, p.raised_at[1]) for p in paths if p.raised_at} == {("ZeroDivisionError", 7)}


def test_what_a_loop_may_assign_is_not_covered_by_what_was_known_before_it(tmp_path: Path) -> None:
    # a loop's fixpoint took any unknown as covering any other: `s`, an f-string before the loop
    # (true), which a pass may make any value (perhaps false), was still true after it, and
    # only one way was taken; CPython takes both ("false" when `y` is "" and `items` is not
    # empty)
    paths = run(
        tmp_path,
        {
            "main.py": """
        def main(items, y):
            s = f"a{y}"
            for item in items:
                s = y
            if s:
                return "true"
            return "false"
    """
        },
        *(Unknown(name) for name in ("items", "y")),
    )
    assert set(returned(paths)) == {"true", "false"}


def test_an_unknown_covers_another_only_where_what_is_known_of_it_holds() -> None:
    # the fixpoint's rule, case by case: a plain unknown covers any; one known true, not None,
    # a path, or a count from a bound covers only unknowns of which that holds too
    plain, true = Unknown("any"), Unknown("an f-string", truthy=True)
    not_none = Unknown("joined, never None")
    not_none.not_none = True
    assert all(covers(plain, b) for b in (plain, true, not_none, AtLeast(1, "n"), UnknownPath("p")))
    assert not covers(true, plain) and covers(true, Unknown("another f-string", truthy=True))
    assert not covers(not_none, plain) and covers(not_none, true) and covers(not_none, not_none)
    assert not covers(UnknownPath("p"), plain) and covers(UnknownPath("p"), UnknownPath("q"))
    assert covers(AtLeast(1, "n"), AtLeast(2, "m")) and not covers(AtLeast(2, "n"), AtLeast(1, "m"))
    assert not covers(AtLeast(1, "n"), true)
