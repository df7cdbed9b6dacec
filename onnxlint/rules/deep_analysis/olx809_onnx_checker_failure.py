"""OLX809: an ONNX model that fails the checker (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class OnnxCheckerFailure(Rule):
    """
    ## What it does
    Reports an ONNX model (translated without weights) that `onnx.checker.check_model`
    with full shape inference rejects.

    ## Why is this bad?
    A model that fails the checker is refused or misbehaves in ONNX Runtime and other
    back ends; it usually points to an exporter bug or a custom translation with wrong types.

    ## Example
    ```python
    # a custom translation returning the wrong element type
    ```

    ## Use instead
    ```python
    # fix the translation so its output type matches the op's schema
    ```

    ## Fix safety
    No fix.

    ## References
    - https://onnx.ai/onnx/api/checker.html
    """

    code = "OLX809"
    name = "onnx-checker-failure"
    severity = Severity.ERROR
    since = "0.1.0"
    from_deep_analysis = True
