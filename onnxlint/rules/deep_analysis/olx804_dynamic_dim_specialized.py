"""OLX804: a dynamic dim that came out static (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import FixSafety, Severity
from onnxlint.rules.base import Rule


class DynamicDimSpecialized(Rule):
    """
    ## What it does
    Reports each dimension the target asks to be dynamic (`dynamic_shapes`) that the model's
    code forces to a constant (`x.view(2, 12)`, `torch.zeros(2, 3)` added to the input,
    `assert x.shape[0] == 4`, `range(x.shape[0])`), on the line that forces it.

    ## Why is this bad?
    `torch.onnx.export` applies torch's "suggested fix" automatically: the export succeeds and
    the ONNX model silently accepts only the example size (a batch baked to 2). torch.export
    alone reports a constraint violation without naming the line.

    ## Example
    ```python
    def forward(self, x):          # dynamic_shapes = [{0 = "batch"}]
        return x.view(2, 12)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return x.view(x.shape[0], 12)   # or x.flatten(1)
    ```

    ## Fix safety
    Unsafe, and only when proven (`--deep --fix --unsafe-fixes`, the editor's quick fix):
    `int(x.shape[i])` becomes `x.shape[i]`; a literal equal to the example's size of the dim, in a
    shape argument, becomes the input's `x.shape[d]` (or `-1` in a `view`/`reshape`); a loop
    over the rows that maps them (`out.append(f(row))`, `torch.stack(out)`) becomes
    `torch.vmap(f)(x)`. Each is
    offered only once the worker has run it: the finding gone and no new one, the export as
    far or further, the rewritten model's outputs the original's in eager mode (at the
    example, at a second size of each dynamic dim, at the example negated) and ONNX
    Runtime's the same as eager. Its title says what was proven. A rewrite that is not
    proven is not offered. Otherwise no fix.

    ## References
    - https://github.com/pytorch/pytorch/issues/157621
    - https://github.com/pytorch/pytorch/issues/151582
    """

    code = "OLX804"
    name = "dynamic-dim-specialized"
    severity = Severity.ERROR
    since = "0.1.0"
    from_deep_analysis = True
    fix_safety = FixSafety.UNSAFE  # only a proven rewrite (onnxlint.deep.fixes)
