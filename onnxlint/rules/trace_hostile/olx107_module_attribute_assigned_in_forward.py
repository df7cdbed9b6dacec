"""OLX107: `self.attr = ...` in code reachable from forward."""

from __future__ import annotations

import libcst as cst

from onnxlint.rule import Invalid, Rule, Valid, dedent
from onnxlint.semantic import Kind
from onnxlint.violation import Severity


class ModuleAttributeAssignedInForward(Rule):
    """
    ## What it does
    Flags assignments to module attributes (`self.cache = ...`, `self.count += 1`) in
    methods reachable from `forward` (not in `__init__` or other setup methods).

    ## Why is this bad?
    `torch.export` (and so `torch.onnx.export`) snapshots module attributes and restores
    them after capture: the assignment happens once, at export time, and whatever it
    changes is baked into the graph as a constant. A tensor attribute assigned in forward
    gets the warning `The tensor attribute self.x was assigned during export. Such
    attributes must be registered as buffers`. Tracing behaves the same way.

    ## Example
    ```python
    def forward(self, x):
        self.last = x.mean()
        return x - self.last
    ```

    ## Use instead
    ```python
    def __init__(self):
        super().__init__()
        self.register_buffer("last", torch.zeros(()))

    def forward(self, x):
        self.last.copy_(x.mean())  # in-place buffer update is captured
        return x - self.last
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer
    - https://docs.pytorch.org/docs/stable/export/programming_model.html
    """

    code = "OLX107"
    forward_only = True
    name = "module-attribute-assigned-in-forward"
    severity = Severity.WARNING
    requires = ("self.",)

    VALID = [
        Valid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.scale = 2
                    def forward(self, x):
                        out = x * self.scale
                        self.buf.copy_(out)
                        self.table = self.table.to(x.device)
                        return out
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
                        self.last = x.mean()
                        return x - self.last
                """
            ),
            line=4,
            message="`self.last`",
            severity=Severity.WARNING,
        ),
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        self.calls += 1
                        return x
                """
            ),
            line=4,
            message="baked",
            severity=Severity.INFO,
        ),
    ]

    def _check(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if not (
            isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
        ):
            return
        func = self.ctx.function
        if func is None or func.class_name is None or not self.ctx.in_forward:
            return
        if func.name.startswith("__") or target.attr.value == "training":
            return
        attr = f"self.{target.attr.value}"
        if value is not None and _moves_itself(value, attr):
            return  # `self.w = self.w.to(x.device)`: a device/dtype move, same value
        if value is not None and self.ctx.kind(value) is Kind.TENSOR:
            self.report(
                target,
                f"tensor attribute `{attr}` assigned in forward: export warns and restores it, "
                "and the value is baked into the graph; register a buffer and update it "
                "in place",
            )
        else:
            self.report(
                target,
                f"`{attr}` assigned in forward: export runs forward once and restores module "
                "attributes, so the change is baked into the graph as a constant",
                severity=Severity.INFO,
            )

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._check(t.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check(node.target, None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._check(node.target, node.value)


_MOVES = frozenset({"to", "cpu", "cuda", "type", "type_as", "half", "float", "double"})


def _moves_itself(value: cst.BaseExpression, attr: str) -> bool:
    if not (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in _MOVES
    ):
        return False
    inner = value.func.value
    return (
        isinstance(inner, cst.Attribute)
        and isinstance(inner.value, cst.Name)
        and f"{inner.value.value}.{inner.attr.value}" == attr
    )
