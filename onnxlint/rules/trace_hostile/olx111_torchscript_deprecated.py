"""OLX111: `torch.jit.script` / `torch.jit.trace` (TorchScript, deprecated since torch 2.10)."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent

JIT_ENTRY_POINTS = frozenset(
    {
        "torch.jit.script",
        "torch.jit.trace",
        "torch.jit.trace_module",
        "torch.jit.script_method",
    }
)


class TorchScriptDeprecated(Rule):
    """
    ## What it does
    Flags `torch.jit.script`, `torch.jit.trace`, `torch.jit.trace_module` and
    `torch.jit.script_method`, as calls and as decorators, when the target torch is 2.10
    or newer.

    ## Why is this bad?
    TorchScript is deprecated: these emit `DeprecationWarning: torch.jit.script is
    deprecated. Please switch to torch.compile or torch.export.` since torch 2.10, and the
    ONNX exporter no longer accepts ScriptModules (see OLX112). `torch.export.export`
    captures a whole-graph program that the ONNX exporter, ExecuTorch and AOTInductor use.

    ## Example
    ```python
    scripted = torch.jit.script(model)
    scripted.save("model.pt")
    ```

    ## Use instead
    ```python
    ep = torch.export.export(model, (x,))
    torch.export.save(ep, "model.pt2")
    ```

    ## Fix safety
    No automatic fix: `torch.export` needs example inputs and captures differently.

    ## References
    - https://docs.pytorch.org/docs/stable/export.html
    - https://github.com/pytorch/pytorch/issues/105917
    """

    code = "OLX111"
    name = "torchscript-deprecated"
    severity = Severity.INFO
    deprecated_api = True
    requires = ("script", "trace")

    VALID = [
        Valid("import torch\nep = torch.export.export(model, (x,))\n"),
        Valid(
            "import torch\nm = torch.jit.script(model)\n",
            config={"target-torch": "2.9"},
        ),
        Valid(  # reported by OLX112 instead
            "import torch\ntorch.onnx.export(torch.jit.script(model), (x,))\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\ntraced = torch.jit.trace(model, (x,))\n",
            line=2,
            message="`torch.jit.trace` is deprecated",
        ),
        Invalid(
            dedent(
                """
                from torch import jit
                @jit.script
                def gelu(x):
                    return x * 0.5
                """
            ),
            line=2,
            message="`torch.jit.script` is deprecated",
        ),
    ]

    def _report(self, node: cst.CSTNode, qualname: str) -> None:
        if self.ctx.config.torch_version < (2, 10):
            return
        self.report(
            node,
            f"`{qualname}` is deprecated (TorchScript, since torch 2.10); use "
            "`torch.export.export` (or `torch.compile`)",
        )

    def visit_Call(self, node: cst.Call) -> None:
        q = self.ctx.qualname(node.func)
        if q not in JIT_ENTRY_POINTS:
            return
        parent = self.ctx.ancestors[-2] if len(self.ctx.ancestors) > 1 else None
        if isinstance(parent, cst.Call):
            call = self.ctx.export_call(parent)
            if call is not None and call.model_expr is node and not call.kind.is_torchscript:
                return  # OLX112: passed straight to an exporter that rejects it
        self._report(node.func, q)

    def visit_Decorator(self, node: cst.Decorator) -> None:
        if isinstance(node.decorator, cst.Call):
            return  # visit_Call sees it
        q = self.ctx.qualname(node.decorator)
        if q in JIT_ENTRY_POINTS:
            self._report(node.decorator, q)
