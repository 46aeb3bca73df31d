"""What every part of the engine shares: its context, and the operations parts call on
each other (each part is a mixin of `Engine`)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Protocol

from routescope.analysis.engine.budget import Budget
from routescope.analysis.engine.facts import Facts, SinkRule
from routescope.analysis.engine.state import Decision, Input, PathState
from routescope.analysis.engine.values import (
    ClassVal,
    External,
    FunctionVal,
    Instance,
    ModuleVal,
    Tensor,
    Value,
)

if TYPE_CHECKING:
    from routescope.analysis.engine.sysmodules import ModuleTable

JOIN_THRESHOLD = 4  # a call whose paths outnumber this and agree on the kernels is joined

_UNSEEN: Any = object()
# (engine class, "ev_"/"ex_", node type) -> the unbound method, or None for a node it lacks
_HANDLERS: dict[tuple[type, str, type], Any] = {}


def handler(engine: object, prefix: str, node: ast.AST) -> Any:
    """The engine's method for a node (`ev_Call`, `ex_If`), looked up once per class and node
    type (a formatted getattr on every evaluation step was a measurable part of a trace)."""
    key = (type(engine), prefix, type(node))
    found = _HANDLERS.get(key, _UNSEEN)
    if found is _UNSEEN:
        found = _HANDLERS[key] = getattr(type(engine), prefix + type(node).__name__, None)
    return found


Paths = list[tuple[PathState, Value]]
# (path, how the block ended, the value returned or raised)
Outcome = tuple[PathState, str, Value | None]


class ModuleSource(Protocol):
    def module(self, name: str) -> Any: ...
    def has_module(self, name: str) -> bool: ...
    def digest(self, name: str) -> str | None: ...
    def relpath(self, name: str) -> str | None: ...
    def decorator_users(self, module: str, names: frozenset[str]) -> list[str]: ...


class Ctx:
    """What is being evaluated: a module body, a class body (prefix "Cls."), or a function."""

    __slots__ = ("file", "function", "module", "prefix")

    def __init__(self, module: ModuleVal, file: str, function: str, prefix: str = "") -> None:
        self.module = module
        self.file = file
        self.function = function
        self.prefix = prefix


class EngineBase:
    """The state every part of the engine reads, and (for the type checker) the operations the
    parts call on each other; `Engine` combines the parts."""

    index: ModuleSource
    facts: Facts
    budget: Budget
    modules: dict[str, ModuleVal]
    loading: set[str]
    ctx: list[Ctx]
    catching: list[list[ast.ExceptHandler]]
    entering: list[int]  # frame depths of the context-manager generators being entered
    record_inputs: bool
    tracing: bool
    score_sources: dict[int, tuple[Value, Value]]
    not_built: set[ClassVal]
    only_module: ClassVal | None
    default_dtype: str | None
    default_device: Value | None
    construct_hooks: dict[ClassVal, Any]
    _lines: dict[str, tuple[str, ...]]
    _aligned: set[str]
    _in_module_getattr: set[str]
    _memo: dict[tuple[Any, ...], tuple[Value, list[Any], Any]]
    _memo_keep: list[Value]
    raises: list[tuple[str, PathState]]
    tolerant: bool
    trial: bool
    import_errors: list[tuple[str, Value, tuple[str, int, str] | None]]
    compiling: list[str]
    whole: int
    _shared: dict[tuple[Any, ...], list[Any]]
    _reads: dict[str, frozenset[str]]
    _bound: dict[str, frozenset[str]]
    _unbuilt: set[int]
    tensor_data: dict[int, Value]
    dict_data: dict[int, Any]  # an instance of a dict subclass -> the DictVal it holds
    # the checkpoint's config as the framework's own class builds it -> (it, that class): its
    # methods and properties are the class's (phases/ownconfig.py)
    config_classes: dict[int, tuple[Instance, ClassVal]]
    _texts: dict[int, tuple[ast.AST, str]]
    _decided: dict[tuple[Any, ...], tuple[ast.expr, Decision]]
    _literal_defaults: dict[int, tuple[ast.expr, Value]]
    # while a def statement runs: the ways evaluating its defaults raised (None: no def
    # statement is running, as for a lambda's defaults)
    def_raises: list[PathState] | None = None
    _closure_env: dict[str, Value] | None
    _self_stack: list[tuple[Value | None, ClassVal | None, FunctionVal]]
    _sys_modules: ModuleTable | None  # made when code first reads sys.modules (imports.py)

    if TYPE_CHECKING:

        def annotation(self, cls: ClassVal, name: str) -> Value: ...
        def subscript(self, st: PathState, obj: Value, idx: Value) -> Value: ...
        def dict_of(self, v: Value) -> Any: ...
        def new_dict_instance(self, inst: Instance) -> Any: ...
        def item_of(
            self, st: PathState, obj: Instance, idx: Value, node: ast.AST | None
        ) -> Paths: ...
        def membership_of(
            self, st: PathState, item: Value, obj: Instance, node: ast.AST | None
        ) -> Paths | None: ...
        def dict_attribute(self, obj: Instance, name: str) -> Value | None: ...
        def dict_super(self, receiver: Value, name: str) -> Value | None: ...
        def truth_of(self, st: PathState, v: Value) -> bool | None: ...
        def assign(self, st: PathState, target: ast.expr, v: Value) -> None: ...
        def write_cell(self, st: PathState, name: str, v: Value) -> bool: ...
        def attribute(self, st: PathState, obj: Value, name: str, hook: bool = True) -> Paths: ...
        def bind(
            self, fn: FunctionVal, args: list[Value], kwargs: dict[str, Value]
        ) -> dict[str, Value]: ...
        def call(
            self,
            st: PathState,
            fn: Value,
            args: list[Value],
            kwargs: dict[str, Value],
            node: ast.AST | None,
        ) -> Paths: ...
        def compare(self, op: ast.cmpop, a: Value, b: Value) -> Value: ...
        def construct(
            self,
            st: PathState,
            cls: ClassVal,
            args: list[Value],
            kwargs: dict[str, Value],
            node: ast.AST | None,
        ) -> Paths: ...
        def current_file(self) -> str: ...
        def current_function(self) -> str: ...
        def dataclass_init(
            self, cls: ClassVal, inst: Instance, args: list[Value], kwargs: dict[str, Value]
        ) -> list[Value]: ...
        def decide(self, st: PathState, test: ast.expr) -> list[tuple[PathState, bool]]: ...
        def define_class(self, st: PathState, node: ast.ClassDef) -> Value: ...
        def define_function(
            self, st: PathState, node: ast.FunctionDef | ast.AsyncFunctionDef
        ) -> Value: ...
        def do_import(self, st: PathState, node: ast.Import | ast.ImportFrom) -> list[Outcome]: ...
        def ev(self, st: PathState, node: ast.expr) -> Paths: ...
        def ev_seq(
            self, st: PathState, nodes: list[ast.expr]
        ) -> list[tuple[PathState, list[Value]]]: ...
        def exception_matches(
            self, exc: Value | None, handler: ast.ExceptHandler, st: PathState
        ) -> bool | None: ...
        def exec_block(self, st: PathState, body: list[ast.stmt]) -> list[Outcome]: ...
        def exec_stmt(self, st: PathState, node: ast.stmt) -> list[Outcome]: ...
        def hit_sink(
            self,
            st: PathState,
            name: str,
            rule: SinkRule,
            node: ast.AST | None,
            args: list[Value],
            kwargs: dict[str, Value],
        ) -> Tensor: ...
        def identical(self, a: Value, b: Value) -> bool | None: ...
        def import_module(self, name: str) -> Value: ...
        def inputs(self, st: PathState, test: ast.expr) -> list[Input]: ...
        def invoke(
            self,
            st: PathState,
            fn: FunctionVal,
            args: list[Value],
            kwargs: dict[str, Value],
            node: ast.AST | None,
        ) -> list[Outcome]: ...
        def invoke_uncached(
            self,
            st: PathState,
            fn: FunctionVal,
            args: list[Value],
            kwargs: dict[str, Value],
            node: ast.AST | None,
        ) -> list[Outcome]: ...
        def join(
            self, where: str, outs: list[Outcome], threshold: int = JOIN_THRESHOLD
        ) -> list[Outcome]: ...
        def load_module(self, name: str) -> ModuleVal | None: ...
        def lookup_name(self, st: PathState, name: str) -> Value: ...
        def made_at(self, node: ast.AST | None) -> tuple[str, str, int] | None: ...
        def make_decision(
            self, st: PathState, test: ast.expr, t: bool | None, v: Value
        ) -> Decision: ...
        def make_lambda(self, st: PathState, node: ast.Lambda) -> Value: ...
        def module_attr(self, mod: ModuleVal, name: str, st: PathState | None = None) -> Value: ...
        def commit(self, st: PathState) -> None: ...
        def claim_outputs(self, st: PathState, inputs: list[Value], hit: Any) -> None: ...
        def class_lookup(self, st: PathState, cls: ClassVal, name: str) -> Value | None: ...
        def commit_all(self, states: list[PathState], skip: Value | None = None) -> None: ...
        def binop(self, st: PathState, node: ast.BinOp, a: Value, b: Value) -> Value: ...
        def overloaded(
            self,
            st: PathState,
            op: ast.operator,
            a: Value,
            b: Value,
            node: ast.AST,
            inplace: bool = False,
        ) -> Paths | None: ...
        def call_cached(
            self,
            st: PathState,
            fn: FunctionVal,
            args: list[Value],
            kwargs: dict[str, Value],
            node: ast.AST | None,
        ) -> list[Outcome]: ...
        def call_external(
            self,
            st: PathState,
            fn: External,
            args: list[Value],
            kwargs: dict[str, Value],
            node: ast.AST | None,
        ) -> Paths: ...
        def owner_of(self, fn: FunctionVal) -> ClassVal | None: ...
        def partly_built(self, obj: Instance) -> None: ...
        def peek(self, st: PathState, node: ast.expr) -> Value | None: ...
        def resolved(self, v: Value) -> Value: ...
        def _caught(self, st: PathState, exc: Value) -> bool: ...
        def sys_modules(self) -> ModuleTable: ...
        def through_sys_modules(self, dotted: str) -> str: ...
        def returned(self, st: PathState, outs: list[Outcome], always: str) -> Paths: ...
        def rule_value(self, text: str, fn: FunctionVal) -> Value: ...
        def defined_alternative(
            self, fn: FunctionVal, texts: str | tuple[tuple[str, str], ...]
        ) -> str: ...
        def set_attribute(self, st: PathState, obj: Value, name: str, value: Value) -> None: ...
        def single(self, st: PathState, node: ast.expr) -> Value | None: ...
        def source_text(self, node: ast.AST) -> str: ...
        def summary(
            self,
            st: PathState,
            fn: FunctionVal,
            text: str,
            args: list[Value] | None = None,
            kwargs: dict[str, Value] | None = None,
        ) -> Paths: ...
        def super_proxy(self, st: PathState) -> Value: ...
        def type_hints(self, cls: ClassVal) -> Value: ...
