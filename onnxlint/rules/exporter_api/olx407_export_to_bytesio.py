"""OLX407: `torch.onnx.export(model, args, io.BytesIO())` on the dynamo path."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.rules.exporter_api.api_table import export_destination, onnx_export_on_dynamo


class ExportToBytesIO(Rule):
    """
    ## What it does
    Flags a `torch.onnx.export` call on the dynamo path whose `f` is an `io.BytesIO`
    (written inline, a local name assigned `io.BytesIO()`, or `with io.BytesIO() as f:`).

    ## Why is this bad?
    Saving to a `BytesIO` is deprecated on the dynamo exporter (`DeprecationWarning: Saving
    ONNX model to a BytesIO object is deprecated`): it serializes the whole model into one
    protobuf in memory, so `external_data` is ignored and models above the 2 GB protobuf
    limit fail to save.

    ## Example
    ```python
    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf)
    ```

    ## Use instead
    ```python
    onnx_program = torch.onnx.export(model, (x,))
    data = onnx_program.model_proto.SerializeToString()  # or onnx_program.save(path)
    ```

    ## Fix safety
    No fix: what the code does with the buffer afterwards has to change too.

    ## References
    - `torch/onnx/_internal/exporter/_compat.py` (torch 2.13): the BytesIO branch
    - field-and-peers.md P8 (large models)
    """

    code = "OLX407"
    name = "export-to-bytesio"
    severity = Severity.INFO
    deprecated_api = True
    requires = ("export",)
    file_scope = True  # the buffer may be assigned in another top-level statement

    VALID = [
        Valid("import torch\ntorch.onnx.export(model, (x,), 'm.onnx')\n"),
        Valid("import io, torch\ntorch.onnx.export(model, (x,), io.BytesIO(), dynamo=False)\n"),
        Valid("import io, torch\nbuf = open('x', 'wb')\ntorch.onnx.export(model, (x,), buf)\n"),
    ]
    INVALID = [
        Invalid(  # an in-memory export in a `with` block
            "import io, torch\nwith io.BytesIO() as f:\n    torch.onnx.export(model, (x,), f)\n",
            line=3,
            message="BytesIO",
        ),
        Invalid(
            "import io, torch\ntorch.onnx.export(model, (x,), io.BytesIO())\n",
            line=2,
            message="BytesIO",
        ),
        Invalid(
            dedent(
                """
                import io
                import torch

                def to_bytes(model, x):
                    buf = io.BytesIO()
                    torch.onnx.export(model, (x,), f=buf, opset_version=18)
                    return buf.getvalue()
                """
            ),
            line=6,
            message="2 GB",
        ),
        Invalid(
            dedent(
                """
                from io import BytesIO
                import torch
                buf = BytesIO()
                torch.onnx.export(model, (x,), buf)
                """
            ),
            line=4,
            message="BytesIO",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = onnx_export_on_dynamo(self.ctx, node)
        if call is None:
            return
        f, value = export_destination(self.ctx, call)
        if f is None:
            return
        if isinstance(value, cst.Call) and self.ctx.qualname(value.func) == "io.BytesIO":
            self.report(
                f,
                "saving the ONNX model to a `BytesIO` is deprecated and fails above the 2 GB "
                "protobuf limit; export to a path, or use the returned "
                "`ONNXProgram.model_proto`",
            )
