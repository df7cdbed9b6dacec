"""The `opset_version` an export call asks for, when it is a literal (or a literal constant)."""

from __future__ import annotations

import libcst as cst

from onnxlint.rule import Context
from onnxlint.rules.exporter_api.api_table import int_literal, single_value
from onnxlint.semantic import ExportCall


def requested_opset(ctx: Context, call: ExportCall) -> tuple[cst.Arg, int] | None:
    arg = call.arg("opset_version")
    if arg is None:
        return None
    value = int_literal(single_value(ctx, arg.value))
    return None if value is None else (arg, value)
