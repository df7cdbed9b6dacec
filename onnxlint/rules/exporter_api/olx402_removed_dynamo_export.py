"""OLX402: `torch.onnx.dynamo_export(...)` calls (removed in torch 2.9)."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Fix, FixSafety, Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent, make_fix
from onnxlint.rules.exporter_api.api_table import (
    API_FACTS,
    DYNAMO_DEFAULT_SINCE,
    fmt_version,
    in_version_branch,
    torch_module_name,
)
from onnxlint.semantic.calls import ExportKind

_FACT = API_FACTS["torch.onnx.dynamo_export"]


class RemovedDynamoExport(Rule):
    """
    ## What it does
    Flags calls of `torch.onnx.dynamo_export(model, *args, **kwargs)`.

    Code inside an `if`/`else` that tests a torch version is left alone (written for
    another torch on purpose).

    ## Why is this bad?
    `dynamo_export` was deprecated in torch 2.7 and removed in 2.9: the call raises
    `AttributeError: module 'torch.onnx' has no attribute 'dynamo_export'`. Its replacement,
    `torch.onnx.export`, uses the same `torch.export`-based exporter by default and returns
    the same `ONNXProgram`. Rated for `target-torch`: error from 2.9, info in 2.7 and 2.8.

    ## Example
    ```python
    onnx_program = torch.onnx.dynamo_export(model, x, mask=m)
    ```

    ## Use instead
    ```python
    onnx_program = torch.onnx.export(model, (x,), kwargs={"mask": m})
    ```

    ## Fix safety
    Safe: the old call cannot run on the target torch, and since 2.7 `dynamo_export` was
    itself a wrapper around the exporter `torch.onnx.export` uses. Positional model inputs
    become the `args` tuple, keyword model inputs become `kwargs=` (`dynamo=True` is added
    for targets before 2.9). No fix when `export_options=` is passed (its settings map to
    several `export()` keywords: dynamic shapes, registry, fake mode), when the call holds
    comments, or when the file does not import `torch` to spell `torch.onnx.export`.

    ## References
    - https://github.com/pytorch/pytorch/pull/158130 (removal), #146923 (deprecation)
    - https://github.com/meta-pytorch/torchfix/issues/95 (the migration users ask for)
    """

    code = "OLX402"
    name = "removed-dynamo-export"
    severity = Severity.ERROR
    fix_safety = FixSafety.SAFE
    deprecated_api = True
    requires = ("dynamo_export",)

    VALID = [
        Valid("import torch\nprog = torch.onnx.export(model, (x,))\n"),
        Valid("def dynamo_export(*a): pass\ndynamo_export(model, x)\n"),
        Valid(
            dedent(
                """
                import torch
                if torch.__version__ < "2.9":
                    prog = torch.onnx.dynamo_export(model, x)
                else:
                    prog = torch.onnx.export(model, (x,))
                """
            )
        ),
        Valid(
            "import torch\nprog = torch.onnx.dynamo_export(model, x)\n",
            config={"target-torch": "2.6"},
        ),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                prog = torch.onnx.dynamo_export(model, x, mask=m)
                """
            ),
            line=2,
            message="removed in torch 2.9",
            fixed=dedent(
                """
                import torch
                prog = torch.onnx.export(model, (x,), kwargs={"mask": m})
                """
            ),
        ),
        Invalid(
            dedent(
                """
                from torch import onnx
                prog = onnx.dynamo_export(model, *inputs, **extra)
                """
            ),
            line=2,
            message="dynamo_export",
            fixed=dedent(
                """
                from torch import onnx
                prog = onnx.export(model, tuple(inputs), kwargs=extra)
                """
            ),
        ),
        Invalid(
            dedent(
                """
                import torch
                from torch.onnx import dynamo_export
                prog = dynamo_export(model, a, b)
                """
            ),
            line=3,
            message="dynamo_export",
            fixed=dedent(
                """
                import torch
                from torch.onnx import dynamo_export
                prog = torch.onnx.export(model, (a, b))
                """
            ),
        ),
        Invalid(
            dedent(
                """
                import torch
                opts = None
                prog = torch.onnx.dynamo_export(model, x, export_options=opts)
                """
            ),
            line=3,
            message="`export_options=` cannot be converted",
        ),
        Invalid(
            "import torch\nprog = torch.onnx.dynamo_export(model, x)\n",
            line=2,
            message="deprecated",
            severity=Severity.INFO,
            config={"target-torch": "2.8"},
            fixed="import torch\nprog = torch.onnx.export(model, (x,), dynamo=True)\n",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = self.ctx.export_call(node)
        if call is None or call.kind is not ExportKind.ONNX_DYNAMO_EXPORT:
            return
        if in_version_branch(self.ctx):
            return
        target = self.ctx.config.torch_version
        severity = _FACT.severity(target)
        if severity is None:
            return
        if severity is Severity.ERROR:
            message = (
                "`torch.onnx.dynamo_export` was removed in torch "
                f"{fmt_version(_FACT.removed or target)} (AttributeError); use {_FACT.replacement}"
            )
        else:
            message = (
                "`torch.onnx.dynamo_export` is deprecated (removed in torch 2.9); use "
                f"{_FACT.replacement}"
            )
        fix, why_not = self._fix(node)
        if why_not:
            message += f"; {why_not}"
        self.report(node.func, message, fix=fix, severity=severity)

    def _fix(self, node: cst.Call) -> tuple[Fix | None, str]:
        """The rewritten call, or (None, the reason there is no fix)."""
        ctx = self.ctx
        if any(a.keyword is not None and a.keyword.value == "export_options" for a in node.args):
            return None, (
                "`export_options=` cannot be converted automatically: pass its settings as "
                "`torch.onnx.export` keywords (`dynamic_shapes=`, ...)"
            )
        if "#" in ctx.code_of(node):
            return None, ""
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "dynamo_export":
            new_func = ctx.code_of(func.value) + ".export"
        else:
            torch_name = torch_module_name(ctx)
            if torch_name is None:
                return None, ""
            new_func = f"{torch_name}.onnx.export"
        positional = [a for a in node.args if a.keyword is None and a.star != "**"]
        keywords = [a for a in node.args if a.keyword is not None or a.star == "**"]
        if not positional or positional[0].star:
            return None, ""
        model, inputs = positional[0], positional[1:]
        if any(isinstance(a.value, (cst.Dict, cst.DictComp)) for a in inputs):
            return None, ""  # a trailing dict in `args` would read as keyword inputs
        code = ctx.code_of
        # The title says everything the rewrite changes, not only the function's name.
        changes = [f"Call `{new_func}` instead"]
        if inputs:
            changes.append("pass the inputs as one tuple")
        if len(inputs) == 1 and inputs[0].star == "*":
            args_text = f"tuple({code(inputs[0].value)})"
        elif len(inputs) == 1:
            args_text = f"({code(inputs[0].value)},)"
        else:
            args_text = "(" + ", ".join(f"{a.star}{code(a.value)}" for a in inputs) + ")"
        parts = [code(model.value), args_text]
        if len(keywords) == 1 and keywords[0].star == "**":
            parts.append(f"kwargs={code(keywords[0].value)}")
        elif keywords:
            items = [
                f"**{code(a.value)}"
                if a.keyword is None
                else f'"{a.keyword.value}": {code(a.value)}'
                for a in keywords
            ]
            parts.append("kwargs={" + ", ".join(items) + "}")
        if keywords:
            changes.append("the keyword inputs as `kwargs=`")
        if ctx.config.torch_version < DYNAMO_DEFAULT_SINCE:
            parts.append("dynamo=True")
            changes.append("add `dynamo=True`")
        text = f"{new_func}({', '.join(parts)})"
        title = ", ".join(changes[:-1]) + (" and " if len(changes) > 1 else "") + changes[-1]
        return make_fix(title, ctx.replace(node, text)), ""
