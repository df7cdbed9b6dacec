"""OLX808: an ONNX translation failure (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
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
    No fix.

    ## References
    - https://docs.pytorch.org/docs/stable/onnx_dynamo.html
    """

    code = "OLX808"
    name = "onnx-translation-failure"
    severity = Severity.ERROR
    since = "0.1.0"
    from_deep_analysis = True
