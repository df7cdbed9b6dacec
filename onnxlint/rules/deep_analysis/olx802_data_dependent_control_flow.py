"""OLX802: a data-dependent guard (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import FixSafety, Severity
from onnxlint.rules.base import Rule


class DataDependentControlFlow(Rule):
    """
    ## What it does
    Reports Python control flow (`if`, `while`, `bool()`, `int()` used as a size) on a value
    computed from tensor data, where `torch.export` fails with `GuardOnDataDependentSymNode`
    ("Could not guard on data-dependent expression"). After the first one, the analysis goes on
    assuming each such condition holds, so every one in the model is reported, each on its line.

    A data-dependent *number* that Python needs as a real one (`int(t)`, `float(t)`,
    `range(int(t))`, an index) cannot stay symbolic: `int()` must return a Python int, and
    only `.item()` gives torch.export an unbacked symbol to carry. The analysis reports it and
    traces on with a placeholder (2; 8 when an error follows from 2, such as a `view(-1, 8)`);
    the graph-break search uses the example's own value when the input was built from literal
    data (`torch.tensor(4)`). What follows such a site is checked for that value only, and an
    error that follows from it says so. `.tolist()` sizes that must add up (`torch.split(x,
    lengths.tolist())`) can still stop the graph-break search (OLX816); export goes on.

    When torch.onnx.export's fallback capture (strict torch.export, TorchDynamo) succeeds
    where the non-strict one stops here (`torch.zeros(int(t))`, `x[:, int(n):]`), the export
    goes on with that graph, as torch's does, and the finding is information.

    ## Why is this bad?
    An exported graph has no Python: the exporter must decide each branch at export time,
    and a branch on tensor data cannot be decided. `torch.onnx.export` stops with
    "Failed to export the model with torch.export. This is step 1/3".

    ## Example
    ```python
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t * 2, lambda t: t.clone(), (x,))
        # or, element-wise: torch.where(x.sum() > 0, x * 2, x)
    ```

    ## Fix safety
    Unsafe, and only when proven (`onnxlint check --deep --fix --unsafe-fixes`, `--diff` to see
    it; the editor's quick fix after an analysis): the `if` rewritten with `torch.where` (both
    branches assignments of tensor expressions, or returns), else `torch.cond` (the branches as
    functions); a check that raises becomes `torch._check(...)` or is skipped while exporting;
    `k = int(n)` feeding a size becomes `k = n.item()` with `torch._check_is_size(k)`. Each is
    offered only once the worker has run it: the finding gone and no new one, the export as
    far or further, the rewritten model's outputs the original's in eager mode (at the
    example, at a second size of each dynamic dim, at the example negated) and ONNX
    Runtime's the same as eager. Its title says what was proven. A rewrite that is not
    proven is not offered.

    ## References
    - https://docs.pytorch.org/docs/main/compile/dynamic_shapes_troubleshooting_guardon_errors.html
    - https://github.com/pytorch/pytorch/issues/143222
    """

    code = "OLX802"
    name = "data-dependent-control-flow"
    severity = Severity.ERROR
    since = "0.1.0"
    from_deep_analysis = True
    fix_safety = FixSafety.UNSAFE  # only a proven rewrite (onnxlint.deep.fixes)
