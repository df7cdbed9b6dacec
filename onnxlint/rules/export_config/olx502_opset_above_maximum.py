"""OLX502: `opset_version` above what the exporter (and onnx) support."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid
from onnxlint.rules.export_config._opset import requested_opset
from onnxlint.rules.exporter_api.api_table import (
    MAX_OPSET,
    ONNX_MAX_KNOWN_OPSET,
    TORCHLIB_OPSET,
    ExportPath,
    export_path,
)

LEGACY_MAX_OPSET = 20  # torch 2.13 `ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET`


class OpsetAboveMaximum(Rule):
    """
    ## What it does
    Flags `opset_version` above what the exporter supports: above 28 (the newest opset of
    onnx 1.23) on the dynamo exporter as a warning, 24-28 as info (above 23, the newest
    opset torch 2.13's exporter documents), and above 20 on the TorchScript exporter.

    ## Why is this bad?
    The dynamo exporter builds the model at 18 and converts it to the requested opset with
    the installed onnx's version converter. Above what that onnx knows, the conversion
    fails and the model silently stays at opset 18 (measured with torch 2.13 + onnx 1.23:
    `opset_version=30` gave an opset-18 model; 24 converted fine). Which opsets work above
    23 depends on the installed onnx, which a static check cannot see, hence info. The
    TorchScript exporter supports opsets up to 20 and warns above that.

    ## Example
    ```python
    torch.onnx.export(model, (x,), "m.onnx", opset_version=30)
    ```

    ## Use instead
    ```python
    torch.onnx.export(model, (x,), "m.onnx", opset_version=23)
    ```

    ## Fix safety
    No fix: the opset a deployment needs is a decision for its owner.

    ## References
    - `torch/onnx/_constants.py` (torch 2.13): `ONNX_MAX_OPSET = 23`,
      `ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET = 20`
    - measured-here.md: "opset_version above the installed onnx's maximum ... comes out at 18"
    """

    code = "OLX502"
    name = "opset-above-maximum"
    severity = Severity.WARNING
    requires = ("opset_version",)
    file_scope = True  # the opset may be a module-level constant

    VALID = [
        Valid("import torch\ntorch.onnx.export(model, (x,), 'm.onnx', opset_version=23)\n"),
        Valid(
            "import torch\ntorch.onnx.export(m, (x,), 'm.onnx', opset_version=17, dynamo=False)\n"
        ),
        Valid(
            "import torch\ntorch.onnx.export(model, (x,), 'm.onnx', opset_version=99, dynamo=f)\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\ntorch.onnx.export(model, (x,), 'm.onnx', opset_version=30)\n",
            line=2,
            message="stays at opset 18",
            severity=Severity.WARNING,
        ),
        Invalid(
            "import torch\ntorch.onnx.export(model, (x,), 'm.onnx', opset_version=24)\n",
            line=2,
            message="installed onnx",
            severity=Severity.INFO,
        ),
        Invalid(
            "import torch\ntorch.onnx.export(m, (x,), 'm.onnx', opset_version=21, dynamo=False)\n",
            line=2,
            message="TorchScript exporter supports opsets up to 20",
            severity=Severity.WARNING,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = self.ctx.export_call(node)
        if call is None:
            return
        path = export_path(self.ctx, call)
        if path is None or path is ExportPath.UNKNOWN:
            return
        found = requested_opset(self.ctx, call)
        if found is None:
            return
        arg, opset, shown, related = found
        if path is ExportPath.TORCHSCRIPT:
            if opset > LEGACY_MAX_OPSET:
                self.report(
                    arg,
                    f"{shown}: the TorchScript exporter supports opsets up to "
                    f"{LEGACY_MAX_OPSET}; use <= {LEGACY_MAX_OPSET}, or the dynamo exporter",
                    related=related,
                )
            return
        if opset > ONNX_MAX_KNOWN_OPSET:
            self.report(
                arg,
                f"{shown} is above {ONNX_MAX_KNOWN_OPSET}, the newest opset onnx "
                f"1.23 knows: the conversion fails and the model silently stays at opset "
                f"{TORCHLIB_OPSET}; use <= {MAX_OPSET}",
                related=related,
            )
        elif opset > MAX_OPSET:
            self.report(
                arg,
                f"{shown} is above {MAX_OPSET}, the newest opset torch 2.13's "
                "exporter documents: it works only if the installed onnx can convert to it "
                f"(else the model silently stays at opset {TORCHLIB_OPSET})",
                severity=Severity.INFO,
                related=related,
            )
