"""OLX810: ONNX Runtime disagreeing with PyTorch (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import FixSafety, Severity
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
    Unsafe, and only when proven (`--deep --fix --unsafe-fixes`, the editor's quick fix):
    `base.scatter_reduce(dim, index, src, reduce="mean")`, which ONNX Runtime computes
    otherwise, becomes a sum and a count made with `scatter_add`. It is offered only once the
    worker has run it: the finding gone and no new one, the export as far or further, the
    rewritten model's outputs the original's in eager mode (at the example, at a second size of
    each dynamic dim, at the example negated) and ONNX Runtime's the same as eager. Its title
    says what was proven. A rewrite that is not proven is not offered. Otherwise no fix.

    ## References
    - https://docs.pytorch.org/docs/stable/onnx_verification.html
    """

    code = "OLX810"
    name = "onnxruntime-mismatch"
    severity = Severity.ERROR
    since = "0.1.0"
    from_deep_analysis = True
    fix_safety = FixSafety.UNSAFE  # only a proven rewrite (onnxlint.deep.fixes)
