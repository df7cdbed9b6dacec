"""OLX110: `torch.jit.is_tracing()` guards, not taken by the dynamo exporter."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import FixSafety, Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent, make_fix
from onnxlint.rules.trace_hostile._common import torch_name
from onnxlint.semantic.calls import ExportKind
from onnxlint.semantic.frameworks import is_autograd_function
from onnxlint.source.walker import dotted, iter_descendants

_TRACING = frozenset({"torch.jit.is_tracing", "torch.jit._trace.is_tracing"})


class JitIsTracing(Rule):
    """
    ## What it does
    Flags a `torch.jit.is_tracing()` guard where the path the dynamo exporter takes
    instead exports a different or a failing model: in `forward`, the guard picks what
    the model returns; the condition goes on to compare sizes that the tracing path left
    alone (`not is_tracing() and num_patches == num_positions`); or the eager side calls
    NumPy or turns a tensor into Python data.

    ## Why is this bad?
    The dynamo exporter (`torch.onnx.export`, the default since torch 2.9) does not trace
    with TorchScript, so `torch.jit.is_tracing()` is `False` during export and the eager
    side of the guard is exported, silently. Most guards only pick a tracer-friendly way
    to compute the same thing, and dynamo captures the eager code as it is: those are
    left alone. `torch.onnx.is_in_onnx_export()` is `True` under both ONNX exporters.

    ## Example
    ```python
    def forward(self, x):
        boxes, scores = self.decode(x)
        if torch.jit.is_tracing():
            return boxes, scores  # what the deployed model returns
        return boxes, scores, self.anchors
    ```

    ## Use instead
    ```python
    def forward(self, x):
        boxes, scores = self.decode(x)
        if torch.onnx.is_in_onnx_export():
            return boxes, scores
        return boxes, scores, self.anchors
    ```
    (`torch.compiler.is_exporting()` covers `torch.export.export` too.)

    Guards that also test `torch.compiler.is_compiling()` / `is_exporting()` are left alone:
    the dynamo path already takes them.

    ## Fix safety
    Offered only where a dynamo export of the project reaches the guard: on code that is
    only traced, the new guard would break the trace path. Unsafe: the guard changes
    meaning outside ONNX export. `torch.jit.trace` without ONNX
    no longer takes the branch, and the dynamo ONNX exporter now takes it (which is the
    point, but changes the exported graph).

    ## References
    - https://docs.pytorch.org/docs/stable/onnx.html#torch.onnx.is_in_onnx_export
    - https://github.com/pytorch/pytorch/blob/v2.13.0/torch/onnx/__init__.py
    """

    code = "OLX110"
    name = "jit-is-tracing-guard"
    severity = Severity.WARNING
    fix_safety = FixSafety.UNSAFE
    requires = ("is_tracing",)

    VALID = [
        Valid(  # true in eval mode whatever is_tracing() says: both exporters return x
            dedent(
                """
                import torch
                class RandomGrad(torch.nn.Module):
                    def forward(self, x):
                        if torch.jit.is_scripting() or not self.training or torch.jit.is_tracing():
                            return x
                        return RandomGradFunction.apply(x, self.min_abs)
                """
            )
        ),
        Valid("import torch\nif torch.onnx.is_in_onnx_export():\n    pass\n"),
        Valid("def is_tracing():\n    return False\nif is_tracing():\n    pass\n"),
        Valid(  # the dynamo path is handled by the other half of the condition
            "import torch\nok = torch.jit.is_tracing() or torch.compiler.is_compiling()\n"
        ),
        Valid(  # both sides compute the same channel count: dynamo exports the eager one
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        c = int(x.shape[1]) if torch.jit.is_tracing() else x.shape[1]
                        return x.reshape(-1, c)
                torch.onnx.export(M().eval(), (torch.ones(2, 4),), "m.onnx")
                """
            )
        ),
        Valid(  # a cache the eager path fills: the same values, not a returned output
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def biases(self):
                        if torch.jit.is_tracing() or self.training:
                            return self.ab[:, self.idx]
                        return self.cache.setdefault("k", self.ab[:, self.idx])
                    def forward(self, x):
                        return x + self.biases()
                """
            )
        ),
        Valid(  # a check that compares ranks, not sizes
            "import torch\ndef f(x):\n    if not torch.jit.is_tracing() and x.dim() == 4:\n"
            "        raise ValueError\n    return x\n"
        ),
        Valid(  # the eager side is an autograd Function computing the same forward in torch
            dedent(
                """
                import torch
                class DoubleSwishFunction(torch.autograd.Function):
                    @staticmethod
                    def forward(ctx, x):
                        s = torch.sigmoid(x - 1.0)
                        y = x * s
                        if x.requires_grad:
                            ctx.save_for_backward((y * (1 - s) + s).to(torch.uint8))
                        return y
                    @staticmethod
                    def backward(ctx, y_grad):
                        (d,) = ctx.saved_tensors
                        return y_grad * d
                class DoubleSwish(torch.nn.Module):
                    def forward(self, x):
                        if torch.jit.is_scripting() or torch.jit.is_tracing():
                            return x * torch.sigmoid(x - 1.0)
                        return DoubleSwishFunction.apply(x)
                """
            )
        ),
    ]
    INVALID = [
        Invalid(  # the Function's forward calls a C++ extension: dynamo cannot trace it
            dedent(
                """
                import torch
                import swoosh_ext
                class DoubleSwishFunction(torch.autograd.Function):
                    @staticmethod
                    def forward(ctx, x):
                        s = torch.sigmoid(x - 1.0)
                        y = swoosh_ext.double_swish(x)
                        if x.requires_grad:
                            ctx.save_for_backward((y * (1 - s) + s).to(torch.uint8))
                        return y
                    @staticmethod
                    def backward(ctx, y_grad):
                        (d,) = ctx.saved_tensors
                        return y_grad * d
                class DoubleSwish(torch.nn.Module):
                    def forward(self, x):
                        if torch.jit.is_scripting() or torch.jit.is_tracing():
                            return x * torch.sigmoid(x - 1.0)
                        return DoubleSwishFunction.apply(x)
                """
            ),
            line=17,
            message="`forward` returns what eager mode returns",
        ),
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        if torch.jit.is_tracing():
                            return x.view(-1, 4)
                        return x
                torch.onnx.export(M().eval(), (torch.ones(2, 4),), "m.onnx")
                """
            ),
            line=4,
            message="the exported outputs change",
            fixed=dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        if torch.onnx.is_in_onnx_export():
                            return x.view(-1, 4)
                        return x
                torch.onnx.export(M().eval(), (torch.ones(2, 4),), "m.onnx")
                """
            ),
        ),
        Invalid(  # the eager side specializes sizes the tracing side left dynamic
            dedent(
                """
                import torch as th
                from torch.jit import is_tracing
                def interpolate(pos, n, h, w):
                    if not is_tracing() and n == pos.shape[1] and h == w:
                        return pos
                    return th.nn.functional.interpolate(pos, size=(h, w))
                class M(th.nn.Module):
                    def forward(self, x):
                        return interpolate(self.pos, x.shape[1], x.shape[2], x.shape[3])
                th.onnx.export(M().eval(), (th.ones(1, 3, 4, 4),), "m.onnx")
                """
            ),
            line=4,
            message="compare `n == pos.shape[1]`",
            fixed=dedent(
                """
                import torch as th
                from torch.jit import is_tracing
                def interpolate(pos, n, h, w):
                    if not th.onnx.is_in_onnx_export() and n == pos.shape[1] and h == w:
                        return pos
                    return th.nn.functional.interpolate(pos, size=(h, w))
                class M(th.nn.Module):
                    def forward(self, x):
                        return interpolate(self.pos, x.shape[1], x.shape[2], x.shape[3])
                th.onnx.export(M().eval(), (th.ones(1, 3, 4, 4),), "m.onnx")
                """
            ),
        ),
        Invalid(  # the eager side calls NumPy (in a method); no export reaches it: no fix
            dedent(
                """
                import numpy as np
                import torch
                class M(torch.nn.Module):
                    def check(self, shape):
                        if (np.array(shape) % 32).any():
                            raise ValueError(shape)
                    def forward(self, x):
                        if not torch.jit.is_tracing():
                            self.check(x.shape[2:])
                        return x
                """
            ),
            line=8,
            message="calls `self.check(...)`",
        ),
        Invalid(  # no name for torch: no fix
            dedent(
                """
                from torch import jit, nn
                class M(nn.Module):
                    def forward(self, x):
                        return x if jit.is_tracing() else (x, x)
                """
            ),
            line=4,
            message="torch.onnx.is_in_onnx_export()",
        ),
        Invalid(  # the file traces: still worth knowing, lower severity
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        return 1 if torch.jit.is_tracing() else 2
                torch.jit.trace(M(), (torch.ones(1),))
                """
            ),
            line=4,
            message="is_tracing",
            severity=Severity.INFO,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if node.args or self.ctx.qualname(node.func) not in _TRACING:
            return
        if self._dynamo_guarded(node):
            return  # `is_tracing() or is_compiling()`: the dynamo path is already handled
        why = self._why(node)
        if why is None:
            return  # both paths export the same model under dynamo
        sites = self.ctx.reaching_exports()
        if sites:
            only_tracing = all(s.traced or s.kind is ExportKind.JIT_SCRIPT for s in sites)
        else:
            model = self.ctx.semantic
            only_tracing = bool(model.export_calls) and all(
                e.kind in (ExportKind.JIT_TRACE, ExportKind.ONNX_TORCHSCRIPT)
                for e in model.export_calls
            )
        torch = torch_name(self.ctx.semantic)
        fix = None
        # The fix switches the guard to the dynamo path: only where a dynamo export runs it
        # (on code that is only traced it would break the trace path).
        dynamo = any(not s.traced and s.kind is not ExportKind.JIT_SCRIPT for s in sites)
        if torch is not None and dynamo:
            fix = make_fix(
                "Use `torch.onnx.is_in_onnx_export()`",
                self.ctx.replace(node, f"{torch}.onnx.is_in_onnx_export()"),
                safety=FixSafety.UNSAFE,
            )
        self.report(
            node,
            f"`torch.jit.is_tracing()` is False under the dynamo exporter, so {why}; "
            "use `torch.onnx.is_in_onnx_export()`",
            fix=fix,
            severity=Severity.INFO if only_tracing else None,
        )

    def _why(self, call: cst.Call) -> str | None:
        """What goes wrong when the dynamo exporter takes the non-tracing side of the guard
        holding `call`, or None when both sides export alike (the usual case: the tracing
        side is a workaround for the tracer, and dynamo captures the eager code as it is)."""
        guard = self._guard(call)
        if guard is None:
            return None  # a flag handed on (`return ... and not is_tracing()`): judged where used
        if _or_not_training(guard.test):
            return None  # `... or not self.training or is_tracing()`: true in eval mode anyway
        value = _without_tracing(guard.test, call)
        if value is not False:
            compared = _size_comparison(guard.test, call)
            if compared is not None:
                return (
                    f"the condition goes on to compare `{self.ctx.code_of(compared)}`, "
                    "which specializes the sizes the tracing path leaves dynamic"
                )
        taken, skipped = _branches(guard, value)
        for branch in taken:
            hostile = self._hostile(branch)
            if hostile is not None:
                return f"the dynamo exporter takes the eager path, which calls `{hostile}`"
        func = self.ctx.function
        if func is not None and func.name == "forward" and func.class_name is not None:
            if self._eager_is_function(func.node, skipped):
                return None  # the same forward, with a custom backward (dynamo traces it)
            chain = self.ctx.ancestors
            at = next(i for i in range(len(chain) - 1, -1, -1) if chain[i] is guard)
            above = chain[at - 1] if at > 0 else None
            returns = isinstance(guard, cst.IfExp) and isinstance(above, cst.Return)
            if returns or any(_returns(b) for b in skipped):
                return (
                    "`forward` returns what eager mode returns, not what the tracing "
                    "branch returns: the exported outputs change"
                )
        return None

    def _guard(self, call: cst.Call) -> cst.If | cst.While | cst.IfExp | None:
        """The `if`/`while`/ternary whose test holds `call` (through `not`/`and`/`or`)."""
        child: cst.CSTNode = call
        for anc in reversed(self.ctx.ancestors):
            if isinstance(anc, (cst.If, cst.While, cst.IfExp)) and child is anc.test:
                return anc
            if not isinstance(anc, (cst.BooleanOperation, cst.UnaryOperation)):
                return None
            child = anc
        return None

    def _eager_is_function(self, func: cst.FunctionDef, skipped: list[cst.CSTNode]) -> bool:
        """Whether every `return` the eager path reaches returns `F.apply(...)` of an
        autograd Function of this file whose `forward` is plain torch code (icefall's
        `DoubleSwishFunction`: the tracing branch's math, written as a Function for a
        memory-saving backward). Dynamo traces the Function's forward, so the exported
        outputs are the same; a forward calling NumPy, `.item()` or another library (a
        C++ extension) is not plain torch code and is still reported."""
        inside = set()
        for b in skipped:
            inside |= {id(n) for n in iter_descendants(b)}
        returns = [
            n
            for n in iter_descendants(func.body)
            if isinstance(n, cst.Return) and id(n) not in inside
        ]
        if not returns:
            return False
        for ret in returns:
            value = ret.value
            if not (
                isinstance(value, cst.Call)
                and isinstance(value.func, cst.Attribute)
                and value.func.attr.value == "apply"
                and isinstance(value.func.value, cst.Name)
                and self._plain_function(value.func.value.value)
            ):
                return False
        return True

    def _plain_function(self, name: str) -> bool:
        """`name` is an autograd Function class of this file with a `backward`, whose
        `forward` calls only torch and the tensors' own methods."""
        model = self.ctx.semantic
        info = model.classes.get(name)
        if info is None or "backward" not in info.methods or "forward" not in info.methods:
            return False
        if not any(is_autograd_function(model.resolve(b) or b) for b in info.bases):
            return False
        body = info.methods["forward"].node.body
        if self._hostile(body, into_methods=False) is not None:
            return False
        for n in iter_descendants(body):
            if not isinstance(n, cst.Call):
                continue
            q = self.ctx.qualname(n.func)
            if q is not None:
                if q.split(".", 1)[0] not in ("torch", "math", "builtins"):
                    return False
            elif not isinstance(n.func, cst.Attribute):
                return False  # a local helper or an unknown function: not judged
            else:
                head = dotted(n.func.value)
                if head is not None and head.split(".", 1)[0] in model.imports:
                    return False  # `ext.op(x)` of an imported module
        return True

    def _hostile(self, code: cst.CSTNode, into_methods: bool = True) -> str | None:
        """A call in `code` (and, `into_methods`, in a method of this class it calls) that
        fails under the dynamo exporter: NumPy, or a tensor turned into Python data."""
        cls = self.ctx.class_info
        here = self.ctx.function
        for n in iter_descendants(code):
            if not isinstance(n, cst.Call):
                continue
            q = self.ctx.qualname(n.func) or ""
            if q.split(".", 1)[0] == "numpy":
                return self.ctx.code_of(n.func)
            if isinstance(n.func, cst.Attribute):
                attr = n.func.attr.value
                if attr in _TO_PYTHON and not n.args:
                    return f".{attr}()"
                if (
                    into_methods
                    and cls is not None
                    and dotted(n.func.value) == "self"
                    and attr in cls.methods
                ):
                    inner = cls.methods[attr].node
                    if (here is None or inner is not here.node) and self._hostile(
                        inner.body, into_methods=False
                    ):
                        return f"self.{attr}(...)"
        return None

    def _dynamo_guarded(self, node: cst.Call) -> bool:
        """Whether the boolean expression holding the call (`is_tracing() or
        is_compiling()`) also tests a compile/export guard."""
        top: cst.CSTNode | None = None
        for anc in reversed(self.ctx.ancestors):
            if not isinstance(anc, (cst.BooleanOperation, cst.UnaryOperation)):
                break
            top = anc
        if top is None:
            return False
        for n in iter_descendants(top):
            if isinstance(n, cst.Call) and n is not node:
                d = dotted(n.func) or ""
                if d.rsplit(".", 1)[-1] in _DYNAMO_GUARDS:
                    return True
        return False


_DYNAMO_GUARDS = frozenset(
    {"is_compiling", "is_exporting", "is_torchdynamo_compiling", "is_in_onnx_export"}
)


_TO_PYTHON = frozenset({"item", "tolist", "numpy"})


def _or_not_training(expr: cst.BaseExpression) -> bool:
    """`a or not self.training or b`: an `or` with `not self.training` among its operands.
    An exported model is in eval mode (OLX201 reports one that is not), where the test is
    true whatever `is_tracing()` says, so both exporters take the same branch."""
    while isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.Or):
        for side in (expr.left, expr.right):
            if (
                isinstance(side, cst.UnaryOperation)
                and isinstance(side.operator, cst.Not)
                and dotted(side.expression) == "self.training"
            ):
                return True
        expr = expr.left
    return False


def _without_tracing(expr: cst.BaseExpression, call: cst.Call) -> bool | None:
    """The value of a guard's test when `call` (`is_tracing()`) is False: True, False,
    or None when the rest of the test decides."""
    if expr is call:
        return False
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        inner = _without_tracing(expr.expression, call)
        return None if inner is None else not inner
    if isinstance(expr, cst.BooleanOperation):
        left = _without_tracing(expr.left, call)
        right = _without_tracing(expr.right, call)
        if isinstance(expr.operator, cst.And):
            if left is False or right is False:
                return False
            return True if left is True and right is True else None
        if left is True or right is True:
            return True
        return False if left is False and right is False else None
    return None


def _size_comparison(test: cst.BaseExpression, call: cst.Call) -> cst.Comparison | None:
    """An `==`/`!=` between values (not None, strings, bools or ranks) that the test
    evaluates only when `is_tracing()` is False (to its right in an `and`/`or` chain):
    under dynamo it becomes a guard that fixes the sizes tracing left alone."""
    later: list[cst.BaseExpression] = []

    def chain(expr: cst.BaseExpression) -> bool:  # whether expr holds the call
        if expr is call:
            return True
        if isinstance(expr, cst.UnaryOperation):
            return chain(expr.expression)
        if isinstance(expr, cst.BooleanOperation):
            if chain(expr.left):
                later.append(expr.right)
                return True
            return chain(expr.right)
        return False

    chain(test)
    for part in later:
        for n in (part, *iter_descendants(part)):
            if not isinstance(n, cst.Comparison):
                continue
            ops = n.comparisons
            if not all(isinstance(c.operator, (cst.Equal, cst.NotEqual)) for c in ops):
                continue
            sides = [n.left, *(c.comparator for c in ops)]
            if any(_config_value(s) for s in sides):
                continue
            return n
    return None


def _config_value(expr: cst.BaseExpression) -> bool:
    """A side of a comparison that is no size: None, a bool, a string, a rank."""
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return True
    if isinstance(expr, cst.Attribute) and expr.attr.value == "ndim":
        return True
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        return expr.func.attr.value in ("dim", "ndimension")
    return isinstance(expr, cst.Name) and expr.value in ("None", "True", "False")


def _branches(
    guard: cst.If | cst.While | cst.IfExp, value: bool | None
) -> tuple[list[cst.CSTNode], list[cst.CSTNode]]:
    """(the branches the dynamo exporter may take, the ones only tracing takes)."""
    body: cst.CSTNode = guard.body
    other: cst.CSTNode | None = guard.orelse
    if value is None:
        both = [body] + ([other] if other is not None else [])
        return both, both
    if value:
        return [body], [other] if other is not None else []
    return ([other] if other is not None else []), [body]


def _returns(code: cst.CSTNode) -> bool:
    """Whether `code` returns from the enclosing function (nested defs aside)."""
    stack = [code]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Return):
            return True
        if isinstance(n, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            continue
        stack.extend(n.children)
    return False
