"""Report -> Markdown: summary, topology, decisions, the selected path (Mermaid), the verdict."""

from __future__ import annotations

from collections.abc import Mapping
from textwrap import dedent
from typing import Any

from routescope.render.mermaid import flowchart
from routescope.report import (
    answer_path,
    experts_text,
    sink_args_text,
    sink_label,
    traced_past,
    way_text,
)

_WORD = {True: "true", False: "false", None: "unknown"}


def _one_line(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").replace("`", "'")


def cell(text: Any) -> str:
    """Text safe inside a Markdown table cell, read as written: a dunder name
    (`__post_init__`) is not bold."""
    return _one_line(text).replace("__", "\\_\\_")


def code(text: Any) -> str:
    return f"`{_one_line(text)}`"


def verdict_word(v: dict[str, Any] | None) -> str:
    if v is None:
        return "no verdict"
    return {True: "insertable", False: "not insertable", None: "undecided"}[v["insertable"]]


def deployment_line(doc: dict[str, Any]) -> str:
    dep = doc["deployment"]
    return (
        f"{dep['framework']} {dep['version'] or '(checkout)'} · {dep['gpu']['family']} "
        f"({dep['gpu']['name']}) · TP{dep['tp']}{given_options(dep)} · {dep['quant']}"
    )


def given_options(dep: dict[str, Any]) -> str:
    """What the deployment was given beyond its GPU, TP and quantization (each changes the
    answer, so every heading names it): ` · EP8 · set k=v · env K=V · package p=false`."""
    parts = [f"EP{dep['ep']}"] if dep.get("ep") is not None else []
    parts += set_env_packages(dep.get("server_args") or {}, dep.get("env") or {},
                              dep.get("packages") or {})  # fmt: skip
    return "".join(f" · {p}" for p in parts)


def set_env_packages(
    server_args: Mapping[str, Any], env: Mapping[str, str], packages: Mapping[str, bool]
) -> list[str]:
    """--set, --env and --package as a deployment's label names them: `set k=v`, `env K=V`,
    `package p=false`."""
    return [*(f"set {k}={v}" for k, v in server_args.items()),
            *(f"env {k}={v}" for k, v in env.items()),
            *(f"package {k}={'true' if v else 'false'}" for k, v in packages.items())]  # fmt: skip


def server_args_set(disp: dict[str, Any]) -> list[str]:
    """The reported server arguments that are not their class default, each with where it was
    set (the override that fired) or given (--set, --tp, --quant)."""
    out = []
    for name, arg in (disp.get("server_args") or {}).items():
        origins = [o for o in arg["origins"] if not o.endswith(" default")]
        if not origins and any(o.endswith(" default") for o in arg["origins"]):
            continue
        where = f" ({', '.join('/'.join(o.split('/')[-2:]) for o in origins)})" if origins else ""
        out.append(f"{name}={arg['repr']}{where}")
    return out


def _summary(doc: dict[str, Any]) -> list[str]:
    out = [f"- **Model:** {code(doc['model']['ref'])} ({doc['topology']})"]
    if "deployment" in doc:
        disp, v = doc["dispatch"], doc.get("verdict")
        out.append(f"- **Deployment:** {deployment_line(doc)}")
        out.append(f"- **Dispatch:** {disp['status']} ({len(disp['paths'])} path(s))")
        past = traced_past(doc.get("blockers") or [])
        for b in doc.get("blockers") or []:  # what stops it, first
            way = b.get("way_out") or {}
            later = any(b is x for x in past)
            label = "Past it, raises too" if later else "Blocked"
            said = f"; way out: {way_text(way, code)}" if way.get("flags") and not later else ""
            out.append(f"- **{label}:** {cell(b['what'])}{said}")
        for text in disp.get("weights", []):  # said, not decided: loading is not traced
            out.append(f"- **Weights:** {cell(text)}")
        if disp["block_class"]:
            out.append(f"- **Router built by:** {code(disp['block_class'])}")
        changed = server_args_set(disp)
        if changed:
            out.append("- **Server arguments set:** " + ", ".join(cell(c) for c in changed))
        sink = disp["paths"][0]["sink"] if disp["status"] == "selected" else None
        if sink:
            given = sink_args_text(sink)
            out.append(f"- **Routing kernel:** {code(sink['name'])} ({sink_label(sink)}), "
                       f"called at {code(sink['file'] + ':' + str(sink['line']))}"
                       + (f", given {cell(given)}" if given else ""))  # fmt: skip
        launched = experts_text(disp["paths"][0], limit=6) if sink else ""
        if launched:
            out.append(f"- **Experts launch:** {cell(launched)}")
        if v is not None:
            out.append(f"- **OEA:** {verdict_word(v)}: {v['why']}")
    return out


def _blockers(blockers: list[dict[str, Any]]) -> list[str]:
    """Each blocker: what, where, why, the evidence, and the way out with the path it reaches."""
    out: list[str] = []
    for b in blockers:
        out += [f"**{cell(b['what'])}** ({b['kind']})", "",
                f"- **Where:** {code(b['where'])}", f"- **Why:** {cell(b['why'])}",
                "- **Evidence:**", *(f"  - {code(e)}" for e in b["evidence"])]  # fmt: skip
        way = b.get("way_out") or {}
        if way.get("flags"):
            sink = way.get("sink") or {}
            router = way.get("router") or {}
            reached = ", ".join(f"{k} {code(v)}" for k, v in router.items())
            caveat = f" ({cell(way['not_checked'])})" if way.get("not_checked") else ""
            out.append(f"- **Way out:** {way_text(way, code)}: the trace then selects "
                       f"{code(sink.get('name', '?'))} ({sink_label(sink) if sink else '?'})"
                       + (f", {reached}" if reached else "") + ", with no blocker"
                       + caveat)  # fmt: skip
        elif b.get("way_out") is None:
            out.append("- **Way out:** not searched")
        else:
            out.append("- **Way out:** none found" + (": each change tried is below" if
                                                      way.get("tried") else ""))  # fmt: skip
        for t in way.get("tried", ()):
            out.append(f"  - tried {cell(t)}")
        out.append("")
    return out


def _topology(doc: dict[str, Any]) -> list[str]:
    out = ["| field | value | from |", "|---|---|---|"]
    for name, f in doc["routing"].items():
        origin = f["origin"] + (f": {f['key']}" if f.get("key") else "")
        out.append(f"| {name} | {code(f['value'])} | {cell(origin)} |")
    return out


def _decisions(path: dict[str, Any]) -> list[str]:
    """The path's decisions in order, each guard and outcome once (a guard a loop or a
    repeated call evaluates again is counted, not repeated)."""
    seen: dict[tuple[str, int, Any], list[Any]] = {}
    for d in path["decisions"]:
        key = (d["file"], d["line"], d["value"])
        if key in seen:
            seen[key][1] += 1
        else:
            seen[key] = [d, 1]
    out = ["| where | condition | value |", "|---|---|---|"]
    for d, times in seen.values():
        where = f"{d['file'].rsplit('/', 1)[-1]}:{d['line']}"
        value = _WORD[d["value"]]
        if d["value"] is None:
            value += f" ({cell(d.get('undecided_because', ''))})"
        again = f" (×{times})" if times > 1 else ""
        out.append(f"| {where} | {code(d['condition'][:140])} | **{value}**{again} |")
    return out


def _point(p: dict[str, Any]) -> list[str]:
    out = [
        f"Insert in {code(p['function'])} ({p['file']}), after line {p['insert_after_line']}:",
        "",
    ]
    out += ["```python", f"# {p['file']}:{p['before']['line']}-{p['before']['end_line']}"]
    out.append(p["before"]["text"])
    out.append("# >>> OEA goes here <<<")
    if p["after"] is not None:
        for s in p["skipped"]:
            out.append(f"# (line {s['line']}, {s['because']}: {s['text']})")
        out.append(f"# {p['file']}:{p['after']['line']}")
        out.append(p["after"]["text"])
    out.append("```")
    if p["post_processing"]:
        calls = ", ".join(f"{code(c['call'])} (line {c['line']})" for c in p["post_processing"])
        out += ["", f"Post-processing after the point: {calls}."]
    return out


def _verdict(v: dict[str, Any]) -> list[str]:
    out = [f"**{verdict_word(v)}.** {v['why']}", ""]
    if v.get("insertion_point"):
        out += [*_point(v["insertion_point"]), ""]
    if v.get("switch"):
        out += [*_switch(v["switch"]), ""]
    if v.get("constraints"):
        out += ["| id | constraint | finding | evidence |", "|---|---|---|---|"]
        for c in v["constraints"]:
            ev = "<br>".join(cell(e) for e in c["evidence"])
            out.append(f"| {c['id']} | {cell(c['title'])} | {cell(c['finding'])} | {ev} |")
        out.append("")
    if v.get("sketch"):
        out += ["Sketch of the inserted code:", "", "```python", dedent(v["sketch"]), "```", ""]
    for i, a in enumerate(v.get("paths", []), 1):
        out += [f"#### Path {i}: {verdict_word(a)}", "", *_verdict({**a, "paths": []})]
    return out


def _switch(s: dict[str, Any]) -> list[str]:
    example = f", e.g. {code(str(s['flag']) + ' ' + str(s['suggest']))}" if s["suggest"] else ""
    excluded = ", ".join(code(x) for x in s["excluded"])
    return [
        f"- **Switch:** {code(s['flag'] or '?')} (now {code(s['current'])}; chosen at "
        f"{s['chosen_by']['file']}:{s['chosen_by']['line']})",
        f"- **Decomposed path:** any value but {excluded}{example}",
        f"- **Gives up:** {s['gives_up']}",
    ]


def render_section(doc: dict[str, Any], level: int = 2) -> str:
    """One deployment's report as Markdown, headings starting at `level`."""
    h = "#" * level
    out = [*_summary(doc), "", f"{h} Routing topology", "", *_topology(doc), ""]
    disp = doc.get("dispatch")
    if disp is not None:
        selected = answer_path(disp) if disp["status"] in ("selected", "blocked") else None
        out += [f"{h} Decode path", ""]
        if disp["status"] == "blocked" and selected is not None:
            out += ["The deployment stops before decode (see Blockers); past what stops it, "
                    "this path would run:", ""]  # fmt: skip
        if selected is not None:
            out += ["```mermaid", flowchart(selected, doc.get("verdict")), "```", ""]
            out += [f"{h}# Decisions on the path", "", *_decisions(selected), ""]
        else:
            out += [f"No single path is selected ({disp['status']}); what would decide it:", ""]
            out += [f"- {u['file']}:{u['line']} {code(u['condition'][:120])}: "
                    f"{cell(u['undecided_because'])}" for u in disp["undecided"]]  # fmt: skip
            out.append("")
        if doc.get("blockers"):
            out += [f"{h} Blockers", "", *_blockers(doc["blockers"])]
        if doc.get("verdict") is not None:
            out += [f"{h} OEA verdict", "", *_verdict(doc["verdict"]), ""]
        if disp.get("assumptions"):
            out += [f"{h} What the answer assumes", "", *_assumptions(disp["assumptions"]), ""]
        if disp.get("notes"):  # (what did not finish, the config class's changes, ...)
            out += [f"{h} Notes", "", *[f"- {cell(n)}" for n in disp["notes"]], ""]
    return "\n".join(out).rstrip() + "\n"


def _assumptions(items: list[dict[str, Any]]) -> list[str]:
    """The facts the trace read that the code cannot show: one row per kind, value and source,
    naming every fact it covers (37 unset variables are one row, not 37)."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for a in items:
        groups.setdefault((a["kind"], a["value"], a["source"]), []).append(a["name"])
    out = ["| kind | value | from | names |", "|---|---|---|---|"]
    for (kind, value, source), names in groups.items():
        shown = ", ".join(code(n) for n in names)
        out.append(f"| {kind} | {cell(value)} | {cell(source)} | {shown} |")
    return out


def render(doc: dict[str, Any]) -> str:
    """A whole Markdown document for one report."""
    title = doc["model"]["ref"]
    if "deployment" in doc:
        title += (
            f" on {doc['deployment']['framework']} {doc['deployment']['version'] or ''}".rstrip()
        )
    return f"# routescope: {title}\n\n" + render_section(doc)
