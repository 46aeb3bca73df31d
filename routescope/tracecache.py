"""Finished reports, kept on disk under a key made of everything that decides them.

A trace is a pure function of: the framework source (a published wheel's RECORD, which names
every file by its sha256), the rule files, routescope's own code, the installed transformers'
version, the model's routing facts and the deployment. A CI job that re-runs the same check on
an unchanged model and release reads the report back instead of tracing again. Sources that
can change under the same name (a checkout) are never cached. Set ROUTESCOPE_TRACE_CACHE=0 to
always trace.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from routescope import status
from routescope.errors import RoutescopeError
from routescope.fsutil import atomic_write_text, cache_root
from routescope.timing import phase

MAX_ENTRIES = 512  # oldest reports beyond this are dropped when a new one is written
FORMAT = 1
TRANSIENT = "_transient"  # a report key compute() sets when the report must not be stored


def traces_root() -> Path:
    return cache_root() / "traces"


def enabled() -> bool:
    return os.environ.get("ROUTESCOPE_TRACE_CACHE", "1").strip().lower() not in ("0", "false", "no")


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """sha256 over routescope's Python files and rule files (what a trace is computed by)."""
    pkg = Path(__file__).resolve().parent
    roots = [pkg]
    from routescope.rules import rules_dir

    roots.append(rules_dir())
    h = hashlib.sha256()
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".toml", ".json")):
            h.update(path.relative_to(root).as_posix().encode())
            h.update(b"\0")
            h.update(path.read_bytes())
    return h.hexdigest()


def key_for(tree_fingerprint: str | None, parts: dict[str, Any]) -> str | None:
    """The cache key of one report, or None when it must not be cached."""
    if tree_fingerprint is None or not enabled():
        return None
    # (the installed transformers: its config classes give the view of the file, and which
    # model_types its AutoConfig knows decides whether get_config loads it)
    from routescope.intake.transformers_view import transformers_version

    head = {"format": FORMAT, "code": code_fingerprint(), "source": tree_fingerprint}
    blob = json.dumps(
        {**head, "transformers": transformers_version(), **parts},
        sort_keys=True,
        default=_plain,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _plain(v: Any) -> Any:
    if hasattr(v, "__dataclass_fields__"):
        return asdict(v)
    if isinstance(v, (set, frozenset)):
        return sorted(v, key=repr)
    return repr(v)


def cached(key: str | None, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The report stored under `key`, else `compute()` stored under it. An entry that does not
    read back as a JSON object (a torn or foreign file) is recomputed and replaced."""
    if key is None:
        return compute()
    path = traces_root() / key[:2] / f"{key}.json"
    try:
        with phase("report: looked up in the report cache"):
            doc = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(doc, dict) and doc.get("key") == key and isinstance(doc.get("report"), dict):
            report: dict[str, Any] = doc["report"]
            return report
    except (OSError, ValueError, RecursionError):
        pass
    report = compute()
    if report.pop(TRANSIENT, False):
        return report  # it rests on a read that failed (no network): not an answer to keep
    try:
        atomic_write_text(path, json.dumps({"key": key, "report": report}))
        _prune()
    except OSError:
        pass  # a read-only or full cache costs speed, never the answer
    return report


def _prune() -> None:
    root = traces_root()
    entries = [p for p in root.glob("*/*.json") if p.is_file()]
    if len(entries) <= MAX_ENTRIES:
        return
    entries.sort(key=lambda p: p.stat().st_mtime)
    for p in entries[: len(entries) - MAX_ENTRIES]:
        p.unlink(missing_ok=True)


def traced_report(tree: Any, index: Callable[[], Any], rules: Any, spec: Any, dep: Any,
                  version: str | None) -> dict[str, Any]:  # fmt: skip
    """The full report of `spec` deployed as `dep` on `tree`, traced or read back."""
    fingerprint = getattr(tree, "fingerprint", None)
    key = key_for(
        fingerprint() if callable(fingerprint) else None,
        {
            "framework": rules.id,
            "version": version,
            "origin": tree.origin,
            "spec": repr(spec),
            "config_view": spec.config_view,
            "config_view_origin": {k: repr(v) for k, v in spec.config_view_origin.items()},
            "deployment": dep,
        },
    )

    def compute() -> dict[str, Any]:  # (the engine is imported only when a trace runs)
        from routescope.analysis.phases.dispatch import trace_dispatch
        from routescope.analysis.phases.runphase import TrialStopped
        from routescope.blockers import report_blockers
        from routescope.report import build_report
        from routescope.verdict.rules import load_oea_rules
        from routescope.wayout import (
            advised,
            checkpoint_scheme,
            find_way_out,
            in_place_of_ep,
            past_a_split,
            past_a_stop,
            past_a_stop_env,
            switch_by_tracing,
            try_changes,
        )

        idx = index()
        with phase("source: fetch the routing code"):
            prefetch_closure(tree, idx)
        runs = [0]

        def report_of(d: Any) -> tuple[dict[str, Any], Any]:
            runs[0] += 1
            if runs[0] == 1:
                on = f"{d.gpu.family} ({d.gpu.device})"
                status.show(f"tracing {rules.id} {version or tree.origin} on {on} …")
            label = "as deployed" if runs[0] == 1 else "of a changed deployment (a way out)"
            try:
                with phase(f"trace {label}"):
                    dispatch = trace_dispatch(idx, rules, spec, d, version, tree.origin,
                                              trial=runs[0] > 1)  # fmt: skip
            except TrialStopped as stopped:  # a way out asked only whether it is selected
                return _stopped_trial(str(stopped)), None
            with phase("report and blockers"):
                doc = build_report(spec, d, dispatch, idx)
                notes, unread = report_blockers(doc, _metadata(tree), _provider_file)
            doc["dispatch"]["notes"].extend(notes)
            if unread:
                doc[TRANSIENT] = True
            return doc, dispatch

        doc, dispatch = report_of(dep)
        sa = rules.data.get("server_args", {})
        quant_field = sa.get("fields", {}).get("quant", "")
        # past a step that raises: the server arguments its decided guards read, changed
        stops = [b for b in doc.get("blockers") or () if b["kind"] == "raises"]
        if stops and dispatch.stops:
            args = dict(dispatch.arguments)
            chooses = tuple(sa.get("chooses", ()))
            sharding = dict(sa.get("sharding", {}))
            changes = [c for s in dispatch.stops  # what its message says to do, first
                       for c in (*advised(s.message, args, chooses),
                                 *past_a_stop(s.guards, args, chooses),
                                 *past_a_stop_env(s.guards, dep.env),
                                 *past_a_split(s.guards, args, sharding, dep.tp))]  # fmt: skip
            if dep.quant is None and spec.quant is not None:
                changes += checkpoint_scheme(spec.quant.method, spec.quant.scheme,
                                             sa.get("quant_aliases", {}), quant_field)  # fmt: skip
            way = try_changes(list(dict.fromkeys(changes)), quant_field, dep,
                              lambda d: report_of(d)[0])  # fmt: skip
            way = in_place_of_ep(way, sa.get("expert_parallel"), dep)
            for b in stops:
                b["way_out"] = way
        # for a kernel the GPU lacks: the values the kernel-choosing guards compare
        elif any(b["kind"] != "raises" for b in doc.get("blockers") or ()):
            way = find_way_out(
                dispatch.choosing,
                tuple(sa.get("chooses", ())),
                quant_field,
                {name: value for name, value, *_ in dispatch.server_args},
                dep,
                lambda d: report_of(d)[0],
            )
            way = in_place_of_ep(way, sa.get("expert_parallel"), dep)
            for b in doc["blockers"]:
                if b["kind"] != "raises":
                    b["way_out"] = way
        # a kernel that routes inside and no guard naming the switch: the rules' switch
        # argument, traced again with each value it prefers
        switch_by_tracing(
            doc,
            load_oea_rules().framework(doc["deployment"]["framework"]),
            {name: str(value).strip("'\"") for name, value, *_ in dispatch.server_args},
            quant_field,
            dep,
            lambda d: report_of(d)[0],
        )
        return doc

    return cached(key, compute)


def _metadata(tree: Any) -> Any:
    try:
        return tree.metadata()
    except (RoutescopeError, OSError, AttributeError):
        return None  # a checkout without METADATA pins nothing


def _provider_file(dist: str, version: str) -> Callable[[str], str]:
    """A reader of files in the published wheel of dist==version (range requests, cached)."""
    from routescope.source.open import open_published

    tree = open_published(dist, version, progress=False)
    return lambda rel: tree.read_bytes(rel).decode("utf-8", "replace")


def prefetch_closure(tree: Any, index: Any) -> None:
    """Before a trace on a published wheel, fetch its routing modules' import closure in one
    streamed pass (rules/frameworks/<name>.seeds.toml), instead of one request per module as the
    trace imports them; or, for a wheel that is mostly Python, the whole wheel in one request,
    kept (while it is, nothing is fetched). A closure is fetched once per wheel: a marker in the
    source cache records it. A failure here is not an error: the trace still fetches what it
    reads on demand."""
    from routescope.source.cache import source_root
    from routescope.source.wheel import WheelTree

    fingerprint = getattr(tree, "fingerprint", None)
    if not isinstance(tree, WheelTree) or not callable(fingerprint) or not tree.can_fetch():
        return
    marker = source_root() / "closures" / f"{fingerprint()}.done"
    if tree.whole() is not None or marker.is_file():  # kept whole, or its closure fetched
        return
    from routescope.analysis.closure import import_closure, load_seeds
    from routescope.errors import RoutescopeError

    if tree.whole_is_cheaper():  # (again if a kept one was dropped, torn)
        with contextlib.suppress(RoutescopeError):  # the closure's requests below say why
            if tree.fetch_whole():
                return
    try:
        import_closure(index, load_seeds(tree.name))
    except RoutescopeError:
        return
    with contextlib.suppress(OSError):  # no marker: the next cold trace scans again
        atomic_write_text(marker, tree.origin + "\n")


def _stopped_trial(why: str) -> dict[str, Any]:
    """What a way-out trial says whose step the server runs raised on every way: not selected,
    and why (nothing past the step was traced: the trial is not the report shown)."""
    dispatch = {"status": "blocked", "incomplete": [why], "paths": [], "notes": []}
    return {"dispatch": dispatch, "blockers": [], "verdict": {"insertable": False}}
