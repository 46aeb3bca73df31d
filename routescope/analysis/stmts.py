"""Statements: assignment, if/elif/else, return, raise, assert, with, try, loops, defs."""

from __future__ import annotations

import ast
from typing import Any

from routescope.analysis.builtins import ordered
from routescope.analysis.interp import (
    LIST_UNKNOWN,
    SEQ_LIMIT,
    BudgetExceeded,
    ExprMixin,
    is_dict,
    is_list,
    is_set,
    seq_items,
    set_items,
    truth_in,
)
from routescope.analysis.state import PathState
from routescope.analysis.values import (
    ClassVal,
    Const,
    External,
    FunctionVal,
    Instance,
    OpenKeys,
    Unknown,
    Value,
    rest_of_dicts,
)  # fmt: skip

# How the reason of a value made by joining paths begins: a condition undecided for one of these
# reasons is a consequence of a fork recorded where the paths split, not an unknown of its own.
JOINED = ("differs between", "depends on")
GLOBALS_KEY = "\x00global"  # env slot listing the names a function declared `global`

# More live paths than this after a statement are merged where they reached the same routing
# kernels: a control-flow join, with the variables they disagree on becoming Unknown.
MERGE_AT = 24
# How far into nested objects a join looks (server args -> declaration stash -> entry -> dict).
JOIN_DEPTH = 4
# At most this many list shapes are kept apart at a join (see merge_paths).
MAX_SHAPES = 8


def merge_paths(states: list[PathState], where: str, force: bool = False) -> list[PathState]:
    """Join paths that reached the same kernels (`force`: all of them, whatever they reached)."""
    groups: dict[tuple[object, ...], list[PathState]] = {}
    # Lists some path grew or shrank: joining paths that disagree on a list's length loses the
    # whole list (a declaration stash read later through it), so such paths stay apart unless
    # that leaves too many of them.
    shapes = [
        ()
        if force
        else tuple(sorted(_content(s, o, 3) for o in s.heap_objs.values() if is_list(o)))
        for s in states
    ]
    keep_shapes = not force and len(set(shapes)) <= MAX_SHAPES
    for s, shape in zip(states, shapes, strict=True):
        claims = tuple(sorted((k, id(v)) for k, v in s.claims.items()))
        key: tuple[object, ...] = (tuple(id(h) for h in s.sinks), claims, len(s.envs), s.stopped)
        if keep_shapes:
            key += (shape,)
        groups.setdefault(("all",) if force else key, []).append(s)
    out: list[PathState] = []
    for members in groups.values():
        first = members[0]
        if len(members) > 1:
            why = f"differs between paths joined at {where}"
            objs = {k: o for m in members for k, o in m.heap_objs.items()}
            # every join reads the paths as they were: the first path is written only after
            # (a list each path made for itself joins item by item where a variable holds it,
            # even though the other paths' views of the first path's list differ)
            updates: list[tuple[Instance, dict[str, Value]]] = []
            for obj in objs.values():
                views = [m.fields(obj) for m in members]
                if all(v is views[0] for v in views):
                    continue  # no path changed it differently
                if is_list(obj) and len({tuple(v) for v in views}) > 1:
                    updates.append((obj, {LIST_UNKNOWN: Unknown(why)}))  # lengths differ
                    continue
                if is_dict(obj):
                    joined = _join_dict(views, members, why, JOIN_DEPTH)
                else:
                    joined = _join_fields(views, members, why, JOIN_DEPTH)
                updates.append((obj, joined))
            env_updates: list[tuple[dict[str, Value], str, Value]] = []
            for depth, env in enumerate(first.envs):
                names = dict.fromkeys(k for m in members for k in m.envs[depth])
                for name in names:
                    vals = [m.envs[depth].get(name) for m in members]
                    env_updates.append((env, name, _join(vals, members, why, JOIN_DEPTH)))
            for obj, fields in updates:
                first.replace_fields(obj, fields)
            for env, name, value in env_updates:
                env[name] = value
            first.assumptions.append(f"{len(members)} paths joined at {where}")
        out.append(first)
    return out


def _list_shape(st: PathState) -> tuple[str, ...]:
    """What the lists this path changed hold, in one comparable form."""
    return tuple(sorted(_content(st, o, 3) for o in st.heap_objs.values() if is_list(o)))


def _content(st: PathState, v: Value | None, depth: int) -> str:
    """What a value holds, as text two paths can compare (object identity below `depth`)."""
    if isinstance(v, Const):
        return repr(v.value)
    if isinstance(v, Instance) and v.cls is None and depth > 0:
        f = st.fields(v)
        items = ",".join(f"{k}={_content(st, x, depth - 1)}" for k, x in f.items())
        return f"{v.label}({items})"
    return f"#{id(v)}"


def join_values(vals: list[Value | None], members: list[PathState], why: str) -> Value:
    """One value for `vals` as seen on paths `members` (see _join)."""
    return _join(list(vals), members, why, JOIN_DEPTH)


def _join_fields(views: list[dict[str, Value]], members: list[PathState], why: str,
                 depth: int) -> dict[str, Value]:  # fmt: skip
    names = dict.fromkeys(k for v in views for k in v)  # first path's order: dicts iterate
    return {n: _join([v.get(n) for v in views], members, why, depth) for n in names}


def _join_dict(views: list[dict[str, Value]], members: list[PathState], why: str,
               depth: int) -> dict[str, Value]:  # fmt: skip
    """A dict's items joined across paths: a key every path has is kept (its values joined); a
    key only some have is neither present nor absent, which the "*" field records (OpenKeys:
    the keys it may hold, so a lookup of any other key is still decided)."""
    rests = [v.get(LIST_UNKNOWN) for v in views]
    items = [{k: x for k, x in v.items() if k != LIST_UNKNOWN} for v in views]
    joined = _join_fields(items, members, why, depth)
    everywhere = {k for k in joined if all(k in w for w in items)}
    partial = frozenset(k for k in joined if k not in everywhere)
    out = {k: v for k, v in joined.items() if k in everywhere}
    rest = rest_of_dicts([OpenKeys(partial, why) if partial else None, *rests])
    if rest is not None:
        out[LIST_UNKNOWN] = rest
    return out


def _join(vals: list[Value | None], members: list[PathState], why: str, depth: int) -> Value:
    """The join of one variable's values across paths: equal -> kept; objects of one class ->
    a new object whose fields are joined; anything else -> Unknown."""
    first = vals[0]
    if first is not None and all(_agree(v, first) for v in vals):
        return first
    if all(v is not None and is_list(v) for v in vals):
        lists = [v for v in vals if isinstance(v, Instance)]
        views = [m.fields(i) for m, i in zip(members, lists, strict=False)]
        if len({tuple(v) for v in views}) > 1 or depth <= 0:
            return Instance(None, {LIST_UNKNOWN: Unknown(why)}, "list")
        return Instance(None, _join_fields(views, members, why, depth - 1), "list")
    if depth > 0 and all(
        isinstance(v, Instance) and v.cls is None and v.label in ("tuple", "dict") for v in vals
    ):  # values built on each path (a stash entry): joined item by item
        insts = [v for v in vals if isinstance(v, Instance)]
        views = [m.fields(i) for m, i in zip(members, insts, strict=False)]
        label = insts[0].label
        if any(i.label != label for i in insts):
            return Unknown(why)
        if label == "tuple" and len({len(v) for v in views}) > 1:
            return Unknown(why)
        if label == "dict":
            return Instance(None, _join_dict(views, members, why, depth - 1), label)
        return Instance(None, _join_fields(views, members, why, depth - 1), label)
    if depth > 0 and all(
        isinstance(v, Instance) and (v.cls is not None or v.label not in ("list", "tuple", "dict"))
        for v in vals
    ):  # objects of one class (or one kind: the model's config made on each path)
        insts = [v for v in vals if isinstance(v, Instance)]
        if len({(id(i.cls), i.label if i.cls is None else "") for i in insts}) == 1:
            views = [m.fields(i) for m, i in zip(members, insts, strict=False)]
            return Instance(
                insts[0].cls, _join_fields(views, members, why, depth - 1), insts[0].label
            )
    return Unknown(why)


def _agree(a: Value | None, b: Value | None) -> bool:
    if a is b:
        return True
    if isinstance(a, FunctionVal) and isinstance(b, FunctionVal):
        return a.node is b.node  # the same method, bound to objects being joined
    if isinstance(a, Const) and isinstance(b, Const):
        return repr(a.value) == repr(b.value)
    return False


# (path, how the block ended, the value returned or raised)
Outcome = tuple[PathState, str, Value | None]


class StmtMixin(ExprMixin):
    # provided by the engine (Engine overrides every one of these)
    def define_function(self, st: PathState, node: ast.FunctionDef | ast.AsyncFunctionDef) -> Value:
        raise NotImplementedError

    def define_class(self, st: PathState, node: ast.ClassDef) -> Value:
        raise NotImplementedError

    def do_import(self, st: PathState, node: ast.Import | ast.ImportFrom) -> list[Outcome]:
        raise NotImplementedError

    def set_attribute(self, st: PathState, obj: Value, name: str, value: Value) -> None:
        raise NotImplementedError

    def exception_matches(
        self, exc: Value | None, handler: ast.ExceptHandler, st: PathState
    ) -> bool | None:
        raise NotImplementedError

    ctx: list[Any]
    # the handlers of the try statements whose bodies are running, innermost last
    catching: list[list[ast.ExceptHandler]]

    def exec_block(self, st: PathState, body: list[ast.stmt]) -> list[Outcome]:
        live: list[PathState] = [st]
        done: list[Outcome] = []
        for stmt in body:
            nxt: list[PathState] = []
            for s in live:
                if s.raising is not None:  # raised inside the previous statement's test
                    done.append(_raised(s))
                    continue
                for s2, kind, val in self.exec_stmt(s, stmt):
                    if s2.stopped and kind != "stop":
                        done.append((s2, "stop", Unknown(s2.stopped)))
                    elif kind == "normal":
                        nxt.append(s2)
                    else:
                        done.append((s2, kind, val))
            live = nxt
            if len(live) > self.budget.merge_at:
                live = merge_paths(live, f"{self.current_file()}:{stmt.lineno}")
            if len(live) + len(done) > self.budget.max_paths:
                raise BudgetExceeded(
                    f"more than {self.budget.max_paths} paths in {self.current_function()}"
                )
            if not live:
                break
        return done + [(s, "normal", None) for s in live]

    def exec_stmt(self, st: PathState, node: ast.stmt) -> list[Outcome]:
        self.budget.check_time()
        method = getattr(self, f"ex_{type(node).__name__}", None)
        if method is None:
            return [(st, "normal", None)]  # pass, global, nonlocal, delete, ...: no effect we track
        result: list[Outcome] = method(st, node)
        return [_raised(s) if s.raising is not None else _yielded(s) if s.yielded is not None
                else (s, k, v) for s, k, v in result]  # fmt: skip

    def ex_Expr(self, st: PathState, node: ast.Expr) -> list[Outcome]:
        return [(s, "normal", None) for s, _ in self.ev(st, node.value)]

    def ex_Assign(self, st: PathState, node: ast.Assign) -> list[Outcome]:
        out: list[Outcome] = []
        for s, v in self.ev(st, node.value):
            if isinstance(node.value, ast.Constant):
                v = self._written_at(node, v)
            for target in node.targets:
                self.assign(s, target, v)
            out.append((s, "normal", None))
        return out

    def ex_AnnAssign(self, st: PathState, node: ast.AnnAssign) -> list[Outcome]:
        if node.value is None:
            return [(st, "normal", None)]
        out: list[Outcome] = []
        for s, v in self.ev(st, node.value):
            self.assign(s, node.target, v)
            out.append((s, "normal", None))
        return out

    def ex_AugAssign(self, st: PathState, node: ast.AugAssign) -> list[Outcome]:
        load = _as_load(node.target)
        expr = ast.BinOp(left=load, op=node.op, right=node.value)
        ast.copy_location(expr, node)
        out: list[Outcome] = []
        for s, v in self.ev(st, expr):
            self.assign(s, node.target, v)
            out.append((s, "normal", None))
        return out

    def ex_Global(self, st: PathState, node: ast.Global) -> list[Outcome]:
        declared = st.env.get(GLOBALS_KEY)
        names = set(declared.value) if isinstance(declared, Const) else set()
        st.env[GLOBALS_KEY] = Const(frozenset(names | set(node.names)))
        return [(st, "normal", None)]

    def assign(self, st: PathState, target: ast.expr, v: Value) -> None:
        if isinstance(target, ast.Name):
            declared = st.env.get(GLOBALS_KEY)
            if isinstance(declared, Const) and target.id in declared.value and self.ctx:
                self.ctx[-1].module.globals[target.id] = v  # `global X` then `X = ...`
                return
            st.env[target.id] = v
        elif isinstance(target, (ast.Tuple, ast.List)):
            items: list[Value] | None = None
            if (
                isinstance(v, Const)
                and isinstance(v.value, (tuple, list))
                and len(v.value) == len(target.elts)
            ):
                items = [Const(x, v.origins) for x in v.value]
            else:
                seq = seq_items(st, v)
                if seq is not None and len(seq) == len(target.elts):
                    items = seq
            for i, elt in enumerate(target.elts):
                self.assign(st, elt, items[i] if items else _unpacked(v))
        elif isinstance(target, ast.Attribute):
            for s, obj in self.ev(st, target.value):
                if s is st:
                    self.set_attribute(st, obj, target.attr, v)
        elif isinstance(target, ast.Subscript):
            self._assign_item(st, target, v)  # container writes: tracked for lists and dicts
        elif isinstance(target, ast.Starred):
            self.assign(st, target.value, Unknown("starred assignment"))

    def _written_at(self, node: ast.stmt, v: Value) -> Value:
        """A literal assigned (`self.moe_runner_backend = "flashinfer_trtllm"`,
        `overrides["moe_runner_backend"] = "flashinfer_trtllm"`) keeps the line that wrote it
        as its origin: the evidence of which override fired. Values copied from elsewhere keep
        their own origins (or none)."""
        if isinstance(v, Const) and not v.origins and self.ctx:
            return Const(v.value, (f"{self.ctx[-1].file}:{node.lineno}",))
        return v

    def _assign_item(self, st: PathState, target: ast.Subscript, v: Value) -> None:
        for s, (obj, idx) in self.ev_seq(st, [target.value, target.slice]):
            if s is not st:
                continue
            if is_dict(obj):
                assert isinstance(obj, Instance)
                if isinstance(idx, Const):
                    st.write(obj, repr(idx.value), v)
                else:
                    st.write(obj, LIST_UNKNOWN, Unknown("dict item written with an unknown key"))
                continue
            if not is_list(obj):
                continue
            assert isinstance(obj, Instance)
            items = seq_items(st, obj)
            n = len(items) if items is not None else 0
            if (
                items is not None
                and isinstance(idx, Const)
                and isinstance(idx.value, int)
                and not isinstance(idx.value, bool)
                and -n <= idx.value < n
            ):
                items[idx.value] = v
                st.replace_fields(obj, {str(i): x for i, x in enumerate(items)})
            else:
                st.replace_fields(obj, {LIST_UNKNOWN: Unknown("list item written")})

    def ex_If(self, st: PathState, node: ast.If) -> list[Outcome]:
        out: list[Outcome] = []
        for s, taken in self.decide(st, node.test):
            out.extend(self.exec_block(s, node.body if taken else node.orelse))
        return out

    def ex_Return(self, st: PathState, node: ast.Return) -> list[Outcome]:
        if node.value is None:
            return [(st, "return", Const(None))]
        return [(s, "return", v) for s, v in self.ev(st, node.value)]

    def ex_Raise(self, st: PathState, node: ast.Raise) -> list[Outcome]:
        if node.exc is None:
            return [(st, "raise", Unknown("re-raise"))]
        return [(s, "raise", v) for s, v in self.ev(st, node.exc)]

    def ex_Assert(self, st: PathState, node: ast.Assert) -> list[Outcome]:
        out: list[Outcome] = []
        for s, v in self.ev(st, node.test):
            t = truth_in(s, v)
            if t is False:
                s.decisions.append(self.make_decision(s, node.test, False, v))
                out.append((s, "raise", External("AssertionError")))
            else:
                out.append((s, "normal", None))
        return out

    def ex_Try(self, st: PathState, node: ast.Try) -> list[Outcome]:
        out: list[Outcome] = []
        self.catching.append(node.handlers)
        try:
            body = self.exec_block(st, node.body)
        finally:
            self.catching.pop()
        for s, kind, val in body:
            if kind == "raise":
                handled = False
                for h in node.handlers:
                    m = self.exception_matches(val, h, s)
                    if m is False:
                        continue
                    if h.name:
                        s.env[h.name] = val or Unknown("exception")
                    out.extend(self.exec_block(s, h.body))
                    handled = True
                    break
                if not handled:
                    out.append((s, kind, val))
            elif kind == "normal":
                out.extend(self.exec_block(s, node.orelse))
            else:
                out.append((s, kind, val))
        if node.finalbody:
            final: list[Outcome] = []
            for s, kind, val in out:
                if kind == "yield":  # suspended inside the try: its finally runs at exit
                    final.append((s, kind, val))
                    continue
                for s2, k2, v2 in self.exec_block(s, node.finalbody):
                    final.append(
                        (s2, kind if k2 == "normal" else k2, val if k2 == "normal" else v2)
                    )
            return final
        return out

    ex_TryStar = ex_Try

    def ex_FunctionDef(self, st: PathState, node: ast.FunctionDef) -> list[Outcome]:
        st.env[node.name] = self.define_function(st, node)
        return [(st, "normal", None)]

    ex_AsyncFunctionDef = ex_FunctionDef

    def ex_ClassDef(self, st: PathState, node: ast.ClassDef) -> list[Outcome]:
        st.env[node.name] = self.define_class(st, node)
        return [(st, "normal", None)]

    def ex_Import(self, st: PathState, node: ast.Import) -> list[Outcome]:
        return self.do_import(st, node)

    ex_ImportFrom = ex_Import

    def ex_Break(self, st: PathState, node: ast.Break) -> list[Outcome]:
        return [(st, "break", None)]

    def ex_Continue(self, st: PathState, node: ast.Continue) -> list[Outcome]:
        return [(st, "continue", None)]

    def ex_For(self, st: PathState, node: ast.For) -> list[Outcome]:
        out: list[Outcome] = []
        for s, it in self.ev(st, node.iter):
            if s.raising is not None:
                out.append(_raised(s))
                continue
            items = iteration(it, s)
            if items is None or len(items) > SEQ_LIMIT:
                out.extend(self._havoc_loop(s, node))
                continue
            live = [s]
            for item in items:
                nxt: list[PathState] = []
                for s2 in live:
                    self.assign(s2, node.target, item)
                    self._iterate(s2, node.body, nxt, out)
                live = nxt
                if (
                    len(live) > self.budget.merge_at
                ):  # each undecided iteration would double the paths
                    live = merge_paths(live, f"{self.current_file()}:{node.lineno}")
            for s2 in live:
                out.extend(self.exec_block(s2, node.orelse))
        return out

    ex_AsyncFor = ex_For

    def ex_While(self, st: PathState, node: ast.While) -> list[Outcome]:
        """Unrolled while the condition is decided; an undecided one runs the body once, havoced."""
        out: list[Outcome] = []
        live = [st]
        for _ in range(self.budget.loop_limit):
            nxt: list[PathState] = []
            for s0 in live:
                probe = self.peek(s0, node.test)
                if probe is None or truth_in(s0, probe) is None:
                    out.extend(self._havoc_loop(s0, node))
                    continue
                for s, taken in self.decide(s0, node.test):
                    if not taken:
                        out.extend(self.exec_block(s, node.orelse))
                        continue
                    self._iterate(s, node.body, nxt, out)
            live = nxt
            if not live:
                return out
        where = f"{self.current_file()}:{node.lineno}"
        for s in live:
            s.stopped = f"loop at {where} did not finish within {self.budget.loop_limit} iterations"
            out.append((s, "stop", Unknown(s.stopped)))
        return out

    def _iterate(self, st: PathState, body: list[ast.stmt], again: list[PathState],
                 done: list[Outcome]) -> None:  # fmt: skip
        """One pass of a loop body: paths that go round again, and paths that leave the loop
        (a break continues after it; return, raise and stop end it)."""
        for s, kind, val in self.exec_block(st, body):
            if kind in ("normal", "continue"):
                again.append(s)
            elif kind == "break":
                done.append((s, "normal", None))
            else:
                done.append((s, kind, val))

    def _havoc_loop(self, st: PathState, node: ast.For | ast.While) -> list[Outcome]:
        """An unbounded loop: run the body once on unknowns, then forget what it assigned."""
        if isinstance(node, ast.For):
            self.assign(st, node.target, Unknown("loop variable"))
        out: list[Outcome] = []
        merged: PathState | None = None
        # lists the body changes hold an unknown number of changes after it
        before = {k: st.fields(o) for k, o in st.heap_objs.items() if is_list(o)}
        for s, kind, val in self.exec_block(st, node.body):
            if kind in ("return", "raise", "stop", "yield"):
                out.append((s, kind, val))
                continue
            if merged is None:  # the iterations that fall through collapse into one path
                merged = s
        if merged is not None:
            for key, obj in list(merged.heap_objs.items()):
                if is_list(obj) and not _same_view(merged.fields(obj), before.get(key, obj.fields)):
                    merged.replace_fields(obj, {LIST_UNKNOWN: Unknown("changed in a loop")})
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    merged.env[sub.id] = Unknown(f"assigned in the loop at line {node.lineno}")
            out.append((merged, "normal", None))
        return out


def _raised(st: PathState) -> Outcome:
    """A path whose call raised an exception a handler may catch: it ends its statement."""
    exc, st.raising = st.raising, None
    return (st, "raise", exc)


def _yielded(st: PathState) -> Outcome:
    """A context manager's generator reached its yield: the function stops there."""
    value, st.yielded = st.yielded, None
    return (st, "yield", value)


def _same_view(a: dict[str, Value], b: dict[str, Value]) -> bool:
    return a is b or (a.keys() == b.keys() and all(a[k] is b[k] for k in a))


def _as_load(target: ast.expr) -> ast.expr:
    """The augmented target read as an expression (x.y += 1 reads x.y)."""
    import copy

    expr = copy.deepcopy(target)
    for sub in ast.walk(expr):
        if hasattr(sub, "ctx"):
            sub.ctx = ast.Load()
    return expr


def _unpacked(v: Value) -> Value:
    from routescope.analysis.values import Tensor

    if isinstance(v, Tensor):
        return Tensor(producer=v.producer, made_at=v.made_at)  # weights, ids = kernel(...)
    if isinstance(v, Unknown) and "tensor" in v.reason:
        return Tensor()
    return Unknown("unpacked from an unknown value")


def iteration(v: Value, st: PathState) -> list[Value] | None:
    if isinstance(v, Const) and isinstance(v.value, (tuple, list, frozenset, set, str, range)):
        return [Const(x, v.origins) for x in ordered(v.value)]
    if isinstance(v, Instance) and v.label in ("tuple", "list"):
        return seq_items(st, v)
    if is_set(v):
        return set_items(st, v)
    if isinstance(v, Instance) and v.cls is None and v.label == "dict":
        f = st.fields(v)
        if LIST_UNKNOWN in f:
            return None
        try:  # keys are stored as their repr
            return [Const(ast.literal_eval(k)) for k in f]
        except (ValueError, SyntaxError):
            return None
    if isinstance(v, ClassVal) and v.is_enum:
        return [m for m in v.attrs.values() if type(m).__name__ == "EnumMember"]
    if isinstance(v, External):
        return None
    return None
