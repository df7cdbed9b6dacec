"""OLX113: Python that TorchScript cannot compile inside `@torch.jit.script` code."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.source.walker import iter_children

_SCRIPT_DECORATORS = frozenset({"torch.jit.script", "torch.jit.script_method"})
# Statement and expression nodes torch/jit/frontend.py has no builder for.
_UNSUPPORTED: dict[type[cst.CSTNode], str] = {
    cst.Try: "`try` blocks",
    cst.TryStar: "`try` blocks",
    cst.Global: "`global`",
    cst.Nonlocal: "`nonlocal`",
    cst.Lambda: "`lambda`",
    cst.Yield: "generators (`yield`)",
    cst.Await: "`await`",
    cst.NamedExpr: "assignment expressions (`:=`)",
    cst.Set: "set literals",
    cst.SetComp: "set comprehensions",
    cst.FunctionDef: "nested functions (closures)",
    cst.ClassDef: "nested classes",
    cst.Import: "imports",
    cst.ImportFrom: "imports",
}
_LITERALS = (
    cst.Integer,
    cst.Float,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.Tuple,
    cst.List,
    cst.Dict,
)


class UnsupportedInTorchScript(Rule):
    """
    ## What it does
    Flags Python that `torch.jit.script` cannot compile inside functions and methods
    decorated with `@torch.jit.script` / `@torch.jit.script_method`: `*args`/`**kwargs`,
    `lambda`, `yield`, `try`, `global`/`nonlocal`, nested `def`/`class`, `:=`, sets,
    imports, and unannotated parameters whose default is not a tensor.

    ## Why is this bad?
    Scripting compiles the function when the decorator runs, that is when the module is
    imported: the import fails with `torch.jit.frontend.UnsupportedNodeError` or
    `NotSupportedError: Compiled functions can't take variable number of arguments`. An
    unannotated parameter is assumed to be a `Tensor`, so `k=3` fails with `Expected a
    default value of type Tensor`. (`with` and `del` are supported and not reported.)

    ## Example
    ```python
    @torch.jit.script
    def scale(x, k=2, *rest):
        return x * k
    ```

    ## Use instead
    ```python
    def scale(x: torch.Tensor, k: int = 2) -> torch.Tensor:
        return x * k  # and prefer torch.export over TorchScript (OLX111)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - https://docs.pytorch.org/docs/stable/jit_language_reference.html
    - https://github.com/pytorch/pytorch/blob/v2.13.0/torch/jit/frontend.py
    """

    code = "OLX113"
    name = "unsupported-in-torchscript"
    severity = Severity.ERROR
    requires = ("script",)

    VALID = [
        Valid(
            dedent(
                """
                import torch
                @torch.jit.script
                def f(x, k: int = 2, mask: torch.Tensor | None = None):
                    with torch.no_grad():
                        y = [v * k for v in x.unbind(0)]
                    del k
                    return torch.stack(y)
                def g(*args, **kwargs):
                    try:
                        return lambda: 1
                    except Exception:
                        pass
                """
            )
        ),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                @torch.jit.script
                def f(x, k=2, *rest):
                    try:
                        y = list(map(lambda v: v * k, x))
                    except RuntimeError:
                        y = []
                    return y
                """
            ),
            line=3,
            message="default value of type Tensor",
            count=4,
        ),
        Invalid(
            dedent(
                """
                from torch import jit
                class M(jit.ScriptModule):
                    @jit.script_method
                    def forward(self, x, **kw):
                        def inner(v):
                            return v
                        return inner(x)
                """
            ),
            line=4,
            message="variable number of arguments",
            count=2,
        ),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not any(self._scripting(d) for d in node.decorators):
            return
        params = node.params
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                self.report(
                    star,
                    "TorchScript compiled functions can't take a variable number of arguments "
                    "(`*args`/`**kwargs`)",
                )
        for p in (*params.posonly_params, *params.params, *params.kwonly_params):
            if p.annotation is None and isinstance(p.default, _LITERALS):
                self.report(
                    p,
                    f"parameter `{p.name.value}` has no annotation, so TorchScript assumes a "
                    "Tensor and fails with `Expected a default value of type Tensor`; "
                    "annotate it",
                )
        stack = list(iter_children(node.body))
        while stack:
            n = stack.pop()
            what = _UNSUPPORTED.get(type(n))
            if what is not None:
                target = n.name if isinstance(n, (cst.FunctionDef, cst.ClassDef)) else n
                self.report(
                    target, f"TorchScript does not support {what}: `torch.jit.script` fails"
                )
                if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                    continue
            stack.extend(iter_children(n))

    def _scripting(self, dec: cst.Decorator) -> bool:
        expr = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
        return self.ctx.qualname(expr) in _SCRIPT_DECORATORS
