"""A blocked deployment's way out: the smallest flag change that reaches a path with no blocker,
found by tracing again with the values the release's own guards compare the kernel-choosing
arguments against (the rules' `server_args.chooses`), nearest first; past a step that raises,
first what its message tells the user to set."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from routescope import status
from routescope.ahead import TracedAhead
from routescope.analysis.engine.state import Decision
from routescope.analysis.phases.deployment import Deployment, ep_argument
from routescope.api import parse_assignments
from routescope.errors import RoutescopeError
from routescope.verdict.switch import way_out

WAY = "trace of a changed deployment (a way out)"  # (the phase a trial's timings fall in)
MAX_TRIES = 5  # traces a way-out search may cost (each is a whole trace): every preferred value
# what a way out found by tracing cannot promise: the trace builds the layers without loading
# weights, so a failure there (a checkpoint's shapes the chosen runner cannot take) is not seen
NOT_CHECKED = ("weight loading is not traced: a failure there (a checkpoint shape the runner "
               "it leads to cannot take) would not show")  # fmt: skip


def _field(node: ast.expr) -> str | None:
    """The argument an expression reads: `args.name`, `name`, or `args_dict["name"]` (a
    release's dict of the server arguments, as SGLang's global_server_args_dict)."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        key = node.slice.value
        return key if isinstance(key, str) else None
    return None


def _literals(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [x for e in node.elts for x in _literals(e)]
    return []


def compared(text: str, fields: tuple[str, ...]) -> list[tuple[str, str]]:
    """(field, value) for each string a condition compares one of `fields` against
    (`x.f == "v"`, `x.f in ("v", "w")`, either side)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return []
    out: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            continue
        if not isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
            continue
        left, right = node.left, node.comparators[0]
        for a, b in ((left, right), (right, left)):
            name = _field(a)
            if name in fields:
                out.extend((name, v) for v in _literals(b))
    return out


def candidates(
    choosing: tuple[Decision, ...], fields: tuple[str, ...], current: dict[str, str]
) -> list[tuple[str, str]]:
    """The (argument, value) changes worth trying, in order: values compared in a guard that
    reads two or more kernel-choosing arguments together (an override that picks a runner for a
    quantization) first, then the rest, each in the order the release evaluated them; the value
    an argument already has is no change."""
    combined: list[tuple[str, str]] = []
    single: list[tuple[str, str]] = []
    for d in choosing:
        pairs = compared(d.text, fields)
        target = combined if len({f for f, _ in pairs}) > 1 else single
        target.extend(pairs)
    out: list[tuple[str, str]] = []
    for name, value in dict.fromkeys([*combined, *single]):
        if current.get(name) not in (value, repr(value)):
            out.append((name, value))
    return out


def past_a_stop(
    guards: tuple[Decision, ...], arguments: dict[str, object], chooses: tuple[str, ...]
) -> list[tuple[str, str]]:
    """The server-argument changes worth trying to get past a step that raises, nearest guard
    first: a boolean argument a decided guard reads, flipped; another value a guard compares a
    kernel-choosing argument (`chooses`) against. Each is a candidate the trace again decides;
    other arguments' values (an attention backend) lead to code the trace does not follow, so
    a trace that passes could not promise the server starts."""
    out: list[tuple[str, str]] = []
    for d in guards:
        try:
            tree = ast.parse(d.text.strip(), mode="eval")
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            name = (
                _field(node) if isinstance(node, (ast.Attribute, ast.Name, ast.Subscript)) else None
            )
            current = arguments.get(name) if name else None
            if name and isinstance(current, bool):
                out.append((name, "false" if current else "true"))
        fields = tuple(a for a in chooses if isinstance(arguments.get(a), str))
        out.extend((f, v) for f, v in compared(d.text, fields) if arguments.get(f) != v)
    return list(dict.fromkeys(out))


# a change of an environment variable, as a way out's (name, value) names it: no server
# argument's name holds a colon
ENV = "env:"
# an environment variable a value came from, as the engine's origins name it: given with
# --env, or unset (its default in the source, or none)
_ENV_ORIGIN = re.compile(r"(?:--env |env )([A-Za-z_]\w*)(?:$| unset)")


def past_a_stop_env(guards: tuple[Decision, ...], env: dict[str, str]) -> list[tuple[str, str]]:
    """The environment changes worth trying to get past a step that raises: a decided guard
    read a boolean made from an environment variable (its default, or --env), so the
    variable set the other way ("1" for false, "0" for true: what `bool(int(...))` and
    `in ("1", "true")` both read so); a string made from one, another value the guard
    compares it against. Each is a candidate the trace again decides (vLLM 0.12.0's NVFP4
    MoE asserts `self.allow_flashinfer` for a non-gated activation, false by default
    because VLLM_USE_FLASHINFER_MOE_FP4 is unset)."""
    out: list[tuple[str, str]] = []
    for d in guards:
        for i in d.inputs:
            names = [m.group(1) for o in i.origins if (m := _ENV_ORIGIN.match(o))]
            kind, value = i.data
            if not names or kind != "constant":
                continue
            if isinstance(value, bool) or value is None:
                wanted = ["0" if value else "1"]
            elif isinstance(value, str):
                field = i.text.rsplit(".", 1)[-1]
                wanted = [v for _, v in compared(d.text, (field,)) if v != value]
            else:
                continue
            out.extend((ENV + n, w) for n in names for w in wanted if env.get(n) != w)
    return list(dict.fromkeys(out))


def past_a_split(
    guards: tuple[Decision, ...], arguments: dict[str, object], sharding: dict[str, str], tp: int
) -> list[tuple[str, str]]:
    """Past a step that raised on a size --tp or --ep split (each rank's share of an expert's
    width too narrow for a kernel's tiles; a topology check the sizes fail): the rules' other
    ways of sharding the experts (`sharding`: argument -> value, `@tp` standing for --tp), each
    a change the trace decides again. Only where a guard decided in the function that raised
    (the nearest first) read a value made from --tp or --ep."""
    near = [g for g in guards if g.function == guards[0].function] if guards else []
    if not any(o in ("--tp", "--ep") for g in near for i in g.inputs for o in i.origins):
        return []
    out: list[tuple[str, str]] = []
    for name, value in sharding.items():
        want = str(tp) if value == "@tp" else value
        if name in arguments and str(arguments[name]).lower() != want.lower():
            out.append((name, want))
    return out


# `name=value`, `--name=value` or `--name value` in an error message (the value maybe quoted)
# (each found from every word on: a lookahead, so that "use x=y" is read at "x" as well)
_SETTING = re.compile(
    r"(?<![\w-])(?=(--)?([A-Za-z][\w-]*\w)(\s*=\s*|\s+(?:to\s+)?)[`'\"]?([\w.-]*\w))"
)
_FLAG = re.compile(r"(?<![\w-])--([A-Za-z][\w-]*\w)(?![\w-]|\s*=)")


def advised(
    message: str, arguments: dict[str, object], chooses: tuple[str, ...]
) -> list[tuple[str, str]]:
    """The server-argument settings a stop's own message tells the user to make ("use
    moe_runner_backend=marlin on SM80+", "pass --moe-runner-backend triton", "set
    --moe-runner-backend to 'cutlass'", "add --disable-cuda-graph"): the name one of the
    release's arguments (dashes read as underscores), the value not the one it has; a value
    after a space only behind `--`, a bare `--flag` only for a boolean argument now false.
    As past_a_stop has it, a value for a string argument only where the argument chooses
    the kernels (`chooses`): the trace follows what that changes. The framework's own advice
    is tried first; the trace again decides whether it gets past the stop."""
    out: list[tuple[str, str]] = []
    for m in _SETTING.finditer(message):
        dashes, name, sep, value = m.groups()
        key = name.replace("-", "_")
        if key not in arguments or (not dashes and not sep.strip()):
            continue
        around = message[max(0, m.start() - 24) : m.end(4) + 24]
        if value.lower() in _WORDS or _NOT_ADVICE.search(around):
            continue  # a word of the sentence ("--x is not supported"), or what it refuses
        current = arguments[key]
        if isinstance(current, bool):
            if value.lower() in ("true", "false") and value.lower() != str(current).lower():
                out.append((key, value.lower()))
        elif key in chooses and str(current) != value:
            out.append((key, value))
    for m in _FLAG.finditer(message):
        key = m.group(1).replace("-", "_")
        around = message[max(0, m.start() - 24) : m.end() + 24]
        if (
            arguments.get(key) is False
            and not any(k == key for k, _ in out)
            and not (_NOT_ADVICE.search(around))
        ):
            out.append((key, "true"))
    return list(dict.fromkeys(out))[:MAX_ADVISED]


MAX_ADVISED = 2  # of a way-out search's MAX_TRIES traces, what a message's advice may take
# words of a sentence that follow a flag where no value does ("--x is not supported", "set --x
# to one of ...", "--x must be ...")
_WORDS = frozenset(("is", "are", "was", "be", "been", "must", "should", "can", "cannot", "may",
                    "will", "one", "not", "only", "no", "none", "requires", "required", "with",
                    "without", "and", "or", "if", "when", "for", "the", "a", "an", "this",
                    "that", "which", "it", "does", "do", "has", "have"))  # fmt: skip
# a setting the message refuses or retires rather than advises
_NOT_ADVICE = re.compile(r"\b(not|no longer|don't|deprecated|unsupported|requires|without)\b",
                         re.IGNORECASE)  # fmt: skip


def checkpoint_scheme(
    method: str | None, scheme: str | None, aliases: dict[str, str], quant_field: str
) -> list[tuple[str, str]]:
    """A deployment that stops where the checkpoint chose the quantization (no --quant): its
    scheme named as the framework names it (`nvfp4` -> `modelopt_fp4`, the rules' aliases),
    where that is another method than the checkpoint's own `quant_method`. The server's
    reading of a generic method may pick another config than the scheme's (SGLang 0.5.9 reads
    ModelOpt's `modelopt` as its FP8 config, which raises for an NVFP4 checkpoint); the trace
    again decides whether naming it gets past the stop."""
    named = aliases.get(scheme or "")  # (a scheme the rules give no name for: its label only)
    return [] if not quant_field or named is None or named == method else [(quant_field, named)]


def flag_text(name: str, value: str, quant_field: str) -> str:
    if name.startswith(ENV):
        return f"--env {name.removeprefix(ENV)}={value}"
    return f"--quant {value}" if name == quant_field else f"--set {name}={value}"


def in_place_of_ep(way: dict[str, Any], how: Any, dep: Deployment) -> dict[str, Any]:
    """A way out that sets the argument --ep sets (the rules' `expert_parallel`) says so with
    --ep where --ep takes it as is (a size argument: `--set ep_size=4` is `--ep 4`); a switch
    stays a --set. Given --ep, the way stands in its place (a --set of the argument beside --ep
    exits 2): `replaces` names the flag to drop."""
    target = ep_argument(how)
    if target is None:
        return way
    prefix = f"--set {target}="
    if isinstance(how, str):  # --ep N sets the size argument to N: the way out says --ep N
        way["flags"] = [
            f"--ep {f.removeprefix(prefix)}"
            if f.startswith(prefix) and f.removeprefix(prefix).isdigit() and int(f[len(prefix) :])
            else f
            for f in way.get("flags", ())
        ]
    sets = any(f.startswith(prefix) or f.startswith("--ep ") for f in way.get("flags", ()))
    if dep.ep is not None and sets:
        way["replaces"] = [f"--ep {dep.ep}"]
    return way


def changed(dep: Deployment, name: str, value: str, quant_field: str) -> Deployment:
    """`dep` with one argument changed, its value read as `--set` reads it (JSON where it
    parses: 8 an integer, true a boolean; else the string), or one environment variable set
    (`env:NAME`, as --env sets it)."""
    if name == quant_field:
        return replace(dep, quant=value)
    if name.startswith(ENV):
        return replace(dep, env={**dep.env, name.removeprefix(ENV): value})
    parsed = parse_assignments([f"{name}={value}"], "--set", literal=True)
    return replace(dep, server_args={**dep.server_args, **parsed})


def find_way_out(
    choosing: tuple[Decision, ...],
    fields: tuple[str, ...],
    quant_field: str,
    current: dict[str, str],
    dep: Deployment,
    retrace: Callable[[Deployment], dict[str, Any]],
) -> dict[str, Any]:
    """Trace again with each candidate until one is selected with no blocker. `retrace(dep)`
    returns the report of `dep` with its blockers filled in."""
    if dep.quant is not None:  # the user chose the quantization: the way out keeps it
        fields = tuple(f for f in fields if f != quant_field)
    return try_changes(candidates(choosing, fields, current), quant_field, dep, retrace)


def _attempt(
    name: str,
    value: str,
    quant_field: str,
    dep: Deployment,
    retrace: Callable[[Deployment], dict[str, Any]],
    tried: list[str],
) -> dict[str, Any] | None:
    """The report of `dep` with one argument changed; None (and why, in `tried`) when the
    change is refused (a value the release does not accept)."""
    status.show(f"tracing again with {flag_text(name, value, quant_field)} …")
    try:
        return retrace(changed(dep, name, value, quant_field))
    except RoutescopeError as exc:
        tried.append(f"{flag_text(name, value, quant_field)}: {exc.message}")
        return None


def try_changes(
    changes: list[tuple[str, str]],
    quant_field: str,
    dep: Deployment,
    retrace: Callable[[Deployment], dict[str, Any]],
) -> dict[str, Any]:
    """The first of `changes` (argument, value) whose trace is selected with no blocker, with
    what it leads to; else what each gave."""
    tried: list[str] = []
    if dep.quant is not None:
        changes = [(n, v) for n, v in changes if n != quant_field]
    planned = changes[:MAX_TRIES]
    with TracedAhead(retrace, _planned(dep, planned, quant_field), WAY) as ahead:
        for name, value in planned:
            flag = flag_text(name, value, quant_field)
            doc = _attempt(name, value, quant_field, dep, ahead, tried)
            if doc is None:
                continue
            outcome = doc["dispatch"]["status"]
            if outcome != "selected":  # and why, where a set-up or decode step did not finish
                why = next(iter(doc["dispatch"].get("incomplete") or ()), "")
                if len(why) > 200:
                    why = why[:200].rsplit(" ", 1)[0] + " …"
                tried.append(f"{flag}: {outcome}" + (f" ({why})" if why else ""))
                continue
            if doc.get("blockers"):
                tried.append(f"{flag}: blocked too ({doc['blockers'][0]['what']})")
                continue
            path = next(p for p in doc["dispatch"]["paths"] if p["selected"])
            router = doc["dispatch"].get("router") or {}
            return {
                "flags": [flag],
                "sink": path["sink"],
                "experts": [h["name"] for h in path.get("experts", ()) if h.get("ways") == "every"],
                "router": {
                    k: router[k]["repr"]
                    for k in ("top_k", "output_format", "runner_backend")
                    if k in router
                },
                "tried": tried,
                "not_checked": NOT_CHECKED,
            }
    return {"flags": [], "tried": tried}


def _planned(dep: Deployment, changes: list[tuple[str, str]], quant_field: str) -> list[Any]:
    """The deployments a search will trace, in order (None: a value refused before its trace)."""
    out: list[Any] = []
    for name, value in changes:
        try:
            out.append(changed(dep, name, value, quant_field))
        except RoutescopeError:
            out.append(None)
    return out


def switch_by_tracing(
    doc: dict[str, Any],
    fw: dict[str, Any] | None,
    current: dict[str, str],
    quant_field: str,
    dep: Deployment,
    retrace: Callable[[Deployment], dict[str, Any]],
) -> None:
    """A selected path that is not insertable (its kernel routes inside, or no statement binds
    the router's ids: the routing runs inside the experts' call) and whose guards name no
    switch: the rules' `switch.server_arg` set to each preferred value in turn, traced again;
    the first whose path is selected and insertable becomes the verdict's switch, with what
    it leads to as evidence (what each other value gave, too)."""
    verdict = doc.get("verdict") or {}
    rule = (fw or {}).get("switch") or {}
    arg = rule.get("server_arg")
    disp = doc["dispatch"]
    if (
        not arg
        or verdict.get("insertable") is not False
        or (verdict.get("switch") or {}).get("suggest")
        or disp["status"] != "selected"
        or not disp["paths"]
        or not disp["paths"][0]["sink"]
    ):
        return
    now = current.get(arg)
    tried: list[str] = []
    values = [v for v in rule.get("prefer", ()) if v != now][:MAX_TRIES]
    planned = _planned(dep, [(arg, v) for v in values], quant_field)
    with TracedAhead(retrace, planned, WAY) as ahead:
        for value in values:
            flag = flag_text(arg, value, quant_field)
            other = _attempt(arg, value, quant_field, dep, ahead, tried)
            if other is None:
                continue
            theirs = other.get("verdict") or {}
            if other["dispatch"]["status"] != "selected" or theirs.get("insertable") is not True:
                tried.append(f"{flag}: {other['dispatch']['status']}, insertable "
                              f"{str(theirs.get('insertable')).lower()}")  # fmt: skip
                continue
            sink = other["dispatch"]["paths"][0]["sink"] or {}
            point = theirs.get("insertion_point") or {}
            mine = disp["paths"][0]["sink"] or {}
            fused = mine.get("kind") == "fused_moe_kernel"
            now_is = "the kernel that routes inside" if fused else "no statement binds the ids"
            gives = {g["value"]: g["text"] for g in rule.get("gives_up", [])}
            flag_name = "--" + arg.replace("_", "-")
            verdict["switch"] = {
                "server_arg": arg,
                "flag": flag_name,
                "current": now,
                "chosen_by": {"file": mine.get("file", ""), "line": mine.get("line", 0),
                              "condition": f"{arg} = {now!r}: {now_is}"},
                "excluded": [t.split(":", 1)[0] for t in tried],
                "suggest": value,
                "gives_up": gives.get(str(now), f"the fused MoE kernel {mine.get('name')}, which "
                                                "routes inside" if fused else
                                                f"the experts' own routing ({mine.get('name')}), "
                                                "which the path never hands back as tensors"),
                "evidence": [
                    f"traced again with {flag}: {sink.get('name')} [{sink.get('kind')}] at "
                    f"{sink.get('file')}:{sink.get('line')}; insertable after "
                    f"{point.get('file')}:{point.get('line')} in {point.get('function')}",
                    *tried,
                    NOT_CHECKED,
                ],
            }  # fmt: skip
            verdict["why"] = verdict["why"] + way_out(verdict["switch"])
            return
