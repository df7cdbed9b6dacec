"""OLX824: input or output names that collide with names in the graph (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class OnnxNameCollision(Rule):
    """
    ## What it does
    Reports `input_names` or `output_names` of an export call that name a value the exporter
    already gives that name to (a node's output such as `relu`, `add`, `linear`, a weight, or
    another input or output), at the export call.

    ## Why is this bad?
    torch.onnx.export renames the graph's inputs and outputs to the names given, without
    checking them against the names it generates for intermediate values. The file is
    written, and ONNX Runtime refuses to load it: "Duplicate definition of name".

    ## Example
    ```python
    torch.onnx.export(model, (x,), "m.onnx", output_names=["relu", "add"])
    ```

    ## Use instead
    ```python
    torch.onnx.export(model, (x,), "m.onnx", output_names=["features", "logits"])
    ```

    ## Fix safety
    No fix.

    ## References
    - https://onnx.ai/onnx/repo-docs/IR.html#names-within-a-graph
    """

    code = "OLX824"
    name = "onnx-name-collision"
    severity = Severity.ERROR
    since = "0.3.0"
    from_deep_analysis = True
