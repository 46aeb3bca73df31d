"""routescope.lock: the selected decode path per model x GPU, as sorted, reviewable TOML.

Written by `routescope check --update-lock`, compared by `routescope check`. No timestamps and no
absolute paths, so the same inputs give the same bytes. The lock keeps what decides, and only
that: the router kernel (name, kind, provider, how it is told to route), top-k and output
format, the runner backend, OEA insertability and the insertion point by function and
statement (never by line), and the decisive guards by condition text:
the branches the path took on a deployment fact (config.json, a server argument, an
environment variable, the platform) and the one that chose the kernel, each once. Lines are
kept to be read, never compared: a release that moves code but changes no decision matches.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routescope.check.policy import BYPASSED
from routescope.errors import RoutescopeError
from routescope.report import deciding_decision, sink_args_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# 3: the insertion point by function and statement, the runner backend, and only the
# decisive guards (2 kept every decision and the insertion line);
# 2: a kernel's kind says what it is (cuda_kernel, triton, ...) and sink_provider whose it is
# (flashinfer, sgl_kernel, ...); version 1 locks named flashinfer as a kind.
LOCK_VERSION = 3
PATH_FIELDS = (
    "status",
    "sink",
    "sink_kind",
    "sink_provider",
    "sink_args",
    "top_k",
    "output_format",
    "runner_backend",
    "insertable",
    "insertion_point",
    "insert_after",
)
ONE_SIDED = ("runner_backend",)
MAX_GUARD_LINES = 6  # guards printed for one changed path; the rest are counted


@dataclass(frozen=True, slots=True)
class Decision:
    function: str
    condition: str
    value: str  # "true", "false", "undecided"
    at: str  # file:line (informative: lines move between versions, so never compared)
    parts: tuple[str, ...] = ()  # "condition -> value" for each operand of an and/or
    chose: bool = False  # the branch that chose the kernel (the last taken before its call)

    def key(self) -> tuple[str, str]:
        return (self.function, self.condition)

    def shown(self) -> str:
        """One line: the condition (cut), its value, the operand that settled it (the last
        one evaluated, for an and/or), where."""
        why = f" [{self.parts[-1]}]" if self.parts else ""
        where = f"({self.at}, {short_function(self.function)})"
        return f"{cut_text(self.condition)} -> {self.value}{why}  {where}"


def cut_text(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def short_function(function: str) -> str:
    """`pkg.mod:Class.method` -> `Class.method` (the file:line beside it says where)."""
    return function.rpartition(":")[2] or function


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


def _reads_fact(d: dict[str, Any]) -> bool:
    """Did the branch read a deployment fact (what a changed config, flag, environment or GPU
    would flip), rather than only values the framework computed on its own?"""
    return any(i.get("origins") for i in d.get("inputs", []))


def decisive(path: dict[str, Any]) -> list[dict[str, Any]]:
    """The decisive guards of a report path, in the order the path met them, each
    (function, condition, value) once: those before the router kernel that read a fact, and the
    one that chose the kernel (the branch taken nearest the call into it)."""
    chose = deciding_decision(path)
    seen: set[tuple[str, str, object]] = set()
    out = []
    for d in _before_the_kernel(path):
        if not (d is chose or _reads_fact(d)):
            continue
        key = (d["function"], d["condition"], d["value"])
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def _before_the_kernel(path: dict[str, Any]) -> list[dict[str, Any]]:
    """The decisions the path took up to its router kernel's launch (the last one in the
    launching file at or above the launch): what came after post-processes the ids and chose
    nothing. All of them when the path has no kernel."""
    decisions: list[dict[str, Any]] = path["decisions"]
    sink = path.get("sink") or {}
    if not sink.get("file") or not isinstance(sink.get("line"), int):
        return decisions
    last = [i for i, d in enumerate(decisions)
            if d["file"] == sink["file"] and d["line"] <= sink["line"]]  # fmt: skip
    return decisions[: last[-1] + 1] if last else decisions


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
        fields["top_k"] = str(router["top_k"]["repr"])
    fmt = router.get("output_format", {}).get("repr")
    if fmt not in (None, "None"):
        fields["output_format"] = str(fmt)
    backend = router.get("runner_backend", {}).get("repr")
    if backend not in (None, "None"):
        fields["runner_backend"] = str(backend)
    verdict = report.get("verdict") or {}
    fields["insertable"] = _value(verdict.get("insertable"))
    point = verdict.get("insertion_point")
    if point:
        fields["insertion_point"] = f"{point['file']}:{point['function']}"
        before = ((point.get("before") or {}).get("text") or "").strip().splitlines()
        if before:  # the statement OEA goes after, by its text: lines move between releases
            fields["insert_after"] = before[0].strip()
    chose = deciding_decision(path) if path["decisions"] else None
    decisions = tuple(
        Decision(
            d["function"],
            d["condition"],
            _value(d["value"]),
            f"{d['file']}:{d['line']}",
            tuple(f"{p['condition']} -> {_value(p['value'])}" for p in d.get("parts", [])),
            d is chose,
        )
        for d in (decisive(path) if path["decisions"] else [])
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
        out.append("guards = [")
        for d in e.decisions:
            parts = f", parts = [{', '.join(_s(p) for p in d.parts)}]" if d.parts else ""
            chose = ", chose = true" if d.chose else ""
            out.append(
                f"  {{ function = {_s(d.function)}, condition = {_s(d.condition)}, "
                f"value = {_s(d.value)}, at = {_s(d.at)}{parts}{chose} }},"
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
                    d["function"],
                    d["condition"],
                    d["value"],
                    d["at"],
                    tuple(d.get("parts", [])),
                    d.get("chose") is True,
                )
                for d in t["guards"]
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
    chose_before: Decision | None = None  # the branch that chose each side's kernel, when
    chose_after: Decision | None = None  # they differ


def diff_entries(before: LockEntry, after: LockEntry) -> PathChange | None:
    """None when the path fields agree; else what changed, with the decisions that differ
    (matched by function and condition text; line numbers are ignored)."""
    fields = tuple(
        (k, before.field(k), after.field(k))
        for k in PATH_FIELDS
        if before.field(k) != after.field(k)
        # a field one release's router does not have (runner_backend before 0.5.23) is not
        # recorded there, which is no change of path
        and not (k in ONE_SIDED and None in (before.field(k), after.field(k)))
    )
    if not fields:
        return None
    old = _by_key(before.decisions)
    new = _by_key(after.decisions)
    changed = []
    for key, olds in old.items():
        news = new.get(key)
        # the branch a guard took, not how its operands read: the same value is no change
        if news is not None and {d.value for d in olds} != {d.value for d in news}:
            changed.append((olds[0], news[0]))
    # Guards in a function both paths run (where they part) first, nearest the kernel first
    # (the guard that chose it is the last one before it); repeats of a guard once.
    shared = {k[0] for k in old} & {k[0] for k in new}
    only_before = _firsts([d for d in before.decisions if d.key() not in new], shared)
    only_after = _firsts([d for d in after.decisions if d.key() not in old], shared)
    chose_before = next((d for d in before.decisions if d.chose), None)
    chose_after = next((d for d in after.decisions if d.chose), None)
    if (
        chose_before is not None
        and chose_after is not None
        and (chose_before.key(), chose_before.value) == (chose_after.key(), chose_after.value)
    ):
        chose_before = chose_after = None
    firsts = {chose_before, chose_after}
    return PathChange(
        fields,
        tuple((a, b) for a, b in changed if a not in firsts and b not in firsts),
        tuple(d for d in only_before if d not in firsts),
        tuple(d for d in only_after if d not in firsts),
        chose_before,
        chose_after,
    )


def _by_key(decisions: tuple[Decision, ...]) -> dict[tuple[str, str], list[Decision]]:
    out: dict[tuple[str, str], list[Decision]] = {}
    for d in decisions:
        out.setdefault(d.key(), []).append(d)
    return out


def _firsts(decisions: list[Decision], shared: set[str]) -> tuple[Decision, ...]:
    """`decisions` (in path order) each once, those in a `shared` function first, then each
    group from the kernel backwards."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for d in reversed(decisions):
        if (d.function, d.condition, d.value) not in seen:
            seen.add((d.function, d.condition, d.value))
            out.append(d)
    return tuple(sorted(out, key=lambda d: d.function not in shared))
