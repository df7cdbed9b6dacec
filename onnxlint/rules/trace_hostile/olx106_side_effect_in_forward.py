"""OLX106: `global` mutation in code reachable from forward."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent


class SideEffectInForward(Rule):
    """
    ## What it does
    Flags `global` statements in code reachable from `forward`.

    ## Why is this bad?
    Export and tracing run `forward` once, in Python: a `global` written in forward is
    updated once at export and its value at that moment is baked into the graph.
    `print` is not reported: it runs once at export and changes nothing in the graph
    (torch 2.13's exporter prints the fake tensor and goes on); the prints found in real
    model code were debugging aids and error-path messages.

    ## Example
    ```python
    STEP = 0
    class M(nn.Module):
        def forward(self, x):
            global STEP
            STEP += 1
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
    requires = ("global",)

    VALID = [
        Valid(  # a print of the model's values: runs once at export, the graph is the same
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        print(f"shape {x.shape}")
                        print(x)
                        return x
                """
            )
        ),
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
            count=1,
        ),
    ]

    def visit_Global(self, node: cst.Global) -> None:
        if not self.ctx.in_forward:
            return
        names = ", ".join(n.name.value for n in node.names)
        self.report(
            node,
            f"`global {names}` in forward: export runs forward once, so the global changes "
            "once and its value is baked into the graph; pass state as an input or a buffer",
        )
