"""OLX806: a custom op without a fake implementation (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class CustomOpWithoutFakeImpl(Rule):
    """
    ## What it does
    Reports a `torch.library.custom_op` called by the model that has no fake (meta)
    implementation, so `torch.export` cannot trace it.

    ## Why is this bad?
    Export traces with fake tensors; an op without a fake kernel cannot tell export the
    shape of its output, and export fails with "There was no fake impl registered".

    ## Example
    ```python
    @torch.library.custom_op("mylib::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2
    ```

    ## Use instead
    ```python
    @torch.library.custom_op("mylib::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @twice.register_fake
    def _(x):
        return torch.empty_like(x)
    ```

    ## Fix safety
    No fix.

    ## References
    - https://docs.pytorch.org/tutorials/advanced/python_custom_ops.html
    """

    code = "OLX806"
    name = "custom-op-without-fake-impl"
    severity = Severity.ERROR
    since = "0.1.0"
    from_deep_analysis = True
