"""Report -> the answer first: at most 15 lines a user reads in ten seconds (the deployment, the
router kernel and the decision that chose it, the OEA verdict, for a fork what decides it);
`--explain` prints the details after it, `--brief` one line per answer."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from routescope.render.markdown import given_options, verdict_word
from routescope.render.text_report import short_path
from routescope.report import (
    answer_path,
    deciding_decision,
    experts_text,
    sink_label,
    traced_past,
    way_text,
)

SUMMARY_LINES = 15
# the constraints that change what an OEA insertion must do, first
_FIRST = ("OEA101", "OEA102", "OEA106", "OEA108", "OEA105")


def _deployment(doc: dict[str, Any]) -> str:
    dep = doc["deployment"]
    quant = dep["quant"] or (doc.get("quantization") or {}).get("scheme") or "bf16"
    return (
        f"{doc['model']['ref']} · {dep['framework']} {dep['version'] or '(checkout)'} · "
        f"{dep['gpu']['family']} ({dep['gpu']['device']}) · TP{dep['tp']}{given_options(dep)} · "
        f"{quant}"
    )


def _cut(text: str, width: int) -> str:
    """`text` in `width` columns, cut at a word with an ellipsis."""
    if len(text) <= width:
        return text
    return text[: max(width - 1, 10)].rsplit(" ", 1)[0] + "…"


def _would_decide(disp: dict[str, Any], n: int, width: int) -> list[str]:
    """What decides a fork: what the user can set first (the server arguments), then the rest."""
    undecided = sorted(disp["undecided"], key=lambda u: u.get("phase") != "server arguments")
    out = []
    for u in undecided[:n]:
        where = f"  {short_path(u['file'])}:{u['line']}  "
        out.append(_cut(f"{where}{u['condition']}  ({u['undecided_because']})", width))
    return out


def _no_kernel(path: dict[str, Any]) -> str:
    """How a path without a router kernel ends: the exception it raises, or no kernel."""
    r = path.get("raised")
    return f"a raise ({r['exception']})" if r else "no kernel"


def _enum_name(value: str) -> str:
    """`TopKOutputFormat.STANDARD` -> `STANDARD`; any other text as it is."""
    return value.rsplit(".", 1)[-1] if value.replace(".", "").replace("_", "").isalnum() else value


def summary(doc: dict[str, Any], width: int = 100) -> list[Text]:
    """The answer in at most SUMMARY_LINES lines of `width` columns (a kernel name, a path,
    is never cut; prose is cut at a word)."""
    disp, verdict = doc["dispatch"], doc.get("verdict") or {}
    out = [Text(_deployment(doc), style="bold")]
    status = disp["status"]
    path = answer_path(disp)
    sink = path["sink"] if path else None
    if status == "blocked":  # what stops it comes first; the path past it after
        out.extend(_blockers(doc.get("blockers") or [], width))
    if status in ("selected", "provisional", "blocked") and path is not None:
        label = "past it" if status == "blocked" else status
        style = {"selected": "bold green", "blocked": "dim"}.get(status, "bold yellow")
        t = Text(f"{label}: ", style=style)
        if sink:
            t.append(f"{sink['name']} [{sink_label(sink)}]", style="magenta")
            t.append(f" at {short_path(sink['file'])}:{sink['line']}")
            caller = sink.get("called_from") or ""
            if sink.get("kind") == "torch" and caller and caller != sink["name"]:
                t.append(f" in {caller.rpartition(':')[2]}")  # a torch op: the router it is in
        else:
            t.append(path["stopped"] or "the router routes nothing here; the MoE kernel routes")
        out.append(t)
        d = deciding_decision(path)
        if d is not None:
            word = {True: "true", False: "false", None: "unknown"}[d["value"]]
            where = f"  chosen at {short_path(d['file'])}:{d['line']}  "
            tail = f" → {word}"
            cond = _cut(d["condition"], width - len(where) - len(tail))
            out.append(Text(where + cond + tail, style="dim"))
    elif status == "forked":
        ends = sorted({(p["sink"] or {}).get("name") or _no_kernel(p) for p in disp["paths"]})
        out.append(Text(f"forked: {len(disp['paths'])} paths, ending in " + ", ".join(
            e.split(":")[-1] for e in ends), style="bold yellow"))  # fmt: skip
        out.append(Text("would decide:", style="yellow"))
        out.extend(Text(line, style="yellow") for line in _would_decide(disp, 4, width))
    else:
        why = path["stopped"] if path else "no path"
        out.append(Text(f"unknown: {why[:140]}", style="bold red"))
    router = disp.get("router") or {}
    shown = [f"{k}={_cut(_enum_name(router[k]['repr']), 24)}"
             for k in ("top_k", "output_format", "runner_backend") if k in router]  # fmt: skip
    if shown:
        past = " (past it)" if status == "blocked" else ""  # the deployment never gets there
        out.append(Text(f"router{past}: " + ", ".join(shown)))
    launched = experts_text(path, brief=True) if path and status == "selected" else ""
    if launched:
        out.append(Text(_cut(f"experts: {launched}", width)))
    stops = any(b["kind"] == "raises" for b in doc.get("blockers") or [])
    if disp["incomplete"] and not stops:  # a step that raised everywhere is a blocker below
        out.append(Text(_cut(f"did not finish: {disp['incomplete'][0]}", 3 * width),
                        style="yellow"))  # fmt: skip
    if status != "blocked":
        out.extend(_blockers(doc.get("blockers") or [], width))
    for text in disp.get("weights", [])[:1]:  # (not decided: loading is not traced)
        out.append(Text(_cut(f"weights: {text}", 2 * width), style="yellow"))
    if verdict:
        out.extend(_verdict(verdict, width))
    return [*out[: SUMMARY_LINES - 1], Text("details: --explain", style="dim")]


def _blockers(blockers: list[dict[str, Any]], width: int) -> list[Text]:
    """What stops the deployment, where, and the flag change that reaches a path that runs."""
    out: list[Text] = []
    past = traced_past(blockers)  # counted, not shown
    shown = [b for b in blockers if not any(b is x for x in past)]
    for b in shown[:2]:
        if b["kind"] == "raises":  # a step that raises on every way: the deployment stops
            out.append(Text(_cut(f"BLOCKED: {b['what']}", 2 * width), style="bold red"))
            line = f" in `{b['statement']}`" if b.get("statement") else ""
            after = f", after {b['after']}" if b.get("after") else ""
            out.append(Text(_cut(f"  at {short_path(b['where'])}{line}{after}", 2 * width)))
            continue
        kernel = str(b.get("kernel", "")).rsplit(".", 1)[-1]
        head = f"BLOCKED: {kernel} [{b.get('provider', '')}] has no {b.get('target', '')} kernels"
        out.append(Text(_cut(head, width), style="bold red"))
        version = str(b.get("pinned", "")).partition("==")[2]
        out.append(Text(_cut(f"  at {short_path(b['where'])}; {b.get('provider', '')} {version}"
                             f" has {', '.join(b.get('runs_on', ()))}", width)))  # fmt: skip
    if past:
        out.append(Text(f"  past it, {len(past)} more step(s) raise (--explain)", style="dim"))
    blockers = [b for b in blockers if b.get("way_out") is not None]  # those searched
    way = (blockers[0].get("way_out") or {}) if blockers else {}
    if blockers and way.get("flags"):
        sink = way.get("sink") or {}
        runner = _enum_name(str((way.get("router") or {}).get("runner_backend", "")))
        goes = ", ".join(x for x in (runner,
                                     sink.get("name", "").split(":")[-1]) if x)  # fmt: skip
        out.append(Text(_cut(f"  way out: {way_text(way)} → {goes}", width),
                        style="bold green"))  # fmt: skip
    elif blockers:
        tried = way.get("tried", ())
        said = (f"{len(tried)} change(s) tried, none selected without a blocker "
                "(--format markdown lists them)") if tried else (
                "no value the release's guards compare against")  # fmt: skip
        out.append(Text(_cut(f"  no way out found: {said}", 2 * width), style="yellow"))
    return out


def _verdict(v: dict[str, Any], width: int) -> list[Text]:
    if not v.get("insertable"):  # not insertable, or undecided (a fork: each path's own)
        why = _cut(f"OEA: {verdict_word(v)}: {v.get('why', '')}", 2 * width)
        out = [Text(why, style="bold yellow")]
        sw = v.get("switch") or {}
        if sw.get("flag") and sw.get("suggest"):  # what to set to get the router back
            now = f" (now {sw['current']})" if sw.get("current") else ""
            out.append(Text(_cut(f"  switch: {sw['flag']} {sw['suggest']}{now}, which gives up "
                                 f"{sw.get('gives_up', '')}", width)))  # fmt: skip
        return out
    point = v.get("insertion_point") or {}
    fn = str(point.get("function", "")).split(":")[-1]
    out = [Text(f"OEA: insertable after {short_path(point.get('file', ''))}:"
                f"{point.get('insert_after_line', point.get('line', ''))} in {fn}",
                style="bold green")]  # fmt: skip
    by_id = {c["id"]: c for c in v.get("constraints", [])}
    for cid in _FIRST:
        c = by_id.get(cid)
        if c is not None and len(out) < 5:
            out.append(Text(_cut(f"  {cid} {c['finding']}", width)))
    return out


def brief(doc: dict[str, Any]) -> str:
    """One line: model, deployment, status, kernel, OEA."""
    disp, verdict = doc["dispatch"], doc.get("verdict") or {}
    path = answer_path(disp) if disp["status"] in ("selected", "blocked") else None
    kernel = (
        f"{path['sink']['name']} [{sink_label(path['sink'])}]"
        if path and path["sink"]
        else f"{len(disp['paths'])} paths"
    )
    oea = f"OEA {verdict_word(verdict)}" if verdict else "OEA: no verdict"
    blocked = doc.get("blockers") or []
    stop = f"; BLOCKED: {blocked[0]['what']}" if blocked else ""
    return f"{_deployment(doc)}: {disp['status']}: {kernel}; {oea}{stop}"
