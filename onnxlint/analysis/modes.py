"""Which model an export call exports, what state it is in, and how its inputs are keyed.

Shared by the model-mode (OLX2xx), dynamic-shape (OLX3xx) and exporter-API (OLX4xx) rules.
Everything here reads the scope that holds the export call: the enclosing function's body,
or the module body across top-level blocks (`ctx.semantic.module_body`), so rules that use it
set `file_scope = True` with a tight `requires`.

- `exported_model(ctx, call)`: the exported model as a `ModelRef`: the expression and the
  variable it names, the statements assigning it in the scope, the modes it can be in at
  the call (a small forward data-flow over the scope: `Net()` is in training mode,
  `.eval()`/`.train(False)` switch to eval, `.train()` back, branches join, `with` bodies
  run, loops run at least once), and its class when it resolves to a class of this file.
- `forward_params(ctx, class_info)`: the names `forward` takes (through local bases);
  `model_forward_params(ctx, ref)` also for a class imported from another project module.
- `convert_dynamic_axes(ctx, call)`: edits replacing `dynamic_axes=` by `dynamic_shapes=`.

Nothing here imports or runs user code; everything answers None when unsure.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import libcst as cst

from onnxlint.analysis.chains import Chain, Link, analysis_of
from onnxlint.semantic.calls import (
    ExportCall,
    ExportKind,
    keyword_arg,
    positional_args,
    strip_method_calls,
)
from onnxlint.semantic.index import ClassInfo, FunctionInfo
from onnxlint.source.walker import dotted, iter_children, iter_descendants

if TYPE_CHECKING:
    from onnxlint.analysis.file import FileAnalysis, FileView

__all__ = [
    "Mode",
    "ModelRef",
    "Origin",
    "WrapperCall",
    "captures_model_mode",
    "class_mode_insensitive",
    "effective_kind",
    "example_inputs",
    "export_wrapper_call",
    "exported_model",
    "exporter_known",
    "forward_params",
    "input_positions",
    "literal_str_list",
    "mode_insensitive",
    "model_class",
    "model_forward_file",
    "model_forward_params",
    "names_arg",
    "names_arg_of",
    "nested_class",
    "resolve_value",
    "statements_naming",
    "tensor_rank",
]


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


State = frozenset[Origin]
_UNKNOWN: State = frozenset({Origin(Mode.UNKNOWN)})
_BOTTOM: State = frozenset()  # no path reaches this point


@dataclass
class ModelRef:
    """The model an export call exports (see `exported_model`)."""

    expr: cst.BaseExpression  # the model argument as written at the call
    name: str | None  # the dotted variable it names (`model`, `self.net`), None for an inline call
    function: cst.FunctionDef | None  # the enclosing function, None at module level
    scope: Sequence[cst.BaseStatement]  # the enclosing function's body, or the module body
    statement: cst.CSTNode  # the innermost statement holding the call
    assignments: list[cst.CSTNode] = field(default_factory=list)  # Assign/AnnAssign to `name`
    origins: State = _UNKNOWN  # the states the model can be in at the call
    class_info: ClassInfo | None = None  # its class when it resolves to a class of this file
    imported_class: str | None = None  # else its class's qualified name when imported
    # else (the file naming it, its name there): the class a builder of another file returns
    foreign_class: tuple[FileAnalysis, str] | None = None
    in_no_grad: bool = False  # the call sits inside `with torch.no_grad()/inference_mode()`
    one_line_body: bool = False  # the statement shares its line with a compound header

    @property
    def modes(self) -> frozenset[Mode]:
        return frozenset(o.mode for o in self.origins)

    @property
    def class_name(self) -> str | None:
        """The class's own name (`Net`), wherever it is defined; None when unknown."""
        if self.class_info is not None:
            return self.class_info.name
        if self.foreign_class is not None:
            return self.foreign_class[1].rsplit(".", 1)[-1]
        return self.imported_class.rsplit(".", 1)[-1] if self.imported_class else None

    @property
    def built(self) -> Chain:
        """Which of the project's functions built the model, when every path agrees."""
        chains = {o.built for o in self.origins}
        return next(iter(chains)) if len(chains) == 1 else ()

    def via(self, *modes: Mode) -> Chain:
        """The chain that explains the first origin in one of `modes` that has one."""
        for o in sorted(self.origins, key=lambda o: (o.mode.value, len(o.via))):
            if o.mode in modes and o.via:
                return o.via
        return ()


# --------------------------------------------------------------------------- locating a call


def _memo(ctx: FileView) -> dict[object, object]:
    return ctx.semantic.memo


# `ctx.semantic.memo` key of {id(top-level statement): the identifiers of its block's text}
# (`facts.statement_words`, built on first use). A statement that never names the model
# variable, and holds no `return`/`raise`/`break`/`continue`, cannot change the model's
# state: the data-flow and the scans below skip it without walking its tree (a 4,000-line
# notebook has ~1,000 module-level statements, and every export call's flow ran over all
# of them per check).
STATEMENT_WORDS = "statement words"
_IDENTIFIER = re.compile(r"[^\W\d]\w*")
_CONTROL = frozenset({"return", "raise", "break", "continue"})


def block_words(text: str) -> frozenset[str]:
    """Every identifier-like word of a block's text (also those in strings and comments:
    a superset of the names its statements use)."""
    return frozenset(_IDENTIFIER.findall(text))


def _words(ctx: FileView) -> dict[int, frozenset[str]]:
    found = ctx.semantic.memo.get(STATEMENT_WORDS)
    if callable(found):  # `facts.file_analysis` leaves the words to be built on first use
        found = ctx.semantic.memo[STATEMENT_WORDS] = found()
    return found if isinstance(found, dict) else {}


def _without_memo(
    ctx: FileView, stmts: Sequence[cst.CSTNode], needed: frozenset[str]
) -> Sequence[cst.CSTNode]:
    """`_without` for `ctx`'s statement words, memoised per check (the rules of one export
    call ask about the same scope and name)."""
    key = ("without", id(stmts), needed)
    memo = _memo(ctx)
    found = memo.get(key)
    if found is None:
        found = memo[key] = (stmts, _without(stmts, _words(ctx), needed))
    return found[1]  # type: ignore[index,no-any-return]


def statements_naming(
    ctx: FileView, stmts: Sequence[cst.CSTNode], name: str
) -> Sequence[cst.CSTNode]:
    """`stmts` less the top-level statements whose block never names `name` (its first
    dotted part): for scans of the module body for one variable's assignments."""
    return _without_memo(ctx, stmts, frozenset({name.split(".", 1)[0]}))


def _without(
    stmts: Sequence[cst.CSTNode], words: dict[int, frozenset[str]], needed: frozenset[str]
) -> Sequence[cst.CSTNode]:
    """`stmts` less the top-level statements whose block has none of the `needed` words."""
    if not words:
        return stmts
    return [s for s in stmts if (w := words.get(id(s))) is None or not needed.isdisjoint(w)]


def node_path(
    ctx: FileView, node: cst.CSTNode, statement: cst.CSTNode | None = None
) -> list[cst.CSTNode] | None:
    """The ancestors of `node` from a top-level statement down (excluding `node`).

    Uses the walk's ancestor stack when `node` is the node being visited; else searches the
    top-level `statement` known to hold it (an export call's, from the block index), or the
    module body (memoised per check).
    """
    anc = ctx.ancestors
    if anc and any(child is node for child in iter_children(anc[-1])):
        start = 1 if isinstance(anc[0], cst.Module) else 0
        return list(anc[start:])
    key = ("path", id(node))
    memo = _memo(ctx)
    if key in memo:
        found = memo[key]
        return None if found is None else list(found)  # type: ignore[call-overload]
    body: Sequence[cst.CSTNode] = ctx.semantic.module_body
    for stmt in body if statement is None else [statement, *body]:
        path = _search(stmt, node)
        if path is not None:
            memo[key] = path
            return list(path)
    memo[key] = None
    return None


def _search(root: cst.CSTNode, target: cst.CSTNode) -> list[cst.CSTNode] | None:
    stack: list[tuple[cst.CSTNode, int]] = [(root, 0)]
    path: list[cst.CSTNode] = []
    while stack:
        node, depth = stack.pop()
        del path[depth:]
        if node is target:
            return path
        path.append(node)
        for child in reversed(list(iter_children(node))):
            stack.append((child, depth + 1))
    return None


def _scope_of(
    ctx: FileView, path: list[cst.CSTNode]
) -> tuple[cst.FunctionDef | None, Sequence[cst.BaseStatement], list[cst.CSTNode]] | None:
    """(function or None, its statements, the path below them) for a path to a node."""
    for i in range(len(path) - 1, -1, -1):
        n = path[i]
        if isinstance(n, cst.FunctionDef):
            body = n.body
            stmts = body.body if isinstance(body, cst.IndentedBlock) else []
            return n, stmts, path[i + 2 :] if isinstance(body, cst.IndentedBlock) else []
        if isinstance(n, (cst.ClassDef, cst.Lambda)):
            return None
    return None, ctx.semantic.module_body, path


# --------------------------------------------------------------------------- the data-flow

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
_NOT_PROJECT = ("builtins.", "torch.", "numpy.", "math.", "os.", "sys.", "logging.", "copy.")


def _is_camel(name: str) -> bool:
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


class _ModeFlow:
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
        self.memo = memo if memo is not None else _memo(ctx)
        # The helper function this flow runs in (its parameter `name` is the caller's
        # model): a `.train()` here is a link of the chain the caller's finding names.
        self.owner = owner
        self.exits: list[State] | None = None  # states at `return` (helper flows)
        self._mode_receivers: set[str] | None = None
        self.loop_exits: list[list[State]] = []
        self.no_grad = False
        self._head = name.split(".", 1)[0]
        self._stmt_words = _words(ctx)

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
            return _UNKNOWN
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
        if q is None or "." not in q or q.startswith(_NOT_PROJECT):
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
        if _binds_in_body(stmts, param):
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
        flow = _ModeFlow(view, param, stmts, self.depth + 1, self.memo, owner=info.name)
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
        assigned = _assignments(self.scope, d)
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
            return _UNKNOWN
        if not isinstance(expr, cst.Call):
            return _UNKNOWN
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
                return _UNKNOWN
            if q in _FRESH_FUNCS:
                return frozenset({Origin(Mode.TRAIN)})
            if q.startswith(_FRESH_PREFIXES) and q.rsplit(".", 1)[-1][:1].isalpha():
                if q.startswith("torch.nn.") and not _is_camel(q.rsplit(".", 1)[-1]):
                    return _UNKNOWN
                if self._wraps_model(expr):  # nn.DataParallel(model), nn.Sequential(a, b)
                    return _UNKNOWN
                return frozenset({Origin(Mode.TRAIN)})
        if isinstance(func, cst.Name):
            local = func.value
            if local in self.ctx.semantic.classes:
                if self._wraps_model(expr) or _wraps_argument(self.ctx, local, expr):
                    return frozenset({Origin(Mode.UNKNOWN, local)})
                mode = self._init_mode(local)
                return frozenset({Origin(mode, local, mode is Mode.EVAL)})
        last = dotted(func)
        own = isinstance(func, cst.Name) and func.value in self.ctx.semantic.functions
        if last is not None and (own or not _is_camel(last.rsplit(".", 1)[-1])):
            helper = self._helper(func)  # a builder, of this file or another module's
            if helper is not None:
                return self._helper_returns(helper[0], helper[1], expr, state)
        if last is not None and _is_camel(last.rsplit(".", 1)[-1]):
            if self._wraps_model(expr):
                return _UNKNOWN
            return frozenset({Origin(Mode.TRAIN, self._imported(func))})
        return _UNKNOWN

    def _imported(self, expr: cst.BaseExpression) -> str | None:
        """The qualified name of the class `expr` names when the file imports it from
        somewhere that could be the user's project (not torch, not a builtin)."""
        q = self.ctx.qualname(expr)
        if q is None or "." not in q or q.startswith(("builtins.", "torch.")):
            return None
        return q

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
            memo = _memo(self.ctx)
            if key not in memo:
                memo[key] = _mode_receivers(_without(self.scope, self._stmt_words, _MODE_METHODS))
            self._mode_receivers = memo[key]  # type: ignore[assignment]
        receivers = self._mode_receivers or set()
        return any(dotted(a.value) in receivers for a in call.args if not a.star)

    def _helper_returns(
        self, view: FileView, info: FunctionInfo, call: cst.Call, state: State
    ) -> State:
        """The states of what a helper returns: a builder's new module (`return Net()`),
        or the caller's model when it returns the parameter it got it as (`return model`
        after fusing its layers), with its state at the call carried through."""
        passed = self._passed_params(info, call)
        key = ("returns", id(info.node), state if passed else None)
        memo = self.memo
        if key in memo:
            return memo[key]  # type: ignore[return-value]
        if self.depth >= _MAX_DEPTH:
            return _UNKNOWN
        memo[key] = _UNKNOWN  # recursion guard
        body = info.node.body
        stmts = body.body if isinstance(body, cst.IndentedBlock) else []
        here = analysis_of(view)
        foreign = here is not analysis_of(self.ctx)
        states: list[State] = []
        for ret in _returns(info.node):
            if ret.value is None:
                continue
            name = dotted(ret.value)
            if name is None and isinstance(ret.value, cst.Call):
                # `return m.eval()` / `return Net()`: the receiver is the variable.
                inner: cst.BaseExpression = ret.value
                while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute):
                    inner = inner.func.value
                name = dotted(inner)
            start = state if name is not None and name in passed else _UNKNOWN
            flow = _ModeFlow(view, name or "<none>", stmts, self.depth + 1, memo, info.name)
            path = _path_set(info.node, ret)
            at = flow.run(stmts, start, path)[0] if path else start
            got = flow.origin(ret.value, at) if at else at
            if not (name is not None and name in passed):
                got = _built_by(got, info, here, ret)
            states.append(_homed(got, here) if foreign else got)
        result = _join(*states) if states else _UNKNOWN
        memo[key] = result
        return result

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


def _wraps_argument(ctx: FileView, cls_name: str, call: cst.Call) -> bool:
    """`Wrapper(model, ...)` with a local class that keeps the argument (`self.model =
    model`) and calls it in `forward`: the wrapped model's own mode decides what is
    exported, and the wrapper's fresh training flag changes nothing by itself."""
    init = ctx.semantic.find_method(cls_name, "__init__")
    fwd = ctx.semantic.find_method(cls_name, "forward")
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
    for node in iter_descendants(init.node.body):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name):
            if node.value.value not in passed:
                continue
            for t in node.targets:
                d = dotted(t.target)
                if d is not None and d.startswith("self.") and d[5:] in fwd.self_calls:
                    return True
    return False


_MODE_METHODS = frozenset({"eval", "train"})


def _mode_receivers(scope: Sequence[cst.CSTNode]) -> set[str]:
    """Dotted receivers of `.eval()`/`.train()` calls in a scope (not in nested defs)."""
    found: set[str] = set()
    for small in _small_statements(scope):
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


def _binds_in_body(stmts: Sequence[cst.CSTNode], name: str) -> bool:
    """Whether `name` is assigned (or a loop/with target) in `stmts`."""
    if _assignments(stmts, name):
        return True
    for small in _small_statements(stmts):
        for node in iter_descendants(small):
            if isinstance(node, cst.AugAssign) and dotted(node.target) == name:
                return True
    return any(name in names for names in _compound_targets(stmts))


def _compound_targets(stmts: Sequence[cst.CSTNode]) -> Iterator[set[str]]:
    """The names bound by `for` and `with ... as` statements in `stmts` (not nested defs)."""
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(node, cst.For):
            yield {n for n in (dotted(x) for x in _target_names(node.target)) if n}
        elif isinstance(node, cst.With):
            yield {
                n
                for item in node.items
                if item.asname is not None
                for n in (dotted(x) for x in _target_names(item.asname.name))
                if n
            }
        if isinstance(node, cst.BaseCompoundStatement):
            stack.extend(iter_children(node))
        elif isinstance(node, _SUITES):
            stack.extend(_suite_body(node))


def _target_names(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return [x for el in target.elements for x in _target_names(el.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return [target]


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


def _returns(func: cst.FunctionDef) -> Iterator[cst.Return]:
    stack = list(iter_children(func.body))
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Return):
            yield node
        elif not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(iter_children(node))


def _path_set(root: cst.CSTNode, target: cst.CSTNode) -> set[int]:
    path = _search(root, target)
    return {id(n) for n in path} | {id(target)} if path is not None else set()


def _start_state(func: cst.FunctionDef | None, name: str) -> State:
    """The model's state on entry to a scope: unknown (a parameter, a global, ...)."""
    return _UNKNOWN


# --------------------------------------------------------------------------- exported_model


def exported_model(ctx: FileView, call: ExportCall) -> ModelRef | None:
    """The model `call` exports, with its state at the call and its class if local.

    None when the call has no model argument or sits where no scope can be followed
    (a class body, a lambda).
    """
    key = ("model", id(call.node))
    memo = _memo(ctx)
    if key in memo:
        return memo[key]  # type: ignore[return-value]
    ref = _exported_model(ctx, call)
    memo[key] = ref
    return ref


def _exported_model(ctx: FileView, call: ExportCall) -> ModelRef | None:
    expr = call.model_expr
    if expr is None:
        return None
    path = node_path(ctx, call.node, call.statement)
    if path is None:
        return None
    scoped = _scope_of(ctx, path)
    if scoped is None:
        return None
    function, stmts, below = scoped
    stmt_types = (cst.SimpleStatementLine, cst.BaseCompoundStatement)
    statement = next((n for n in reversed(path) if isinstance(n, stmt_types)), None)
    if statement is None:
        return None
    one_line = any(isinstance(n, cst.SimpleStatementSuite) for n in path)
    # The variable: `model`, `self.net`, or the receiver of `model.eval()` written inline.
    inner = expr
    while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute):
        inner = inner.func.value
    name = dotted(inner)
    if name is not None and (name in ctx.semantic.classes or name in ctx.semantic.functions):
        name = None  # `torch.jit.trace(fn, x)`: a function, not a model variable
    flow = _ModeFlow(ctx, name or "<none>", stmts)
    ids = {id(n) for n in below} | {id(call.node)}
    start = _start_state(function, name) if name else _UNKNOWN
    at, _ = flow.run(stmts, start, ids)
    origins = flow.origin(expr, at) if at else _UNKNOWN
    assignments = _named_assignments(ctx, stmts, name) if name else []
    found = _unique_class(ctx, origins)
    if found is None and name is not None and function is not None and not _binds(function, name):
        # A module-level model exported inside a function: resolve its class only.
        mod_assigns = _named_assignments(ctx, ctx.semantic.module_body, name)
        classes = {_class_of_value(ctx, a) for a in mod_assigns}
        if len(classes) == 1:
            found = classes.pop()
    cls, home = found if found is not None else (None, None)
    ref = ModelRef(
        expr=expr,
        name=name,
        function=function,
        scope=stmts,
        statement=statement,
        assignments=assignments,
        origins=origins,
        class_info=ctx.semantic.classes.get(cls) if cls and home is None else None,
        imported_class=cls if cls and home is None and cls not in ctx.semantic.classes else None,
        foreign_class=(home, cls) if cls and home is not None else None,
        in_no_grad=flow.no_grad,
        one_line_body=one_line,
    )
    return ref


def _unique_class(ctx: FileView, origins: State) -> tuple[str, FileAnalysis | None] | None:
    """The model's class when every path agrees on it: a local class name or an
    imported class's qualified name, and the file naming it when that is another file
    (see `Origin`)."""
    classes = {(o.cls, o.home) for o in origins}
    if len(classes) == 1:
        only, home = next(iter(classes))
        if only is not None and (home is not None or only in ctx.semantic.classes or "." in only):
            return only, home
    return None


def _class_of_value(ctx: FileView, assign: cst.CSTNode) -> tuple[str, FileAnalysis | None] | None:
    value = assign.value if isinstance(assign, (cst.Assign, cst.AnnAssign)) else None
    if value is None:
        return None
    flow = _ModeFlow(ctx, "<none>")
    return _unique_class(ctx, flow.origin(value, _UNKNOWN))


def _binds(func: cst.FunctionDef, name: str) -> bool:
    """Whether `name` is a parameter of `func` or assigned in it."""
    p = func.params
    params = [*p.posonly_params, *p.params, *p.kwonly_params]
    if any(x.name.value == name for x in params):
        return True
    body = func.body.body if isinstance(func.body, cst.IndentedBlock) else []
    return bool(_assignments(body, name))


_SUITES = (
    cst.IndentedBlock,
    cst.Else,
    cst.Finally,
    cst.ExceptHandler,
    cst.MatchCase,
    cst.ExceptStarHandler,
)


def _small_statements(stmts: Sequence[cst.CSTNode]) -> Iterator[cst.BaseSmallStatement]:
    """The small statements under `stmts`, through compound statements, not nested defs."""
    stack = list(reversed(stmts))
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            yield from node.body
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            continue
        elif isinstance(node, cst.BaseCompoundStatement):
            parts: list[cst.CSTNode] = []
            for name in ("body", "orelse", "handlers", "finalbody", "cases"):
                part = getattr(node, name, None)
                if isinstance(part, (list, tuple)):
                    parts.extend(part)
                elif part is not None:
                    parts.append(part)
            stack.extend(reversed(parts))
        elif isinstance(node, _SUITES):
            stack.extend(reversed(list(_suite_body(node))))


def _suite_body(node: cst.CSTNode) -> Sequence[cst.CSTNode]:
    if isinstance(node, cst.IndentedBlock):
        return node.body
    body = getattr(node, "body", None)
    if isinstance(body, cst.IndentedBlock):
        return body.body
    if isinstance(body, cst.SimpleStatementSuite):
        return [body]
    if isinstance(body, cst.If):
        return [body]
    return []


def _named_assignments(ctx: FileView, stmts: Sequence[cst.CSTNode], name: str) -> list[cst.CSTNode]:
    """`_assignments`, skipping the top-level statements that never name `name`'s head."""
    return _assignments(_without_memo(ctx, stmts, frozenset({name.split(".", 1)[0]})), name)


def _assignments(stmts: Sequence[cst.CSTNode], name: str) -> list[cst.CSTNode]:
    """Assign/AnnAssign nodes binding `name` in `stmts` (not inside nested defs)."""
    out: list[cst.CSTNode] = []
    for small in _small_statements(stmts):
        if isinstance(small, cst.Assign):
            if any(dotted(t.target) == name for t in small.targets):
                out.append(small)
        elif isinstance(small, cst.AnnAssign) and dotted(small.target) == name:
            out.append(small)
    return out


# --------------------------------------------------------------------------- forward params


def model_forward_params(ctx: FileView, ref: ModelRef | None) -> list[str] | None:
    """`forward_params` of the exported model's class: in this file, or in the project
    module it is imported from (read by `ctx.project`, see `onnxlint.project`)."""
    if ref is not None and ref.class_info is not None:
        return forward_params(ctx, ref.class_info)
    found = _imported_forward(ctx, ref)
    return found[0] if found is not None else None


def model_forward_file(ctx: FileView, ref: ModelRef | None) -> str | None:
    """Where the exported model's `forward` is defined when that is another file of the
    project: its path relative to the exporting file's folder, for messages."""
    found = _imported_forward(ctx, ref)
    if found is None:
        return None
    return os.path.relpath(found[1], os.path.dirname(os.path.abspath(ctx.path)))


def _imported_forward(ctx: FileView, ref: ModelRef | None) -> tuple[list[str], str] | None:
    """The imported model class's `forward` parameters and defining file, looked up once
    per check (several rules ask about the same export call; each lookup reads files).
    Also for the class a builder of another module returns (`ModelRef.foreign_class`)."""
    if ref is None or ref.class_info is not None or ctx.project is None:
        return None
    if ref.foreign_class is not None:
        home, name = ref.foreign_class
        if "." not in name:  # a class of the builder's own file
            info = home.semantic.classes.get(name)
            if info is None:
                return None
            params = forward_params(home, info)
            fwd = home.semantic.find_method(info.name, "forward")
            return (params, home.path) if params is not None and fwd is not None else None
        importer, qualname = home.path, name
    elif ref.imported_class is not None:
        importer, qualname = ctx.path, ref.imported_class
    else:
        return None
    key = ("imported forward", importer, qualname)
    memo = _memo(ctx)
    if key not in memo:
        memo[key] = ctx.project.find_forward(importer, qualname)
    return memo[key]  # type: ignore[return-value]


def model_class(ctx: FileView, ref: ModelRef | None) -> tuple[FileView, ClassInfo] | None:
    """The exported model's class with the facts of the file defining it: a class of this
    file, an imported project class, or the class a builder of another module returns."""
    if ref is None:
        return None
    if ref.class_info is not None:
        return ctx, ref.class_info
    if ctx.project is None:
        return None
    if ref.foreign_class is not None:
        home, name = ref.foreign_class
        if "." not in name:
            info = home.semantic.classes.get(name)
            return (home, info) if info is not None else None
        return ctx.project.class_at(home.path, name)
    if ref.imported_class is not None:
        return ctx.project.class_at(ctx.path, ref.imported_class)
    return None


def forward_params(ctx: FileView, class_info: ClassInfo | None) -> list[str] | None:
    """The parameter names of the class's `forward` (positional then keyword-only), without
    `self`; None when there is no local `forward` or it takes `*args`/`**kwargs`."""
    if class_info is None:
        return None
    fwd = ctx.semantic.find_method(class_info.name, "forward")
    if fwd is None:
        return None
    p = fwd.node.params
    if isinstance(p.star_arg, cst.Param) or p.star_kwarg is not None:
        return None
    return [x.name.value for x in fwd.params()]


# --------------------------------------------------------------------------- values


def resolve_value(
    ctx: FileView, expr: cst.BaseExpression | None, ref: ModelRef | None = None
) -> cst.BaseExpression | None:
    """`expr`, or the value of the variable it names when that variable has exactly one
    assignment in the export call's scope (or, failing that, at module level)."""
    if expr is None or not isinstance(expr, cst.Name):
        return expr
    scopes: list[Sequence[cst.CSTNode]] = []
    if ref is not None:
        scopes.append(ref.scope)
    scopes.append(ctx.semantic.module_body)
    for stmts in scopes:
        found = _named_assignments(ctx, stmts, expr.value)
        if len(found) == 1:
            node = found[0]
            assert isinstance(node, (cst.Assign, cst.AnnAssign))
            if isinstance(node, cst.Assign) and len(node.targets) != 1:
                return None
            return node.value
        if found:
            return None
    return None


def literal_str_list(expr: cst.BaseExpression | None) -> list[str] | None:
    """`["a", "b"]` / `("a", "b")` -> ["a", "b"]; None unless every element is a plain string."""
    if not isinstance(expr, (cst.List, cst.Tuple)):
        return None
    out: list[str] = []
    for el in expr.elements:
        if not isinstance(el, cst.Element) or not isinstance(el.value, cst.SimpleString):
            return None
        value = el.value.evaluated_value
        if not isinstance(value, str):
            return None
        out.append(value)
    return out


def example_inputs(
    ctx: FileView, call: ExportCall, ref: ModelRef | None
) -> list[cst.BaseExpression] | None:
    """The positional example inputs of an export call (`args`), one expression each.

    `(x, y)` -> [x, y]; a single non-tuple expression -> [it] (torch wraps it); a name bound
    once to a tuple literal is followed. None when the count cannot be known.
    """
    arg = call.arg("args", 1)
    if arg is None:
        return [] if call.kind in (ExportKind.ONNX_DYNAMO, ExportKind.ONNX_TORCHSCRIPT) else None
    value: cst.BaseExpression | None = arg.value
    if isinstance(value, cst.Name):
        resolved = resolve_value(ctx, value, ref)
        if isinstance(resolved, (cst.Tuple, cst.List)):
            value = resolved
    if isinstance(value, cst.Tuple):
        elements = []
        for el in value.elements:
            if not isinstance(el, cst.Element) or isinstance(el, cst.StarredElement):
                return None
            elements.append(el.value)
        # `(x, {"mask": m})`: a trailing dict is keyword inputs to the legacy exporter.
        if elements and isinstance(elements[-1], cst.Dict):
            return None
        return elements
    if isinstance(value, (cst.List, cst.Dict, cst.ListComp, cst.GeneratorExp)):
        return None
    if value is None:
        return None
    # A single input: only when it clearly is one tensor (a name bound to a call could
    # just as well hold a tuple of inputs).
    single = resolve_value(ctx, value, ref) if isinstance(value, cst.Name) else value
    return [value] if single is not None and _is_tensor_expr(ctx, single) else None


_TENSOR_CHAIN = frozenset(
    {"to", "cuda", "cpu", "float", "half", "double", "long", "int", "bool", "unsqueeze"}
    | {"view", "reshape", "permute", "contiguous", "clone", "detach", "requires_grad_"}
    | {"expand", "repeat", "transpose", "squeeze", "type", "bfloat16"}
)


def _is_tensor_expr(ctx: FileView, expr: cst.BaseExpression) -> bool:
    """A `torch.<factory>(...)` call, possibly followed by tensor methods (`.to(device)`)."""
    expr = strip_method_calls(expr, _TENSOR_CHAIN)
    if not isinstance(expr, cst.Call):
        return False
    q = ctx.qualname(expr.func) or ""
    if q in ("torch.autograd.Variable", "torch.Tensor", "torch.tensor", "torch.from_numpy"):
        return True
    return q.startswith("torch.") and q.count(".") == 1 and q[6:7].islower()


# --------------------------------------------------------------------------- dynamic_axes


def names_arg_of(
    ctx: FileView, call: ExportCall, name: str, ref: ModelRef | None
) -> list[str] | None:
    """A literal list of names (`[]` when the argument is absent), None when unreadable."""
    arg = call.arg(name)
    if arg is None:
        return []
    return literal_str_list(resolve_value(ctx, arg.value, ref))


# --------------------------------------------------------------------------- exporter facts


def effective_kind(ctx: FileView, call: ExportCall) -> ExportKind:
    """The exporter a call really uses for `target-torch`: before 2.9, `torch.onnx.export`
    without `dynamo=` is the TorchScript exporter."""
    if isinstance(call, WrapperCall):
        return call.kind  # the wrapped export call's, already for `target-torch`
    if (
        call.kind is ExportKind.ONNX_DYNAMO
        and ctx.config.torch_version < (2, 9)
        and keyword_arg(call.node, "dynamo") is None
    ):
        return ExportKind.ONNX_TORCHSCRIPT
    return call.kind


def exporter_known(call: ExportCall) -> bool:
    """False when `**kwargs` at the call may set `dynamo=`/`training=` (path unknown)."""
    return not any(a.star == "**" for a in call.node.args)


def captures_model_mode(ctx: FileView, call: ExportCall) -> bool:
    """Whether the call exports the model in the mode it is in (so it must be in eval).

    The legacy TorchScript exporter switches to eval itself unless `training=` says
    otherwise; `export_for_training` wants training mode; `jit.script` compiles both modes.
    """
    if isinstance(call, WrapperCall):
        return True  # judged at the wrapped export call (`export_wrapper_call`)
    kind = effective_kind(ctx, call)
    if kind in (ExportKind.ONNX_DYNAMO, ExportKind.ONNX_TORCHSCRIPT) and not exporter_known(call):
        return False
    if kind is ExportKind.ONNX_TORCHSCRIPT:
        training = keyword_arg(call.node, "training")
        return training is not None and (dotted(training.value) or "").endswith(".PRESERVE")
    if kind is ExportKind.JIT_SCRIPT:
        return False
    return not call.qualname.endswith("export_for_training")


# --------------------------------------------------------------------------- example inputs

_SHAPE_FACTORIES = frozenset(
    {"randn", "rand", "zeros", "ones", "empty", "full", "randint", "randn_like", "ones_like"}
)


def names_arg(ctx: FileView, call: ExportCall, name: str) -> list[str] | None:
    """A literal `input_names`/`output_names` list (`[]` when absent), None when unreadable."""
    return names_arg_of(ctx, call, name, exported_model(ctx, call))


def tensor_rank(ctx: FileView, expr: cst.BaseExpression, ref: ModelRef | None) -> int | None:
    """The rank of an example input built by a torch factory with literal sizes
    (`torch.randn(1, 3, 224, 224)`, `torch.zeros((2, 8), dtype=...)`), else None."""
    value = resolve_value(ctx, expr, ref)
    if not isinstance(value, cst.Call):
        return None
    q = ctx.qualname(value.func) or ""
    if not q.startswith("torch.") or q.count(".") != 1:
        return None
    fn = q.split(".", 1)[1]
    if fn not in _SHAPE_FACTORIES or fn.endswith("_like"):
        return None
    size_kw = keyword_arg(value, "size")
    pos = [a for a in value.args if a.keyword is None]
    if any(a.star for a in pos):
        return None
    if size_kw is not None:
        sizes: list[cst.BaseExpression] = [size_kw.value]
    elif fn == "randint":
        sizes = [pos[-1].value] if len(pos) >= 2 else []
    elif fn == "full":
        sizes = [pos[0].value] if pos else []
    else:
        sizes = [a.value for a in pos]
    if len(sizes) == 1 and isinstance(sizes[0], (cst.Tuple, cst.List)):
        elements = sizes[0].elements
        if any(
            not isinstance(e, cst.Element) or isinstance(e, cst.StarredElement) for e in elements
        ):
            return None
        return len(elements)
    if not sizes or any(isinstance(s, (cst.Tuple, cst.List)) for s in sizes):
        return None
    if len(sizes) == 1 and not isinstance(sizes[0], cst.Integer):
        return None  # `torch.zeros(shape)`: a size variable
    return len(sizes)


def input_positions(ctx: FileView, call: ExportCall) -> dict[str, int] | None:
    """Input name -> index of the positional example input it names: from `input_names`,
    and from the `forward` parameter names when the model's class is in this file."""
    ref = exported_model(ctx, call)
    names = names_arg_of(ctx, call, "input_names", ref)
    if names is None:
        return None
    out = {n: i for i, n in enumerate(names)}
    params = model_forward_params(ctx, ref)
    for i, p in enumerate(params or ()):
        out.setdefault(p, i)
    return out


# --------------------------------------------------------------------------- mode sensitivity

_MODE_WORDS = (
    "Dropout",
    "dropout",
    "BatchNorm",
    "batch_norm",
    "InstanceNorm",
    "instance_norm",
    "training",
    "RNN",
    "LSTM",
    "GRU",
    "drop_path",
    "DropPath",
    "StochasticDepth",
    "SyncBatchNorm",
)


def mode_insensitive(ctx: FileView, class_name: str) -> bool:
    """True when a local module class provably behaves the same in train and eval mode:
    no mode-dependent layer or `self.training` anywhere in it (or its local bases and
    submodule classes), and every submodule it builds is a `torch.nn` layer or such a
    local class. False whenever unsure (an imported block could hold a Dropout)."""
    key = ("mode_insensitive", class_name)
    memo = _memo(ctx)
    if key not in memo:
        memo[key] = False  # recursion guard: a cycle counts as unsure
        memo[key] = _mode_insensitive(ctx, class_name)
    return bool(memo[key])


def _mode_insensitive(ctx: FileView, class_name: str) -> bool:
    info = ctx.semantic.classes.get(class_name)
    if info is None:
        return False
    return class_mode_insensitive(ctx, class_name, info.node, info.bases)


def class_mode_insensitive(
    ctx: FileView, class_name: str, node_: cst.ClassDef, bases: Sequence[str]
) -> bool:
    """`mode_insensitive` for a class given by its definition (also one nested in a
    function, which the file model does not list)."""
    for base in bases:
        q = ctx.semantic.resolve(base)
        if base in ctx.semantic.classes:
            if not mode_insensitive(ctx, base):
                return False
        elif q not in ("torch.nn.Module", "torch.nn.modules.module.Module"):
            return False
    for node in iter_descendants(node_):
        if isinstance(node, cst.Name) and any(w in node.value for w in _MODE_WORDS):
            return False
        if isinstance(node, cst.Attribute) and any(w in node.attr.value for w in _MODE_WORDS):
            return False
        if isinstance(node, cst.SimpleString) and "drop" in node.value.lower():
            return False
        if not isinstance(node, cst.Call):
            continue
        d = dotted(node.func)
        if d is None:
            continue
        last = d.rsplit(".", 1)[-1]
        if not _is_camel(last):
            continue
        if d in ctx.semantic.classes:
            if d != class_name and not mode_insensitive(ctx, d):
                return False
            continue
        q = ctx.semantic.qualname(node.func) or ""
        if not q.startswith("torch.nn.") and q not in ("builtins.super",):
            return False
    return True


def nested_class(ctx: FileView, ref: ModelRef) -> cst.ClassDef | None:
    """The class a model is built from when it is defined inside a function
    (`class Wrapper(nn.Module): ...` then `Wrapper(model)`), found by the callee's name."""
    callee = None
    values = [ref.expr, *(getattr(a, "value", None) for a in reversed(ref.assignments))]
    for value in values:
        inner = value
        while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute):
            inner = inner.func.value
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name):
            callee = inner.func.value
            break
    if callee is None or callee in ctx.semantic.classes:
        return None
    scope = ref.function if ref.function is not None else None
    roots: Sequence[cst.CSTNode] = [scope] if scope is not None else ctx.semantic.module_body
    for root in roots:
        for node in iter_descendants(root):
            if isinstance(node, cst.ClassDef) and node.name.value == callee:
                return node
    return None


# --------------------------------------------------------------------------- export wrappers


@dataclass
class WrapperCall(ExportCall):
    """A call of a project function that exports the model it is given, in the mode it is
    in (`to_onnx(net, "det.onnx")` with `def to_onnx(model, path): torch.onnx.export(model,
    ...)`): for the model-mode rules, an export call in the caller's file."""

    position: int = 0  # the model parameter's position
    param: str = ""  # its name
    wrapper: str = ""  # the function's name
    inner: ExportCall | None = None  # the export call in the function
    inner_view: FileAnalysis | None = None  # the file holding it

    @property
    def model_expr(self) -> cst.BaseExpression | None:
        arg = keyword_arg(self.node, self.param)
        if arg is None:
            pos = positional_args(self.node)
            arg = pos[self.position] if self.position < len(pos) else None
        return arg.value if arg is not None else None

    def link(self) -> Link | None:
        """Where the wrapper exports the model (the chain of the caller's finding)."""
        if self.inner is None or self.inner_view is None:
            return None
        text = f"`{self.wrapper}()` {{at}} exports it with `{self.inner.qualname}`"
        return Link(text, self.inner_view, self.inner.node)


_MODE_OPTIONS = frozenset({"training", "train", "train_mode", "training_mode", "is_training"})


def export_wrapper_call(ctx: FileView, call: cst.Call) -> WrapperCall | None:
    """`call` as a `WrapperCall` when it calls a project function (of this file, or
    imported from another module) whose parameter goes unchanged to an export call that
    exports the model in its current mode; None otherwise."""
    memo = _memo(ctx)
    key = ("wrapper call", id(call))
    if key in memo:
        return memo[key]  # type: ignore[return-value]
    memo[key] = None
    func = call.func
    target: tuple[FileView, FunctionInfo] | None = None
    qualname = dotted(func)
    if qualname is None or not call.args:
        return None
    if isinstance(func, cst.Name) and func.value in ctx.semantic.functions:
        target = ctx, ctx.semantic.functions[func.value]
    elif ctx.project is not None:
        q = ctx.qualname(func)
        if q is None or "." not in q or q.startswith(_NOT_PROJECT):
            return None
        qualname = q
        target = ctx.project.export_function(ctx.path, q)
    if target is None:
        return None
    found = _wrapped_export(*target)
    if found is None:
        return None
    inner, position, param, kind = found
    wrapper = WrapperCall(
        call,
        qualname,
        kind,
        None,
        position=position,
        param=param,
        wrapper=target[1].name,
        inner=inner,
        inner_view=analysis_of(target[0]),
    )
    if wrapper.model_expr is None:
        return None
    memo[key] = wrapper
    return wrapper


def _wrapped_export(
    view: FileView, info: FunctionInfo
) -> tuple[ExportCall, int, str, ExportKind] | None:
    """(the export call, the parameter's position and name, the exporter) when `info`
    exports one of its parameters, unchanged, with an exporter that keeps its mode."""
    memo = _memo(view)
    key = ("wrapped export", id(info.node))
    if key in memo:
        return memo[key]  # type: ignore[return-value]
    memo[key] = None
    params = [p.name.value for p in info.params()]
    if any(p in _MODE_OPTIONS for p in params):
        return None  # the caller chooses the mode
    positional = [*info.node.params.posonly_params, *info.node.params.params]
    if info.class_name is None:
        for e in view.semantic.export_calls:
            if e.statement is not info.node:
                continue
            ref = exported_model(view, e)
            if ref is None or ref.name is None or ref.function is not info.node:
                continue
            if ref.name not in params or ref.modes != {Mode.UNKNOWN}:
                continue
            if not captures_model_mode(view, e):
                continue
            where = next((i for i, p in enumerate(positional) if p.name.value == ref.name), None)
            if where is None:
                continue
            memo[key] = (e, where, ref.name, effective_kind(view, e))
            break
    return memo[key]  # type: ignore[return-value]
