"""OLX813: an analysis whose process crashed (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class AnalysisCrashed(Rule):
    """
    ## What it does
    Reports an analysis whose process died before reporting: a segmentation fault in an
    extension, `os._exit()` or `sys.exit()` in user code, a kill by the system. Also reported
    when the worker cannot be started at all (wrong interpreter, torch missing).

    ## Why is this bad?
    Nothing could be learnt about the target. The analysis runs in a child process of the
    worker, so onnxlint and the editor keep running and the next analysis starts afresh; the
    message carries the signal or exit code and the last lines the process printed.

    ## Example
    ```python
    def make():
        sys.exit(0)
    ```

    ## Use instead
    ```python
    def make():
        return Net().eval(), (torch.randn(2, 8),)
    ```

    ## Fix safety
    No fix.

    ## References
    - https://onnxlint.github.io/onnxlint/deep/worker/
    """

    code = "OLX813"
    name = "analysis-crashed"
    severity = Severity.ERROR
    since = "0.1.0"
    from_deep_analysis = True
