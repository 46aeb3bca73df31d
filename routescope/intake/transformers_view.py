"""What `config.<attr>` returns once transformers has built the config class for this model_type.

Frameworks read the config through transformers (AutoConfig), so a key that the file omits takes
the class default, and some classes normalise values in __post_init__ (MiMo's null
routed_scaling_factor becomes 1.0). The class is built with torch kept out of sight (see
`_torch_hidden`): importing transformers then costs about 0.5 s instead of 2. The resulting
attribute view is cached on disk per transformers version and config content. No weights are read
and remote code is never used.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from routescope.fsutil import atomic_write_text, cache_root


@dataclass(frozen=True, slots=True)
class ClassView:
    """The attribute values of the transformers config object at the routing level."""

    class_name: str  # "DeepseekV3Config"
    transformers_version: str
    values: dict[str, Any]  # attribute -> value, attribute_map aliases included
    aliases: dict[str, str]  # attribute_map: alias -> real attribute
    # attributes that hold a config object of their own (DBRX's ffn_config: DbrxFFNConfig),
    # which to_dict() writes as a dict: the framework reads them as attributes
    sub_configs: tuple[str, ...] = ()
    # what the class itself holds and an attribute read falls back to (Dots1Config's
    # base_model_tp_plan, attribute_map): plain class attributes along its MRO, not the instance's
    class_values: dict[str, Any] = field(default_factory=dict)

    @property
    def readable(self) -> dict[str, Any]:
        """What `getattr(config, name)` answers: the instance's values over the class's."""
        return {**self.class_values, **self.values}


class SubConfig(dict):  # type: ignore[type-arg]
    """A sub-config's attributes (a config object, not a dict, where the framework reads it)."""


def transformers_version() -> str | None:
    """The installed transformers' version (None: not installed), without importing it."""
    try:
        return metadata.version("transformers")
    except metadata.PackageNotFoundError:
        return None


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


_KEEP_TORCH_OUT = [False]  # set by a process routescope owns (the CLI and its workers)


def keep_torch_out() -> None:
    """For a process routescope owns (the CLI, whose workers inherit it): build config classes
    with torch kept out of sight (`_torch_hidden`). A library caller's process is left as it
    is: it may go on to use transformers with torch."""
    _KEEP_TORCH_OUT[0] = True


@contextlib.contextmanager
def _torch_hidden() -> Iterator[None]:
    """transformers imports torch wherever it finds it installed (its rope utilities do, at the
    import of every config class): 1.3-2 s that a config's attribute view does not need. A None
    in sys.modules is Python's way to make a package absent: `find_spec` answers None and
    `import torch` raises ImportError, so transformers takes the path it takes in the core
    install, which has no torch. The views are the same either way (tests/test_intake_torch.py
    builds every example config both ways). Only where `keep_torch_out` was called, and only
    before transformers or torch is imported: transformers decides once, at its import, whether
    torch is there, and its modules imported meanwhile go on believing it absent (the CLI's
    process reads them for nothing else; torch itself imports as usual afterwards)."""
    if not _KEEP_TORCH_OUT[0] or "torch" in sys.modules or "transformers" in sys.modules:
        yield
        return
    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        still: object = sys.modules.get("torch", sys)  # (typed: the stubs allow no None here)
        if still is None:
            del sys.modules["torch"]


def _quiet() -> None:
    """transformers logs advice at import (e.g. that PyTorch is absent, as in the core
    install): routescope's own output must stay clean."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")


def _build(raw: dict[str, Any], routing_path: str, class_name: str | None = None) -> dict[str, Any]:
    with _torch_hidden():
        return _build_view(raw, routing_path, class_name)


def _build_view(raw: dict[str, Any], routing_path: str, class_name: str | None) -> dict[str, Any]:
    _quiet()
    import transformers
    from transformers import CONFIG_MAPPING

    model_type = raw.get("model_type")
    if class_name is not None:  # the class a framework registers for this model_type
        cls: Any = getattr(transformers, class_name, None)
        base = getattr(transformers, "PretrainedConfig", None)
        if not isinstance(cls, type) or not isinstance(base, type) or not issubclass(cls, base):
            return {"error": f"transformers has no config class {class_name}"}
    elif not isinstance(model_type, str) or model_type not in CONFIG_MAPPING:
        return {"error": f"transformers has no config class for model_type {model_type!r}"}
    else:
        cls = CONFIG_MAPPING[model_type]
    try:
        obj = cls.from_dict(dict(raw))
    except Exception as exc:  # a config the class rejects is a fact to report, not a crash
        return {"error": f"transformers {cls.__name__} rejected the file: {exc}".splitlines()[0]}
    if routing_path:
        obj = getattr(obj, routing_path, None)
        if obj is None or not hasattr(obj, "to_dict"):
            return {"error": f"transformers {cls.__name__} has no {routing_path} sub-config"}
    values = {k: v for k, v in obj.to_dict().items() if _jsonable(v)}
    aliases = dict(getattr(type(obj), "attribute_map", {}) or {})
    for alias, target in aliases.items():
        if target in values:
            values[alias] = values[target]
    config_base = getattr(transformers, "PretrainedConfig", None)
    subs = (
        sorted(k for k, v in values.items()
               if isinstance(v, dict) and isinstance(getattr(obj, k, None), config_base))
        if isinstance(config_base, type)
        else []
    )  # fmt: skip
    return {
        "class_name": type(obj).__name__,
        "values": values,
        "aliases": aliases,
        "sub_configs": subs,
        "class_values": _class_values(type(obj), values),
    }


def _class_values(cls: type, values: dict[str, Any]) -> dict[str, Any]:
    """The plain data the class and its bases define (nearest first), that `getattr(config,
    name)` reads when the instance has no such attribute: no methods, properties or other
    descriptors, nothing the JSON cache cannot hold."""
    out: dict[str, Any] = {}
    for klass in cls.__mro__:
        for name, value in vars(klass).items():
            if name.startswith("__") or name in values or name in out:
                continue
            if callable(value) or hasattr(value, "__get__") or not _jsonable(value):
                continue
            out[name] = value
    return out


# what an entry holds; one written before a key was recorded is built again, not read short
_VIEW_KEYS = frozenset(("class_name", "values", "aliases", "sub_configs", "class_values"))


def class_view(
    raw: dict[str, Any], routing_path: str, class_name: str | None = None
) -> ClassView | str:
    """The transformers attribute view (of the class for the file's model_type, or of
    transformers' `class_name`), or a string saying why there is none."""
    version = transformers_version()
    if version is None:
        return "transformers is not installed"
    what: list[Any] = [raw, routing_path] if class_name is None else [raw, routing_path, class_name]
    blob = json.dumps(what, sort_keys=True, default=str).encode()
    key = hashlib.sha256(blob).hexdigest()
    path = cache_root() / "intake" / f"transformers-{version}" / f"{key}.json"
    data: dict[str, Any] | None = None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None  # a missing or corrupt entry is rebuilt
    if not isinstance(data, dict) or not ("error" in data or data.keys() >= _VIEW_KEYS):
        text = json.dumps(_build(raw, routing_path, class_name), sort_keys=True)
        atomic_write_text(path, text)
        known_model_types()  # (transformers is imported now: what a trace asks later, cached)
        data = json.loads(text)  # as a later read gets it (tuples as lists): no cold/warm split
    if "error" in data:
        return str(data["error"])
    return ClassView(
        data["class_name"],
        version,
        data["values"],
        data["aliases"],
        tuple(data["sub_configs"]),
        data["class_values"],
    )


def known_model_types() -> tuple[str, frozenset[str]] | None:
    """The installed transformers' version and the model_types its AutoConfig has a class for
    (`CONFIG_MAPPING`), cached per version; None where transformers is not installed."""
    version = transformers_version()
    if version is None:
        return None
    path = cache_root() / "intake" / f"model-types-transformers-{version}.json"
    try:
        names = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        names = None  # a missing or corrupt entry is read again from transformers
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        with _torch_hidden():
            _quiet()
            from transformers import CONFIG_MAPPING

            names = sorted(str(k) for k in CONFIG_MAPPING.keys())  # noqa: SIM118 (a lazy mapping)
        atomic_write_text(path, json.dumps(names))
    return version, frozenset(names)
