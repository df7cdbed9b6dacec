"""OLX505: a `custom_translation_table` value that is a list or tuple."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Fix, FixSafety, Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent, make_fix
from onnxlint.rules.exporter_api.api_table import (
    TRANSLATION_LIST_REJECTED,
    TRANSLATION_TABLE_ADDED,
    ExportPath,
    export_path,
    single_value,
)


class TranslationTableListValue(Rule):
    """
    ## What it does
    Flags a value of `custom_translation_table` that is a list or tuple of functions
    (`{torch.ops.mylib.op.default: [fn_float, fn_complex]}`).

    ## Why is this bad?
    Since torch 2.11 each value must be a single callable:
    `TypeError: The value in custom_translation_table should be a single callable, not a
    sequence`. Earlier versions accepted a list of overloads. Rated for `target-torch`:
    error from 2.11, info in 2.6-2.10.

    ## Example
    ```python
    torch.onnx.export(model, (x,), custom_translation_table={op: [twice_onnx]})
    ```

    ## Use instead
    ```python
    torch.onnx.export(model, (x,), custom_translation_table={op: twice_onnx})
    ```

    ## Fix safety
    Safe for a one-element list (it becomes the element: the same translation). No fix for
    longer lists: pick one function, or dispatch inside one.

    ## References
    - `torch/onnx/_internal/exporter/_compat.py` (torch 2.13), field-and-peers.md T22
    """

    code = "OLX505"
    name = "translation-table-list-value"
    severity = Severity.ERROR
    fix_safety = FixSafety.SAFE
    requires = ("custom_translation_table",)
    file_scope = True  # the table may be a module-level dict

    VALID = [
        Valid("import torch\ntorch.onnx.export(m, (x,), custom_translation_table={op: fn})\n"),
        Valid("import torch\ntorch.onnx.export(m, (x,), custom_translation_table=table)\n"),
        Valid(
            "import torch\ntorch.onnx.export(m, (x,), custom_translation_table={op: [fn]})\n",
            config={"target-torch": "2.5"},
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\ntorch.onnx.export(m, (x,), custom_translation_table={op: [fn]})\n",
            line=2,
            message="single callable",
            fixed="import torch\ntorch.onnx.export(m, (x,), custom_translation_table={op: fn})\n",
        ),
        Invalid(
            dedent(
                """
                import torch
                TABLE = {
                    torch.ops.mylib.a.default: (fa, fa_complex),
                }

                def main():
                    torch.onnx.export(m, (x,), custom_translation_table=TABLE)
                """
            ),
            line=7,
            message="TypeError",
        ),
        Invalid(
            "import torch\ntorch.onnx.export(m, (x,), custom_translation_table={op: [f, g]})\n",
            line=2,
            message="rejected from torch 2.11",
            severity=Severity.INFO,
            config={"target-torch": "2.10"},
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        target = self.ctx.config.torch_version
        if target < TRANSLATION_TABLE_ADDED:
            return
        call = self.ctx.export_call(node)
        if call is None:
            return
        path = export_path(self.ctx, call)
        if path is None or path is ExportPath.TORCHSCRIPT:
            return
        arg = call.arg("custom_translation_table")
        if arg is None:
            return
        table = single_value(self.ctx, arg.value)
        if not isinstance(table, cst.Dict):
            return
        removed = target >= TRANSLATION_LIST_REJECTED
        for el in table.elements:
            if not isinstance(el, cst.DictElement) or not isinstance(
                el.value, (cst.List, cst.Tuple)
            ):
                continue
            if removed:
                message = (
                    "a `custom_translation_table` value must be a single callable, not a "
                    "sequence (TypeError since torch 2.11); pass one onnxscript function"
                )
            else:
                message = (
                    "a list as `custom_translation_table` value is rejected from torch 2.11 "
                    "(TypeError); pass one onnxscript function"
                )
            severity = Severity.ERROR if removed else Severity.INFO
            inline = table is arg.value or self._in_block(el.value)
            self.report(
                el.value if inline else arg,
                message,
                fix=self._fix(el.value) if inline else None,
                severity=severity,
            )

    def _in_block(self, node: cst.CSTNode) -> bool:
        try:
            self.ctx.span(node)
        except LookupError:
            return False
        return True

    def _fix(self, seq: cst.List | cst.Tuple) -> Fix | None:
        elements = list(seq.elements)
        if len(elements) != 1 or not isinstance(elements[0], cst.Element):
            return None
        only = self.ctx.code_of(elements[0].value)
        return make_fix("Use the single function", self.ctx.replace(seq, only))
