"""routescope.lock: the selected decode path per model x GPU, as sorted, reviewable TOML.

Written by `routescope check --update-lock`, compared by `routescope check`. No timestamps and no
absolute paths, so the same inputs give the same bytes. The path fields (sink, kind, top_k,
output format, OEA insertability and insertion point) are what a change is judged on; the
decisions are kept as the evidence printed when a path changes.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routescope.check.policy import BYPASSED
from routescope.errors import RoutescopeError
from routescope.report import sink_args_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# 2: a kernel's kind says what it is (cuda_kernel, triton, ...) and sink_provider whose it is
# (flashinfer, sgl_kernel, ...); version 1 locks named flashinfer as a kind.
LOCK_VERSION = 2
PATH_FIELDS = (
    "status",
    "sink",
    "sink_kind",
    "sink_provider",
    "sink_args",
    "top_k",
    "output_format",
    "insertable",
    "insertion_point",
)


@dataclass(frozen=True, slots=True)
class Decision:
    function: str
    condition: str
    value: str  # "true", "false", "undecided"
    at: str  # file:line (informative: lines move between versions, so never compared)
    parts: tuple[str, ...] = ()  # "condition -> value" for each operand of an and/or

    def key(self) -> tuple[str, str]:
        return (self.function, self.condition)

    def shown(self) -> str:
        parts = f" [{'; '.join(self.parts)}]" if self.parts else ""
        return f"{self.condition} -> {self.value}{parts}  ({self.at}, {self.function})"


@dataclass(frozen=True, slots=True)
class LockEntry:
    model: str
    gpu: str
    path: tuple[tuple[str, str], ...]  # PATH_FIELDS present, in order, as text
    decisions: tuple[Decision, ...]

    def field(self, name: str) -> str | None:
        return dict(self.path).get(name)


def _value(v: Any) -> str:
    return "undecided" if v is None else "true" if v is True else "false" if v is False else str(v)


def entry_from_report(model: str, gpu: str, report: dict[str, Any]) -> LockEntry:
    """The lock entry for one cell's report: its first path (the selected one when decided)."""
    dispatch = report["dispatch"]
    path = dispatch["paths"][0] if dispatch["paths"] else {"sink": None, "decisions": []}
    sink = path["sink"]
    router = dispatch.get("router") or {}
    fields: dict[str, str] = {"status": dispatch["status"]}
    fields["sink"] = sink["name"] if sink else "(none)"
    fields["sink_kind"] = sink["kind"] if sink else BYPASSED
    if sink and sink.get("provider"):
        fields["sink_provider"] = sink["provider"]
    if sink and sink.get("args"):  # how a fused MoE kernel is told to route
        fields["sink_args"] = sink_args_text(sink)
    if "top_k" in router:
        fields["top_k"] = str(router["top_k"]["value"])
    fmt = router.get("output_format", {}).get("value")
    if fmt not in (None, "None"):
        fields["output_format"] = str(fmt)
    verdict = report.get("verdict") or {}
    fields["insertable"] = _value(verdict.get("insertable"))
    point = verdict.get("insertion_point")
    if point:
        fields["insertion_point"] = f"{point['file']}:{point['function']}:{point['line']}"
    decisions = tuple(
        Decision(
            d["function"],
            d["condition"],
            _value(d["value"]),
            f"{d['file']}:{d['line']}",
            tuple(f"{p['condition']} -> {_value(p['value'])}" for p in d.get("parts", [])),
        )
        for d in path["decisions"]
    )
    return LockEntry(
        model, gpu, tuple((k, fields[k]) for k in PATH_FIELDS if k in fields), decisions
    )


def _s(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def render_lock(framework: str, entries: list[LockEntry]) -> str:
    """The lock file text: entries sorted by (model, gpu)."""
    out = [
        "# routescope.lock: the decode routing path recorded per model x GPU.",
        "# Written by `routescope check --update-lock`; `routescope check` fails when a path",
        "# changes. Review a change here like a code change.",
        f"lock_version = {LOCK_VERSION}",
        f"framework = {_s(framework)}",
    ]
    for e in sorted(entries, key=lambda e: (e.model, e.gpu)):
        out += ["", "[[path]]", f"model = {_s(e.model)}", f"gpu = {_s(e.gpu)}"]
        out += [f"{k} = {_s(v)}" for k, v in e.path]
        out.append("decisions = [")
        for d in e.decisions:
            parts = f", parts = [{', '.join(_s(p) for p in d.parts)}]" if d.parts else ""
            out.append(
                f"  {{ function = {_s(d.function)}, condition = {_s(d.condition)}, "
                f"value = {_s(d.value)}, at = {_s(d.at)}{parts} }},"
            )
        out.append("]")
    return "\n".join(out) + "\n"


@dataclass(frozen=True, slots=True)
class Lock:
    framework: str
    entries: dict[tuple[str, str], LockEntry]


def read_lock(path: Path) -> Lock:
    """Parse a lock file; a damaged one is a RoutescopeError (exit 2), never a silent pass."""
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        version = doc.get("lock_version")
        if isinstance(version, int) and 0 < version < LOCK_VERSION:
            raise RoutescopeError(
                str(path),
                f"lock_version {version} was written by an older routescope; record it again "
                "with `routescope check --update-lock` and review the change",
            )
        if version != LOCK_VERSION:
            raise ValueError(f"lock_version {version!r}, expected {LOCK_VERSION}")
        entries = {}
        for t in doc.get("path", []):
            decisions = tuple(
                Decision(
                    d["function"], d["condition"], d["value"], d["at"], tuple(d.get("parts", []))
                )
                for d in t["decisions"]
            )
            fields = tuple((k, str(t[k])) for k in PATH_FIELDS if k in t)
            entries[(t["model"], t["gpu"])] = LockEntry(t["model"], t["gpu"], fields, decisions)
        return Lock(str(doc["framework"]), entries)
    except OSError as exc:
        raise RoutescopeError(str(path), exc.strerror or "cannot read") from exc
    except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise RoutescopeError(str(path), f"not a routescope lock file: {exc}") from exc


@dataclass(frozen=True, slots=True)
class PathChange:
    fields: tuple[tuple[str, str | None, str | None], ...]  # (field, before, after) that differ
    changed: tuple[tuple[Decision, Decision], ...]  # same condition, another value
    only_before: tuple[Decision, ...]
    only_after: tuple[Decision, ...]


def diff_entries(before: LockEntry, after: LockEntry) -> PathChange | None:
    """None when the path fields agree; else what changed, with the decisions that differ
    (matched by function and condition text; line numbers are ignored)."""
    fields = tuple(
        (k, before.field(k), after.field(k))
        for k in PATH_FIELDS
        if before.field(k) != after.field(k)
    )
    if not fields:
        return None
    old = _by_key(before.decisions)
    new = _by_key(after.decisions)
    changed = []
    for key, olds in old.items():
        news = new.get(key)
        if news is not None and [(d.value, d.parts) for d in olds] != [
            (d.value, d.parts) for d in news
        ]:
            changed.append((olds[0], news[0]))
    # Guards in a function both paths run (where they part) first; repeats of a guard once.
    shared = {k[0] for k in old} & {k[0] for k in new}
    only_before = _firsts([d for k, ds in old.items() if k not in new for d in ds], shared)
    only_after = _firsts([d for k, ds in new.items() if k not in old for d in ds], shared)
    return PathChange(fields, tuple(changed), only_before, only_after)


def _by_key(decisions: tuple[Decision, ...]) -> dict[tuple[str, str], list[Decision]]:
    out: dict[tuple[str, str], list[Decision]] = {}
    for d in decisions:
        out.setdefault(d.key(), []).append(d)
    return out


def _firsts(decisions: list[Decision], shared: set[str]) -> tuple[Decision, ...]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for d in decisions:
        if (d.function, d.condition, d.value) not in seen:
            seen.add((d.function, d.condition, d.value))
            out.append(d)
    return tuple(sorted(out, key=lambda d: d.function not in shared))
