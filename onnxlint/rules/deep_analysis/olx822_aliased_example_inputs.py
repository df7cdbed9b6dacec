"""OLX822: one tensor given for several example inputs (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import FixSafety, Severity
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
    Unsafe, and only when proven (`--deep --fix --unsafe-fixes`, the editor's quick fix): each
    place after the first gets its own copy (`x.clone()`) in the example. It is
    offered only once the worker has run it: the finding gone and no new one, the export as
    far or further, the rewritten model's outputs the original's in eager mode (at the
    example, at a second size of each dynamic dim, at the example negated) and ONNX
    Runtime's the same as eager. Its title says what was proven. A rewrite that is not
    proven is not offered.

    ## References
    - https://docs.pytorch.org/docs/stable/export.html
    """

    code = "OLX822"
    name = "aliased-example-inputs"
    severity = Severity.ERROR
    since = "0.3.0"
    from_deep_analysis = True
    fix_safety = FixSafety.UNSAFE  # only a proven rewrite (onnxlint.deep.fixes)
