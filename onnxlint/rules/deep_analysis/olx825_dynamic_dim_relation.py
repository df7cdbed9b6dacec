"""OLX825: a dynamic dim the model only supports for some sizes (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class DynamicDimRelation(Rule):
    """
    ## What it does
    Reports a dimension asked to be dynamic that the model only supports for some sizes, at
    the line whose shape condition needs it, and says which relation torch.export needs
    (`h = 2*Dim(...)`: even sizes only; `Dim(...) * 32`). The criterion: torch.export
    records a condition on the dim (a guard or a deferred runtime assertion) that does not
    hold for every size in the dim's range; the sizes where it fails are named.

    ## Why is this bad?
    A U-Net whose skip connections need even sizes, or `x[:, ::2] + x[:, 1::2]`, works only
    for some sizes. With a named `Dim`, torch.export refuses the model ("Constraints
    violated") and suggests the relation; torch.onnx.export instead accepts it silently
    (strings or `Dim.DYNAMIC` give no error, and a `UserError` is "fixed" by refining the
    shapes) and writes a model that fails, or computes something else, at the other sizes.

    ## Example
    ```python
    def forward(self, x):      # dynamic_shapes = {"x": {2: "h", 3: "w"}}
        y = self.up(self.down(x))          # stride-2 down, then up
        return torch.cat([x, y], 1)        # odd h or w: sizes differ
    ```

    ## Use instead
    ```python
    h, w = torch.export.Dim("h_half"), torch.export.Dim("w_half")
    dynamic_shapes = {"x": {2: 2 * h, 3: 2 * w}}   # or pad x to a multiple of 2 in forward
    ```

    ## Fix safety
    No fix.

    ## References
    - https://docs.pytorch.org/docs/stable/export.html#constraints-dynamic-shapes
    """

    code = "OLX825"
    name = "dynamic-dim-relation"
    severity = Severity.WARNING
    since = "0.3.0"
    from_deep_analysis = True
