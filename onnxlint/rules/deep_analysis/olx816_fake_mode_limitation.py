"""OLX816: code that cannot run on fake tensors (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class FakeModeLimitation(Rule):
    """
    ## What it does
    Reports the line where running the model on fake tensors (no data) had to stop: while
    building it (a data check in `__init__`, weights read from a file) or while looking for
    graph breaks (`.numpy()` of a value Python then needs, a loop over the data that does not
    end). It is a limitation of the analysis, not an error in the model, and the code after
    this line is not searched for breaks. What fake tensors can go past is not reported:
    init functions with data checks (`torch.nn.init.trunc_normal_`), data-dependent output
    sizes (`nonzero`, boolean indexing, `unique`, expert routing, NMS loops; the search
    goes on with unbacked sizes, as torch.export does, and with a number where the op runs
    between two graphs, as real data gives), a consistency check on such a size (`if n !=
    m: raise ...`, decided as real data passes it), and eager-mode int8 models (built with
    real tensors instead). Skip such code when the environment variable `ONNXLINT_DEEP` is
    set.

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
    from_deep_analysis = True
