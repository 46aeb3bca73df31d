"""A model's decode path across every published release of a framework: the releases grouped by
path, and for each change between neighbouring releases the decisions that changed (the guard,
its values before and after, file:line in both releases). Each release is one `inspect`, traced
in its own process (over the cores) and cached like any report."""

from __future__ import annotations

import difflib
import itertools
import os
import re
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from packaging.version import InvalidVersion, Version

from routescope import api, status, timing
from routescope.errors import RoutescopeError
from routescope.hardware import resolve_gpu
from routescope.report import deciding_decision

ROUTER_FIELDS = ("top_k", "output_format", "runner_backend")
SHOWN_DECISIONS = 3  # decisions per side of one change


@dataclass(frozen=True)
class Release:
    version: str
    status: str  # selected, forked, unknown, provisional, or error
    sink: str  # "name [kind]", or what ends the path
    router: dict[str, str] = field(default_factory=dict)
    blockers: tuple[str, ...] = ()
    error: str = ""

    @property
    def path(self) -> tuple[Any, ...]:
        """What tells two releases' answers apart (the router's fields: see same_path). An
        error is compared by what it says, not by the lines and pins it cites, which move
        from release to release ("utils.py:27" and "utils.py:29" are one answer)."""
        return (self.status, self.sink, self.blockers, _said(self.error))

    def same_path(self, other: Release) -> bool:
        """The same answer: a router field only one release has (runner_backend, new in
        0.5.23) is not recorded by the other, which is no change of path."""
        shared = self.router.keys() & other.router.keys()
        return self.path == other.path and all(self.router[k] == other.router[k] for k in shared)


def _said(error: str) -> str:
    error = re.sub(r"\((?:[\w.+-]+\.whl)\)", "", error)  # the wheel a source line names
    error = re.sub(r"(\.py):\d+(?:-\d+)?", r"\1", error)
    return re.sub(r"==[A-Za-z0-9_.+!-]+", "", error)


def _blocked_by(b: dict[str, Any]) -> str:
    """What a blocker names across releases: the kernel the GPU lacks, or the exception a step
    raises and the step (its line moves from release to release)."""
    if b["kind"] == "raises":
        return f"{b['exception']} in {b['step']}"
    return str(b["kernel"])


def releases_between(
    name: str, versions: list[str], start: str | None, end: str | None
) -> list[str]:
    """Final releases from `start` to `end` (inclusive) in version order; a bound that is not a
    published version exits 2 naming the nearest ones."""
    parsed: list[tuple[Version, str]] = []
    for v in versions:
        try:
            parsed.append((Version(v), v))
        except InvalidVersion:
            continue
    known = {v for _, v in parsed}
    for flag, bound in (("--from", start), ("--to", end)):
        if bound is not None and bound not in known:
            from routescope.source.registry import nearest_versions

            near = ", ".join(nearest_versions(bound, [v for _, v in parsed]))
            raise RoutescopeError(f"{flag} {bound}", f"{name} has no such release; nearest: {near}")
    lo = Version(start) if start else None
    hi = Version(end) if end else None
    return [v for pv, v in sorted(parsed)
            if not (pv.is_prerelease or pv.is_devrelease)
            and (lo is None or pv >= lo) and (hi is None or pv <= hi)]  # fmt: skip


_TIMINGS = "\x00timings"  # a worker's phases, sent back beside its report


def _one(req: api.InspectRequest) -> dict[str, Any]:
    """One release's report, or why there is none (run in a worker process); with the timings
    on, the phases it ran, for the parent to show."""
    start, at = time.perf_counter(), timing.mark()
    try:
        got: dict[str, Any] = {"report": api.inspect(req)}
    except RoutescopeError as exc:
        got = {"error": f"{exc.subject}: {exc.message}"}
    if timing.enabled():
        got[_TIMINGS] = (time.perf_counter() - start, timing.rows_since(at))
    return got


def summarise(version: str, got: dict[str, Any]) -> Release:
    if "error" in got:
        return Release(version, "error", "", error=got["error"])
    doc = got["report"]
    disp = doc["dispatch"]
    path = _path(doc)
    sink = (path or {}).get("sink")
    if sink:
        shown = f"{sink['name']} [{sink['kind']}]"
    elif disp["status"] == "forked":
        shown = ", ".join(sorted({(p["sink"] or {}).get("name", "no kernel")
                                  for p in disp["paths"]}))  # fmt: skip
    else:
        shown = (path or {}).get("stopped") or "no kernel named"
    router = disp.get("router") or {}
    fields = {k: re.sub(r"^\w+\.", "", router[k]["repr"]) for k in ROUTER_FIELDS if k in router}
    blockers = tuple(_blocked_by(b) for b in doc.get("blockers") or ())
    return Release(version, disp["status"], shown, fields, blockers)


def _path(doc: dict[str, Any]) -> dict[str, Any] | None:
    paths = doc["dispatch"]["paths"]
    return next((p for p in paths if p["selected"]), paths[0] if len(paths) == 1 else None)


def _key(d: dict[str, Any]) -> tuple[str, str]:
    return (d["function"].rsplit(":", 1)[-1], " ".join(d["condition"].split()))


def _shown(d: dict[str, Any]) -> dict[str, Any]:
    return {"condition": d["condition"], "value": d["value"], "at": f"{d['file']}:{d['line']}",
            "function": d["function"]}  # fmt: skip


def decisions_changed(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """The decisions on the two paths that differ, nearest the kernel first: a guard both
    releases evaluate with another value, or one only one of them evaluates. Guards are matched
    by function and condition text (their lines move between releases)."""
    b = [d for d in (*before.get("setup_decisions", ()), *before["decisions"])]
    a = [d for d in (*after.get("setup_decisions", ()), *after["decisions"])]
    # the guards of functions both releases run: where the paths part (a function only one
    # of them enters, such as the new kernel's own launcher, is a consequence, not the cause)
    common = {_key(d)[0] for d in b} & {_key(d)[0] for d in a}
    b = [d for d in b if _key(d)[0] in common]
    a = [d for d in a if _key(d)[0] in common]
    keys_b = [(*_key(d), d["value"]) for d in b]
    keys_a = [(*_key(d), d["value"]) for d in a]
    out: list[dict[str, Any]] = []
    blocks = difflib.SequenceMatcher(None, keys_b, keys_a, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in reversed(blocks):
        if tag == "equal":
            continue
        out.append({
            "before": [_shown(d) for d in b[i1:i2][:SHOWN_DECISIONS]],
            "after": [_shown(d) for d in a[j1:j2][:SHOWN_DECISIONS]],
        })  # fmt: skip
        if len(out) == 2:
            break
    return out


def build_timeline(
    req: api.InspectRequest, versions: list[str], jobs: int | None = None
) -> dict[str, Any]:
    """Trace `req` on each version (in parallel), group them by path and explain each change."""
    name = (req.framework or "").partition("==")[0]
    reqs = [replace(req, framework=f"{name}=={v}") for v in versions]
    workers = max(1, min(jobs or os.cpu_count() or 1, len(reqs)))
    if workers == 1:
        results: list[dict[str, Any]] = []
        for v, one in zip(versions, reqs, strict=True):
            with timing.phase(f"release {v}"):
                results.append(_one(one))
            results[-1].pop(_TIMINGS, None)  # (recorded here already)
    else:
        status.show(f"tracing {len(reqs)} releases of {name}, {workers} at a time …")
        # (the workers say nothing: the line is this process's, updated as releases come back)
        with ProcessPoolExecutor(max_workers=workers, initializer=status.disable) as pool:
            results = []
            for v, got in zip(versions, pool.map(_one, reqs), strict=True):
                results.append(got)
                status.show(f"traced {len(results)} of {len(reqs)} releases of {name} ({v}) …")
        for v, got in zip(versions, results, strict=True):
            if _TIMINGS in got:
                took, rows = got.pop(_TIMINGS)
                timing.adopt(f"release {v} (in a worker, beside {workers - 1} more)", took, rows)
    rels = [summarise(v, got) for v, got in zip(versions, results, strict=True)]
    groups: list[dict[str, Any]] = []
    for r in rels:
        if groups and groups[-1]["last"].same_path(r):
            groups[-1]["versions"].append(r.version)
            groups[-1]["last"] = r
        else:
            groups.append({"versions": [r.version], "release": r, "last": r})
    changes = []
    for prev, cur in itertools.pairwise(groups):
        i = versions.index(cur["versions"][0])
        before, after = results[i - 1], results[i]
        decided: list[dict[str, Any]] = []
        chosen: dict[str, Any] = {}
        if "report" in before and "report" in after:
            pb, pa = _path(before["report"]), _path(after["report"])
            if pb is not None and pa is not None:
                decided = decisions_changed(pb, pa)
                # the branch that chose each release's kernel (inspect's "chosen at")
                if (pb.get("sink") or {}).get("name") != (pa.get("sink") or {}).get("name"):
                    for side, path in (("before", pb), ("after", pa)):
                        d = deciding_decision(path)
                        chosen[side] = _shown(d) if d is not None else None
        b, a = prev["release"], cur["release"]
        stopped = _stopped(before, after) if b.blockers != a.blockers else {}
        changes.append({
            "from_version": versions[i - 1], "to_version": versions[i],
            "before": _public(b), "after": _public(a),
            "fields": [{"field": k, "before": _plain(getattr(b, k)),
                        "after": _plain(getattr(a, k))}
                       for k in ("status", "sink", "router", "blockers", "error")
                       if getattr(b, k) != getattr(a, k)],
            "decisions": decided,
            "chosen": chosen,
            "stopped": stopped,
        })  # fmt: skip
    profile = resolve_gpu(req.gpu)
    return {
        "model": req.model,
        "framework": name,
        "deployment": {
            "gpu": req.gpu,  # as given; the profile it names:
            "gpu_profile": {
                "family": profile.family,
                "device": profile.device,
                "name": profile.device_name,
            },
            "tp": req.tp,
            "ep": req.ep,
            "quant": req.quant,
            "server_args": req.server_args,
            "env": req.env,
            "packages": req.packages,
        },
        "releases": [{"version": r.version, **_public(r)} for r in rels],
        "groups": [{"versions": g["versions"], **_public(g["release"])} for g in groups],
        "changes": changes,
    }


def _stopped(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Where each release that stops in a step stops, and the guard it stops after (the
    blockers changed between them: a check one release makes and the other does not)."""
    out: dict[str, Any] = {}
    for side, got in (("before", before), ("after", after)):
        blockers = (got.get("report") or {}).get("blockers") or ()
        stop = next((x for x in blockers if x["kind"] == "raises"), None)
        if stop is not None:
            out[side] = {"at": stop["where"], "after": stop.get("after", ""),
                         "what": stop["what"]}  # fmt: skip
    return out


def _plain(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


def _public(r: Release) -> dict[str, Any]:
    out = asdict(r)
    out["blockers"] = list(r.blockers)
    out.pop("version", None)
    if not out["error"]:
        out.pop("error")
    return out
