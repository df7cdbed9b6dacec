"""OLX307: duplicate names in `input_names` / `output_names`."""

from __future__ import annotations

import libcst as cst

from onnxlint.analysis.exporter import effective_kind, exporter_known
from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid
from onnxlint.semantic.calls import ExportKind, keyword_arg


class DuplicateExportNames(Rule):
    """
    ## What it does
    Flags a literal `input_names` or `output_names` list of `torch.onnx.export` that
    names the same value twice.

    ## Why is this bad?
    Since torch 2.11 the dynamo exporter raises `ValueError: Input names cannot be
    duplicated: ['a']`. Older exporters produced a graph with two values of one name,
    which ONNX checkers and runtimes reject or resolve to the wrong tensor.

    ## Example
    ```python
    torch.onnx.export(model, (a, b), "m.onnx", input_names=["x", "x"])
    ```

    ## Use instead
    ```python
    torch.onnx.export(model, (a, b), "m.onnx", input_names=["a", "b"])
    ```

    ## Fix safety
    No fix: the right names are the user's choice.

    ## References
    - `torch/onnx/_internal/exporter/_compat.py` (input name validation, 2.11)
    """

    code = "OLX307"
    name = "duplicate-export-names"
    severity = Severity.ERROR
    requires = ("_names",)

    VALID = [
        Valid("import torch\ntorch.onnx.export(m, (a, b), 'f', input_names=['a', 'b'])\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\ntorch.onnx.export(m, (a, b), 'f', input_names=['a', 'a'])\n",
            line=2,
            message="'a'",
            severity=Severity.ERROR,
        ),
        Invalid(
            "import torch\n"
            "torch.onnx.export(m, (a,), 'f', dynamo=False, output_names=['y', 'z', 'y'])\n",
            line=2,
            message="output_names",
            severity=Severity.WARNING,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = self.ctx.export_call(node)
        if call is None or not exporter_known(call) or call.qualname != "torch.onnx.export":
            return
        raises = effective_kind(
            self.ctx, call
        ) is ExportKind.ONNX_DYNAMO and self.ctx.config.torch_version >= (2, 11)
        for keyword in ("input_names", "output_names"):
            arg = keyword_arg(node, keyword)
            if arg is None or not isinstance(arg.value, (cst.List, cst.Tuple)):
                continue
            seen: set[str] = set()
            for el in arg.value.elements:
                if not isinstance(el, cst.Element) or not isinstance(el.value, cst.SimpleString):
                    continue
                name = el.value.evaluated_value
                if not isinstance(name, str):
                    continue
                if name in seen:
                    effect = "the exporter raises ValueError" if raises else "names must be unique"
                    self.report(
                        el.value,
                        f"{name!r} appears twice in `{keyword}`: {effect}; give each "
                        "input/output its own name",
                        severity=Severity.ERROR if raises else Severity.WARNING,
                    )
                    break
                seen.add(name)
