"""OLX816: code that cannot run on fake tensors (deep analysis)."""

from __future__ import annotations

from onnxlint.rule import Rule
from onnxlint.violation import Severity


class FakeModeLimitation(Rule):
    """
    ## What it does
    Reports the line where running the model on fake tensors (no data) had to stop while
    looking for graph breaks: `.numpy()`, `.tolist()` feeding Python, data-dependent output
    shapes. The graph-break search does not see the code after it.

    ## Why is this bad?
    Such code also breaks fake-tensor (weightless) export and `torch.compile`; with real
    weights non-strict export may still trace it.

    ## Example
    ```python
    def forward(self, x):
        return torch.from_numpy(np.exp(x.numpy()))
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return torch.exp(x)
    ```

    ## Fix safety
    No fix.

    ## References
    - https://github.com/pytorch/pytorch/issues/132559
    """

    code = "OLX816"
    name = "fake-mode-limitation"
    severity = Severity.WARNING
    since = "0.1.0"
    deep = True
