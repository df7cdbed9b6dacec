"""OLX107: `self.attr = ...` in code reachable from forward."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from onnxlint.rule import Invalid, Rule, Valid, dedent
from onnxlint.rules.trace_hostile._common import under_export_guard
from onnxlint.semantic import Kind, dotted
from onnxlint.violation import Severity
from onnxlint.walker import iter_children, iter_descendants


class ModuleAttributeAssignedInForward(Rule):
    """
    ## What it does
    Flags module state that `forward` carries from one call to the next: an attribute
    that code reachable from `forward` reads before it assigns it (`self.calls += 1`, a
    cache `if self.grid is None: self.grid = ...`, a running statistic).

    ## Why is this bad?
    `torch.export` (and so `torch.onnx.export`) runs `forward` once and restores module
    attributes afterwards; tracing records one call too. Whatever the state was at export
    time is baked into the graph as a constant, and the exported model never updates it:
    a counter stays frozen, a cached grid keeps the example input's size. An attribute
    that `forward` only writes, or writes before it reads it in the same call, carries
    nothing across calls and exports fine (measured with torch 2.13), so it is not
    reported.

    ## Example
    ```python
    def forward(self, x):
        if self.grid is None:
            self.grid = make_grid(x.shape[-2:])
        return x + self.grid
    ```

    ## Use instead
    ```python
    def forward(self, x):
        grid = make_grid(x.shape[-2:])  # computed in the graph, for every input size
        return x + grid
    ```
    or register a buffer in `__init__` and update it in place (`self.buf.copy_(...)`).

    ## Fix safety
    No automatic fix.

    ## References
    - https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer
    - https://docs.pytorch.org/docs/stable/export/programming_model.html
    """

    code = "OLX107"
    forward_only = True
    name = "module-attribute-assigned-in-forward"
    severity = Severity.WARNING
    requires = ("self.",)

    VALID = [
        Valid(  # written before it is read in the same call: no state across calls
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        self.last = x.mean()
                        self._cache = None
                        return x - self.last
                """
            )
        ),
        Valid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.scale = 2
                    def forward(self, x):
                        out = x * self.scale
                        self.buf.copy_(out)
                        self.table = self.table.to(x.device)
                        return out
                """
            )
        ),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        if self.last is None or self.last.shape != x.shape:
                            self.last = x.mean(dim=0)
                        return x - self.last
                """
            ),
            line=5,
            message="`self.last`",
            severity=Severity.WARNING,
        ),
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        self.calls += 1
                        return x
                """
            ),
            line=4,
            message="baked",
            severity=Severity.INFO,
        ),
    ]

    def _check(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if not (
            isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
        ):
            return
        func = self.ctx.function
        if func is None or func.class_name is None or not self.ctx.in_forward:
            return
        if func.name.startswith("__") or target.attr.value == "training":
            return
        if under_export_guard(self.ctx, target):
            return  # `if not is_compiling: self.cache = ...`: the export path never writes it
        attr = f"self.{target.attr.value}"
        if value is not None and _moves_itself(value, attr):
            return  # `self.w = self.w.to(x.device)`: a device/dtype move, same value
        if value is not None and not _read_before_written(func.node, target.attr.value):
            return  # written before any read in this call: nothing carried across calls
        if value is not None and not self._from_inputs(value):
            return  # a constant, a flag, a lazily built table: the same for every input
        if value is not None and self.ctx.kind(value) is Kind.TENSOR:
            self.report(
                target,
                f"tensor attribute `{attr}` carries state across calls (forward reads it, then "
                "assigns it): the exported graph keeps its export-time value and never updates "
                "it; compute it in forward, or register a buffer and update it in place",
            )
        else:
            self.report(
                target,
                f"`{attr}` carries state across calls (forward reads it, then assigns it): "
                "export runs forward once and restores module attributes, so its export-time "
                "value is baked into the graph as a constant",
                severity=Severity.INFO,
            )

    def _from_inputs(self, value: cst.BaseExpression) -> bool:
        """Whether the value is computed from the call's inputs: a tensor, a shape or a
        size, or an expression mentioning a name that holds one (`self.compute(h, w)`
        with `h, w = x.shape[-2:]`) or a parameter of the method (`x.shape[0]`)."""
        if self.ctx.kind(value) in _INPUT_KINDS:
            return True
        kinds = self.ctx.kinds()
        func = self.ctx.function
        params = {p.name.value for p in func.params()} if func is not None else set()
        for n in (value, *iter_descendants(value)):
            if isinstance(n, cst.Name) and (
                n.value in params or kinds.names.get(n.value) in _INPUT_KINDS
            ):
                return True
            if isinstance(n, cst.Attribute) and n.attr.value in ("shape", "device", "dtype"):
                return True
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._check(t.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check(node.target, None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._check(node.target, node.value)


def _read_before_written(func: cst.FunctionDef, attr: str) -> bool:
    """Whether the first use of `self.<attr>` in `func`, in execution order (an
    assignment's value before its target), reads it."""
    for is_store in _uses(func.body, attr):
        return not is_store
    return False


def _uses(node: cst.CSTNode, attr: str) -> Iterator[bool]:
    """Uses of `self.<attr>` under `node` in execution order: True for a store."""
    if isinstance(node, cst.Assign):
        yield from _uses(node.value, attr)
        for t in node.targets:
            if _is_self_attr(t.target, attr):
                yield True
            else:
                yield from _uses(t.target, attr)
        return
    if isinstance(node, cst.AnnAssign):
        if node.value is not None:
            yield from _uses(node.value, attr)
        if _is_self_attr(node.target, attr):
            yield True
        return
    if _is_self_attr(node, attr):
        yield False
        return
    for child in iter_children(node):
        if isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        yield from _uses(child, attr)


def _is_self_attr(node: cst.CSTNode, attr: str) -> bool:
    return (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
        and node.attr.value == attr
    )


_INPUT_KINDS = frozenset({Kind.TENSOR, Kind.SHAPE, Kind.SIZE, Kind.DATA})
_MOVES = frozenset({"to", "cpu", "cuda", "type", "type_as", "half", "float", "double"})


def _moves_itself(value: cst.BaseExpression, attr: str) -> bool:
    """`self.w.to(x.device)`, also element-wise (`[f.to(dev) for f in self.w]`) or
    guarded (`self.w.to(dev) if self.w is not None else None`)."""
    if isinstance(value, cst.IfExp):
        return all(
            _moves_itself(v, attr) or (isinstance(v, cst.Name) and v.value == "None")
            for v in (value.body, value.orelse)
        )
    if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
        elt, loop = value.elt, value.for_in
        return (
            dotted(loop.iter) == attr
            and isinstance(elt, cst.Call)
            and isinstance(elt.func, cst.Attribute)
            and elt.func.attr.value in _MOVES
            and dotted(elt.func.value) == dotted(loop.target)
        )
    if not (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in _MOVES
    ):
        return False
    inner = value.func.value
    return (
        isinstance(inner, cst.Attribute)
        and isinstance(inner.value, cst.Name)
        and f"{inner.value.value}.{inner.attr.value}" == attr
    )
