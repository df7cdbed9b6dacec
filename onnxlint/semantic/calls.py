"""Export calls: which call exports a model and through which exporter (`classify_export`),
and the argument readers every rule family shares (`keyword_arg`, `literal_int`, ...)."""

from __future__ import annotations

import enum
from collections.abc import Collection
from dataclasses import dataclass

import libcst as cst


class ExportKind(str, enum.Enum):
    """Which exporter a call goes through: it decides how findings are rated."""

    ONNX_DYNAMO = "onnx-dynamo"  # torch.onnx.export (dynamo=True, the default since 2.9)
    ONNX_TORCHSCRIPT = "onnx-torchscript"  # torch.onnx.export(..., dynamo=False)
    ONNX_DYNAMO_EXPORT = "onnx-dynamo-export"  # torch.onnx.dynamo_export (removed in 2.9)
    TORCH_EXPORT = "torch-export"  # torch.export.export
    JIT_TRACE = "jit-trace"  # torch.jit.trace / trace_module
    JIT_SCRIPT = "jit-script"  # torch.jit.script

    @property
    def is_torchscript(self) -> bool:
        return self in (ExportKind.ONNX_TORCHSCRIPT, ExportKind.JIT_TRACE, ExportKind.JIT_SCRIPT)


_EXPORT_QUALNAMES = {
    "torch.onnx.export": ExportKind.ONNX_DYNAMO,
    "torch.onnx.utils.export": ExportKind.ONNX_TORCHSCRIPT,
    "torch.onnx._export": ExportKind.ONNX_TORCHSCRIPT,  # removed (OLX409); was TorchScript
    "torch.onnx.dynamo_export": ExportKind.ONNX_DYNAMO_EXPORT,
    "torch.export.export": ExportKind.TORCH_EXPORT,
    "torch.export.export_for_training": ExportKind.TORCH_EXPORT,
    "torch.export.draft_export": ExportKind.TORCH_EXPORT,
    "torch.jit.trace": ExportKind.JIT_TRACE,
    "torch.jit.trace_module": ExportKind.JIT_TRACE,
    "torch.jit.script": ExportKind.JIT_SCRIPT,
}


def keyword_arg(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional_args(call: cst.Call) -> list[cst.Arg]:
    return [a for a in call.args if a.keyword is None and not a.star]


def literal_int(expr: cst.BaseExpression) -> int | None:
    """The value of an integer literal, also negative (`-1`), else None."""
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    if (
        isinstance(expr, cst.UnaryOperation)
        and isinstance(expr.operator, cst.Minus)
        and isinstance(expr.expression, cst.Integer)
    ):
        return -int(expr.expression.value, 0)
    return None


def strip_method_calls(expr: cst.BaseExpression, methods: Collection[str]) -> cst.BaseExpression:
    """`expr` without trailing calls of `methods`: `torch.zeros(2).to(dev).float()` with
    {"to", "float"} gives `torch.zeros(2)`."""
    while (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in methods
    ):
        expr = expr.func.value
    return expr


def literal_bool(expr: cst.BaseExpression) -> bool | None:
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


@dataclass
class ExportCall:
    """A call that exports or traces a model."""

    node: cst.Call
    qualname: str
    kind: ExportKind
    statement: cst.CSTNode | None = None  # the top-level statement that holds the call

    def arg(self, name: str, position: int | None = None) -> cst.Arg | None:
        found = keyword_arg(self.node, name)
        if found is None and position is not None:
            pos = positional_args(self.node)
            if position < len(pos):
                found = pos[position]
        return found

    @property
    def model_expr(self) -> cst.BaseExpression | None:
        arg = self.arg("model", 0) or self.arg("mod", 0) or self.arg("func", 0)
        return arg.value if arg is not None else None


def classify_export(call: cst.Call, qualname: str) -> ExportKind | None:
    kind = _EXPORT_QUALNAMES.get(qualname)
    if kind is ExportKind.ONNX_DYNAMO:
        dyn = keyword_arg(call, "dynamo")
        if dyn is not None and literal_bool(dyn.value) is False:
            return ExportKind.ONNX_TORCHSCRIPT
    return kind


# --------------------------------------------------------------------------- file model


def is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"
