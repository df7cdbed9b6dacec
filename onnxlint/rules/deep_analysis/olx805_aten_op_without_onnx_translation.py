"""OLX805: an ATen op with no ONNX translation (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class AtenOpWithoutOnnxTranslation(Rule):
    """
    ## What it does
    Reports every ATen operator left after the exporter's decompositions that the ONNX
    registry cannot translate (for example `torch.linalg.eigh`, `torch.cdist`,
    `torch.median(dim=)`), grouped by operator and by the line of the model that calls it,
    with a known workaround when there is one. All of them at once: `torch.onnx.export`
    stops at the first.

    ## Why is this bad?
    `torch.onnx.export` fails at translation ("This is step 3/3") with
    `DispatchError: No ONNX function found for <OpOverload(op='aten.X', ...)>`.

    ## Example
    ```python
    def forward(self, a, b):
        return torch.cdist(a, b)
    ```

    ## Use instead
    ```python
    def forward(self, a, b):
        return ((a.unsqueeze(-2) - b.unsqueeze(-3)) ** 2).sum(-1).sqrt()
    ```

    ## Fix safety
    No fix: the message gives the workaround (a rewrite, `custom_translation_table`, or
    `torch.onnx.ops.symbolic`).

    ## References
    - https://github.com/microsoft/onnxscript/issues/1644
    - https://docs.pytorch.org/docs/stable/onnx_dynamo.html
    """

    code = "OLX805"
    name = "aten-op-without-onnx-translation"
    severity = Severity.ERROR
    since = "0.1.0"
    from_deep_analysis = True
