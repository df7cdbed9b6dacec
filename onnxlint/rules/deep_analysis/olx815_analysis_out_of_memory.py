"""OLX815: an analysis over its memory limit (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class AnalysisOutOfMemory(Rule):
    """
    ## What it does
    Reports an analysis whose process used more resident memory than the target's
    `memory_limit_mb` (default 6144) and was stopped, or ran out of memory.

    ## Why is this bad?
    Fake tensors make weights free, so an analysis that needs gigabytes is usually real
    tensors being allocated: a factory that loads weights, `torch.load` in `__init__`, or
    verification of a large model.

    ## Example
    ```python
    def make():
        return Net(), (torch.randn(100_000, 100_000),)   # fine under fake tensors
    ```

    ## Use instead
    ```toml
    [[tool.onnxlint.targets]]
    name = "net"
    factory = "pkg.models:make"
    memory_limit_mb = 12000
    ```

    ## Fix safety
    No fix.

    ## References
    - https://onnxlint.github.io/onnxlint/deep/worker/
    """

    code = "OLX815"
    name = "analysis-out-of-memory"
    severity = Severity.ERROR
    since = "0.1.0"
    from_deep_analysis = True
