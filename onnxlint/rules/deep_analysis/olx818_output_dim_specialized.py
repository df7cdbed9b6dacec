"""OLX818: an output dim baked while it follows a dynamic dim (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class OutputDimSpecialized(Rule):
    """
    ## What it does
    Reports each output dimension that the exported program fixes (a constant such as `2`, or
    a formula valid for one branch only) although it follows a dimension the target asks to be
    dynamic, on the line of the size condition that baked it (`if x.shape[0] > 2:`) or, when
    there is none, on the line that makes the output.

    The criterion, with no real weights: for each requested dynamic dim that stays dynamic in
    the exported program, the analysis takes a few other sizes of it (1, 2, the example size
    -1, +1, +3, and just outside the range torch.export inferred, within the `min`/`max` the
    target asks for), evaluates the exported output shapes at each, and runs the model eagerly
    in fake mode (shapes only) on inputs of that size. An output axis where they disagree is
    reported once, with the sizes where they differ; the line is the first shape guard on that
    dim that is false at the differing size, i.e. the condition whose other branch eager takes.
    Sizes at which eager PyTorch itself fails are ignored.

    ## Why is this bad?
    torch.export traces one branch of a condition on a size and records an assumption
    (`batch > 2`) that the ONNX model never checks. The input stays dynamic, so the export
    looks right, but the ONNX model declares the output as `[2, 3]`: runtimes and downstream
    tools that trust the declared shape break for other batch sizes, and where the branches
    compute different things the ONNX model silently computes the wrong one.

    ## Example
    ```python
    def forward(self, x):          # dynamic_shapes = [{0 = "batch"}], example batch 3
        if x.shape[0] > 2:
            return x[:2]
        return x
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return x[: min(2, x.shape[0])]   # or torch.cond(x.shape[0] > 2, ...)
    ```

    ## Fix safety
    No fix.

    ## References
    - https://docs.pytorch.org/docs/stable/export.html#control-flow-static-vs-dynamic
    - https://docs.pytorch.org/docs/stable/cond.html
    """

    code = "OLX818"
    name = "output-dim-specialized"
    severity = Severity.ERROR
    since = "0.1.0"
    from_deep_analysis = True
