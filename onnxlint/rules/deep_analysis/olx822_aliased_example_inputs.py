"""OLX822: one tensor given for several example inputs (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class AliasedExampleInputs(Rule):
    """
    ## What it does
    Reports example inputs that are one tensor object (or views of one tensor) given in
    several places, such as `model(x, x)` or `([x, x, x], x)`, at the line that gives the
    examples: the export call of a script, or the factory's `return`.

    ## Why is this bad?
    torch.export traces aliased inputs as one input. The ONNX model keeps one input per
    place, but its graph computes with only one of them, so it gives other numbers than
    PyTorch as soon as the inputs differ. Nothing fails: the export, the ONNX checker and
    `verify` (which feeds the same aliased tensor back) all pass, and the problem shows in
    production.

    ## Example
    ```python
    x = torch.randn(2, 3)
    torch.onnx.export(model, (x, x), "m.onnx")
    ```

    ## Use instead
    ```python
    x = torch.randn(2, 3)
    torch.onnx.export(model, (x, x.clone()), "m.onnx")
    ```

    ## Fix safety
    No fix.

    ## References
    - https://docs.pytorch.org/docs/stable/export.html
    """

    code = "OLX822"
    name = "aliased-example-inputs"
    severity = Severity.ERROR
    since = "0.3.0"
    from_deep_analysis = True
