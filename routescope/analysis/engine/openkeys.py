"""A dict's keys that are perhaps there: what a join of paths whose keys differed, or a
comprehension whose filter the facts do not decide, leaves beyond the keys it surely holds."""

from __future__ import annotations

from collections.abc import Hashable
from typing import cast

from routescope.analysis.engine.values import Unknown, UnknownKind, Value


class OpenKeys(Unknown):
    """What a dict holds beyond its known keys when it is a join of paths whose keys differed,
    or a comprehension whose filter the facts do not decide: perhaps some of `keys`, and no
    other key. `values`: what such a key holds when it is there, where that is known (the
    comprehension's item; the value every joined path that has the key agrees on). Stored
    under the dict's "*" field; any write of unknown contents replaces it with a plain Unknown."""

    __slots__ = ("keys", "values")

    def __init__(
        self,
        keys: frozenset[Hashable],
        reason: str,
        values: dict[Hashable, Value] | None = None,
    ) -> None:
        super().__init__(reason, kind=UnknownKind.JOINED)
        self.keys = keys
        self.values = {k: v for k, v in (values or {}).items() if k in keys}

    def narrowed(self, keys: frozenset[Hashable]) -> OpenKeys | None:
        """These open keys less those no longer open (None when none is left)."""
        left = self.keys & keys
        return OpenKeys(left, self.reason, self.values) if left else None


def rest_of_dicts(rests: list[Value | None]) -> Value | None:
    """The "*" field of a dict made from dicts whose "*" fields are `rests` (None: closed),
    with the first one's reason (where the contents stopped being known). A perhaps-key keeps
    its value only where every rest that has it gives it the same one."""
    present = [r for r in rests if r is not None]
    if not present:
        return None
    reason = present[0].reason if isinstance(present[0], Unknown) else "dict of unknown contents"
    if all(isinstance(r, OpenKeys) for r in present):
        opens = cast(list[OpenKeys], present)
        keys = frozenset().union(*(r.keys for r in opens))
        values: dict[Hashable, Value] = {}
        for k in keys:
            had = [r.values.get(k) for r in opens if k in r.keys]
            first = had[0]
            if first is not None and all(v is first for v in had):
                values[k] = first
        return OpenKeys(keys, reason, values)
    first = present[0]
    return Unknown(reason, kind=first.kind if isinstance(first, Unknown) else UnknownKind.OPAQUE)
