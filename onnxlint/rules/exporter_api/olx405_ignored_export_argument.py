"""OLX405: keywords the dynamo exporter accepts and silently ignores."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import FixSafety, Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent, make_fix
from onnxlint.rules.exporter_api.api_table import (
    IGNORED_BY_DYNAMO,
    IGNORED_KWARGS_SINCE,
    in_version_branch,
    onnx_export_on_dynamo,
)


class IgnoredExportArgument(Rule):
    """
    ## What it does
    Flags `training=`, `operator_export_type=`, `do_constant_folding=`, `custom_opsets=`,
    `export_modules_as_functions=` and `autograd_inlining=` on a `torch.onnx.export` call
    that takes the dynamo exporter (the default since torch 2.9, or `dynamo=True`).

    Code inside an `if`/`else` that tests a torch version is left alone (written for
    another torch on purpose).

    ## Why is this bad?
    The dynamo exporter accepts these keywords for compatibility and drops them without a
    warning (they are not forwarded, deprecated since torch 2.6). Code that passes
    `training=TrainingMode.TRAINING` or `do_constant_folding=False` believes it controls
    something it does not: e.g. the exported model's mode is whatever mode the module is
    in, and `custom_opsets` registers nothing.

    ## Example
    ```python
    torch.onnx.export(model, (x,), "m.onnx", do_constant_folding=True,
                      training=torch.onnx.TrainingMode.EVAL)
    ```

    ## Use instead
    ```python
    model.eval()
    torch.onnx.export(model, (x,), "m.onnx")
    ```

    ## Fix safety
    Safe: removing a keyword the exporter ignores keeps the exported model as it is.
    Calls with `dynamo=False` are OLX401's (its fix drops these keywords too).

    ## References
    - `torch.onnx.export` docstring, torch 2.13: ".. versionchanged:: 2.6 ``training`` is
      now deprecated ..."
    - field-and-peers.md section 3.2 (T16: silently ignored in 2.13)
    """

    code = "OLX405"
    name = "ignored-export-argument"
    severity = Severity.WARNING
    fix_safety = FixSafety.SAFE
    deprecated_api = True
    requires = tuple(IGNORED_BY_DYNAMO)

    VALID = [
        Valid("import torch\ntorch.onnx.export(model, (x,), 'm.onnx', opset_version=18)\n"),
        Valid("import torch\ntorch.onnx.export(model, (x,), dynamo=False, training=t)\n"),
        Valid(
            "import torch\ntorch.onnx.export(model, (x,), dynamo=flag, do_constant_folding=True)\n"
        ),
        Valid(
            "import torch\ntorch.onnx.export(model, (x,), do_constant_folding=True)\n",
            config={"target-torch": "2.8"},
        ),
        Valid("import torch\ntorch.export.export(model, (x,), training=True)\n"),
        Valid(
            dedent(
                """
                import torch
                if Version(torch.__version__) >= Version("1.11"):
                    torch.onnx.export(model, (x,), "m.onnx", dynamo=False, training=t)
                else:
                    torch.onnx.export(model, (x,), "m.onnx", training=t)
                """
            )
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\ntorch.onnx.export(model, (x,), 'm.onnx', do_constant_folding=True)\n",
            line=2,
            message="ignores `do_constant_folding=`",
            fixed="import torch\ntorch.onnx.export(model, (x,), 'm.onnx')\n",
        ),
        Invalid(
            dedent(
                """
                from torch.onnx import export, TrainingMode
                export(
                    model,
                    (x,),
                    "m.onnx",
                    training=TrainingMode.EVAL,
                    opset_version=18,
                    custom_opsets={"mydomain": 1},
                )
                """
            ),
            line=6,
            message="model.eval()",
            count=2,
            fixed=dedent(
                """
                from torch.onnx import export, TrainingMode
                export(
                    model,
                    (x,),
                    "m.onnx",
                    opset_version=18,
                )
                """
            ),
        ),
        Invalid(
            "import torch\ntorch.onnx.export(m, (x,), dynamo=True, autograd_inlining=False)\n",
            line=2,
            message="autograd_inlining",
            config={"target-torch": "2.7"},
            fixed="import torch\ntorch.onnx.export(m, (x,), dynamo=True)\n",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.config.torch_version < IGNORED_KWARGS_SINCE:
            return
        call = onnx_export_on_dynamo(self.ctx, node)
        if call is None or in_version_branch(self.ctx):
            return
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value not in IGNORED_BY_DYNAMO:
                continue
            name = arg.keyword.value
            self.report(
                arg,
                f"the dynamo exporter ignores `{name}=` (deprecated since torch 2.6): "
                f"{IGNORED_BY_DYNAMO[name]}; remove it",
                fix=make_fix(f"Remove `{name}=`", self.ctx.remove_arg(node, arg)),
            )
