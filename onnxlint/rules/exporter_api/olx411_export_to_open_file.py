"""OLX411: `torch.onnx.export(model, args, f)` with an open file as `f`, on the dynamo path."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import FixSafety, Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent, make_fix
from onnxlint.rules.exporter_api.api_table import export_destination, onnx_export_on_dynamo
from onnxlint.semantic.calls import keyword_arg


class ExportToOpenFile(Rule):
    """
    ## What it does
    Flags a `torch.onnx.export` call on the dynamo path (the default since torch 2.9) whose
    `f` is a file opened by the code (`with open(path, "wb") as f:`, `f = open(...)`, or
    `open(...)` in the call) while `external_data` is left at its default, and offers
    `external_data=False`.

    ## Why is this bad?
    The dynamo exporter saves to a path: with `external_data=True`, the default, it writes
    the weights next to the file and needs the file's name. Given an open file, the call
    exports the whole model and then raises `TypeError: expected str, bytes or os.PathLike
    object, not BufferedWriter` at the save, and writes nothing. The TorchScript exporter
    wrote into the open file, so scripts written for it (EfficientSAM's `export_to_onnx.py`)
    break this way. Measured with torch 2.13: with `external_data=False` the dynamo exporter
    saves into the open file, as one file.

    ## Example
    ```python
    with open("model.onnx", "wb") as f:
        torch.onnx.export(model, (x,), f)
    ```

    ## Use instead
    ```python
    torch.onnx.export(model, (x,), "model.onnx")
    ```
    or, to keep the open file, `torch.onnx.export(model, (x,), f, external_data=False)`.

    ## Fix safety
    Safe: the call raises today; with `external_data=False` it writes the model into the
    open file as one file, as the TorchScript exporter did (a model above the 2 GB protobuf
    limit cannot be saved that way, with either exporter).

    ## References
    - `torch/onnx/_internal/exporter/_onnx_program.py` (torch 2.13): `ONNXProgram.save`
    - https://docs.pytorch.org/docs/stable/onnx_export.html (external_data)
    """

    code = "OLX411"
    name = "export-to-open-file"
    severity = Severity.ERROR
    fix_safety = FixSafety.SAFE
    since = "0.2.0"
    requires = ("export",)
    file_scope = True  # the file may be opened in another top-level statement

    VALID = [
        Valid("import torch\ntorch.onnx.export(model, (x,), 'm.onnx')\n"),
        Valid(
            "import torch\n"
            "with open('m.onnx', 'wb') as f:\n"
            "    torch.onnx.export(model, (x,), f, external_data=False)\n"
        ),
        Valid(
            "import torch\n"
            "with open('m.onnx', 'wb') as f:\n"
            "    torch.onnx.export(model, (x,), f, dynamo=False)\n"
        ),
        Valid(  # before torch 2.9 the default exporter is the TorchScript one
            "import torch\n"
            "with open('m.onnx', 'wb') as f:\n"
            "    torch.onnx.export(model, (x,), f)\n",
            config={"target-torch": "2.8"},
        ),
        Valid(  # a path read from a file is a path
            "import torch\n"
            "with open('out.txt') as g:\n"
            "    path = g.read().strip()\n"
            "torch.onnx.export(model, (x,), path)\n"
        ),
    ]
    INVALID = [
        Invalid(  # EfficientSAM's export_to_onnx.py
            dedent(
                """
                import torch
                def export_onnx(onnx_model, output, dynamic_axes, dummy_inputs, output_names):
                    with open(output, "wb") as f:
                        torch.onnx.export(
                            onnx_model,
                            tuple(dummy_inputs.values()),
                            f,
                            opset_version=17,
                            dynamic_axes=dynamic_axes,
                        )
                """
            ),
            line=7,
            message="raises TypeError at the save",
            fixed=dedent(
                """
                import torch
                def export_onnx(onnx_model, output, dynamic_axes, dummy_inputs, output_names):
                    with open(output, "wb") as f:
                        torch.onnx.export(
                            onnx_model,
                            tuple(dummy_inputs.values()),
                            f,
                            opset_version=17,
                            dynamic_axes=dynamic_axes, external_data=False,
                        )
                """
            ),
        ),
        Invalid(
            "import torch\nf = open('m.onnx', 'wb')\ntorch.onnx.export(model, (x,), f=f)\n",
            line=3,
            message="open file",
            fixed="import torch\nf = open('m.onnx', 'wb')\n"
            "torch.onnx.export(model, (x,), f=f, external_data=False)\n",
        ),
        Invalid(  # external_data=True said explicitly: no fix, it is the user's choice
            "import torch\n"
            "with open('m.onnx', 'wb') as f:\n"
            "    torch.onnx.export(model, (x,), f, external_data=True)\n",
            line=3,
            message="pass the file's path",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = onnx_export_on_dynamo(self.ctx, node)
        if call is None:
            return
        f, value = export_destination(self.ctx, call)
        if f is None or not isinstance(value, cst.Call):
            return
        named = isinstance(value.func, cst.Name) and value.func.value == "open"
        if not named and self.ctx.qualname(value.func) not in ("builtins.open", "io.open"):
            return
        external = keyword_arg(node, "external_data")
        if external is not None and not (
            isinstance(external.value, cst.Name) and external.value.value == "True"
        ):
            return  # False, or a value the code decides
        fix = None
        if external is None and not any(a.star for a in node.args):
            last = node.args[-1].value
            fix = make_fix(
                "Add `external_data=False` (save into the open file, as one file)",
                self.ctx.replace(last, self.ctx.code_of(last) + ", external_data=False"),
            )
        self.report(
            f,
            "the dynamo exporter saves to a path: given an open file, this call exports and "
            "then raises TypeError at the save (`external_data=True`, the default, needs the "
            "file's name); pass the file's path, or `external_data=False` to save into it",
            fix=fix,
        )
