"""Exporter facts of an export call, and export wrappers. Imports exported_model, modes, chains.

- `effective_kind(ctx, call)`: the exporter a call really uses for `target-torch` (before
  2.9, `torch.onnx.export` without `dynamo=` is the TorchScript exporter);
  `exporter_known(call)`: False when `**kwargs` may choose it.
- `captures_model_mode(ctx, call)`: whether the call exports the model in the mode it is
  in, so that the model must be in eval mode.
- `export_wrapper_call(ctx, call)`: a call of a project function that exports the model
  it is given in the mode it is in (`to_onnx(net, "det.onnx")`), as a `WrapperCall`: an
  export call in the caller's file for the model-mode rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from onnxlint.analysis.chains import Link, analysis_of
from onnxlint.analysis.exported_model import exported_model
from onnxlint.analysis.modes import NOT_PROJECT, Mode
from onnxlint.semantic.calls import ExportCall, ExportKind, keyword_arg, positional_args
from onnxlint.semantic.index import FunctionInfo
from onnxlint.source.walker import dotted

if TYPE_CHECKING:
    from onnxlint.analysis.file import FileAnalysis, FileView

__all__ = [
    "WrapperCall",
    "captures_model_mode",
    "effective_kind",
    "export_wrapper_call",
    "exporter_known",
]


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
    memo = ctx.semantic.memo
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
        if q is None or "." not in q or q.startswith(NOT_PROJECT):
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
    memo = view.semantic.memo
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
