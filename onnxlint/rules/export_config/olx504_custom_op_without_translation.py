"""OLX504: an exported model calls a custom op that the export call does not translate."""

from __future__ import annotations

import libcst as cst

from onnxlint.analysis.exported_model import exported_model
from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.rules.export_config._custom_ops import (
    OpUse,
    custom_ops,
    op_uses,
    ops_qual,
    reachable_from,
)
from onnxlint.rules.exporter_api.api_table import (
    TRANSLATION_TABLE_ADDED,
    onnx_export_on_dynamo,
    single_value,
)
from onnxlint.semantic.calls import ExportCall


class CustomOpWithoutTranslation(Rule):
    """
    ## What it does
    Flags a `torch.onnx.export` call (dynamo exporter) whose model's `forward`, as far as
    this file shows, calls a custom operator (one the file defines with `torch.library`,
    or any `torch.ops.<ns>.<op>` outside torch's own namespaces) that has no entry in the
    call's `custom_translation_table`.

    ## Why is this bad?
    `torch.export` keeps custom ops as opaque nodes, and the ONNX exporter only knows how to
    translate ATen ops (and torchvision's). Without a translation the export fails at step
    3/3: `DispatchError: No ONNX function found for <OpOverload(op='mylib.twice',
    overload='default')>`.

    ## Example
    ```python
    torch.onnx.export(Net().eval(), (x,), "m.onnx")  # forward calls torch.ops.mylib.twice
    ```

    ## Use instead
    ```python
    @onnxscript.script()
    def twice_onnx(x):
        return op.Add(x, x)

    torch.onnx.export(Net().eval(), (x,), "m.onnx",
                      custom_translation_table={torch.ops.mylib.twice.default: twice_onnx})
    ```

    ## Fix safety
    No fix: the translation is an onnxscript function someone has to write.

    ## Limits
    The model's class is followed in this file only (its `forward`, the methods and
    functions it calls, the module classes its `__init__` builds). A table that is not a
    literal dict (a variable from elsewhere, `{**other}`) is assumed to cover every op.

    ## References
    - https://docs.pytorch.org/tutorials/beginner/onnx/onnx_registry_tutorial.html
    - field-and-peers.md P7 and T26 (the 2.13 error)
    """

    code = "OLX504"
    name = "custom-op-without-translation"
    severity = Severity.ERROR
    requires = ("export",)
    file_scope = True  # reads the model's forward and the ops defined elsewhere in the file

    VALID = [
        Valid(
            dedent(
                """
                import torch

                class Net(torch.nn.Module):
                    def forward(self, x):
                        return torch.ops.mylib.twice(x)

                torch.onnx.export(
                    Net().eval(),
                    (x,),
                    custom_translation_table={torch.ops.mylib.twice.default: twice_onnx},
                )
                """
            )
        ),
        Valid(
            dedent(
                """
                import torch

                class Net(torch.nn.Module):
                    def forward(self, x):
                        return torch.ops.aten.relu(x)

                torch.onnx.export(Net().eval(), (x,))
                """
            )
        ),
        Valid(
            dedent(
                """
                import torch

                class Net(torch.nn.Module):
                    def forward(self, x):
                        return torch.ops.mylib.twice(x)

                torch.onnx.export(Net().eval(), (x,), custom_translation_table=TABLE)
                """
            )
        ),
        Valid(
            dedent(
                """
                import torch

                class Net(torch.nn.Module):
                    def forward(self, x):
                        return torch.ops.mylib.twice(x)

                torch.onnx.export(Net().eval(), (x,), dynamo=False)
                """
            )
        ),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch

                @torch.library.custom_op("mylib::twice", mutates_args=())
                def twice(x: torch.Tensor) -> torch.Tensor:
                    return x * 2

                class Net(torch.nn.Module):
                    def forward(self, x):
                        return twice(x) + 1

                model = Net().eval()
                torch.onnx.export(model, (torch.randn(2),), "m.onnx")
                """
            ),
            line=12,
            message="torch.ops.mylib.twice.default",
        ),
        Invalid(
            dedent(
                """
                import torch

                class Block(torch.nn.Module):
                    def forward(self, x):
                        return torch.ops.detectron2.nms_rotated(x)

                class Net(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.block = Block()

                    def forward(self, x):
                        return self.block(x)

                def main():
                    torch.onnx.export(
                        Net().eval(),
                        (x,),
                        custom_translation_table={torch.ops.mylib.other.default: fn},
                    )
                """
            ),
            line=19,
            message="detectron2::nms_rotated",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.config.torch_version < TRANSLATION_TABLE_ADDED:
            return
        call = onnx_export_on_dynamo(self.ctx, node)
        if call is None:
            return
        uses = self._uses(call)
        if not uses:
            return
        table_arg = call.arg("custom_translation_table")
        covered: set[str] = set()
        if table_arg is not None:
            keys = self._table_keys(table_arg.value)
            if keys is None:
                return  # not a literal dict: assume it covers everything
            covered = keys
        missing: dict[str, OpUse] = {}
        for u in uses:
            keys = {k for k in (u.qual, u.py_name) if k}
            if not keys & covered:
                missing.setdefault(u.label, u)
        if not missing:
            return
        first = next(iter(missing.values()))
        names = ", ".join(f"`{m}`" for m in missing)
        key = self._key_text(first)
        line = self.ctx.span(first.node).line if self._in_block(first.node) else None
        where = f" (line {line})" if line else ""
        self.report(
            table_arg if table_arg is not None else node.func,
            f"the exported model calls custom op {names}{where} with no ONNX translation: "
            f"the export fails (DispatchError: No ONNX function found); add "
            f"`custom_translation_table={{{key}: <onnxscript function>}}`",
        )

    def _in_block(self, node: cst.CSTNode) -> bool:
        try:
            self.ctx.span(node)
        except LookupError:
            return False
        return True

    def _key_text(self, use: OpUse) -> str:
        if use.qual and "::" in use.qual:
            ns, name = use.qual.split("::", 1)
            return f"torch.ops.{ns}.{name}.default"
        return f"{use.py_name}._opoverload"

    def _uses(self, call: ExportCall) -> list[OpUse]:
        keys = None
        ref = exported_model(self.ctx, call)
        if ref is not None and ref.class_info is not None:
            keys = reachable_from(self.ctx.semantic, ref.class_info.name)
        return op_uses(self.ctx, keys)

    def _table_keys(self, expr: cst.BaseExpression) -> set[str] | None:
        """Op names a literal translation table covers; None when it cannot be read."""
        value = single_value(self.ctx, expr)
        if not isinstance(value, cst.Dict):
            return None
        ops = custom_ops(self.ctx)
        out: set[str] = set()
        for el in value.elements:
            if not isinstance(el, cst.DictElement):
                return None
            qual = ops_qual(self.ctx.semantic, el.key)
            if qual is not None:
                out.add(qual)
                continue
            key = el.key
            if isinstance(key, cst.Attribute):  # `twice._opoverload`
                key = key.value
            if isinstance(key, cst.Name):
                out.add(key.value)
                op = ops.by_name(key.value)
                if op is not None and op.qual:
                    out.add(op.qual)
                continue
            return None
        return out
