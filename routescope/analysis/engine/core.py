"""The trace engine: one object that evaluates a framework tree, made of the parts below.

Generic over frameworks: what is framework-specific (platform facts, sinks, summaries) comes in
through `Facts`, built from the rule files."""

from __future__ import annotations

import ast
from typing import Any

from routescope.analysis.engine.augassign import AugAssignMixin
from routescope.analysis.engine.base import Ctx, ModuleSource
from routescope.analysis.engine.binding import BindingMixin
from routescope.analysis.engine.budget import Budget
from routescope.analysis.engine.callcache import CallCacheMixin
from routescope.analysis.engine.comprehensions import ComprehensionsMixin
from routescope.analysis.engine.conditions import ConditionsMixin
from routescope.analysis.engine.construct import ConstructMixin
from routescope.analysis.engine.containers import DictVal
from routescope.analysis.engine.definitions import DefinitionsMixin
from routescope.analysis.engine.deletes import DeletesMixin
from routescope.analysis.engine.exceptions import ExceptionsMixin
from routescope.analysis.engine.exprs import ExprMixin
from routescope.analysis.engine.externals import ExternalsMixin
from routescope.analysis.engine.facts import Facts
from routescope.analysis.engine.imports import ImportsMixin
from routescope.analysis.engine.invoke import InvokeMixin
from routescope.analysis.engine.join import JoinMixin
from routescope.analysis.engine.loops import LoopsMixin
from routescope.analysis.engine.mappings import MappingsMixin
from routescope.analysis.engine.objects import ObjectsMixin
from routescope.analysis.engine.operators import OperatorsMixin
from routescope.analysis.engine.sinks import SinksMixin
from routescope.analysis.engine.state import Decision, PathState
from routescope.analysis.engine.stmts import StmtMixin
from routescope.analysis.engine.subscripts import SubscriptsMixin
from routescope.analysis.engine.sysmodules import ModuleTable
from routescope.analysis.engine.values import (
    ClassVal,
    FunctionVal,
    Instance,
    ModuleVal,
    Value,
)
from routescope.analysis.engine.withs import WithMixin


class Engine(
    ExprMixin,
    SubscriptsMixin,
    MappingsMixin,
    OperatorsMixin,
    ConditionsMixin,
    ComprehensionsMixin,
    StmtMixin,
    AugAssignMixin,
    DeletesMixin,
    LoopsMixin,
    WithMixin,
    ImportsMixin,
    ObjectsMixin,
    DefinitionsMixin,
    InvokeMixin,
    CallCacheMixin,
    JoinMixin,
    BindingMixin,
    ExceptionsMixin,
    ConstructMixin,
    ExternalsMixin,
    SinksMixin,
):
    def __init__(self, index: ModuleSource, facts: Facts, budget: Budget | None = None) -> None:
        self.index = index
        self.facts = facts
        self.budget = budget or Budget()
        self.modules: dict[str, ModuleVal] = {}
        self.loading: set[str] = set()
        self.ctx: list[Ctx] = []
        self._lines: dict[str, tuple[str, ...]] = {}
        self._aligned: set[str] = set()  # files whose `_lines` are the parser's (ModuleInfo)
        self._in_module_getattr: set[str] = set()
        self._memo: dict[tuple[Any, ...], tuple[Value, list[Any], Any]] = {}
        self.not_built: set[ClassVal] = set()
        # memos other paths filled, each with what it read (see Reads)
        self._shared: dict[tuple[Any, ...], list[Any]] = {}
        self._memo_keep: list[Value] = []  # values whose ids are in memo keys
        # calls made again with the same arguments, each with what it read (see callcache)
        self._calls: dict[tuple[Any, ...], list[Any]] = {}
        self._call_seen: dict[tuple[Any, ...], bool] = {}
        # While a model's own constructor runs for its side effects: the one class whose body
        # is built; every other torch module it constructs stays a bare object.
        self.only_module: ClassVal | None = None
        self.tracing = False  # set while the router's decode forward is traced
        # objects whose call gives the router's scores (a gate the experts layer holds): what
        # calling each gives, by id
        self.score_sources: dict[int, tuple[Value, Value]] = {}  # id -> (the gate, its scores)
        self.catching: list[list[ast.ExceptHandler]] = []
        self._reads: dict[str, frozenset[str]] = {}
        self._bound: dict[str, frozenset[str]] = {}  # what each module's top level binds
        # objects some constructor of which was not run (opaque, or built separately): their
        # missing attributes are unknown, not absent
        self._unbuilt: set[int] = set()
        # instances of framework subclasses of torch's Parameter (or Tensor): the tensor each
        # was made from (its `data`), by id, with the objects kept alive
        self.tensor_data: dict[int, Value] = {}
        self.dict_data: dict[int, DictVal] = {}
        self.config_classes: dict[int, tuple[Instance, ClassVal]] = {}
        self.entering: list[int] = []
        # torch's default dtype while the model is built (the loader's set_default_torch_dtype)
        self.default_dtype: str | None = None
        self.default_device: Value | None = None  # torch's, where the rules or a `with` tell it
        # classes whose construction a phase takes over (the model class while the framework's
        # own loader builds it): called with the path, the arguments and the call node
        self.construct_hooks: dict[ClassVal, Any] = {}
        self._texts: dict[int, tuple[ast.AST, str]] = {}  # id(node) -> (node, its source)
        self._names_in: dict[int, tuple[ast.expr, list[tuple[ast.expr, str]]]] = {}
        self._decided: dict[tuple[Any, ...], tuple[ast.expr, Decision]] = {}  # see make_decision
        self._literal_defaults: dict[int, tuple[ast.expr, Value]] = {}  # see BindingMixin._default
        self._aug: dict[int, tuple[ast.AugAssign, ast.expr, ast.expr]] = {}  # see ex_AugAssign
        # set-up code that raises for want of runtime state no phase builds (process groups
        # and ranks of a running worker): a call that raises uncaught reads as returning an
        # unknown value, while `tolerant` (see phases/setup.run_phase)
        self.tolerant = False
        # a way-out trial: asked only whether it is selected, so a set-up step that raises on
        # every way ends it (phases/runphase.TrialStopped)
        self.trial = False
        # modules whose body raises when imported: (module, the exception, where)
        self.import_errors: list[tuple[str, Value, tuple[str, int, str] | None]] = []
        self.compiling: list[str] = []  # the torch.compile'd functions being entered
        # constructors of objects the rules build whole being run (opaque code is entered
        # within them: see ConstructMixin.construct)
        self.whole = 0
        self.raises: list[tuple[str, PathState]] = []  # set-up ways that raised (see phases)
        # phases every way through raised: the deployment fails there, or routescope does not
        # build state a running server has; either way no path past them is selected
        self.fatal: list[str] = []
        self.stops: list[tuple[str, PathState]] = []  # those steps and one way that raised
        self.staged: list[str] = []  # steps routescope staged itself that raised (see phases)
        self._closure_env: dict[str, Value] | None = None  # what the running function closes over
        self._self_stack: list[tuple[Value | None, ClassVal | None, FunctionVal]] = []
        self._sys_modules: ModuleTable | None = None  # sys.modules, made when first read

    # --- context -----------------------------------------------------------------------------

    def current_file(self) -> str:
        return self.ctx[-1].file if self.ctx else ""

    def current_function(self) -> str:
        return self.ctx[-1].function if self.ctx else ""

    def source_text(self, node: ast.AST) -> str:
        """The node's source, normalised; each node is unparsed once (a guard a loop or a
        repeated call evaluates again is written down each time)."""
        known = self._texts.get(id(node))
        if known is not None and known[0] is node:
            return known[1]
        try:
            text = " ".join(ast.unparse(node).split())
        except Exception:
            text = type(node).__name__
        self._texts[id(node)] = (node, text)  # the node is kept, so its id stays its own
        return text
