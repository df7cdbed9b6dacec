"""OLX810: ONNX Runtime disagreeing with PyTorch (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class OnnxruntimeMismatch(Rule):
    """
    ## What it does
    With `verify = true` (or `--verify`), exports the model with real random weights, runs it
    with ONNX Runtime and eager PyTorch on the example inputs and on two other sizes of each
    dynamic dim, and reports outputs that differ beyond `abs 1e-4 + rel 1e-3 x max|eager|`
    or whose shapes differ. Skipped above `verify_max_params` (default 50 million) parameters,
    because it allocates real weights.

    ## Why is this bad?
    An export can succeed and still compute something else: a branch baked for the example
    size, a dim treated as static, an op translated with different semantics.

    ## Example
    ```python
    def forward(self, x):
        if x.shape[0] > 2:       # baked for the example batch
            return x[:2]
        return x
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return x[:2]
    ```

    ## Fix safety
    No fix.

    ## References
    - https://docs.pytorch.org/docs/stable/onnx_verification.html
    """

    code = "OLX810"
    name = "onnxruntime-mismatch"
    severity = Severity.ERROR
    since = "0.1.0"
    from_deep_analysis = True
