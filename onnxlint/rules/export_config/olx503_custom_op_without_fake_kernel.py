"""OLX503: a custom operator defined in the file without a fake (meta) kernel."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.rules.export_config._custom_ops import CustomOp, custom_ops, op_uses
from onnxlint.rules.exporter_api.api_table import ExportPath, export_path
from onnxlint.semantic.calls import ExportKind


class CustomOpWithoutFakeKernel(Rule):
    """
    ## What it does
    Flags a custom operator defined in the file (`@torch.library.custom_op`,
    `torch.library.define`, `Library(...).define`) that has no fake kernel in the same file
    (`@op.register_fake`, `torch.library.register_fake("ns::op")`, `impl_abstract`, or a
    `Meta` / `CompositeImplicitAutograd` kernel). Error when the file also exports (dynamo
    exporter or `torch.export`) a model whose `forward` calls the op; warning otherwise.

    ## Why is this bad?
    `torch.export` (and so `torch.onnx.export` and `torch.compile`) runs the model on fake
    tensors. An op without a fake kernel stops it at step 1/3: `RuntimeError: There was no
    fake impl registered for <CustomOpDef(mylib::nofake)>. This is necessary for
    torch.compile/export/fx tracing to work.`

    ## Example
    ```python
    @torch.library.custom_op("mylib::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2
    ```

    ## Use instead
    ```python
    @torch.library.custom_op("mylib::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @twice.register_fake
    def _(x):
        return torch.empty_like(x)
    ```

    ## Fix safety
    No fix: the fake kernel has to compute the output's shape and dtype.

    ## References
    - https://docs.pytorch.org/tutorials/advanced/custom_ops_landing_page.html
    - field-and-peers.md P7 and T25 (the 2.13 error)
    """

    code = "OLX503"
    name = "custom-op-without-fake-kernel"
    severity = Severity.WARNING
    requires = ("custom_op", "define")
    file_scope = True  # the fake kernel and the export call live in other blocks

    VALID = [
        Valid(
            dedent(
                """
                import torch

                @torch.library.custom_op("mylib::twice", mutates_args=())
                def twice(x: torch.Tensor) -> torch.Tensor:
                    return x * 2

                @twice.register_fake
                def _(x):
                    return torch.empty_like(x)
                """
            )
        ),
        Valid(
            dedent(
                """
                import torch
                torch.library.define("mylib::add1", "(Tensor x) -> Tensor")

                @torch.library.register_fake("mylib::add1")
                def _(x):
                    return torch.empty_like(x)
                """
            )
        ),
        Valid(
            dedent(
                """
                import torch
                lib = torch.library.Library("mylib", "DEF")
                lib.define("add1(Tensor x) -> Tensor")
                lib.impl("add1", meta_add1, "Meta")
                """
            )
        ),
        Valid("def define(x): pass\ndefine('mylib::x')\n"),
        Valid(
            dedent(
                """
                import torch

                @torch.library.custom_op("mylib::a", mutates_args=())
                def a(x: torch.Tensor) -> torch.Tensor:
                    return x.clone()

                @a.register_fake
                def _(x):
                    return torch.empty_like(x)

                @torch.library.custom_op("mylib::b", mutates_args=())
                def b(x: torch.Tensor) -> torch.Tensor:
                    return x.clone()

                @b.register_fake
                def _(x):
                    return torch.empty_like(x)
                """
            )
        ),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch

                @torch.library.custom_op("mylib::nofake", mutates_args=())
                def nofake(x: torch.Tensor) -> torch.Tensor:
                    return x * 2

                class Net(torch.nn.Module):
                    def forward(self, x):
                        return nofake(x)

                torch.onnx.export(Net().eval(), (torch.randn(2),), "m.onnx")
                """
            ),
            line=3,
            message="no fake kernel",
            severity=Severity.ERROR,
        ),
        Invalid(
            dedent(
                """
                import torch
                lib = torch.library.Library("mylib", "DEF")
                lib.define("add1(Tensor x) -> Tensor")
                lib.impl("add1", add1_cpu, "CPU")
                """
            ),
            line=3,
            message="mylib::add1",
            severity=Severity.WARNING,
        ),
        Invalid(
            dedent(
                """
                from torch.library import custom_op, register_fake

                @custom_op("mylib::a", mutates_args=())
                def a(x): return x

                @register_fake("mylib::other")
                def _(x): return x
                """
            ),
            line=3,
            message="mylib::a",
        ),
    ]

    def _check(self, node: cst.CSTNode) -> None:
        ops = custom_ops(self.ctx)
        for op in ops.defined:
            if op.node is node and not ops.has_fake(op):
                self._report(op)

    def visit_Decorator(self, node: cst.Decorator) -> None:
        self._check(node)

    def visit_Call(self, node: cst.Call) -> None:
        self._check(node)

    def _report(self, op: CustomOp) -> None:
        severity = Severity.WARNING
        if self._exported(op):
            severity = Severity.ERROR
        how = (
            f"`@{op.py_name}.register_fake`"
            if op.py_name
            else f'`@torch.library.register_fake("{op.label}")`'
        )
        self.report(
            op.node,
            f"custom op `{op.label}` has no fake kernel in this file: torch.export and the "
            f"ONNX exporter fail on it (no fake impl registered); add {how} returning an "
            f"empty tensor of the output's shape",
            severity=severity,
        )

    def _exported(self, op: CustomOp) -> bool:
        exports = [
            e
            for e in self.ctx.semantic.export_calls
            if e.kind in (ExportKind.TORCH_EXPORT, ExportKind.ONNX_DYNAMO_EXPORT)
            or export_path(self.ctx, e) is ExportPath.DYNAMO
        ]
        if not exports:
            return False
        return any(
            (u.qual is not None and u.qual == op.qual)
            or (u.py_name is not None and u.py_name == op.py_name)
            for u in op_uses(self.ctx)
        )
