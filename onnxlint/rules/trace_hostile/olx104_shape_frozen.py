"""OLX104: a tensor's size read as a Python int: `int(x.shape[0])`, `range(x.size(1))`."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Context, Invalid, Rule, Valid, dedent
from onnxlint.rules.trace_hostile._common import from_shape, shape_names, specialising_path


class ShapeFrozen(Rule):
    """
    ## What it does
    Flags a dimension size turned into a Python number in code reachable from `forward`:
    `int(x.shape[0])`, `float(x.size(1))`, `range(x.size(1))`, `range(len(x))`, and
    `assert x.shape[0] == 4`, when the file's export makes that a problem: it traces
    (`torch.jit.trace`) or it declares dynamic dimensions (`dynamic_shapes`,
    `dynamic_axes`). Without such an export call in the file it stays quiet.

    ## Why is this bad?
    Tracing records the example input's size as a constant, so the traced model is wrong
    for other sizes. The dynamo exporter specialises the dimension instead, and a
    dimension declared dynamic then fails with `Received user-specified dim hint
    Dim.DYNAMIC ..., but tracing inferred a static shape`, or (with a named `Dim`) is
    silently exported as static.

    ## Example
    ```python
    def forward(self, x):
        for i in range(x.size(0)):
            x[i] = x[i] * 2
        return x
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return x * 2  # vectorise; keep sizes as tensor ops (`x.size(0)` without int())
    ```

    ## Fix safety
    No automatic fix: removing the loop or the conversion is a rewrite.

    ## References
    - https://docs.pytorch.org/docs/stable/export/programming_model.html
    - https://github.com/pytorch/pytorch/issues/157621
    """

    code = "OLX104"
    forward_only = True
    name = "shape-frozen-to-constant"
    severity = Severity.WARNING
    requires = ("shape", "size", "len(")

    VALID = [
        Valid(  # no export call that traces or declares dynamic dims: quiet
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        return x.view(int(x.shape[0]), -1)
                """
            )
        ),
        Valid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layers = torch.nn.ModuleList()
                    def forward(self, x):
                        for i in range(len(self.layers)):
                            x = self.layers[i](x)
                        return x.view(x.size(0), -1)
                torch.onnx.export(M(), (torch.ones(2, 3),), dynamic_shapes=({0: "b"},))
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
                        b, c = x.shape
                        for i in range(b):
                            x[i] = x[i] * 2
                        assert x.shape[0] == 4
                        return x
                torch.onnx.export(M(), (torch.ones(4, 3),), dynamic_shapes=({0: "batch"},))
                """
            ),
            line=5,
            message="declares dynamic",
            count=2,
        ),
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        n = int(x.size(0))
                        return x.view(n, -1)
                traced = torch.jit.trace(M(), torch.ones(2, 3))
                """
            ),
            line=4,
            message="tracing freezes it",
        ),
    ]

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self._names: dict[int, set[str]] = {}

    def _shape(self, expr: cst.BaseExpression) -> bool:
        return from_shape(self.ctx, expr, shape_names(self.ctx, self._names))

    def visit_Call(self, node: cst.Call) -> None:
        q = self.ctx.qualname(node.func)
        if q not in ("builtins.int", "builtins.float", "builtins.range") or not node.args:
            return
        if not self.ctx.in_forward:
            return
        why = specialising_path(self.ctx)
        if why is None or not any(self._shape(a.value) for a in node.args):
            return
        what = "`range()` over a tensor size" if q == "builtins.range" else "a tensor size"
        conv = "" if q == "builtins.range" else f" converted with `{q[9:]}()`"
        self.report(node, f"{what}{conv} becomes a Python number: {why}")

    def visit_Assert(self, node: cst.Assert) -> None:
        test = node.test
        if not isinstance(test, cst.Comparison) or not self.ctx.in_forward:
            return
        if not all(isinstance(c.operator, (cst.Equal, cst.NotEqual)) for c in test.comparisons):
            return
        sides = [test.left, *(c.comparator for c in test.comparisons)]
        if not any(isinstance(s, cst.Integer) for s in sides):
            return
        why = specialising_path(self.ctx)
        if why is not None and any(self._shape(s) for s in sides):
            self.report(test, f"asserting a tensor size equals a constant: {why}")
