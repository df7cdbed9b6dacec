"""OLX109: in-place writes into a `forward` input (`x[0] = ...`, `x.add_(...)`, `x += ...`)."""

from __future__ import annotations

import re

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Context, Invalid, Rule, Valid, dedent
from onnxlint.rules.trace_hostile._common import under_export_guard
from onnxlint.semantic.kinds import Kind, annotation_kind


class InplaceInputWrite(Rule):
    """
    ## What it does
    Flags in-place writes into a tensor parameter of the exported model's own `forward`
    (the class an export of the project exports) before it is rebound:
    `x[0] = v`, `x[:, 1:] *= 2`, `x += y`, `x.add_(y)`, `x.masked_fill_(m, 0)`.

    ## Why is this bad?
    An ONNX graph cannot modify its inputs. The dynamo exporter functionalises the write:
    the outputs are right, but the caller's tensor is no longer changed, so code relying
    on the mutation behaves differently with the exported model. Tracing also records
    such writes poorly (aliasing of views of inputs). Inside the model, a submodule's
    `forward` inputs are intermediates: writing into them exports fine (measured with
    torch 2.13), so only the model's boundary is checked.

    ## Example
    ```python
    def forward(self, x):
        x[:, 0] = 0
        return x
    ```

    ## Use instead
    ```python
    def forward(self, x):
        x = x.clone()
        x[:, 0] = 0
        return x
    ```

    ## Fix safety
    No automatic fix: cloning changes what the caller sees in eager mode.

    ## References
    - https://docs.pytorch.org/docs/stable/export/programming_model.html
    """

    code = "OLX109"
    name = "inplace-input-write"
    severity = Severity.WARNING
    requires = ("def forward",)

    VALID = [
        Valid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x, n: int = 0, mask=None):
                        x = x.clone()
                        x[0] = 1
                        x += 1
                        n += 1
                        y = torch.zeros(3)
                        y[0] = 1
                        return x + y
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
                    def forward(self, x: torch.Tensor, y, state):
                        x[:, 0] = 0
                        y.add_(1)
                        state["n"] = y.shape[0]
                        if self.training:
                            x *= 2
                        return x + y
                torch.onnx.export(M().eval(), (torch.ones(2, 2), torch.ones(2), {}), "m.onnx")
                """
            ),
            line=4,
            message="in-place write into the input `x`",
            count=2,
        ),
    ]

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self._rebound: set[str] = set()
        self._tensors: dict[str, bool] = {}
        self._func: int | None = None

    def _scope(self) -> bool:
        """Whether we are directly in a `forward` method (resetting state on a new one)."""
        func = self.ctx.function
        if func is None or func.name != "forward" or func.class_name is None:
            return False
        reach = self.ctx.reach
        if reach is not None and func.class_name not in reach.roots:
            return False  # not the exported model's own forward: its inputs are intermediates
        if self.ctx.function_stack and self.ctx.function_stack[-1] is not func:
            return False  # inside a nested def
        if self._func != id(func.node):
            self._func, self._rebound, self._tensors = id(func.node), set(), {}
        return True

    def _is_input(self, name: str) -> bool:
        """A tensor parameter of forward not rebound so far (computed lazily: rare)."""
        if name in self._rebound:
            return False
        found = self._tensors.get(name)
        if found is None:
            found = self._tensors[name] = self._tensor_param(name)
        return found

    def _tensor_param(self, name: str) -> bool:
        """Annotated as a tensor, or unannotated without default and used like a tensor."""
        func = self.ctx.function
        assert func is not None
        for p in func.params():
            if p.name.value != name:
                continue
            kind = annotation_kind(p.annotation)
            if kind is Kind.TENSOR:
                return True
            if kind is None and p.default is None:
                body = self.ctx.code_of(func.node.body)
                pattern = (
                    rf"\b{re.escape(name)}\.(shape|size\(|dim\(|view\(|reshape\(|dtype|device)"
                )
                return re.search(pattern, body) is not None
            return False
        return False

    def _rebind(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self._rebound.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._rebind(el.value)

    def _root(self, expr: cst.BaseExpression) -> cst.Name | None:
        while isinstance(expr, cst.Subscript):
            expr = expr.value
        return expr if isinstance(expr, cst.Name) else None

    def _report(self, node: cst.CSTNode, name: str) -> None:
        if under_export_guard(self.ctx, node):
            return  # e.g. training-only noise: `if self.training: x *= noise`
        self.report(
            node,
            f"in-place write into the input `{name}`: the exported graph cannot modify its "
            "inputs, so the caller no longer sees this change; clone first "
            f"(`{name} = {name}.clone()`)",
        )

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self._scope():
            return
        for t in node.targets:
            if isinstance(t.target, cst.Subscript):
                root = self._root(t.target)
                if root is not None and self._is_input(root.value):
                    self._report(t.target, root.value)
        for t in node.targets:
            self._rebind(t.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._scope():
            self._rebind(node.target)

    def visit_For(self, node: cst.For) -> None:
        if self._scope():
            self._rebind(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if not self._scope():
            return
        root = self._root(node.target)
        if root is not None and self._is_input(root.value):
            self._report(node.target, root.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        if not method.endswith("_") or method.endswith("__") or method == "requires_grad_":
            return
        root = self._root(func.value)
        if root is not None and self._scope() and self._is_input(root.value):
            self._report(func, root.value)
