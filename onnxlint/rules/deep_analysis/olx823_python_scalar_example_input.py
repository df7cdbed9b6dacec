"""OLX823: a Python number or bool given as an example input (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import FixSafety, Severity
from onnxlint.rules.base import Rule


class PythonScalarExampleInput(Rule):
    """
    ## What it does
    Reports each example input that is a Python `float`, `int` or `bool` (a warning for a
    number, information for a bool, which is usually a flag meant as a constant), at the
    line that gives the examples: the export call of a script, or the factory's `return`.

    ## Why is this bad?
    The dynamo exporter (`torch.onnx.export`, the default since torch 2.9) specialises Python
    scalars: the example's value is baked into the graph as a constant and the ONNX model has
    no input for it. The export succeeds, and the ONNX model ignores whatever value the caller
    means to pass later.

    ## Example
    ```python
    torch.onnx.export(model, (images, 0.5), "m.onnx")   # forward(self, x, threshold: float)
    ```

    ## Use instead
    ```python
    torch.onnx.export(model, (images, torch.tensor(0.5)), "m.onnx")
    ```
    or, if the value never changes, leave it out of the inputs.

    ## Fix safety
    Unsafe, and only when proven (`--deep --fix --unsafe-fixes`, the editor's quick fix): the
    number is passed as a 0-d tensor (`torch.tensor(0.1)`), an input of the ONNX model. It is
    offered only once the worker has run it: the finding gone and no new one, the export as
    far or further, the rewritten model's outputs the original's in eager mode (at the
    example, at a second size of each dynamic dim, at the example negated) and ONNX
    Runtime's the same as eager. Its title says what was proven. A rewrite that is not
    proven is not offered.

    ## References
    - https://docs.pytorch.org/docs/stable/export.html#static-dynamic-shapes
    """

    code = "OLX823"
    name = "python-scalar-example-input"
    severity = Severity.WARNING
    since = "0.3.0"
    from_deep_analysis = True
    fix_safety = FixSafety.UNSAFE  # only a proven rewrite (onnxlint.deep.fixes)
