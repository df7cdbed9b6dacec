"""OLX102: `.item()`, `.tolist()`, `int(t)`, `float(t)`, `bool(t)` whose value steers Python."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Context, Invalid, Rule, Valid, dedent
from onnxlint.rules.trace_hostile._common import (
    BRANCH,
    RANGE,
    NameUses,
    traced,
    under_export_guard,
    value_uses,
)
from onnxlint.semantic.kinds import Kind

_CONVERTERS = {"builtins.int": "int", "builtins.float": "float", "builtins.bool": "bool"}
# torch's random factories: a conversion of what one draws is training-time sampling.
_RANDOM = frozenset(
    f"torch.{n}"
    for n in (
        "rand", "randn", "randint", "rand_like", "randn_like", "randint_like",
        "randperm", "bernoulli", "multinomial", "normal", "poisson",
    )
)  # fmt: skip


class TensorToPython(Rule):
    """
    ## What it does
    Flags tensor-to-Python conversions (`.item()`, `.tolist()`, `int(t)`, `float(t)`,
    `bool(t)`) in code reachable from `forward`, rated by where the value goes: a Python
    branch, a `range()`, a size argument (`torch.zeros(n)`, `x.view(n, -1)`). A random
    draw converted where it is made (`torch.randint(1, n, (1,)).item()`) is training-time
    sampling (a chunk size, a mask span) that an inference export does not run: not reported.

    ## Why is this bad?
    Under the dynamo exporter (the default since torch 2.9) the value becomes a symbol
    with no known value: branching on it fails with `GuardOnDataDependentSymNode` (error);
    using it as a loop count or a size often needs `torch._check` hints (warning).
    Under tracing (`torch.jit.trace`, `dynamo=False`) every conversion is frozen into a
    constant of the example input, silently (warning). A value only used in arithmetic
    exports fine with the dynamo exporter and is not reported then.

    ## Example
    ```python
    def forward(self, x):
        n = x.sum().item()
        if n > 0:
            x = x * 2
        return x
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return torch.where(x.sum() > 0, x * 2, x)
    ```

    ## Fix safety
    No automatic fix: keeping the value a tensor changes the code around it.

    ## References
    - https://docs.pytorch.org/docs/stable/export/programming_model.html
    - https://docs.pytorch.org/docs/stable/generated/exportdb/index.html
    """

    code = "OLX102"
    forward_only = True
    scripting_keeps_python = True
    name = "tensor-to-python"
    severity = Severity.ERROR

    VALID = [
        Valid(  # a random draw: training-time sampling (dynamic chunk sizes, masking)
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        chunk = torch.randint(1, x.size(0), (1,)).item()
                        if chunk > 4:
                            chunk = x.size(0)
                        keep = int(torch.rand(1) * x.size(1))
                        return x[:chunk, :keep]
                """
            )
        ),
        Valid(  # an assert without a message: a runtime assertion in the exported program
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x: torch.Tensor, lengths: torch.Tensor):
                        assert x.size(0) == lengths.max().item()
                        return x * 2
                """
            )
        ),
        Valid(  # the flash-attention path: CUDA kernels no ONNX export runs
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x: torch.Tensor, mask: torch.Tensor):
                        if self.config._attn_implementation == "flash_attention_2":
                            if mask is not None:
                                if mask[:, -1].sum().item() != x.size(0):
                                    raise ValueError("padding right")
                        return x
                """
            )
        ),
        Valid(  # arithmetic only: fine under the dynamo exporter
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        scale = x.abs().max().item()
                        return x / scale
                """
            )
        ),
        Valid(  # a shape is not data
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        n = int(x.shape[0])
                        if n > 1:
                            x = x[1:]
                        return x
                """
            )
        ),
        Valid(  # not reachable from forward
            dedent(
                """
                import torch
                def report(x):
                    if x.sum().item() > 0:
                        print("positive")
                """
            )
        ),
        Valid(  # runs only when ground-truth labels are passed (validation), not in inference
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x, labels=None):
                        if labels is not None and self.sampler is not None:
                            if labels[0].item() == 0:
                                x = x * 0
                        return x
                """
            )
        ),
    ]
    INVALID = [
        Invalid(  # `or` takes bool() of the comparison: a guard, torch.export (2.13) fails
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x: torch.Tensor, lengths: torch.Tensor):
                        assert x.size(0) == lengths.max().item() or self.lax
                        return x * 2
                """
            ),
            line=4,
            message="feeds a Python branch",
        ),
        Invalid(  # with a message, torch.export (2.13) guards on the value and fails
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x: torch.Tensor, lengths: torch.Tensor):
                        assert x.size(0) == lengths.max().item(), (x.shape, lengths)
                        return x * 2
                """
            ),
            line=4,
            message="feeds a Python branch",
        ),
        Invalid(  # the other side of the flash-attention test is the exported path
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x: torch.Tensor, mask: torch.Tensor):
                        if self.config._attn_implementation == "flash_attention_2":
                            return x
                        else:
                            if mask[:, -1].sum().item() != x.size(0):
                                raise ValueError("padding right")
                        return x
                """
            ),
            line=7,
            message="`.item()`",
        ),
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        n = x.sum().item()
                        if n > 0:
                            x = x * 2
                        return x
                """
            ),
            line=4,
            message="feeds a Python branch",
            severity=Severity.ERROR,
        ),
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        steps = int(x.max())
                        for _ in range(steps):
                            x = x * 2
                        return torch.zeros(x.max().item())
                """
            ),
            line=4,
            message="loop count",
            severity=Severity.WARNING,
            count=2,
        ),
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        scale = x.abs().max().item()
                        return x / scale
                m = torch.jit.trace(M(), torch.ones(3))
                """
            ),
            line=4,
            message="frozen into a constant",
            severity=Severity.WARNING,
        ),
    ]

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self._uses: dict[int, NameUses] = {}

    def visit_Call(self, node: cst.Call) -> None:
        what = self._conversion(node)
        if what is None or not self.ctx.in_forward or self._random_draw(node):
            return
        if traced(self.ctx):
            self.report(
                node,
                f"`{what}` is frozen into a constant when the model is traced: the exported "
                "graph keeps the example input's value; keep the value a tensor",
                severity=Severity.WARNING,
            )
            return
        uses = value_uses(self.ctx, node, self._uses)
        if not uses or under_export_guard(self.ctx, node):
            return
        if uses == {BRANCH} and self._in_bare_assert():
            return
        if BRANCH in uses:
            self.report(
                node,
                f"`{what}` feeds a Python branch: data-dependent control flow fails in "
                "`torch.export`/`torch.onnx.export`; use `torch.where` or `torch.cond`",
            )
        else:
            use = "a loop count" if RANGE in uses else "a size"
            self.report(
                node,
                f"`{what}` is used as {use}: the exporter sees a data-dependent value "
                "(unbacked symbol) and may fail or need `torch._check`; derive it from "
                "shapes or keep it a tensor",
                severity=Severity.WARNING,
            )

    def _random_draw(self, node: cst.Call) -> bool:
        """The value converted is a random draw made right there (`torch.randint(1, n,
        (1,)).item()`, `int(torch.rand(1) * k)`): training-time sampling (a random chunk
        size, a mask span, a drop decision), which an inference export does not run."""
        func = node.func
        inner = func.value if isinstance(func, cst.Attribute) else node.args[0].value
        while isinstance(inner, cst.BinaryOperation):  # `torch.rand(1) * k`
            inner = inner.left
        return isinstance(inner, cst.Call) and (self.ctx.qualname(inner.func) or "") in _RANDOM

    def _in_bare_assert(self) -> bool:
        """The value is tested by an `assert` without a message: torch.export (2.13)
        turns it into a runtime assertion (`_assert_scalar`) and the export works; with a
        message it fails (GuardOnDataDependentSymNode), as an `if` does."""
        for a in reversed(self.ctx.ancestors):
            if isinstance(a, cst.Assert):
                return a.msg is None
            if isinstance(a, cst.BaseStatement | cst.BaseSmallStatement | cst.BooleanOperation):
                return False  # `assert a == x.item() or b`: `or` takes bool() of it, a guard
        return False

    def _conversion(self, node: cst.Call) -> str | None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("item", "tolist"):
            if node.args:
                return None
            kind = self.ctx.kind(func.value)
            if kind is Kind.TENSOR or (kind is Kind.UNKNOWN and func.attr.value == "item"):
                return f".{func.attr.value}()"
            return None
        if isinstance(func, cst.Name) and len(node.args) == 1 and not node.args[0].star:
            name = _CONVERTERS.get(self.ctx.qualname(func) or "")
            if name is not None and self.ctx.kind(node.args[0].value) is Kind.TENSOR:
                return f"{name}(tensor)"
        return None
