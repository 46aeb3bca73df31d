"""Mutable lists in the trace engine: changes go to the path that made them."""

from __future__ import annotations

from pathlib import Path

from tests.engine.test_engine_synthetic import SCORES, make_tree, run


def _route(body: str) -> dict[str, str]:
    head = """
        import os
        import torch
        from fastk import topk_fast

    """
    return {"route.py": head + body}


def _kinds(tmp_path: Path, body: str, **kwargs: object) -> list[str | None]:
    paths = run(make_tree(tmp_path, _route(body)), "fw.route:route", SCORES(), **kwargs)
    return [p.sink.kind if p.sink else None for p in paths]


def test_append_then_iterate(tmp_path: Path) -> None:
    body = """
        def route(x):
            stash = []
            stash.append(("a", {"fast": False}))
            stash.append(("b", {"fast": True}))
            fast = None
            for _source, declared in stash:
                fast = declared["fast"]
            if fast and len(stash) == 2 and 3 not in [1, *[2, 4]]:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_list_on_an_object_and_chained_assignment(tmp_path: Path) -> None:
    body = """
        class Args:
            def __init__(self):
                self.mode = "auto"

        def declare(args, entry):
            stash = getattr(args, "stash", None)
            if stash is None:
                stash = args.stash = []
            stash.append(entry)

        def route(x):
            args = Args()
            declare(args, ("one", {"mode": "fast"}))
            for _s, d in getattr(args, "stash", None) or ():
                for k, v in d.items():
                    setattr(args, k, v)
            if args.mode == "fast":
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_pop_and_emptied_list_is_false(tmp_path: Path) -> None:
    body = """
        def route(x):
            items = [x, 1]
            last = items.pop()
            items.pop(0)
            if items or last != 1:
                return torch.topk(x, 2)
            items.extend([1, 2])
            items.insert(0, 3)
            items.remove(1)
            if list(items) == [3, 2] and items.index(2) == 1 and items.count(3) == 1:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_clear_and_starred_and_tuple(tmp_path: Path) -> None:
    body = """
        def pick(a, b):
            return a == 1 and b == 2

        def route(x):
            items = list()
            items.append(1)
            items.append(2)
            first, second = items
            if pick(*items) and tuple(items) == (1, 2) and second == 2 and items[-1] == 2:
                items.clear()
                if not items and isinstance(items, list) and not isinstance(items, tuple):
                    return topk_fast(x)
            return torch.topk(x, 2)
    """
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_change_on_one_path_is_not_seen_on_its_sibling(tmp_path: Path) -> None:
    body = """
        def route(x):
            stash = []
            if os.environ.get("FW_FAST"):
                stash.append(1)
            if stash:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    assert sorted(_kinds(tmp_path, body)) == ["cuda_kernel", "torch"]


def test_dict_item_write_is_read_back(tmp_path: Path) -> None:
    body = """
        def route(x):
            overrides = {}
            overrides["mode"] = "fast"
            if overrides and overrides.get("mode") == "fast" and "mode" in overrides:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_read_only_view_through_getattr(tmp_path: Path) -> None:
    body = """
        class View:
            def __init__(self, inner, overlay=None):
                object.__setattr__(self, "_inner", inner)
                object.__setattr__(self, "_overlay", overlay or {})

            def __getattr__(self, name):
                overlay = object.__getattribute__(self, "_overlay")
                if name in overlay:
                    return overlay[name]
                return getattr(object.__getattribute__(self, "_inner"), name)

        class Args:
            def __init__(self):
                self.mode = "auto"
                self.size = 4

        def route(x):
            view = View(Args(), {"mode": "fast"})
            if view.mode == "fast" and view.size == 4:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_joined_declarations_keep_what_every_path_declared(tmp_path: Path) -> None:
    """Paths that declared different values for one setting and the same value for another
    are joined item by item: the agreed setting stays known, the other becomes Unknown."""
    from routescope.analysis.engine.budget import Budget

    body = """
        def pass_(n):
            if os.environ.get("FW_PAGE"):
                return {"mode": "fast", "page": 64}
            return {"mode": "fast", "page": 1}

        def route(x):
            stash = []
            for n in range(3):
                stash.append(("pass", dict(pass_(n))))
            overlay = {}
            for _source, declared in stash:
                overlay.update(declared)
            if "mode" in overlay and overlay["mode"] == "fast" and len(stash) == 3:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    budget = Budget()
    budget.merge_at = 1  # join at every opportunity, as the set-up phases do
    assert _kinds(tmp_path, body, budget=budget) == ["cuda_kernel"]


def _joined(tmp_path: Path, body: str) -> list[str | None]:
    from routescope.analysis.engine.budget import Budget

    budget = Budget()
    budget.merge_at = 1  # join at every opportunity, as the set-up phases do
    return _kinds(tmp_path, body, budget=budget)


def test_a_key_only_some_paths_declared_leaves_other_keys_decided(tmp_path: Path) -> None:
    """A dict joined from paths whose keys differ: the key some paths lack is neither present
    nor absent, but a key no path wrote is absent, and `set(d) - allowed` is empty when every
    perhaps-key is allowed (no fork, so one path)."""
    body = """
        def declare():
            out = {"mode": "fast"}
            if os.environ.get("FW_PAGE"):
                out["page"] = 64
            return out

        def route(x):
            declared = dict(declare())
            unknown = set(declared) - {"mode", "page"}
            if unknown or "other" in declared or declared.get("other", 1) != 1:
                return torch.topk(x, 2)
            if not declared or declared["mode"] != "fast":
                return torch.topk(x, 2)
            return topk_fast(x)
    """
    assert _joined(tmp_path, body) == ["cuda_kernel"]


def test_a_key_perhaps_present_still_forks(tmp_path: Path) -> None:
    body = """
        def declare():
            out = {}
            if os.environ.get("FW_PAGE"):
                out["page"] = 64
            return out

        def route(x):
            declared = declare()
            if "page" in declared:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    assert sorted(_joined(tmp_path, body), key=str) == ["cuda_kernel", "torch"]


def test_a_cached_function_returns_the_dict_it_built_on_every_path(tmp_path: Path) -> None:
    """functools.cache evaluates once per engine: a dict it filled on the first path is read
    whole on later, unrelated paths (not as the empty dict it started as)."""
    body = """
        import functools

        @functools.cache
        def fallbacks():
            out = {}
            out["ratio"] = 0.8
            return out

        def route(x):
            if os.environ.get("FW_SPLIT"):
                first = fallbacks().get("ratio")
            else:
                first = 0.8
            if fallbacks().get("ratio") == 0.8 and first == 0.8:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    assert _kinds(tmp_path, body) == ["cuda_kernel", "cuda_kernel"]


def test_dict_fromkeys_keeps_the_keys_in_order_once(tmp_path: Path) -> None:
    """`tuple(dict.fromkeys(candidates))`, the order-keeping dedup a config's per-module lookup
    iterates (vLLM's ModelOpt mixed precision): known keys, so the loop over it is unrolled."""
    body = """
        def route(x):
            names = tuple(dict.fromkeys(["model.a", "lm_head", "model.a"]))
            marks = dict.fromkeys(names, 0)
            if names == ("model.a", "lm_head") and marks == {"model.a": 0, "lm_head": 0}:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_a_dict_answers_only_to_what_a_dict_has(tmp_path: Path) -> None:
    """`getattr(a_dict, "text_config", None)` is None (a config's sub-configs read as a dict
    from the file): a name a dict has no attribute for is absent, not a method of it."""
    body = """
        def route(x):
            d = {"rope_type": "yarn"}
            if (
                getattr(d, "text_config", None) is None
                and not hasattr(d, "rope_scaling")
                and hasattr(d, "items")
                and d.get("rope_type") == "yarn"
            ):
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    assert _kinds(tmp_path, body) == ["cuda_kernel"]
