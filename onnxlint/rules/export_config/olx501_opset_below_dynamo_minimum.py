"""OLX501: `opset_version` below 18 on the dynamo exporter."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.rules.export_config._opset import requested_opset
from onnxlint.rules.exporter_api.api_table import (
    DEFAULT_OPSET,
    TORCHLIB_OPSET,
    onnx_export_on_dynamo,
)


class OpsetBelowDynamoMinimum(Rule):
    """
    ## What it does
    Flags `opset_version` below 18 on a `torch.onnx.export` call that takes the dynamo
    exporter (the default since torch 2.9). Literal values and module or local constants
    (`OPSET = 13`) are read.

    ## Why is this bad?
    The dynamo exporter's operator library is written for opset 18. A lower request is
    exported at 18 and then version-converted down; when the conversion fails the model is
    silently kept at opset 18 (only a log message says so). Measured with torch 2.13: a
    ReLU + Add model asked for opset 13 came out at opset 18. A runtime that needs the
    lower opset then rejects the file.

    ## Example
    ```python
    torch.onnx.export(model, (x,), "m.onnx", opset_version=13)
    ```

    ## Use instead
    ```python
    torch.onnx.export(model, (x,), "m.onnx", opset_version=18)  # default: 20
    ```

    ## Fix safety
    No fix: the opset a deployment needs is a decision for its owner.

    ## References
    - `torch/onnx/_internal/exporter/_compat.py` (torch 2.13): `TORCHLIB_OPSET` warning
    - https://github.com/pytorch/pytorch/pull/158802 (default opset 20)
    """

    code = "OLX501"
    name = "opset-below-dynamo-minimum"
    severity = Severity.WARNING
    requires = ("opset_version",)
    file_scope = True  # the opset may be a module-level constant

    VALID = [
        Valid("import torch\ntorch.onnx.export(model, (x,), 'm.onnx', opset_version=18)\n"),
        Valid(
            "import torch\ntorch.onnx.export(m, (x,), 'm.onnx', opset_version=13, dynamo=False)\n"
        ),
        Valid("import torch\ntorch.onnx.export(model, (x,), 'm.onnx', opset_version=opset)\n"),
        Valid(
            "import torch\ntorch.onnx.export(model, (x,), 'm.onnx', opset_version=13)\n",
            config={"target-torch": "2.8"},  # default exporter was TorchScript
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\ntorch.onnx.export(model, (x,), 'm.onnx', opset_version=13)\n",
            line=2,
            message="opset_version=13",
        ),
        Invalid(
            dedent(
                """
                import torch
                OPSET = 17

                def main(model, x):
                    torch.onnx.export(model, (x,), "m.onnx", opset_version=OPSET, dynamo=True)
                """
            ),
            line=5,
            message="below 18",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = onnx_export_on_dynamo(self.ctx, node)
        if call is None:
            return
        found = requested_opset(self.ctx, call)
        if found is None or found[1] >= TORCHLIB_OPSET:
            return
        arg, _, shown, related = found
        self.report(
            arg,
            f"{shown} is below {TORCHLIB_OPSET}, the lowest opset the dynamo "
            f"exporter implements: it exports at {TORCHLIB_OPSET} and converts down, silently "
            f"keeping {TORCHLIB_OPSET} when that fails; use >= {TORCHLIB_OPSET} "
            f"(default {DEFAULT_OPSET})",
            related=related,
        )
