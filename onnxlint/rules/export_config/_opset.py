"""The `opset_version` an export call asks for, when it can be read: a literal, a constant,
or a configuration value from elsewhere in the project (`args.opset` with `args =
ExportSettings()` and `opset: int = 11` in another module, see `onnxlint.analysis.values`)."""

from __future__ import annotations

from typing import NamedTuple

import libcst as cst

from onnxlint.analysis.values import config_value
from onnxlint.core.violation import Related
from onnxlint.rules.base import Context
from onnxlint.rules.exporter_api.api_table import int_literal, single_value
from onnxlint.semantic.calls import ExportCall


class Opset(NamedTuple):
    arg: cst.Arg
    value: int
    shown: str  # how messages write it: "`opset_version=13`", with where a config sets it
    related: tuple[Related, ...]


def requested_opset(ctx: Context, call: ExportCall) -> Opset | None:
    arg = call.arg("opset_version")
    if arg is None:
        return None
    value = int_value(ctx, arg.value)
    if value is not None:
        return Opset(arg, value, f"`opset_version={value}`", ())
    found = config_value(ctx, single_value(ctx, arg.value), ctx.function)
    if found is None:
        return None
    number = int_literal(found.value)
    if number is None:
        return None
    chain, related = ctx.chain(found.chain)
    source = ctx.code_of(arg.value)
    shown = (
        f"`opset_version={source}` ({number}: {chain})" if chain else f"`opset_version={number}`"
    )
    return Opset(arg, number, shown, related)


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
