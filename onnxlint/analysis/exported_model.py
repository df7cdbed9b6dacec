"""The model a call exports (`ModelRef`): mode, class, forward. Imports modes, scope, chains.

- `exported_model(ctx, call)`: the exported model as a `ModelRef`: the expression and the
  variable it names, the statements assigning it in the scope, the modes it can be in at
  the call (`onnxlint.analysis.modes`), and its class: a class of this file, one imported
  from another module of the project, or the class a builder of another module returns.
- `model_class(ctx, ref)`, `nested_class(ctx, ref)`: that class, with the facts of the file
  defining it; the class defined inside a function that wraps the model. `model_callee(ref)`:
  the plain name called to build it.
- `forward_params(ctx, class_info)`: the names `forward` takes (through local bases);
  `model_forward_params(ctx, ref)` also for a class imported from another project module,
  `model_forward_file(ctx, ref)` where that `forward` is.

Used by the model-mode (OLX2xx), dynamic-shape (OLX3xx) and exporter-API (OLX4xx) rules,
the export inputs (`inputs`, `dims`), the project's exports and the deep call-site
mapping. Nothing here imports or runs user code; everything answers None when unsure.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from onnxlint.analysis.chains import Chain
from onnxlint.analysis.modes import UNKNOWN_STATE, Mode, ModeFlow, State
from onnxlint.analysis.scope import function_binds, named_assignments, node_path, scope_of
from onnxlint.semantic.calls import ExportCall
from onnxlint.semantic.index import ClassInfo
from onnxlint.source.walker import dotted, iter_descendants

if TYPE_CHECKING:
    from onnxlint.analysis.file import FileAnalysis, FileView

__all__ = [
    "ModelRef",
    "exported_model",
    "forward_params",
    "model_callee",
    "model_class",
    "model_forward_file",
    "model_forward_params",
    "nested_class",
]


@dataclass
class ModelRef:
    """The model an export call exports (see `exported_model`)."""

    expr: cst.BaseExpression  # the model argument as written at the call
    name: str | None  # the dotted variable it names (`model`, `self.net`), None for an inline call
    function: cst.FunctionDef | None  # the enclosing function, None at module level
    scope: Sequence[cst.BaseStatement]  # the enclosing function's body, or the module body
    statement: cst.CSTNode  # the innermost statement holding the call
    assignments: list[cst.CSTNode] = field(default_factory=list)  # Assign/AnnAssign to `name`
    origins: State = UNKNOWN_STATE  # the states the model can be in at the call
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


# --------------------------------------------------------------------------- exported_model


def exported_model(ctx: FileView, call: ExportCall) -> ModelRef | None:
    """The model `call` exports, with its state at the call and its class if local.

    None when the call has no model argument or sits where no scope can be followed
    (a class body, a lambda).
    """
    key = ("model", id(call.node))
    memo = ctx.semantic.memo
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
    scoped = scope_of(ctx, path)
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
    flow = ModeFlow(ctx, name or "<none>", stmts)
    ids = {id(n) for n in below} | {id(call.node)}
    start = _start_state(function, name) if name else UNKNOWN_STATE
    at, _ = flow.run(stmts, start, ids)
    origins = flow.origin(expr, at) if at else UNKNOWN_STATE
    assignments = named_assignments(ctx, stmts, name) if name else []
    found = _unique_class(ctx, origins)
    if (
        found is None
        and name is not None
        and function is not None
        and not function_binds(function, name)
    ):
        # A module-level model exported inside a function, or `self.model` set by another
        # method of the class (an `Exporter` whose `init_model()` builds it): resolve its
        # class only (the other method's mode is not followed).
        owner = _enclosing_class(path) if name.startswith("self.") else None
        bodies = _method_bodies(owner) if owner is not None else [ctx.semantic.module_body]
        classes = {_class_of_value(ctx, a) for b in bodies for a in named_assignments(ctx, b, name)}
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


def _enclosing_class(path: Sequence[cst.CSTNode]) -> cst.ClassDef | None:
    return next((n for n in reversed(path) if isinstance(n, cst.ClassDef)), None)


def _method_bodies(cls: cst.ClassDef) -> list[Sequence[cst.CSTNode]]:
    return [
        f.body.body
        for f in cls.body.body
        if isinstance(f, cst.FunctionDef) and isinstance(f.body, cst.IndentedBlock)
    ]


def _start_state(func: cst.FunctionDef | None, name: str) -> State:
    """The model's state on entry to a scope: unknown (a parameter, a global, ...)."""
    return UNKNOWN_STATE


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
    flow = ModeFlow(ctx, "<none>")
    return _unique_class(ctx, flow.origin(value, UNKNOWN_STATE))


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
    memo = ctx.semantic.memo
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


def nested_class(ctx: FileView, ref: ModelRef) -> cst.ClassDef | None:
    """The class a model is built from when it is defined inside a function
    (`class Wrapper(nn.Module): ...` then `Wrapper(model)`), found by the callee's name."""
    callee = model_callee(ref)
    if callee is None or callee in ctx.semantic.classes:
        return None
    scope = ref.function if ref.function is not None else None
    roots: Sequence[cst.CSTNode] = [scope] if scope is not None else ctx.semantic.module_body
    for root in roots:
        for node in iter_descendants(root):
            if isinstance(node, cst.ClassDef) and node.name.value == callee:
                return node
    return None


def model_callee(ref: ModelRef) -> str | None:
    """The plain name called to build the model (`Wrapper` of `m = Wrapper(net).eval()`),
    from the export's argument or the last assignment to it; None when not a call."""
    values = [ref.expr, *(getattr(a, "value", None) for a in reversed(ref.assignments))]
    for value in values:
        inner = value
        while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute):
            inner = inner.func.value
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name):
            return inner.func.value
    return None
