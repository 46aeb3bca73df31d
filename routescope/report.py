"""The versioned report every renderer reads: a plain dict built from the analysis results.

JSON is the source of truth (schema in routescope/schema/report.schema.json); the terminal and
markdown renderers are pure functions of it. Same inputs give the same dict (no timings).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from routescope import __version__
from routescope.intake.spec import RoutingSpec
from routescope.render.spec_json import spec_dict

if TYPE_CHECKING:  # the trace's types: a report read back from the cache needs no engine
    from routescope.analysis.engine.state import Decision, SinkHit
    from routescope.analysis.index import Index
    from routescope.analysis.phases.deployment import Deployment
    from routescope.analysis.phases.dispatch import Dispatch
    from routescope.analysis.phases.stops import Stop
    from routescope.analysis.phases.trace import TracedPath

# Bump the major part on any change that removes or renames a field.
SCHEMA_VERSION = "2.2"  # 2.0: values the trace read are typed (value, kind, repr, origins);
# 2.1: a path that raises says what and where (`raised`); 2.2: the deployment's --ep (`ep`),
# a way out's `replaces`


# the sink kind of a MoE kernel that routes inside its own launch (rules/frameworks/*.toml)
FUSED_MOE_KERNEL = "fused_moe_kernel"


def sink_args_text(sink: dict[str, Any]) -> str:
    """A report sink's arguments as `name=value, ...` (how a fused MoE kernel is told to
    route); "" when the rule names none."""
    return ", ".join(f"{a['name']}={a['repr']}" for a in sink.get("args", []))


def answer_path(dispatch: dict[str, Any]) -> dict[str, Any] | None:
    """The path an answer shows: the selected one, else the only one (provisional; blocked,
    where it is what would run past what stops the deployment; unknown); None for a fork."""
    paths = dispatch["paths"]
    return next((p for p in paths if p["selected"]), paths[0] if len(paths) == 1 else None)


def deciding_decision(path: dict[str, Any]) -> dict[str, Any] | None:
    """The decision that chose the kernel: the branch taken (a condition that held) closest
    before the call into the kernel's launcher, in the function that makes that call."""
    sink = path.get("sink")
    if not sink:
        return None
    calls = [f for f in path["frames"] if f["function"] == sink["called_from"]]
    if not calls or ":" not in str(calls[-1].get("called_at", "")):
        return None
    file, _, line = str(calls[-1]["called_at"]).rpartition(":")
    # the function that made the call: of those entered in that file before the launcher, the
    # one defined last above the call's line (a helper called in its arguments is not it)
    entered = [f for f in path["frames"][: path["frames"].index(calls[-1])]
               if f.get("file") == file and int(f.get("line") or 0) <= int(line)]  # fmt: skip
    caller = max(entered, key=lambda f: int(f.get("line") or 0))["function"] if entered else None
    before = [d for d in path["decisions"]
              if d["file"] == file and d["line"] <= int(line) and d["value"] is True
              and (caller is None or d.get("function") in (None, caller))]  # fmt: skip
    # a part of a larger condition (an `x if c else y` inside it) is not a branch of its own
    before = [d for d in before if not any(
        o is not d and o["line"] <= d["line"] and d["condition"] in o["condition"]
        for o in before)]  # fmt: skip
    return max(before, key=lambda d: d["line"]) if before else None


def short_kernel(name: str) -> str:
    """A kernel's name without its module: `fused_moe_kernel`; a compiled op with its overload,
    `scaled_fp4_quant.out` (torch.ops.<namespace>.<op>[.<overload>])."""
    if name.startswith("torch.ops.") and name.count(".") >= 3:
        return ".".join(name.split(".")[3:])
    return name.rpartition(":")[2].rpartition(".")[2]


def experts_text(path: dict[str, Any], limit: int = 3, brief: bool = False) -> str:
    """What the experts launch past the router, as a report names it: the kernels every way
    launches (`fused_moe_kernel [triton]`), then those only some ways do (`brief`: how many);
    "" where the trace followed no launch past the router (a kernel that routes inside is the
    sink)."""

    def named(hs: list[dict[str, Any]], kinds: bool) -> str:
        names = [short_kernel(h["name"]) + (f" [{h['kind']}]" if kinds and h.get("kind") else "")
                 for h in hs[:limit]]  # fmt: skip
        return ", ".join(names) + (f" and {len(hs) - limit} more" if len(hs) > limit else "")

    launched = path.get("experts") or []
    every = [h for h in launched if h.get("ways") == "every"]
    some = [h for h in launched if h.get("ways") != "every"]
    parts = [named(every, True)] if every else []
    if some and brief and every:
        return " ".join([*parts, f"(+{len(some)} on some ways)"])
    if some:
        parts.append(f"on some ways {named(some, False)}")
    return "; ".join(parts)


def sink_label(sink: dict[str, Any]) -> str:
    """A report sink's kind and, where it differs, who ships it: "cuda_kernel, flashinfer"."""
    kind, provider = sink.get("kind"), sink.get("provider")
    return f"{kind}, {provider}" if provider and provider != kind else str(kind)


def valued(text: str, origins: tuple[str, ...], data: tuple[str, Any]) -> dict[str, Any]:
    """A value the trace read, as JSON gives it: `value` as JSON holds it (9, true, "sigmoid",
    "TopKOutputFormat.STANDARD"; null for a tensor, an object or an unknown: `kind` tells which
    of those it is), `repr` as Python shows it (what the text and markdown print), `origins`."""
    kind, value = data
    return {"value": _listed(value), "kind": kind, "repr": text, "origins": list(origins)}


def _listed(value: Any) -> Any:
    """as_data keeps sequences as tuples (hashable); a report holds JSON lists."""
    return [_listed(v) for v in value] if isinstance(value, tuple) else value


def _sink(h: SinkHit | None) -> dict[str, Any] | None:
    if h is None:
        return None
    out: dict[str, Any] = {"name": h.name, "kind": h.kind, "provider": h.provider,
                           "file": h.file, "line": h.line, "called_from": h.function,
                           "rule": h.rule}  # fmt: skip
    if h.within:
        out["within"] = h.within
    if h.args:  # what the rule asks to show of the call (a fused MoE kernel's routing method)
        out["args"] = [{"name": n, **valued(v, o, data)} for n, v, o, data in h.args]
    return out


def _decision(d: Decision) -> dict[str, Any]:
    out: dict[str, Any] = {"file": d.file, "line": d.line, "function": d.function,
                           "condition": d.text, "value": d.value}  # fmt: skip
    if d.parts:
        out["parts"] = [{"condition": p.text, "value": p.value} for p in d.parts]
    if d.inputs:
        out["inputs"] = [{"expr": i.text, **valued(i.value, i.origins, i.data)}
                         for i in d.inputs]  # fmt: skip
    if d.reason:
        out["undecided_because"] = d.reason
    return out


def stop_dict(s: Stop) -> dict[str, Any]:
    out: dict[str, Any] = {"step": s.step, "file": s.file, "line": s.line,
                           "function": s.function, "exception": s.exception,
                           "message": s.message, "implicit": s.implicit,
                           "statement": s.statement}  # fmt: skip
    if s.raised and s.raised != s.message:
        out["message_raised"] = s.raised
    out["guard"] = _decision(s.guard) if s.guard is not None else None
    return out


def _path(
    p: TracedPath, selected: bool, also: int, ways: tuple[tuple[SinkHit, ...], ...]
) -> dict[str, Any]:
    """A reported path: the group's representative, with the experts every member's ways
    through the experts layer launch (`ways`)."""
    return {
        "selected": selected,
        "sink": _sink(p.sink),
        "kernels": [_sink(k) for k in p.kernels],
        # what else the path launches on the GPU (post-processing of the ids), and what the
        # experts layer launches handed the router's result: every way through it, or some
        "launches": [_sink(k) for k in p.launches],
        "experts": _experts(ways),
        "outcome": p.outcome,
        "stopped": p.stopped or None,
        "raised": _raised(p),
        "equivalent_paths": also,
        "frames": [
            {
                "function": f.function,
                "file": f.file,
                "line": f.line,
                "called_at": f"{f.call_file}:{f.call_line}" if f.call_file else None,
                "decorators": list(f.decorators),
            }
            for f in p.frames
        ],
        "decisions": [_decision(d) for d in p.decisions],
        "setup_decisions": [_decision(d) for d in _dedupe(p.setup)],
        "handoff": (
            {"to": p.handoff[0], "frame": p.handoff[1], "decision": p.handoff[2]}
            if p.handoff
            else None
        ),
    }


def _raised(p: TracedPath) -> dict[str, Any] | None:
    """What a path that ends in a raise raises, and where (None for a path that returns)."""
    if p.outcome != "raise":
        return None
    at = p.raised_at or (p.end.raised_at if p.end is not None else None)
    file, line, function = at if at else (None, None, None)
    return {"exception": p.result, "file": file, "line": line, "function": function}


def traced_past(blockers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The steps that raise after the first: the server stops at the first; these were traced
    past it, on what it left unfinished (perhaps only its consequence)."""
    return [b for b in blockers if b["kind"] == "raises"][1:]


def way_text(way: dict[str, Any], code: Callable[[str], str] = str) -> str:
    """A way out's flags, and the given flags they replace: `--ep 4 (in place of --ep
    8)`; `code` marks each runnable part (markdown's code spans)."""
    text = code(" ".join(way.get("flags", ())))
    replaces = way.get("replaces") or ()
    return text + (f" (in place of {', '.join(code(r) for r in replaces)})" if replaces else "")


def raised_text(path: dict[str, Any]) -> str:
    """`raises ZeroDivisionError at sglang/jit_kernel/utils.py:101 in _local_jit_source_hash`;
    "" for a path that does not raise."""
    r = path.get("raised")
    if not r:
        return ""
    where = f" at {r['file']}:{r['line']}" if r.get("file") else ""
    fn = f" in {r['function'].rpartition(':')[2]}" if r.get("function") else ""
    return f"raises {r['exception']}{where}{fn}"


def _experts(ways: tuple[tuple[SinkHit, ...], ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for h in dict.fromkeys(h for w in ways for h in w):
        got = _sink(h) or {}
        got["ways"] = "every" if all(h in w for w in ways) else "some"
        out.append(got)
    return out


def _dedupe(decisions: tuple[Decision, ...]) -> list[Decision]:
    seen: set[tuple[str, int, bool | None]] = set()
    out = []
    for d in decisions:
        key = (d.file, d.line, d.value)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def _group(
    paths: tuple[TracedPath, ...],
) -> list[tuple[TracedPath, int, tuple[tuple[SinkHit, ...], ...]]]:
    """One representative per distinct outcome: its router kernel; or, without one, why the
    path stopped, or the exception it raises and where (a way that raises is never one with a
    way that returns no kernel, nor with one raising elsewhere: each is a way the user meets).
    With it, how many others it stands for and every way through the experts layer the group's
    members took (a kernel every way launches is launched whichever member runs)."""
    groups: OrderedDict[tuple[object, ...], list[TracedPath]] = OrderedDict()
    for p in paths:
        ends = () if p.sink else (p.outcome, p.result if p.outcome == "raise" else "",
                                  (p.raised_at or ("", 0))[:2])  # fmt: skip
        key = (p.sink.name if p.sink else "", p.sink.kind if p.sink else "", p.stopped, *ends)
        groups.setdefault(key, []).append(p)
    reps = []
    for members in groups.values():
        best = min(members, key=lambda m: len(m.undecided()))
        ways = tuple(dict.fromkeys(w for m in members for w in m.experts))
        reps.append((best, len(members) - 1, ways))
    return reps


def dispatch_dict(d: Dispatch) -> dict[str, Any]:
    reps = _group(d.paths)
    single = len(reps) == 1 and not reps[0][0].stopped
    decided = single and not d.incomplete
    if d.stops:  # a step the server runs raises on every way, certainly: it does not get here
        status = "blocked"
    elif decided:
        status = "selected"
    elif single:
        status = "provisional"  # one path, but set-up the facts rest on did not finish
    else:
        status = "forked" if len(reps) > 1 else "unknown"
    undecided: dict[tuple[str, int], dict[str, Any]] = {}
    if not decided:
        setup = [(dec, {"phase": "server arguments"}) for dec in d.setup_undecided]
        for dec, extra in [*setup, *((dec, {}) for p, _, _ in reps for dec in p.undecided())]:
            undecided.setdefault((dec.file, dec.line), {
                "file": dec.file, "line": dec.line, "condition": dec.text,
                "undecided_because": dec.reason, **extra,
            })  # fmt: skip
    router = None
    if d.router is not None:
        router = {k: valued(v, o, data) for k, (v, o, data) in d.router.settings.items()}
    return {
        "status": status,
        "model_class": d.site.model_class.qualname if d.site else None,
        "block_class": d.site.block_class.qualname if d.site else None,
        "construction_chain": list(d.site.chain) if d.site else [],
        "router": router,
        "paths": [_path(p, decided, also, ways) for p, also, ways in reps],
        "undecided": list(undecided.values()),
        "incomplete": list(d.incomplete),
        "weights": list(d.weights),
        "assumptions": [
            {"kind": a.kind, "name": a.name, "value": a.value, "source": a.source}
            for a in d.assumptions
        ],
        "notes": list(d.notes),
        # set-up or decode steps every way through which reaches a `raise` statement
        "stops": [stop_dict(s) for s in d.stops],
        "server_args": {
            name: valued(value, origins, data) for name, value, origins, data in d.server_args
        },
    }


def build_report(
    spec: RoutingSpec,
    dep: Deployment | None = None,
    dispatch: Dispatch | None = None,
    index: Index | None = None,
) -> dict[str, Any]:
    """The whole report: model facts, and with a framework the deployment and dispatch.

    `index` is the source the dispatch was traced on; the verdict reads the same one (without
    it the verdict reopens the source named in the report)."""
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION,
                           "tool": {"name": "routescope", "version": __version__}}  # fmt: skip
    doc.update(spec_dict(spec))
    if dep is not None and dispatch is not None:
        g = dep.gpu
        doc["deployment"] = {
            "framework": dispatch.framework, "version": dispatch.version, "source": dispatch.source,
            "gpu": {"family": g.family, "device": g.device, "name": g.device_name,
                    "capability": list(g.capability)},
            "tp": dep.tp, "ep": dep.ep,
            "quant": dep.quant or spec.quantization.value or "bf16",
            "server_args": dict(sorted(dep.server_args.items())),
            "env": dict(sorted(dep.env.items())),
            "packages": dict(sorted(dep.packages.items())),
        }  # fmt: skip
        doc["dispatch"] = dispatch_dict(dispatch)
        from routescope.verdict import build_verdict

        doc["verdict"] = build_verdict(doc, index)
    return doc
