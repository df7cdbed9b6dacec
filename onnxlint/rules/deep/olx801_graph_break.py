"""OLX801: a graph break (deep analysis)."""

from __future__ import annotations

from onnxlint.rule import Rule
from onnxlint.violation import Severity


class GraphBreak(Rule):
    """
    ## What it does
    Reports every place where `torch._dynamo` (the tracer behind `torch.compile` and strict
    `torch.export`) has to stop the graph: a `print`, a `.item()`, an unsupported builtin or
    library call. Found by running `torch._dynamo.explain` on the target under fake tensors,
    including the breaks `explain` itself leaves out (a break before any op, a break after a
    data-dependent one).

    ## Why is this bad?
    A graph break splits the model into several graphs. `torch.onnx.export` captures with
    non-strict `torch.export`, which has no graph breaks, so a break is not always an export
    failure, but it marks code that strict capture, `torch.compile` and the exporter's fallback
    strategies cannot follow, and it often sits next to a data-dependent value that will fail
    export (OLX802).

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
    severity = Severity.WARNING
    since = "0.1.0"
    deep = True
