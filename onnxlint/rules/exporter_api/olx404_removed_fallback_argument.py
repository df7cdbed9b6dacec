"""OLX404: `torch.onnx.export(..., fallback=...)` (removed in torch 2.11)."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import FixSafety, Severity
from onnxlint.rules.base import Invalid, Rule, Valid, make_fix
from onnxlint.rules.exporter_api.api_table import (
    FALLBACK_DEFAULT_FALSE,
    FALLBACK_REMOVED,
    in_version_branch,
)
from onnxlint.semantic.calls import ExportKind, literal_bool


class RemovedFallbackArgument(Rule):
    """
    ## What it does
    Flags the `fallback=` keyword of `torch.onnx.export`.

    Code inside an `if`/`else` that tests a torch version is left alone (written for
    another torch on purpose).

    ## Why is this bad?
    `fallback=True` re-ran a failed dynamo export through the TorchScript exporter. It
    defaulted to False in torch 2.9 and was removed in 2.11: any `fallback=` now raises
    `TypeError: export() got an unexpected keyword argument 'fallback'`. Rated for
    `target-torch`: error from 2.11, info in 2.9 and 2.10.

    ## Example
    ```python
    torch.onnx.export(model, (x,), "m.onnx", fallback=True)
    ```

    ## Use instead
    ```python
    try:
        torch.onnx.export(model, (x,), "m.onnx")
    except Exception:
        torch.onnx.export(model, (x,), "m.onnx", dynamo=False)  # if you really need it
    ```

    ## Fix safety
    Removes the keyword. Safe for `fallback=False` (the default). Unsafe otherwise: a
    failing export then raises instead of silently falling back to the legacy exporter
    (which produced a different model and hid the error).

    ## References
    - https://github.com/pytorch/pytorch/pull/173189 (removal), #162726 (default False)
    """

    code = "OLX404"
    name = "removed-fallback-argument"
    severity = Severity.ERROR
    fix_safety = FixSafety.UNSAFE  # its least safe fix (`fallback=True`)
    deprecated_api = True
    requires = ("fallback",)

    VALID = [
        Valid("import torch\ntorch.onnx.export(model, (x,), 'm.onnx')\n"),
        Valid("import torch\nf(model, fallback=True)\n"),
        Valid(
            "import torch\ntorch.onnx.export(m, (x,), fallback=True)\n",
            config={"target-torch": "2.8"},
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\ntorch.onnx.export(model, (x,), 'm.onnx', fallback=True)\n",
            line=2,
            message="TypeError",
            fixed="import torch\ntorch.onnx.export(model, (x,), 'm.onnx')\n",
        ),
        Invalid(
            "import torch\ntorch.onnx.export(model, (x,), fallback=False, dynamo=True)\n",
            line=2,
            message="fallback",
            fixed="import torch\ntorch.onnx.export(model, (x,), dynamo=True)\n",
        ),
        Invalid(
            "import torch\ntorch.onnx.export(model, (x,), fallback=True)\n",
            line=2,
            message="removed in torch 2.11",
            severity=Severity.INFO,
            config={"target-torch": "2.10"},
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = self.ctx.export_call(node)
        if call is None or call.kind is not ExportKind.ONNX_DYNAMO:
            return
        if in_version_branch(self.ctx):
            return
        arg = call.arg("fallback")
        if arg is None:
            return
        target = self.ctx.config.torch_version
        if target >= FALLBACK_REMOVED:
            severity = Severity.ERROR
            message = (
                "`fallback=` was removed in torch 2.11 (TypeError: unexpected keyword argument); "
                "remove it, and wrap the export in try/except if you need a fallback"
            )
        elif target >= FALLBACK_DEFAULT_FALSE:
            severity = Severity.INFO
            message = "`fallback=` is removed in torch 2.11 (TypeError); remove it"
        else:
            return
        safe = literal_bool(arg.value) is False
        fix = make_fix(
            "Remove `fallback=`",
            self.ctx.remove_arg(node, arg),
            safety=FixSafety.SAFE if safe else FixSafety.UNSAFE,
        )
        self.report(arg, message, fix=fix, severity=severity)
