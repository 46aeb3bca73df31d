"""A timeline as text (the terminal), markdown (a table, then each change) or JSON."""

from __future__ import annotations

from typing import Any

from routescope.render.markdown import cell, code, given_options


def _span(versions: list[str]) -> str:
    return versions[0] if len(versions) == 1 else f"{versions[0]} .. {versions[-1]}"


def _answer(g: dict[str, Any]) -> str:
    if g["status"] == "error":
        return f"error: {g.get('error', '')}"
    router = ", ".join(f"{k}={v}" for k, v in g["router"].items())
    shown = f"{g['sink']}" + (f" ({router})" if router else "")
    # a kernel by its short name; a step that raises as it is said ("ValueError in ...")
    stops = ", ".join(b if " " in b else b.rsplit(".", 1)[-1] for b in g["blockers"])
    if g["status"] == "blocked":  # what stops it first; the path past it is what would follow
        return f"blocked: {stops}; past it: {shown}"
    return f"{g['status']}: {shown}" + (f"; BLOCKED: {stops}" if stops else "")


def _word(value: bool | None) -> str:
    return {True: "true", False: "false", None: "unknown"}[value]


def _decision(d: dict[str, Any]) -> str:
    return f"{' '.join(d['condition'].split())} → {_word(d['value'])}  ({d['at']})"


def _field(v: Any) -> str:
    """A field's value as a reader writes it: the router's settings as k=v, nothing as none."""
    if isinstance(v, dict):
        v = ", ".join(f"{k}={x}" for k, x in v.items())
    elif isinstance(v, list):
        v = ", ".join(map(str, v))
    return str(v) if v not in ("", None) else "none"


def _change_lines(c: dict[str, Any], indent: str = "    ") -> list[str]:
    out: list[str] = []
    errored = [v for v, side in ((c["from_version"], "before"), (c["to_version"], "after"))
               if c[side]["status"] == "error"]  # fmt: skip
    for f in c["fields"]:
        if f["field"] == "error":
            continue  # said with the release's answer above
        out.append(f"{indent}{f['field']}: {_field(f['before'])} → {_field(f['after'])}")
    for side, version in (("before", c["from_version"]), ("after", c["to_version"])):
        d = (c.get("chosen") or {}).get(side)
        if d is not None:  # the branch that chose this release's kernel
            out.append(f"{indent}{version} chose its kernel at {_decision(d)}")
        stop = (c.get("stopped") or {}).get(side)
        if stop is not None:  # where the release stops, and the guard it stops after
            after = f", after {stop['after']}" if stop["after"] else ""
            out.append(f"{indent}{version} stops at {stop['at']}{after}")
    for block in c["decisions"]:
        for d in block["before"]:
            out.append(f"{indent}- {c['from_version']}: {_decision(d)}")
        for d in block["after"]:
            out.append(f"{indent}+ {c['to_version']}: {_decision(d)}")
    if errored:
        out.append(f"{indent}({' and '.join(errored)} could not be traced: its error is above)")
    elif not c["decisions"]:
        out.append(f"{indent}(no decision on the two paths differs: the change is in what the "
                   "path reads, not in a guard)")  # fmt: skip
    return out


def _gpu(dep: dict[str, Any]) -> str:
    """The GPU as inspect shows it: its family and device (`sm121 (gb10)` for `dgx-spark`)."""
    prof = dep.get("gpu_profile")
    return f"{prof['family']} ({prof['device']})" if prof else str(dep["gpu"])


def text(t: dict[str, Any]) -> str:
    dep = t["deployment"]
    head = f"{t['model']} · {t['framework']} · {_gpu(dep)} · TP{dep['tp']}{given_options(dep)}"
    out = [head, ""]
    for g in t["groups"]:
        out.append(f"{_span(g['versions']):<20} {_answer(g)}")
    for c in t["changes"]:
        out += ["", f"{c['from_version']} → {c['to_version']}:", *_change_lines(c)]
    return "\n".join(out) + "\n"


def markdown(t: dict[str, Any]) -> str:
    dep = t["deployment"]
    out = [f"# routescope timeline: {code(t['model'])} on {t['framework']}", "",
           f"{_gpu(dep)}, TP{dep['tp']}{given_options(dep)}"
           + (f" · {dep['quant']}" if dep.get("quant") else ""),
           "", "| releases | status | router kernel | top_k | output format | runner | blockers |",
           "|---|---|---|---|---|---|---|"]  # fmt: skip
    for g in t["groups"]:
        r = g["router"]
        out.append(
            f"| {_span(g['versions'])} | {g['status']} | "
            f"{cell(g['sink'] or g.get('error', ''))} | {r.get('top_k', '')} | "
            f"{r.get('output_format', '')} | {r.get('runner_backend', '')} | "
            f"{cell(', '.join(g['blockers'])) if g['blockers'] else ''} |"
        )
    for c in t["changes"]:
        out += ["", f"## {c['from_version']} → {c['to_version']}", ""]
        for f in c["fields"]:
            out.append(f"- **{f['field']}:** {cell(_field(f['before']))} → "
                       f"{cell(_field(f['after']))}")  # fmt: skip
        for side, version in (("before", c["from_version"]), ("after", c["to_version"])):
            d = (c.get("chosen") or {}).get(side)
            if d is not None:
                cond = code(" ".join(d["condition"].split()))
                out.append(f"- {version} chose its kernel at {code(d['at'])}: {cond} → "
                           f"**{_word(d['value'])}**")  # fmt: skip
            stop = (c.get("stopped") or {}).get(side)
            if stop is not None:
                after = f", after {stop['after']}" if stop["after"] else ""
                out.append(f"- {version} stops at {code(stop['at'])}{cell(after)}")
        for block in c["decisions"]:
            for side, version in (("before", c["from_version"]), ("after", c["to_version"])):
                for d in block[side]:
                    out.append(f"- {version}: {code(' '.join(d['condition'].split()))} → "
                               f"**{_word(d['value'])}** at {code(d['at'])}")  # fmt: skip
    return "\n".join(out) + "\n"
