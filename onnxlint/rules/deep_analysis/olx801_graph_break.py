"""OLX801: a graph break (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class GraphBreak(Rule):
    """
    ## What it does
    Reports every graph break `torch._dynamo.explain` lists for the target (the tracer behind
    `torch.compile` and strict `torch.export`): a `print`, a `.item()`, an unsupported builtin
    or library call. The list is explain's own (same count, reasons and lines); each break is
    at its innermost line outside torch, inside a library (transformers, MONAI) too, with the
    chain from the user's code. Several breaks on one line are reported once with their count.

    ## Why is this bad?
    A graph break splits the model into several graphs for `torch.compile` and stops strict
    `torch.export`. `torch.onnx.export` captures with non-strict `torch.export`, which runs
    the Python and is not stopped by a graph break, so for ONNX export it is information
    (severity info). When the target says the model is exported strictly or compiled
    (`exporter.strict = true` in the target, or `# onnxlint: target strict`), it is a warning.
    A break often sits next to a data-dependent value that does fail export (OLX802).

    ## Example
    ```python
    def forward(self, x):
        print("shape", x.shape)
        y = self.proj(x)
        if y.sum().item() > 0:
            y = y * 2
        return y
    ```

    ## Use instead
    ```python
    def forward(self, x):
        y = self.proj(x)
        return torch.where(y.sum() > 0, y * 2, y)
    ```

    ## Fix safety
    No fix: each break needs a different rewrite; the message carries dynamo's hint and
    the link to its graph-break page.

    ## References
    - https://docs.pytorch.org/docs/stable/torch.compiler_faq.html#graph-breaks
    - https://meta-pytorch.github.io/compile-graph-break-site/
    """

    code = "OLX801"
    name = "graph-break"
    severity = Severity.INFO
    since = "0.1.0"
    from_deep_analysis = True
