"""OLX808: an ONNX translation failure (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import FixSafety, Severity
from onnxlint.rules.base import Rule


class OnnxTranslationFailure(Rule):
    """
    ## What it does
    Reports a failure while decomposing (step 2/3) or translating (step 3/3) an exported
    program to ONNX that is not a missing translation: a translation function that rejects
    its arguments (e.g. `torch.histc` with `min == max`), at the line of the node that failed.

    ## Why is this bad?
    The same failure stops `torch.onnx.export`.

    ## Example
    ```python
    torch.histc(x, bins=4)
    ```

    ## Use instead
    ```python
    torch.histc(x, bins=4, min=0.0, max=1.0)
    ```

    ## Fix safety
    Unsafe, and only when proven (`--deep --fix --unsafe-fixes`, the editor's quick fix):
    `scaled_dot_product_attention` on 3-D inputs, which torch 2.13's translation refuses ("only
    4D query, key, and value"), gets a head dim of 1 (`q.unsqueeze(-3)`, ..., `.squeeze(-3)`).
    It is offered only once the worker has run it: the finding gone and no new one, the export
    as far or further, the rewritten model's outputs the original's in eager mode (at the
    example, at a second size of each dynamic dim, at the example negated) and ONNX Runtime's
    the same as eager. Its title says what was proven. A rewrite that is not proven is not
    offered. Otherwise no fix.

    ## References
    - https://docs.pytorch.org/docs/stable/onnx_dynamo.html
    """

    code = "OLX808"
    name = "onnx-translation-failure"
    severity = Severity.ERROR
    since = "0.1.0"
    from_deep_analysis = True
    fix_safety = FixSafety.UNSAFE  # only a proven rewrite (onnxlint.deep.fixes)
