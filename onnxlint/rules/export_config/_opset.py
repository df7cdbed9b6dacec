"""The `opset_version` an export call asks for, when it is a literal (or a literal constant)."""

from __future__ import annotations

import libcst as cst

from onnxlint.rules.base import Context
from onnxlint.rules.exporter_api.api_table import int_literal, single_value
from onnxlint.semantic.calls import ExportCall


def requested_opset(ctx: Context, call: ExportCall) -> tuple[cst.Arg, int] | None:
    arg = call.arg("opset_version")
    if arg is None:
        return None
    value = int_value(ctx, arg.value)
    return None if value is None else (arg, value)


def int_value(ctx: Context, expr: cst.BaseExpression) -> int | None:
    """An int literal, a name assigned one (in the function or the module), the literal
    default of a parameter (`def export(model, opset=11)`), or a constant imported from a
    project module (`from .consts import OPSET`, `consts.OPSET`)."""
    value = single_value(ctx, expr)
    found = int_literal(value)
    if found is not None or not isinstance(value, (cst.Name, cst.Attribute)):
        return found
    if isinstance(value, cst.Name):
        func = ctx.function
        if func is not None:
            for p in func.params():
                if p.name.value == value.value and p.default is not None:
                    return int_literal(p.default)
    q = ctx.qualname(value)
    if q is None or ctx.project is None or q.startswith(("torch.", "builtins.")):
        return None
    constant = ctx.project.find_constant(ctx.path, q)
    return int_literal(constant) if constant is not None else None
