"""OLX803: a torch.export failure (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import FixSafety, Severity
from onnxlint.rules.base import Rule


class TorchExportFailure(Rule):
    """
    ## What it does
    Reports a `torch.export.export(strict=False)` failure that is not a data-dependent guard,
    a dynamic-dim conflict or a missing fake kernel: the error (torch's own innermost reason),
    at the innermost line of the project's code in its traceback, with torch's suggested fix
    when it gives one. When torch.onnx.export's fallback capture (strict `torch.export`)
    succeeds where this one fails, the export goes on and the finding is information.

    ## Why is this bad?
    `torch.onnx.export` runs the same capture first; whatever stops it stops the ONNX export
    ("This is step 1/3").

    ## Example
    ```python
    def forward(self, x):
        return torch.from_numpy(x.numpy()) + 1
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return x + 1
    ```

    ## Fix safety
    Unsafe, and only when proven (`--deep --fix --unsafe-fixes`, the editor's quick fix): a
    data-dependent size (`k = n.item()`) told to be one (`torch._check_is_size(k)`), or the
    rewrites of OLX802 at an `if` where export fails. Each is
    offered only once the worker has run it: the finding gone and no new one, the export as
    far or further, the rewritten model's outputs the original's in eager mode (at the
    example, at a second size of each dynamic dim, at the example negated) and ONNX
    Runtime's the same as eager. Its title says what was proven. A rewrite that is not
    proven is not offered. Otherwise no fix.

    ## References
    - https://docs.pytorch.org/docs/stable/export.html
    """

    code = "OLX803"
    name = "torch-export-failure"
    severity = Severity.ERROR
    since = "0.1.0"
    from_deep_analysis = True
    fix_safety = FixSafety.UNSAFE  # only a proven rewrite (onnxlint.deep.fixes)
