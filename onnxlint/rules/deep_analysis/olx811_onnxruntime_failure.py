"""OLX811: ONNX Runtime failing to run the model (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class OnnxruntimeFailure(Rule):
    """
    ## What it does
    With verification on, reports an export with real weights that fails, or an ONNX Runtime
    session that fails to load or run the model on the example inputs or other sizes of its
    dynamic dims.

    ## Why is this bad?
    The model exports but cannot be used where it is meant to run.

    ## Example
    ```python
    # an input size that makes a Reshape fail in ONNX Runtime
    ```

    ## Use instead
    ```python
    # make the reshape depend on the input's shape, not on the example's
    ```

    ## Fix safety
    No fix.

    ## References
    - https://onnxruntime.ai/docs/
    """

    code = "OLX811"
    name = "onnxruntime-failure"
    severity = Severity.ERROR
    since = "0.1.0"
    from_deep_analysis = True
