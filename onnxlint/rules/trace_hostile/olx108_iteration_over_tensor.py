"""OLX108: a Python `for` loop (or comprehension) over a tensor in forward."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.rules.trace_hostile._common import (
    assigned_values,
    kind_here,
    last_value,
    specialising_path,
    unannotated_param,
    under_export_guard,
)
from onnxlint.semantic.kinds import Kind
from onnxlint.source.walker import dotted, iter_descendants

_WRAPPERS = frozenset({"builtins.enumerate", "builtins.zip", "builtins.reversed"})
# Calls that return a tuple of tensors: iterating them is a fixed, short loop.
_SPLITS = frozenset(
    {"split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "split_with_sizes"}
)
_SEQUENCE_WORDS = ("tuple", "Tuple", "list", "List", "Sequence", "Iterable")


class IterationOverTensor(Rule):
    """
    ## What it does
    Flags `for row in x:` (also in comprehensions, and through `enumerate`/`zip`/
    `reversed`) where `x` is a tensor, in code reachable from `forward`.

    ## Why is this bad?
    The loop runs in Python at export time: it is unrolled into one copy of the body per
    row, and the number of rows becomes a constant. Tracing freezes it to the example
    input; the dynamo exporter specialises the first dimension (an error if it is declared
    dynamic), and large first dimensions blow up the graph. It is reported as info unless
    the file traces or declares dynamic dimensions.

    ## Example
    ```python
    def forward(self, x):
        return torch.stack([row.sum() for row in x])
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return x.sum(dim=1)  # vectorise, or torch.vmap / a scan
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - https://docs.pytorch.org/docs/stable/export/programming_model.html
    """

    code = "OLX108"
    forward_only = True
    scripting_keeps_python = True
    name = "iteration-over-tensor"
    severity = Severity.WARNING
    requires = ("for ",)

    VALID = [
        Valid(  # the else of `isinstance(x, torch.Tensor)`: a list, whatever the if assigned
            dedent(
                """
                import torch
                class P(torch.nn.Module):
                    def forward(self, inputs):
                        if isinstance(inputs, torch.Tensor):
                            inputs = torch.nn.functional.pad(inputs, (0, 1))
                        else:
                            out = [x.flip(0) for x in inputs]
                            for x in inputs:
                                out.append(x)
                        return inputs
                torch.onnx.export(P().eval(), (torch.ones(2, 3),), "p.onnx",
                                  dynamic_shapes={"inputs": {0: "batch"}})
                """
            )
        ),
        Valid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x, features):
                        for f in features:
                            x = x + f
                        for i in range(x.dim()):
                            x = x + i
                        for layer in self.layers:
                            x = layer(x)
                        return x
                """
            )
        ),
        Valid(  # zip with the heads: as many rounds as there are heads
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, feats: torch.Tensor):
                        outs = (feats,)
                        scales = torch.logspace(-1, 0, 4)
                        outs = [o * s for o, s in zip(outs, scales)]
                        return [h(f) for f, h in zip(feats, self.heads)]
                """
            )
        ),
        Valid(  # a NumPy array, not a tensor
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x, idx):
                        ends = idx.bincount().cpu().numpy().cumsum(0)
                        for i, end in enumerate(ends):
                            x = x + 1
                        return x
                """
            )
        ),
        Valid(  # per-level outputs unpacked from a helper, concatenated after the loop
            dedent(
                """
                import torch
                from mmdet.models.utils import multi_apply
                class Head(torch.nn.Module):
                    def forward(self, feats):
                        depth_logits, _ = multi_apply(self.depth_func, feats, self.depthnet)
                        depth_logits = [d.flatten(2, 3) for d in depth_logits]
                        depth_logits = torch.cat(depth_logits, dim=-1)
                        return depth_logits
                """
            )
        ),
        Valid(  # a list of levels in one branch, concatenated in the other (FastBEV)
            dedent(
                """
                import torch
                class Neck(torch.nn.Module):
                    def forward(self, feats):
                        volumes = []
                        for f in feats:
                            volumes.append(self.proj(f))
                        if self.style == "v1":
                            volumes = torch.cat(volumes, dim=1)
                        else:
                            for i, v in enumerate(volumes):
                                volumes[i] = v.flatten(2)
                        return volumes
                """
            )
        ),
        Valid(  # a starred target is a list; `str.split` pieces are strings
            dedent(
                """
                import torch
                class Head(torch.nn.Module):
                    def forward(self, preds, name: str):
                        boxes, scores, *extra = preds.split([4, 80, 32], dim=-1)
                        *path, attr = name.split(".")
                        for part in path:
                            boxes = getattr(self, part)(boxes)
                        return torch.cat([boxes, scores, *(self.gather(e) for e in extra)], dim=-1)
                """
            )
        ),
        Valid(  # the chunks of `chunk`, sliced and unpacked in parallel: a tuple (ProphetNet)
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, v):
                        parts = v.chunk(3, dim=2)
                        main, rest = parts[0], parts[1:]
                        return torch.cat([torch.cat([main, r], 2) for r in rest], 2)
                """
            )
        ),
        Valid(  # an mmengine data preprocessor batches samples before the model
            dedent(
                """
                import torch
                class Det3DDataPreprocessor(torch.nn.Module):
                    def forward(self, data):
                        return self.collate_data(data)
                    def collate_data(self, data):
                        imgs = torch.stack(data["img"])
                        return torch.stack([self.preprocess_img(i) for i in imgs])
                """
            )
        ),
        Valid(  # a helper only the target assigner (never exported) calls (DETA)
            dedent(
                """
                import torch
                def sample_topk_per_gt(pr_inds: torch.Tensor, gt_inds: torch.Tensor, k: int):
                    gt_inds2, counts = gt_inds.unique(return_counts=True)
                    return torch.cat([pr_inds[:c] for c in counts])
                class Stage1Assigner(torch.nn.Module):
                    def forward(self, outputs, targets):
                        return sample_topk_per_gt(outputs, targets, 4)
                class Detector(torch.nn.Module):
                    def forward(self, x):
                        return x * 2
                """
            )
        ),
    ]
    INVALID = [
        Invalid(  # items of a torch function's tuple are tensors (xmod's lang_adapter)
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x, lang_ids):
                        ids, counts = torch.unique_consecutive(lang_ids, return_counts=True)
                        outs = [self.adapters[int(i.item())](x) for i in ids]
                        ids = torch.stack(outs)
                        return ids
                """
            ),
            line=5,
            message="iterating over a tensor",
        ),
        Invalid(  # a piece of `x.split(...)` unpacked, then iterated: a tensor
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        a, b = x.split(4, dim=1)
                        rows = [r.sum() for r in a]
                        a = torch.stack(rows)
                        return a, b
                """
            ),
            line=5,
            message="iterating over a tensor",
        ),
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x: torch.Tensor):
                        return torch.stack([row.sum() for row in x])
                """
            ),
            line=4,
            message="iterating over a tensor",
            severity=Severity.INFO,
        ),
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        hit = (x > 0).nonzero()
                        for idx in hit:
                            x = x + idx
                        return x
                """
            ),
            line=5,
            message="depends on data",
            severity=Severity.ERROR,
        ),
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        y = x.softmax(-1)
                        for i, row in enumerate(y):
                            x = x + row
                        return x
                torch.jit.trace(M(), torch.ones(2, 3))
                """
            ),
            line=5,
            message="tracing freezes",
            severity=Severity.WARNING,
        ),
        Invalid(  # one chunk of `chunk`, iterated: a tensor
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, v):
                        parts = v.chunk(3, dim=2)
                        first = parts[0]
                        return torch.stack([r.sum() for r in first])
                """
            ),
            line=6,
            message="iterating over a tensor",
        ),
        Invalid(  # a helper the model's forward calls too
            dedent(
                """
                import torch
                def per_row(x: torch.Tensor):
                    return torch.stack([r.sum() for r in x])
                class Stage1Assigner(torch.nn.Module):
                    def forward(self, outputs, targets):
                        return per_row(outputs)
                class Detector(torch.nn.Module):
                    def forward(self, x):
                        return per_row(x)
                """
            ),
            line=3,
            message="iterating over a tensor",
        ),
        Invalid(  # an image preprocessor inside the model is model code
            dedent(
                """
                import torch
                class ImagePreprocessor(torch.nn.Module):
                    def forward(self, imgs: torch.Tensor):
                        return torch.stack([i / 255 for i in imgs])
                """
            ),
            line=4,
            message="iterating over a tensor",
        ),
    ]

    def _check(self, it: cst.BaseExpression, at: cst.CSTNode) -> None:
        if not self.ctx.in_forward:
            return
        if isinstance(it, cst.Call) and self.ctx.qualname(it.func) in _WRAPPERS:
            if self.ctx.qualname(it.func) == "builtins.zip" and any(
                self._bounded(a.value, at) for a in it.args
            ):
                return  # `zip(feats, self.heads)`: as many rounds as the shorter sequence
            for a in it.args:
                self._check(a.value, at)
            return
        base = it
        while isinstance(base, cst.Subscript):
            base = base.value
        if unannotated_param(self.ctx, base) or kind_here(self.ctx, it, at) is not Kind.TENSOR:
            return
        if _own_state(it):
            return  # `for s in self.scales:`: a parameter or buffer has a fixed length
        if self._splits(it, at) or self._sequence_param(it):
            return
        if under_export_guard(self.ctx, at):
            return
        if self._data_dependent(it, at):
            self.report(
                it,
                "iterating over a tensor whose length depends on data (`nonzero`, `unique`, "
                "`masked_select`): export cannot unroll it; vectorise (e.g. a batched or "
                "grouped op over all rows)",
                severity=Severity.ERROR,
            )
            return
        why = specialising_path(self.ctx)
        if why is None:
            self.report(
                it,
                "iterating over a tensor unrolls the loop at export time and fixes its first "
                "dimension; vectorise (or use `torch.vmap`)",
                severity=Severity.INFO,
            )
        else:
            self.report(
                it,
                f"iterating over a tensor fixes the number of rows: {why}; vectorise "
                "(or use `torch.vmap`)",
            )

    def _bounded(self, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
        """A sequence whose length the module or the code fixes: a submodule list
        (`self.heads`), a literal list/tuple/range, or a name known not to be a tensor."""
        if isinstance(expr, (cst.List, cst.Tuple, cst.ListComp)):
            return True
        if isinstance(expr, cst.Call) and self.ctx.qualname(expr.func) == "builtins.range":
            return True
        if _own_state(expr):
            return True
        if isinstance(expr, cst.Name):
            if kind_here(self.ctx, expr, at) in _NOT_TENSOR_KINDS:
                return True
            func = self.ctx.function
            return func is not None and _holds_sequence(func.node, expr.value)
        return False

    def _data_dependent(self, it: cst.BaseExpression, at: cst.CSTNode) -> bool:
        value: cst.BaseExpression | None = it
        if isinstance(it, cst.Name):
            value = last_value(self.ctx, it, at)
        if value is None:
            return False
        code = self.ctx.code_of(value)
        return any(w in code for w in ("nonzero(", "unique(", "masked_select(", "argwhere("))

    def _splits(self, it: cst.BaseExpression, at: cst.CSTNode) -> bool:
        """A tuple from `split`/`chunk`/`unbind`, also sliced and named on the way
        (`parts = v.chunk(3)`; `main, rest = parts[0], parts[1:]`; `for r in rest:`)."""
        for _ in range(4):
            while isinstance(it, cst.Subscript) and all(
                isinstance(e.slice, cst.Slice) for e in it.slice
            ):
                it = it.value  # `parts[1:]`: still a tuple
            if not isinstance(it, cst.Name):
                break
            values = assigned_values(self.ctx, it, at, unpack=True)
            if not values:
                return False
            it = values[-1]
        while isinstance(it, cst.Subscript):
            it = it.value
        if not isinstance(it, cst.Call):
            return False
        d = self.ctx.code_of(it.func).rsplit(".", 1)[-1]
        return d in _SPLITS

    def _sequence_param(self, it: cst.BaseExpression) -> bool:
        """`hidden_states: torch.Tensor | tuple[torch.Tensor]`: may well be a tuple."""
        func = self.ctx.function
        if func is None or not isinstance(it, cst.Name):
            return False
        for p in func.params():
            if p.name.value == it.value and p.annotation is not None:
                code = self.ctx.code_of(p.annotation.annotation)
                return any(w in code for w in _SEQUENCE_WORDS)
        return False

    def visit_For(self, node: cst.For) -> None:
        self._check(node.iter, node)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._check(node.iter, node)


_NOT_TENSOR_KINDS = frozenset({Kind.OTHER, Kind.DATA, Kind.NDARRAY, Kind.SHAPE})


_SEQUENCES = (cst.List, cst.Tuple, cst.ListComp)


def _holds_sequence(func: cst.FunctionDef, name: str) -> bool:
    """Whether `func` builds `name` as a Python list or tuple somewhere (`feats = ()`,
    `feats = feats + (f,)`, `feats = [...]`): a sequence of tensors, not one tensor."""
    for n in iter_descendants(func.body):
        if isinstance(n, cst.Assign) and any(
            isinstance(t.target, cst.Name) and t.target.value == name for t in n.targets
        ):
            v = n.value
            if isinstance(v, cst.BinaryOperation):
                if isinstance(v.left, _SEQUENCES) or isinstance(v.right, _SEQUENCES):
                    return True
            elif isinstance(v, _SEQUENCES):
                return True
    return False


def _own_state(expr: cst.BaseExpression) -> bool:
    """`self.w`, `self.w.to(x.device)`, `self.w[1:]`: a tensor the module holds (its
    length does not depend on the inputs)."""
    while True:
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        else:
            break
    d = dotted(expr)
    return d is not None and d.startswith("self.") and d.count(".") == 1
