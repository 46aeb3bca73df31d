"""`obj[key]` and `key in obj` call the framework class's own `__getitem__` / `__contains__`;
an instance of a class derived from dict holds a dict that what the class does not define
reads, as CPython's dict does (`in`, `.get`, truth, `super().__getitem__`). A registry of
config classes by name, whose `__getitem__` imports the one asked for, was unknown on every
lookup before."""

from __future__ import annotations

from pathlib import Path

from tests.engine.test_engine_lists import _kinds

LAZY = """
        class FastConfig:
            pass

        NAMES = {"Fast": FastConfig}

        class Lazy(dict):
            def __getitem__(self, key):
                if isinstance(value := super().__getitem__(key), type):
                    return value
                return NAMES[value]

        class PlainConfig:
            pass

        REG = Lazy(fast="Fast", plain=PlainConfig, count=int)
"""


def test_a_dict_subclass_reads_its_items_through_its_own_getitem(tmp_path: Path) -> None:
    body = (
        LAZY
        + """
        def route(x):
            if (
                "fast" in REG
                and "other" not in REG
                and REG["fast"] is FastConfig
                and REG["plain"] is PlainConfig
                and REG["count"] is int
                and isinstance(REG, dict)
                and REG.get("fast") == "Fast"
                and REG
                and not Lazy()
            ):
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    )
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_a_missing_key_raises_as_the_dict_does(tmp_path: Path) -> None:
    body = (
        LAZY
        + """
        def route(x):
            try:
                REG["other"]
            except KeyError:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    )
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_own_init_hands_the_items_to_the_dict(tmp_path: Path) -> None:
    body = """
        class Registry(dict):
            def __init__(self, **entries):
                super().__init__(**entries)
                self.frozen = True

        R = Registry(a=1, b=2)

        def route(x):
            if R["b"] == 2 and "a" in R and R.frozen and sorted(R.keys()) == ["a", "b"]:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_a_plain_class_own_contains_and_getitem(tmp_path: Path) -> None:
    body = """
        class Table:
            def __init__(self, rows):
                self.rows = rows

            def __contains__(self, key):
                return key in self.rows

            def __getitem__(self, key):
                return self.rows[key] * 2

        T = Table({"a": 3})

        def route(x):
            if "a" in T and "b" not in T and T["a"] == 6:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_a_transformers_config_class_called_with_known_values(tmp_path: Path) -> None:
    """`DeepseekV3Config(**text_config)` in a framework's own config class: the object
    transformers builds (the values handed in, the class's defaults for the rest), a config
    like the checkpoint's; a value routescope cannot read leaves it unknown."""
    body = """
        from transformers import DeepseekV3Config

        TEXT = {"n_routed_experts": 384, "n_group": 1}

        def route(x, unknown_width):
            made = DeepseekV3Config(**TEXT)
            vague = DeepseekV3Config(hidden_size=unknown_width)
            if (
                made.n_routed_experts == 384
                and made.n_group == 1
                and made.first_k_dense_replace == 3
                and getattr(made, "quantization_config", None) is None
                and vague.n_group == 1
            ):
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    # `vague` is unknown (its hidden size is): its n_group is too, so both ways remain
    assert _kinds(tmp_path, body) == ["cuda_kernel", "torch"]
    sure = body.replace("                and vague.n_group == 1\n", "")
    assert _kinds(tmp_path / "sure", sure) == ["cuda_kernel"]
