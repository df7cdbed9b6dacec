"""OLX814: an analysis that took too long (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class AnalysisTimeout(Rule):
    """
    ## What it does
    Reports an analysis that ran past its target's `timeout` (default 300 s) and was
    stopped: an infinite loop in model code, or a model too large for the limit.

    ## Why is this bad?
    The analysis is killed so that it cannot hold the worker (or the machine) forever.

    ## Example
    ```python
    def forward(self, x):
        while True:
            x = x + 1
    ```

    ## Use instead
    ```toml
    [[tool.onnxlint.targets]]
    name = "big"
    factory = "pkg.models:make_big"
    timeout = 900
    ```

    ## Fix safety
    No fix.

    ## References
    - https://onnxlint.github.io/onnxlint/deep/worker/
    """

    code = "OLX814"
    name = "analysis-timeout"
    severity = Severity.ERROR
    since = "0.1.0"
    from_deep_analysis = True
