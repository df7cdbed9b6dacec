"""OLX106: `print` and `global` mutation in code reachable from forward."""

from __future__ import annotations

import libcst as cst

from onnxlint.rule import Invalid, Rule, Valid, dedent
from onnxlint.violation import Severity


class SideEffectInForward(Rule):
    """
    ## What it does
    Flags `print(...)` and `global` statements in code reachable from `forward`.

    ## Why is this bad?
    Export and tracing run `forward` once, in Python: a `print` runs at export time and is
    not part of the exported graph (the deployed model never prints), and a `global`
    written in forward is updated once at export and its value at that moment is baked
    into the graph. `torch.compile` graph-breaks on `print`.
    Logging calls (`logger.warning_once`, `warnings.warn`) are not reported: they are
    diagnostics, and the dynamo exporter turns logger calls into no-ops.

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
                        print("shape", x.shape)
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
        self.report(
            node,
            "`print` in forward runs once at export time and is not in the exported graph "
            "(and graph-breaks `torch.compile`); remove it or use logging",
            severity=Severity.INFO,
        )

    def visit_Global(self, node: cst.Global) -> None:
        if not self.ctx.in_forward:
            return
        names = ", ".join(n.name.value for n in node.names)
        self.report(
            node,
            f"`global {names}` in forward: export runs forward once, so the global changes "
            "once and its value is baked into the graph; pass state as an input or a buffer",
        )
