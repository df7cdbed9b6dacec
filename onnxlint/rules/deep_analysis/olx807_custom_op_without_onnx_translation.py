"""OLX807: a custom op without an ONNX translation (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class CustomOpWithoutOnnxTranslation(Rule):
    """
    ## What it does
    Reports a custom operator (any namespace other than `aten`/`prims`) in the exported
    graph that has no ONNX translation in the registry, nor in the target's
    `exporter.translation_table`.

    ## Why is this bad?
    `torch.onnx.export` fails at translation with `DispatchError: No ONNX function found for
    <OpOverload(op='mylib.twice', ...)>`.

    ## Example
    ```python
    torch.onnx.export(model, (x,), "m.onnx")   # model calls torch.ops.mylib.twice
    ```

    ## Use instead
    ```python
    def twice_onnx(x):
        return op.Add(x, x)

    torch.onnx.export(model, (x,), "m.onnx",
                      custom_translation_table={torch.ops.mylib.twice.default: twice_onnx})
    ```

    ## Fix safety
    No fix.

    ## References
    - https://docs.pytorch.org/tutorials/beginner/onnx/onnx_registry_tutorial.html
    """

    code = "OLX807"
    name = "custom-op-without-onnx-translation"
    severity = Severity.ERROR
    since = "0.1.0"
    from_deep_analysis = True
