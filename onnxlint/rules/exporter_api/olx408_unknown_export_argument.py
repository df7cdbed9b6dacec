"""OLX408: a keyword `torch.onnx.export` does not take (TypeError since torch 2.7)."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.rules.exporter_api.api_table import (
    EXPORT_KEYWORDS_2_13,
    OLD_EXPORT_KEYWORDS,
    UNKNOWN_KWARGS_REJECTED_SINCE,
    in_version_branch,
)
from onnxlint.semantic.calls import ExportKind


class UnknownExportArgument(Rule):
    """
    ## What it does
    Flags keywords of `torch.onnx.export` that are not in its torch 2.13 signature, such as
    the long-gone `example_outputs=`, `strip_doc_string=`, `enable_onnx_checker=`,
    `use_external_data_format=`, `_retain_param_name=`, or a typo (`dynamic_axis=`).
    `fallback=` is OLX404's. Code inside an `if`/`else` that tests a torch version is left
    alone (written for another torch on purpose).

    ## Why is this bad?
    Since torch 2.7 `torch.onnx.export` has no `**kwargs` catch-all (PR #146003): any other
    keyword raises `TypeError: export() got an unexpected keyword argument`. Before 2.7
    they were silently dropped, so a typo never did what it said. Rated from target 2.7.

    ## Example
    ```python
    torch.onnx.export(model, (x,), "m.onnx", example_outputs=y, strip_doc_string=True)
    ```

    ## Use instead
    ```python
    torch.onnx.export(model, (x,), "m.onnx")
    ```

    ## Fix safety
    No fix: a misspelled keyword needs the right spelling, not a deletion.

    ## References
    - https://github.com/pytorch/pytorch/pull/146003
    - `torch.onnx.export` signature, torch 2.13 (field-and-peers.md section 3.2)
    """

    code = "OLX408"
    name = "unknown-export-argument"
    severity = Severity.ERROR
    requires = ("export",)

    VALID = [
        Valid("import torch\ntorch.onnx.export(model, (x,), 'm.onnx', opset_version=18)\n"),
        Valid("import torch\ntorch.onnx.export(model, (x,), **options)\n"),
        Valid("import torch\ntorch.export.export(model, (x,), strict=False)\n"),
        Valid(
            "import torch\ntorch.onnx.export(model, (x,), 'm.onnx', example_outputs=y)\n",
            config={"target-torch": "2.6"},
        ),
        Valid(
            dedent(
                """
                import torch
                if torch.__version__ < "1.11":
                    torch.onnx.export(model, (x,), "m.onnx", example_outputs=y)
                """
            )
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\ntorch.onnx.export(model, (x,), 'm.onnx', example_outputs=y)\n",
            line=2,
            message="outputs come from running the model",
        ),
        Invalid(
            "import torch\ntorch.onnx.export(m, (x,), 'm.onnx', dynamic_axis={'x': {0: 'b'}})\n",
            line=2,
            message="unexpected keyword argument",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.config.torch_version < UNKNOWN_KWARGS_REJECTED_SINCE:
            return
        call = self.ctx.export_call(node)
        if call is None or call.kind is not ExportKind.ONNX_DYNAMO:
            return
        if in_version_branch(self.ctx):
            return
        for arg in node.args:
            if arg.keyword is None:
                continue
            name = arg.keyword.value
            if name in EXPORT_KEYWORDS_2_13 or name == "fallback":
                continue
            hint = OLD_EXPORT_KEYWORDS.get(name, "check the spelling")
            self.report(
                arg.keyword,
                f"`torch.onnx.export` takes no `{name}=` (TypeError: unexpected keyword "
                f"argument since torch 2.7): {hint}",
            )
