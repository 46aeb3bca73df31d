"""Look up one routing field through its aliases: the file first, then the transformers class."""

from __future__ import annotations

from typing import Any

from routescope.intake.aliases import ALIASES
from routescope.intake.spec import Origin, Provenance, Sourced
from routescope.intake.transformers_view import ClassView

_MISSING = object()


def dig(cfg: dict[str, Any], path: str) -> Any:
    """`dig(cfg, "ffn_config.moe_top_k")`; _MISSING when any step is absent."""
    node: Any = cfg
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def is_missing(value: Any) -> bool:
    return value is _MISSING


class FieldReader:
    """Reads fields at the routing level of a config, with provenance."""

    def __init__(self, routing: dict[str, Any], prefix: str, view: ClassView | None) -> None:
        self.routing = routing
        self.prefix = f"{prefix}." if prefix else ""
        self.view = view

    def key(self, path: str) -> str:
        return f"{self.prefix}{path}"

    def raw(self, path: str) -> Any:
        return dig(self.routing, path)

    def read(self, name: str) -> Sourced[Any]:
        """The first alias present in the file wins; a null there may be filled by the class."""
        null_key: str | None = None
        for path in ALIASES[name]:
            value = dig(self.routing, path)
            if is_missing(value):
                continue
            if value is not None:
                return Sourced(value, Provenance(Origin.CONFIG, self.key(path)))
            null_key = null_key or path
        if null_key is not None:
            filled = self._class_value(null_key)
            if filled is not None and self.view is not None:
                note = f"config.json has null; {self.view.class_name} sets {filled!r}"
                return Sourced(filled, Provenance(Origin.CLASS_DEFAULT, self.key(null_key), note))
            return Sourced(
                None, Provenance(Origin.CONFIG, self.key(null_key), "null in config.json")
            )
        for path in ALIASES[name]:
            value = self._class_value(path)
            if value is not None and self.view is not None:
                attr = self.view.aliases.get(path, path)
                if attr != path and dig(self.routing, attr) == value:  # the file's, by its name
                    note = f"{self.view.class_name}.attribute_map reads {path} as {attr}"
                    return Sourced(value, Provenance(Origin.CONFIG, self.key(attr), note))
                key = f"{self.view.class_name}.{attr}"
                return Sourced(value, Provenance(Origin.CLASS_DEFAULT, key, "class default"))
        return Sourced(None, Provenance(Origin.ABSENT, None, self._absent_note(name)))

    def read_plain(self, key: str) -> Sourced[Any]:
        """One key (no alias table): the file, then the class."""
        value = dig(self.routing, key)
        if not is_missing(value) and value is not None:
            return Sourced(value, Provenance(Origin.CONFIG, self.key(key)))
        got = self._class_value(key)
        if got is not None and self.view is not None:
            return Sourced(got, Provenance(Origin.CLASS_DEFAULT, f"{self.view.class_name}.{key}"))
        return Sourced(None, Provenance(Origin.ABSENT))

    def _class_value(self, path: str) -> Any:
        if self.view is None or "." in path:
            return None
        return self.view.values.get(path)

    def _absent_note(self, name: str) -> str:
        keys = ", ".join(ALIASES[name])
        where = f"the file and {self.view.class_name}" if self.view else "the file"
        return f"none of {keys} in {where}"
