"""OLX812: an analysis target that cannot be built (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class InvalidAnalysisTarget(Rule):
    """
    ## What it does
    Reports a target whose factory cannot be used: the module cannot be imported, the
    function is missing, it raises (for example while loading weights, which fake tensors
    cannot do), or it returns something other than `(model, args)`, `(model, args, kwargs)`
    or `(model, args, kwargs, dynamic_shapes)`. Also a `translation_table` that cannot be
    loaded.

    ## Why is this bad?
    Without a model and example inputs there is nothing to analyse. Weights are never needed:
    the factory runs under fake tensors, with the environment variable `ONNXLINT_DEEP=1`
    set so it can skip loading them.

    ## Example
    ```python
    def make():                       # [[tool.onnxlint.targets]] factory = "pkg.models:make"
        model = Net()
        model.load_state_dict(torch.load("weights.pt"))
        return model
    ```

    ## Use instead
    ```python
    import os

    def make():
        model = Net()
        if not os.environ.get("ONNXLINT_DEEP"):
            model.load_state_dict(torch.load("weights.pt"))
        return model.eval(), (torch.randn(2, 3, 224, 224),)
    ```

    ## Fix safety
    No fix.

    ## References
    - https://onnxlint.github.io/onnxlint/deep/targets/
    """

    code = "OLX812"
    name = "invalid-analysis-target"
    severity = Severity.ERROR
    since = "0.1.0"
    from_deep_analysis = True
