"""OLX106: `print` and `global` mutation in code reachable from forward."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.semantic.kinds import Kind

_VALUE_KINDS = frozenset({Kind.TENSOR, Kind.SHAPE, Kind.SIZE, Kind.DATA})


class SideEffectInForward(Rule):
    """
    ## What it does
    Flags `print(...)` of the model's values (tensors, shapes, numbers taken out of
    tensors) and `global` statements in code reachable from `forward`.

    ## Why is this bad?
    Export and tracing run `forward` once, in Python: a `print` runs at export time and is
    not part of the exported graph (the deployed model never prints), and a `global`
    written in forward is updated once at export and its value at that moment is baked
    into the graph. `torch.compile` graph-breaks on `print`.
    Logging calls (`logger.warning_once`, `warnings.warn`) and prints of a plain message
    (`print("invalid pool type, using avg")`) are not reported: they are diagnostics, and
    the dynamo exporter turns logger calls into no-ops.

    ## Example
    ```python
    STEP = 0
    class M(nn.Module):
        def forward(self, x):
            global STEP
            STEP += 1
            print(x.shape)
            return x * STEP
    ```

    ## Use instead
    ```python
    class M(nn.Module):
        def forward(self, x, step: torch.Tensor):
            return x * step  # state as an input or a registered buffer
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - https://docs.pytorch.org/docs/stable/export/programming_model.html
    - https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html
    """

    code = "OLX106"
    forward_only = True
    scripting_keeps_python = True
    name = "side-effect-in-forward"
    severity = Severity.WARNING
    requires = ("print", "global")

    VALID = [
        Valid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        return x
                def main():
                    global CFG
                    print("done")
                """
            )
        ),
        Valid(  # a configuration message, not the model's values
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x, pool_type="avg"):
                        if pool_type != "avg":
                            print("Invalid pool type %s, using avg" % pool_type)
                        return x
                """
            )
        ),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                STEP = 0
                class M(torch.nn.Module):
                    def forward(self, x):
                        global STEP
                        STEP += 1
                        print(x.shape)
                        return x * STEP
                """
            ),
            line=5,
            message="`global STEP`",
            count=2,
        ),
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        print(f"shape {x.shape}")
                        return x
                """
            ),
            line=4,
            message="`print` in forward",
            severity=Severity.INFO,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) != "builtins.print" or not self.ctx.in_forward:
            return
        if not any(self._shows_values(a.value) for a in node.args):
            return  # a message (`print("invalid pool type, using avg")`): a diagnostic
        self.report(
            node,
            "`print` in forward runs once at export time and is not in the exported graph "
            "(and graph-breaks `torch.compile`); remove it or use logging",
            severity=Severity.INFO,
        )

    def _shows_values(self, expr: cst.BaseExpression) -> bool:
        """Whether a printed argument shows the model's values (a tensor, a shape, a
        number out of a tensor), directly or in an f-string / `%` / `.format`."""
        parts: list[cst.BaseExpression] = [expr]
        if isinstance(expr, cst.FormattedString):
            parts = [
                p.expression for p in expr.parts if isinstance(p, cst.FormattedStringExpression)
            ]
        elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo):
            parts = [expr.right]
            if isinstance(expr.right, cst.Tuple):
                parts = [e.value for e in expr.right.elements]
        elif (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "format"
        ):
            parts = [a.value for a in expr.args]
        return any(self.ctx.kind(p) in _VALUE_KINDS for p in parts)

    def visit_Global(self, node: cst.Global) -> None:
        if not self.ctx.in_forward:
            return
        names = ", ".join(n.name.value for n in node.names)
        self.report(
            node,
            f"`global {names}` in forward: export runs forward once, so the global changes "
            "once and its value is baked into the graph; pass state as an input or a buffer",
        )
