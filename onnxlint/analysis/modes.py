"""The training mode of a model variable, followed through its scope. Imports scope, chains.

`ModeFlow(ctx, name, scope)` is a small forward data-flow of one model variable's state
over a scope's statements, up to a point (an export call): `Net()` is in training mode,
`.eval()`/`.train(False)` switch to eval, `.train()` back, branches join, `with` bodies
run, loops run at least once. It follows the model into the project's functions it is
passed to (`validate(net)` that ends with `net.train()`) and out of the builders that
return one (`build_model()`), in this file or, through `ctx.project`, in another module,
and records the links of that chain (`onnxlint.analysis.chains`) for the finding's message.

Each state is a set of `Origin`s: a `Mode` and, when known, the model's class.
`exported_model` (onnxlint.analysis.exported_model) runs it for an export call.
Nothing here imports or runs user code; everything answers `Mode.UNKNOWN` when unsure.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import libcst as cst

from onnxlint.analysis.chains import Chain, Link, analysis_of
from onnxlint.analysis.layers import Condition, batchnorm_only, literal_number, still_layer
from onnxlint.analysis.scope import (
    assignments,
    binds_in_body,
    path_ids,
    return_statements,
    small_statements,
    statements_with,
    words_by_statement,
)
from onnxlint.semantic.index import ClassInfo, FunctionInfo
from onnxlint.semantic.model import SemanticModel
from onnxlint.source.walker import dotted, iter_descendants

if TYPE_CHECKING:
    from onnxlint.analysis.file import FileAnalysis, FileView

__all__ = ["NOT_PROJECT", "UNKNOWN_STATE", "Mode", "ModeFlow", "Origin", "State", "is_camel"]


class Mode(str, enum.Enum):
    """The training flag of a model on one path to the export call."""

    EVAL = "eval"  # `.eval()` / `.train(False)` / loaded with `from_pretrained`
    TRAIN = "train"  # a freshly built module (training by default) or `.train()` never undone
    RETRAIN = "retrain"  # `.train()` after the model had been put in eval mode
    UNKNOWN = "unknown"  # a parameter, a loaded object, an unknown call


@dataclass(frozen=True)
class Origin:
    """One possible state of the model at a point: its mode and, if known, its class: a
    class of this file by name (`Net`) or an imported one by qualified name
    (`models.net.Net`, `.net.Net`; always dotted). A class named in another file (the
    model a builder of another module returns) has that file as its `home`."""

    mode: Mode
    cls: str | None = None
    evaled: bool = False  # an `.eval()` ran on this path (so a later `.train()` undoes it)
    home: FileAnalysis | None = None  # the file `cls` is named in (None: this file)
    # How the model came to be in `mode` through the project's functions (a helper of
    # another module that calls `.train()`, a builder that returns a new module).
    via: Chain = ()
    # Which of the project's functions built it (`build_model()` returns a `Net`), kept
    # through mode changes: where its class comes from.
    built: Chain = ()
    # The module built here behaves the same in train and eval mode (a `torch.nn` layer with
    # no mode-dependent part, a one-layer LSTM, torchvision's ViT without dropout), or would
    # if one of `still_if` held (see `layers.still_layer`): settled where its builder is
    # called, from the arguments of that call.
    still: bool = False
    still_if: tuple[Condition, ...] = ()
    # Its only mode-dependent part is BatchNorm with running statistics (a torchvision
    # ResNet, `nn.BatchNorm2d`): what torch's ONNX exporter writes in inference mode anyway.
    batchnorm_only: bool = False


State = frozenset[Origin]
UNKNOWN_STATE: State = frozenset({Origin(Mode.UNKNOWN)})
_BOTTOM: State = frozenset()  # no path reaches this point


# A statement that holds one of these words may leave the scope (see `scope.STATEMENT_WORDS`).
_CONTROL = frozenset({"return", "raise", "break", "continue"})
_PRESERVING = frozenset(
    {"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "requires_grad_"}
    | {"share_memory", "type", "zero_grad", "apply", "xpu", "mps", "ipu"}
)
_NO_GRAD = ("torch.no_grad", "torch.inference_mode", "torch.set_grad_enabled")
_HARMLESS_CALLEES = ("builtins.", "torch.", "logging.", "copy.")
_FRESH_PREFIXES = ("torchvision.models.", "timm.models.", "torch.nn.")
_FRESH_FUNCS = frozenset({"timm.create_model", "torch.hub.load"})
_LOADS = frozenset({"torch.load", "torch.jit.load", "pickle.load", "dill.load"})
_MAX_DEPTH = 3
# Qualified names that are never the project's own functions.
NOT_PROJECT = ("builtins.", "torch.", "numpy.", "math.", "os.", "sys.", "logging.", "copy.")


def is_camel(name: str) -> bool:
    """A class's name: `Net`, `UNet`, and acronyms called like classes (`TTS`, `MLP`)."""
    return name[:1].isupper() and (any(ch.islower() for ch in name) or len(name) >= 2)


def _join(*states: State) -> State:
    out: set[Origin] = set()
    for s in states:
        out |= s
    return frozenset(out)


def _with_mode(state: State, mode: Mode, via: Chain = ()) -> State:
    evaled = mode is Mode.EVAL
    return frozenset(
        replace(o, mode=mode, evaled=o.evaled or evaled, via=via) for o in state
    ) or frozenset({Origin(mode, None, evaled, via=via)})


def _train(state: State, via: Chain = ()) -> State:
    if not state:
        return frozenset({Origin(Mode.TRAIN, via=via)})
    return frozenset(
        replace(o, mode=Mode.RETRAIN if o.evaled else Mode.TRAIN, via=via) for o in state
    )


def _homed(state: State, home: FileAnalysis) -> State:
    """`state` as seen from another file: classes named in `home` say so."""
    return frozenset(
        replace(o, home=home) if o.cls is not None and o.home is None else o for o in state
    )


def _built_by(state: State, info: FunctionInfo, view: FileAnalysis, ret: cst.Return) -> State:
    """What a builder returns, with the link that says so: its class comes from there,
    and a new module that is still in training mode is so because of it."""
    out: set[Origin] = set()
    for o in state:
        name = f"`{o.cls.rsplit('.', 1)[-1]}`" if o.cls else "module"
        if not o.built and o.cls:
            o = replace(o, built=(Link(f"`{info.name}()` {{at}} returns a {name}", view, ret),))
        if o.mode is Mode.TRAIN and not o.evaled and not o.via:
            text = f"`{info.name}()` {{at}} returns a new {name} that nothing puts in eval mode"
            o = replace(o, via=(Link(text, view, ret),))
        out.add(o)
    return frozenset(out)


def _prefixed(state: State, link: Link) -> State:
    """`state` with `link` before the chain of each origin that has one."""
    return frozenset(replace(o, via=(link, *o.via)) if o.via else o for o in state)


_NOT_RUN = frozenset({cst.FunctionDef, cst.ClassDef})


class ModeFlow:
    """Forward data-flow of one model variable's state over a list of statements."""

    def __init__(
        self,
        ctx: FileView,
        name: str,
        scope: Sequence[cst.CSTNode] = (),
        depth: int = 0,
        memo: dict[object, object] | None = None,
        owner: str | None = None,
    ) -> None:
        self.ctx = ctx
        self.name = name
        self.scope = scope
        self.depth = depth
        # Answers about other functions (their returns, their effect on a parameter):
        # kept in the memo of the file the first flow runs in, for its check (they may
        # read other files, whose facts outlive a check).
        self.memo = memo if memo is not None else ctx.semantic.memo
        # The helper function this flow runs in (its parameter `name` is the caller's
        # model): a `.train()` here is a link of the chain the caller's finding names.
        self.owner = owner
        self.exits: list[State] | None = None  # states at `return` (helper flows)
        self._mode_receivers: set[str] | None = None
        self.loop_exits: list[list[State]] = []
        self.no_grad = False
        self._head = name.split(".", 1)[0]
        self._stmt_words = words_by_statement(ctx)

    # -- statements

    def run(self, stmts: Sequence[cst.CSTNode], state: State, path: set[int]) -> tuple[State, bool]:
        """Run `stmts`; stop at the statement on `path` (ids of the target's ancestors)."""
        words = self._stmt_words
        for stmt in stmts:
            if id(stmt) in path:
                return self._descend(stmt, state, path), True
            if type(stmt) in _NOT_RUN:
                continue  # its body does not run here (`_stmt` would return `state`)
            w = words.get(id(stmt)) if words else None
            if w is not None and self._head not in w and _CONTROL.isdisjoint(w):
                continue  # never names the model, never leaves the scope: no effect
            state = self._stmt(stmt, state)
        return state, False

    def _suite(self, suite: cst.CSTNode | None) -> Sequence[cst.CSTNode]:
        if suite is None:
            return []
        if isinstance(suite, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            return suite.body
        if isinstance(suite, (cst.Else, cst.Finally, cst.ExceptHandler)):
            return self._suite(suite.body)
        if isinstance(suite, cst.If):
            return [suite]
        return []

    def _descend(self, stmt: cst.CSTNode, state: State, path: set[int]) -> State:
        if isinstance(stmt, cst.SimpleStatementLine | cst.SimpleStatementSuite):
            for small in stmt.body:
                if id(small) in path:
                    return state
                state = self._small(small, state)
            return state
        if isinstance(stmt, cst.If):
            for branch in (stmt.body, stmt.orelse):
                if branch is not None and id(branch) in path:
                    return self.run(self._suite(branch), state, path)[0]
            return state
        if isinstance(stmt, (cst.For, cst.While)):
            if id(stmt.body) in path:
                head = _join(state, self._loop_body(stmt, state))
                return self.run(self._suite(stmt.body), head, path)[0]
            if stmt.orelse is not None and id(stmt.orelse) in path:
                return self.run(self._suite(stmt.orelse), self._loop_body(stmt, state), path)[0]
            return state
        if isinstance(stmt, cst.With):
            if id(stmt.body) in path:
                if any(self._is_no_grad(item.item) for item in stmt.items):
                    self.no_grad = True
                return self.run(self._suite(stmt.body), state, path)[0]
            return state
        if isinstance(stmt, cst.Try | cst.TryStar):
            if id(stmt.body) in path:
                return self.run(self._suite(stmt.body), state, path)[0]
            body_out = self.run(self._suite(stmt.body), state, set())[0]
            for handler in stmt.handlers:
                if id(handler) in path:
                    return self.run(self._suite(handler), _join(state, body_out), path)[0]
            if stmt.orelse is not None and id(stmt.orelse) in path:
                return self.run(self._suite(stmt.orelse), body_out, path)[0]
            if stmt.finalbody is not None and id(stmt.finalbody) in path:
                return self.run(self._suite(stmt.finalbody), self._stmt(stmt, state), path)[0]
            return state
        if isinstance(stmt, cst.Match):
            for case in stmt.cases:
                if id(case) in path:
                    return self.run(self._suite(case.body), state, path)[0]
            return state
        return state  # the call sits in a header (a decorator, a test...)

    def _loop_body(self, stmt: cst.For | cst.While, state: State) -> State:
        """The state after a loop's body ran (at least once), breaks and continues included."""
        self.loop_exits.append([])
        if isinstance(stmt, cst.For):
            state = self._bind(stmt.target, state)
        out, _ = self.run(self._suite(stmt.body), state, set())
        exits = self.loop_exits.pop()
        return _join(out, *exits)

    def _stmt(self, stmt: cst.CSTNode, state: State) -> State:
        if not state:
            return state
        if isinstance(stmt, cst.SimpleStatementLine | cst.SimpleStatementSuite):
            for small in stmt.body:
                state = self._small(small, state)
            return state
        if isinstance(stmt, cst.If):
            state = self._events(stmt.test, state)
            when, unless = state, state
            training = self._training_test(stmt.test)
            if training is not None:  # `if was_training: model.train()`
                when, unless = (_training(state, training), _training(state, not training))
            body = self.run(self._suite(stmt.body), when, set())[0] if when else when
            other = self.run(self._suite(stmt.orelse), unless, set())[0] if stmt.orelse else unless
            return _join(body, other)
        if isinstance(stmt, (cst.For, cst.While)):
            if isinstance(stmt, cst.For):
                state = self._events(stmt.iter, state)
            after = self._loop_body(stmt, state)
            if stmt.orelse is not None:
                after = self.run(self._suite(stmt.orelse), after, set())[0]
            return after
        if isinstance(stmt, cst.With):
            for item in stmt.items:
                state = self._events(item.item, state)
                if item.asname is not None:
                    state = self._bind(item.asname.name, state)
            return self.run(self._suite(stmt.body), state, set())[0]
        if isinstance(stmt, cst.Try | cst.TryStar):
            body_out = self.run(self._suite(stmt.body), state, set())[0]
            outs = [body_out]
            if stmt.orelse is not None:
                outs = [self.run(self._suite(stmt.orelse), body_out, set())[0]]
            for handler in stmt.handlers:
                outs.append(self.run(self._suite(handler), _join(state, body_out), set())[0])
            after = _join(*outs)
            if stmt.finalbody is not None:
                after = self.run(self._suite(stmt.finalbody), after, set())[0]
            return after
        if isinstance(stmt, cst.Match):
            outs = [self.run(self._suite(c.body), state, set())[0] for c in stmt.cases]
            return _join(state, *outs)
        return state  # def, class: not run here

    def _small(self, small: cst.CSTNode, state: State) -> State:
        if not state:
            return state
        if isinstance(small, cst.Return):
            if self.exits is not None:
                if small.value is not None:
                    state = self._events(small.value, state)
                self.exits.append(state)
            return _BOTTOM
        if isinstance(small, cst.Raise):
            return _BOTTOM
        if isinstance(small, (cst.Break, cst.Continue)):
            if self.loop_exits:
                self.loop_exits[-1].append(state)
            return _BOTTOM
        if isinstance(small, cst.Assign):
            if any(dotted(t.target) == self.name for t in small.targets):
                return self.origin(small.value, state)
            state = self._events(small.value, state)
            for t in small.targets:
                state = self._bind(t.target, state)
            return state
        if isinstance(small, cst.AnnAssign) and small.value is not None:
            if dotted(small.target) == self.name:
                return self.origin(small.value, state)
            return self._events(small.value, state)
        if isinstance(small, cst.Del):
            return state
        return self._events(small, state)

    def _bind(self, target: cst.BaseExpression, state: State) -> State:
        """An unknown value bound to `target` (a for/with/tuple target)."""
        if dotted(target) == self.name:
            return UNKNOWN_STATE
        if isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                state = self._bind(el.value, state)
        elif isinstance(target, cst.StarredElement):
            state = self._bind(target.value, state)
        return state

    # -- expressions

    def _events(self, expr: cst.CSTNode, state: State) -> State:
        """Apply the mode changes the calls inside `expr` make, in source order."""
        calls = [n for n in (expr, *iter_descendants(expr)) if isinstance(n, cst.Call)]
        # Inner calls run first: `model.eval().to(d)` evaluates `eval` before `to`.
        for call in reversed(calls):
            state = self._call_event(call, state)
        return state

    def _receiver_is_model(self, expr: cst.BaseExpression) -> bool:
        d = dotted(expr)
        if d is None:
            return False
        return d == self.name or self.name.startswith(d + ".")

    def _call_event(self, call: cst.Call, state: State) -> State:
        func = call.func
        if isinstance(func, cst.Attribute) and self._receiver_is_model(func.value):
            method = func.attr.value
            if method == "eval":
                return _with_mode(state, Mode.EVAL)
            if method == "train":
                flag = _train_flag(call)
                if flag is False:
                    return _with_mode(state, Mode.EVAL)
                if flag is True:
                    via: Chain = ()
                    if self.owner is not None:  # a helper's: the caller's finding names it
                        text = f"`{self.owner}()` {{at}} calls `{self.name}.train()`"
                        via = (Link(text, analysis_of(self.ctx), call),)
                    return _train(state, via)
                return _with_mode(state, Mode.UNKNOWN)
            return state
        # The model passed to a function: a local helper may switch its mode.
        for i, arg in enumerate(call.args):
            if arg.star or dotted(arg.value) != self.name:
                continue
            return self._passed_to(call, i, arg, state)
        return state

    def _passed_to(self, call: cst.Call, index: int, arg: cst.Arg, state: State) -> State:
        target = self._helper(call.func)
        if target is not None:
            view, info = target
            params = info.params()
            pname: str | None = None
            if arg.keyword is not None:
                pname = arg.keyword.value
            elif index < len(params):
                pname = params[index].name.value
            if pname is None or not any(p.name.value == pname for p in params):
                return _with_mode(state, Mode.UNKNOWN)
            out = self._helper_exit(view, info, pname, state)
            if out is None:
                return _with_mode(state, Mode.UNKNOWN)
            if out != state:
                here = analysis_of(self.ctx)
                link = Link(f"calls `{info.name}()`", here, call, quiet=True)
                out = _prefixed(out, link)
            return out
        q = self.ctx.qualname(call.func)
        if q is not None and q.startswith(_HARMLESS_CALLEES):
            return state
        return _with_mode(state, Mode.UNKNOWN)

    def _helper(self, func: cst.BaseExpression) -> tuple[FileView, FunctionInfo] | None:
        """The project function a call calls: a function of this file, or one imported
        from another module of the project (read by `ctx.project`, never imported)."""
        if isinstance(func, cst.Name) and func.value in self.ctx.semantic.functions:
            return self.ctx, self.ctx.semantic.functions[func.value]
        project = self.ctx.project
        if project is None or self.depth >= _MAX_DEPTH:
            return None
        q = self.ctx.qualname(func)
        if q is None or "." not in q or q.startswith(NOT_PROJECT):
            return None
        key = ("project function", self.ctx.path, q)
        if key not in self.memo:
            self.memo[key] = project.function_at(self.ctx.path, q)
        return self.memo[key]  # type: ignore[return-value]

    def _helper_exit(
        self, view: FileView, info: FunctionInfo, param: str, state: State
    ) -> State | None:
        """The model's states when a helper that gets it as `param` returns, from its
        states at the call (`validate(net)`: `net.eval()` ... `net.train()`); None when
        the helper cannot be followed."""
        if self.depth >= _MAX_DEPTH:
            return None
        body = info.node.body
        stmts = body.body if isinstance(body, cst.IndentedBlock) else []
        if binds_in_body(stmts, param):
            effect = _param_effect(info, param)  # rebinds its parameter: its calls only
            if effect is Mode.EVAL:
                return _with_mode(state, Mode.EVAL)
            if effect is Mode.TRAIN:
                return _train(state)
            return state if effect is None else None
        key = ("exit", id(info.node), param, state)
        if key in self.memo:
            return self.memo[key]  # type: ignore[return-value]
        self.memo[key] = None  # recursion guard
        flow = ModeFlow(view, param, stmts, self.depth + 1, self.memo, owner=info.name)
        flow.exits = []
        end, _ = flow.run(stmts, state, set())
        out = _join(end, *flow.exits)
        self.memo[key] = out
        return out

    def _training_test(self, test: cst.BaseExpression) -> bool | None:
        """True when an `if` test says the model was in training mode (`model.training`,
        a `was_training` assigned from it), False for its negation, None otherwise."""
        negate = False
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            negate, test = True, test.expression
        d = dotted(test)
        if d is None:
            return None
        if d == f"{self.name}.training":
            return not negate
        if "." in d or not self.scope:
            return None
        assigned = assignments(self.scope, d)
        values = [getattr(a, "value", None) for a in assigned]
        if values and all(v is not None and dotted(v) == f"{self.name}.training" for v in values):
            return not negate
        return None

    def _is_no_grad(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call):
            expr = expr.func
        q = self.ctx.qualname(expr)
        return q is not None and q in _NO_GRAD

    def origin(self, expr: cst.BaseExpression, state: State) -> State:
        """The states of the value `expr` evaluates to, given the model's `state` now."""
        d = dotted(expr)
        if d is not None:
            if d == self.name:
                return state
            return UNKNOWN_STATE
        if not isinstance(expr, cst.Call):
            return UNKNOWN_STATE
        func = expr.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method == "eval":
                return _with_mode(self.origin(func.value, state), Mode.EVAL)
            if method == "train":
                flag = _train_flag(expr)
                inner = self.origin(func.value, state)
                if flag is False:
                    return _with_mode(inner, Mode.EVAL)
                return _train(inner) if flag is True else _with_mode(inner, Mode.UNKNOWN)
            if method in _PRESERVING:
                return self.origin(func.value, state)
            if method == "from_pretrained":
                owner = dotted(func.value)
                if owner in self.ctx.semantic.classes:
                    return frozenset({Origin(Mode.EVAL, owner, True)})
                return frozenset({Origin(Mode.EVAL, self._imported(func.value), True)})
        q = self.ctx.qualname(func)
        if q is not None:
            if q == "copy.deepcopy" and expr.args:
                return self.origin(expr.args[0].value, state)
            if q == "torch.compile" and expr.args:
                return self.origin(expr.args[0].value, state)
            if q in _LOADS:
                return UNKNOWN_STATE
            if q in _FRESH_FUNCS:
                return frozenset({Origin(Mode.TRAIN)})
            if q.startswith(_FRESH_PREFIXES) and q.rsplit(".", 1)[-1][:1].isalpha():
                if q.startswith("torch.nn.") and not is_camel(q.rsplit(".", 1)[-1]):
                    return UNKNOWN_STATE
                if self._wraps_model(expr):  # nn.DataParallel(model), nn.Sequential(a, b)
                    return UNKNOWN_STATE
                still, still_if = still_layer(q, expr)
                bn = batchnorm_only(q, expr)
                return frozenset(
                    {Origin(Mode.TRAIN, still=still, still_if=still_if, batchnorm_only=bn)}
                )
        if isinstance(func, cst.Name):
            local = func.value
            if local in self.ctx.semantic.classes:
                if self._wraps_model(expr) or _wraps_argument(self.ctx.semantic, local, expr):
                    return frozenset({Origin(Mode.UNKNOWN, local)})
                mode = self._init_mode(local)
                return frozenset({Origin(mode, local, mode is Mode.EVAL)})
        last = dotted(func)
        own = isinstance(func, cst.Name) and func.value in self.ctx.semantic.functions
        if last is not None and (own or not is_camel(last.rsplit(".", 1)[-1])):
            helper = self._helper(func)  # a builder, of this file or another module's
            if helper is not None:
                return self._helper_returns(helper[0], helper[1], expr, state)
        if last is not None and is_camel(last.rsplit(".", 1)[-1]):
            if self._wraps_model(expr) or self._project_wrapper(func, expr):
                return UNKNOWN_STATE
            return frozenset({Origin(Mode.TRAIN, self._imported(func))})
        return UNKNOWN_STATE

    def _project_wrapper(self, func: cst.BaseExpression, call: cst.Call) -> bool:
        """`ExportModel(model)` with a class of another project module that keeps the
        argument or its submodules (`_wraps_argument`)."""
        project = self.ctx.project
        q = self._imported(func)
        if project is None or q is None or q.startswith(NOT_PROJECT) or not call.args:
            return False
        key = ("project class", self.ctx.path, q)
        if key not in self.memo:
            self.memo[key] = project.class_at(self.ctx.path, q)
        found = self.memo[key]
        if not isinstance(found, tuple):
            return False
        home: FileAnalysis = found[0]
        info: ClassInfo = found[1]
        return _wraps_argument(home.semantic, info.name, call)

    def _imported(self, expr: cst.BaseExpression) -> str | None:
        """The qualified name of the class `expr` names when the file imports it from
        somewhere that could be the user's project (not torch, not a builtin)."""
        q = self.ctx.qualname(expr)
        if q is None and isinstance(expr, cst.Name):
            return self._star_imported(expr.value)
        if q is None or "." not in q or q.startswith(("builtins.", "torch.")):
            return None
        return q

    def _star_imported(self, name: str) -> str | None:
        """`Model` bound by `from infer import *`: the qualified name of the project class
        one of the file's star imports defines (read through `ctx.project`)."""
        project = self.ctx.project
        semantic = self.ctx.semantic
        if (
            project is None
            or not semantic.star_imports
            or name in semantic.classes
            or name in semantic.functions
            or name in semantic.assigned_names
        ):
            return None
        for star in semantic.star_imports:
            q = f"{star}{'' if star.endswith('.') else '.'}{name}"
            key = ("project class", self.ctx.path, q)
            if key not in self.memo:
                self.memo[key] = project.class_at(self.ctx.path, q)
            if self.memo[key] is not None:
                return q
        return None

    def _init_mode(self, cls_name: str) -> Mode:
        """TRAIN, unless the class's `__init__` switches itself to eval."""
        init = self.ctx.semantic.find_method(cls_name, "__init__")
        if init is not None and _param_effect(init, "self") is Mode.EVAL:
            return Mode.EVAL
        return Mode.TRAIN

    def _wraps_model(self, call: cst.Call) -> bool:
        """`Wrapper(model)`: the wrapped model's own mode decides what gets exported."""
        if self._mode_receivers is None:
            key = ("receivers", id(self.scope))
            memo = self.ctx.semantic.memo
            if key not in memo:
                memo[key] = _mode_receivers(
                    statements_with(self.scope, self._stmt_words, _MODE_METHODS)
                )
            self._mode_receivers = memo[key]  # type: ignore[assignment]
        receivers = self._mode_receivers or set()
        return any(dotted(a.value) in receivers for a in call.args if not a.star)

    def _helper_returns(
        self, view: FileView, info: FunctionInfo, call: cst.Call, state: State
    ) -> State:
        """The states of what a helper returns: a builder's new module (`return Net()`),
        or the caller's model when it returns the parameter it got it as (`return model`
        after fusing its layers), with its state at the call carried through."""
        return self._settled(self._returns(view, info, call, state), info, call)

    def _returns(self, view: FileView, info: FunctionInfo, call: cst.Call, state: State) -> State:
        passed = self._passed_params(info, call)
        key = ("returns", id(info.node), state if passed else None)
        memo = self.memo
        if key in memo:
            return memo[key]  # type: ignore[return-value]
        if self.depth >= _MAX_DEPTH:
            return UNKNOWN_STATE
        memo[key] = UNKNOWN_STATE  # recursion guard
        body = info.node.body
        stmts = body.body if isinstance(body, cst.IndentedBlock) else []
        here = analysis_of(view)
        foreign = here is not analysis_of(self.ctx)
        states: list[State] = []
        for ret in return_statements(info.node):
            if ret.value is None:
                continue
            name = dotted(ret.value)
            if name is None and isinstance(ret.value, cst.Call):
                # `return m.eval()` / `return Net()`: the receiver is the variable.
                inner: cst.BaseExpression = ret.value
                while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute):
                    inner = inner.func.value
                name = dotted(inner)
            start = state if name is not None and name in passed else UNKNOWN_STATE
            flow = ModeFlow(view, name or "<none>", stmts, self.depth + 1, memo, info.name)
            path = path_ids(info.node, ret)
            at = flow.run(stmts, start, path)[0] if path else start
            got = flow.origin(ret.value, at) if at else at
            if not (name is not None and name in passed):
                got = _built_by(got, info, here, ret)
            states.append(_homed(got, here) if foreign else got)
        result = _join(*states) if states else UNKNOWN_STATE
        memo[key] = result
        return result

    def _settled(self, state: State, info: FunctionInfo, call: cst.Call) -> State:
        """`state` with the conditions of a layer the builder builds from its parameters
        (`nn.LSTM(num_layers=m.num_layers, ...)`) settled from this call's arguments: `m`
        is a variable of this scope built by a constructor call with `num_layers=1`."""
        if not any(o.still_if for o in state):
            return state
        params = [p.name.value for p in info.params()]
        bound: dict[str, cst.BaseExpression] = {}
        for i, arg in enumerate(call.args):
            if arg.star:
                break
            if arg.keyword is not None:
                bound[arg.keyword.value] = arg.value
            elif i < len(params):
                bound[params[i]] = arg.value
        out: set[Origin] = set()
        for o in state:
            if o.still_if:
                still = any(
                    self._constructor_keyword(bound.get(param), attr) == wanted
                    for param, attr, wanted in o.still_if
                )
                o = replace(o, still=still, still_if=())
            out.add(o)
        return frozenset(out)

    def _constructor_keyword(self, expr: cst.BaseExpression | None, keyword: str) -> float | None:
        """The literal `keyword=` of the constructor call every assignment of the variable
        `expr` names in this scope makes (`m = ScaledLSTM(..., num_layers=1)`); None when
        unsure (the attribute then mirrors that keyword, as `nn.LSTM`'s do)."""
        if not isinstance(expr, cst.Name) or not self.scope:
            return None
        values: set[float | None] = set()
        for a in assignments(self.scope, expr.value):
            value = getattr(a, "value", None)
            if not isinstance(value, cst.Call):
                return None
            given = [x.value for x in value.args if x.keyword and x.keyword.value == keyword]
            values.add(literal_number(given[0]) if given else None)
        return values.pop() if len(values) == 1 else None

    def _passed_params(self, info: FunctionInfo, call: cst.Call) -> frozenset[str]:
        """The helper's parameters the call binds to the model variable."""
        params = [p.name.value for p in info.params()]
        out: set[str] = set()
        for i, arg in enumerate(call.args):
            if arg.star or dotted(arg.value) != self.name:
                continue
            if arg.keyword is not None:
                out.add(arg.keyword.value)
            elif i < len(params):
                out.add(params[i])
        return frozenset(out)


def _wraps_argument(semantic: SemanticModel, cls_name: str, call: cst.Call) -> bool:
    """`Wrapper(model, ...)` with a class (of the file `semantic` describes) that keeps
    the argument (`self.model = model`) and calls it in `forward`, or that keeps the
    argument's submodules (`self.backbone = model.backbone`, `model.neck.convert()`) and
    builds no module of its own and reads no `self.training`: the wrapped model's own
    mode decides what is exported (torch 2.13: a fresh wrapper's training flag does not
    reach the eval-mode submodules it holds), and the wrapper's flag changes nothing."""
    init = semantic.find_method(cls_name, "__init__")
    fwd = semantic.find_method(cls_name, "forward")
    if init is None or fwd is None:
        return False
    params = [p.name.value for p in init.params()]
    passed: set[str] = set()
    for i, arg in enumerate(call.args):
        if arg.star or not isinstance(arg.value, (cst.Name, cst.Attribute)):
            continue
        if arg.keyword is not None:
            passed.add(arg.keyword.value)
        elif i < len(params):
            passed.add(params[i])
    if not passed:
        return False
    parts = False
    for node in iter_descendants(init.node.body):
        if not isinstance(node, cst.Assign):
            continue
        if isinstance(node.value, cst.Name) and node.value.value in passed:
            for t in node.targets:
                d = dotted(t.target)
                if d is not None and d.startswith("self.") and d[5:] in fwd.self_calls:
                    return True
        if any((dotted(t.target) or "").startswith("self.") for t in node.targets):
            parts = parts or _part_of(node.value, passed)
    return parts and _builds_nothing(semantic, cls_name, init)


def _part_of(value: cst.BaseExpression, passed: set[str]) -> bool:
    """`model.backbone`, `model.neck.convert(make_copy=True)`, `copy.deepcopy(model.head)`,
    `a if c else b` of such: a part of one of the `passed` arguments."""
    if isinstance(value, cst.IfExp):
        return _part_of(value.body, passed) and _part_of(value.orelse, passed)
    if isinstance(value, cst.Call):
        if dotted(value.func) in ("copy.deepcopy", "deepcopy") and value.args:
            return _part_of(value.args[0].value, passed)
        if not isinstance(value.func, cst.Attribute):
            return False
        value = value.func.value
    while isinstance(value, (cst.Attribute, cst.Call)):
        value = value.value if isinstance(value, cst.Attribute) else value.func
    return isinstance(value, cst.Name) and value.value in passed


def _builds_nothing(semantic: SemanticModel, cls_name: str, init: FunctionInfo) -> bool:
    """The class's `__init__` builds no module (no call of a class but `super()`), and no
    method reads `self.training`."""
    for node in iter_descendants(init.node.body):
        if isinstance(node, cst.Call):
            d = dotted(node.func)
            if d is not None and d != "super" and is_camel(d.rsplit(".", 1)[-1]):
                return False
    info = semantic.classes.get(cls_name)
    if info is None or (info.bases and not all(_plain_module(semantic, b) for b in info.bases)):
        return False
    return not any(
        isinstance(n, cst.Attribute) and dotted(n) == "self.training"
        for n in iter_descendants(info.node)
    )


def _plain_module(semantic: SemanticModel, base: str) -> bool:
    return semantic.resolve(base) in ("torch.nn.Module", "torch.nn.modules.module.Module")


_MODE_METHODS = frozenset({"eval", "train"})


def _mode_receivers(scope: Sequence[cst.CSTNode]) -> set[str]:
    """Dotted receivers of `.eval()`/`.train()` calls in a scope (not in nested defs)."""
    found: set[str] = set()
    for small in small_statements(scope):
        for node in iter_descendants(small):
            if (
                isinstance(node, cst.Call)
                and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in ("eval", "train")
            ):
                d = dotted(node.func.value)
                if d is not None:
                    found.add(d)
    return found


def _training(state: State, training: bool) -> State:
    """The origins of `state` that can be in training mode (`training`) or in eval mode."""
    if training:
        return frozenset(o for o in state if o.mode is not Mode.EVAL)
    return frozenset(o for o in state if o.mode not in (Mode.TRAIN, Mode.RETRAIN))


def _train_flag(call: cst.Call) -> bool | None:
    """True for `.train()`/`.train(True)`, False for `.train(False)`, None when unknown."""
    if not call.args:
        return True
    value = call.args[0].value
    if isinstance(value, cst.Name) and value.value in ("True", "False"):
        return value.value == "True"
    return None


def _param_effect(info: FunctionInfo, param: str) -> Mode | None:
    """What a function does to the mode of its parameter `param`, anywhere in its body."""
    found: Mode | None = None
    for node in iter_descendants(info.node.body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            if dotted(node.func.value) != param:
                continue
            m = node.func.attr.value
            if m == "eval" or (m == "train" and _train_flag(node) is False):
                found = Mode.EVAL if found in (None, Mode.EVAL) else Mode.UNKNOWN
            elif m == "train":
                found = Mode.TRAIN if found in (None, Mode.TRAIN) else Mode.UNKNOWN
    return found
