"""OLX101: a Python `if`/`while`/`assert`/ternary/`and`/`or`/`not` on a tensor."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.rules.trace_hostile._common import (
    mentions_export_guard,
    traced,
    under_export_guard,
)
from onnxlint.semantic.branches import half_precision_only, skips_right_in_eval
from onnxlint.semantic.kinds import Kind

_TESTED = (cst.If, cst.While, cst.Assert, cst.IfExp, cst.CompIf)


class TensorCondition(Rule):
    """
    ## What it does
    Flags Python control flow whose condition is a tensor in code that runs from an
    `nn.Module.forward`: `if x.sum() > 0:`, `while (x > 0).any():`, `assert (x >= 0).all()`,
    `a if mask.any() else b`, and the truth value taken by `and`/`or`/`not` of a tensor.

    ## Why is this bad?
    Python needs a `bool` here, so the tensor's value is read. The dynamo exporter
    (`torch.onnx.export`, the default since torch 2.9) fails with
    `GuardOnDataDependentSymNode: Could not guard on data-dependent expression`, and
    tracing (`torch.jit.trace`, `dynamo=False`) records only the branch taken by the
    example input, silently.

    ## Example
    ```python
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return -x
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return torch.where(x.sum() > 0, x * 2, -x)
        # or torch.cond(x.sum() > 0, lambda x: x * 2, lambda x: -x, (x,))
    ```

    ## Fix safety
    No automatic fix: turning a branch into `torch.where` or `torch.cond` needs both
    branches to be computable and shape-compatible.

    ## References
    - https://docs.pytorch.org/docs/stable/export/programming_model.html
    - https://docs.pytorch.org/docs/stable/cond.html
    """

    code = "OLX101"
    forward_only = True
    scripting_keeps_python = True
    name = "tensor-condition"
    severity = Severity.ERROR

    VALID = [
        Valid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x, mask=None):
                        if mask is not None and self.training:
                            x = x * mask
                        if x.shape[0] > 1 and isinstance(x, torch.Tensor):
                            x = x + 1
                        while x.dim() < 4:
                            x = x.unsqueeze(0)
                        return x if mask is None else x * 2
                """
            )
        ),
        Valid(  # not reachable from a forward
            dedent(
                """
                import torch
                def stats(x):
                    if x.sum() > 0:
                        return 1
                """
            )
        ),
        Valid(  # written for export: guarded
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        if not torch.compiler.is_compiling() and (x < 0).any():
                            raise ValueError("negative")
                        return x
                """
            )
        ),
        Valid(  # LayerDrop: never evaluated in eval mode, whatever comes between
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x, keep):
                        for i, layer in enumerate(self.layers):
                            if not self.training or self.p == 0.0 or keep[i] > self.p:
                                x = layer(x)
                        return x
                """
            )
        ),
        Valid(  # `t == None` is the Python False (Tensor.__eq__(None)), not tensor data
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x, data=None):
                        if data == None:
                            data = torch.zeros_like(x)
                        return x + data
                """
            )
        ),
        Valid(  # `t == "coco"` is the Python False too (torch 2.13 exports the `if`)
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x, caption):
                        if caption == "coco":
                            return x * 2
                        elif f"{caption}" != 'voc':
                            return x * 3
                        return x
                """
            )
        ),
        Valid(  # float16-only: the float32 export short-circuits on the dtype test
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, h):
                        if h.dtype == torch.float16 and (
                            torch.isinf(h).any() or torch.isnan(h).any()
                        ):
                            h = torch.clamp(h, -1000, 1000)
                        return h
                """
            )
        ),
        Valid(  # an assert under tracing: checked on the example, nothing recorded
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        lens = x.sum(1)
                        assert torch.all(lens > 0)
                        return x * 2
                m = torch.jit.trace(M(), torch.ones(2, 3))
                """
            )
        ),
        Valid(  # a config flag passed positionally to a layer, not a tensor
            dedent(
                """
                import torch
                class Layer(torch.nn.Module):
                    def forward(self, hidden_states, output_attentions):
                        attentions = () if output_attentions else None
                        return hidden_states, attentions
                """
            )
        ),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        if x.sum() > 0:
                            return x * 2
                        return -x
                """
            ),
            line=4,
            message="`if` on a tensor",
        ),
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x, mask=None):
                        y = x if mask is None or mask.any() else x * 2
                        assert (y >= 0).all(), "negative"
                        return y
                """
            ),
            line=4,
            message="ternary",
            count=2,
        ),
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        return self.f(x)
                    def f(self, x: torch.Tensor):
                        keep = not x.any()
                        return keep
                """
            ),
            line=6,
            message="`not` on a tensor",
        ),
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        while x.max() > 1:
                            x = x / 2
                        return x
                m = torch.jit.trace(M(), torch.ones(2))
                """
            ),
            line=4,
            message="tracing records only",
            severity=Severity.WARNING,
        ),
        Invalid(  # a dtype test that does not exclude float32 keeps the finding
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, h):
                        if h.dtype != torch.float16 and torch.isinf(h).any():
                            h = torch.clamp(h, -1000, 1000)
                        return h
                """
            ),
            line=4,
            message="`if` on a tensor",
        ),
        Invalid(  # under a dynamo export the assert stays reported; a tensor input too
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x, output_mask):
                        assert torch.all(x > 0)
                        return x if output_mask else -x
                torch.onnx.export(M(), (torch.ones(2), torch.ones(2)), "m.onnx")
                """
            ),
            line=4,
            message="`assert` on a tensor",
            count=2,
        ),
    ]

    def _check(self, test: cst.BaseExpression, what: str) -> None:
        if not self.ctx.in_forward:
            return
        if what == "`assert`" and traced(self.ctx):
            return  # tracing checks it on the example and records nothing: the graph is the same
        for expr, how in self._tensor_truths(test, True, what):
            if not under_export_guard(self.ctx, test):
                self._report(expr, how)
            return  # one finding per condition

    def _tensor_truths(
        self, expr: cst.BaseExpression, tested: bool, what: str
    ) -> Iterator[tuple[cst.BaseExpression, str]]:
        if isinstance(expr, cst.BooleanOperation):
            op = "and" if isinstance(expr.operator, cst.And) else "or"
            yield from self._tensor_truths(expr.left, True, f"`{op}`")
            if mentions_export_guard(self.ctx, expr.left) or skips_right_in_eval(expr):
                return  # `not is_compiling() and x.any()`: written with export in mind
            if half_precision_only(expr):
                return  # `h.dtype == torch.float16 and h.isinf().any()`: float32 skips it
            yield from self._tensor_truths(expr.right, tested, what if tested else f"`{op}`")
        elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            yield from self._tensor_truths(expr.expression, True, "`not`")
        elif tested and self.ctx.kind(expr) is Kind.TENSOR:
            yield expr, what

    def _report(self, expr: cst.BaseExpression, how: str) -> None:
        if traced(self.ctx):
            self.report(
                expr,
                f"Python {how} on a tensor: tracing records only the branch the example "
                "input takes; use `torch.where` or `torch.cond`",
                severity=Severity.WARNING,
            )
        else:
            self.report(
                expr,
                f"Python {how} on a tensor is data-dependent control flow, which "
                "`torch.export`/`torch.onnx.export` cannot capture; use `torch.where` or "
                "`torch.cond`",
            )

    def visit_If(self, node: cst.If) -> None:
        self._check(node.test, "`if`")

    def visit_While(self, node: cst.While) -> None:
        self._check(node.test, "`while`")

    def visit_Assert(self, node: cst.Assert) -> None:
        self._check(node.test, "`assert`")

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node.test, "ternary")

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self._check(node.test, "comprehension `if`")

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        if not self._in_test(node):
            self._check_value(node)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not) and not self._in_test(node):
            self._check_value(node)

    def _check_value(self, node: cst.BaseExpression) -> None:
        """`and`/`or`/`not` outside a condition: only truth values taken count."""
        if not self.ctx.in_forward:
            return
        for expr, how in self._tensor_truths(node, False, ""):
            if not under_export_guard(self.ctx, node):
                self._report(expr, how)
            return

    def _in_test(self, node: cst.CSTNode) -> bool:
        """Whether `node` is (a part of) a condition handled by its statement's handler."""
        child = node
        for parent in reversed(self.ctx.ancestors):
            if isinstance(parent, _TESTED):
                return child is parent.test
            if isinstance(parent, cst.BooleanOperation) or (
                isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)
            ):
                child = parent
                continue
            return False
        return False
