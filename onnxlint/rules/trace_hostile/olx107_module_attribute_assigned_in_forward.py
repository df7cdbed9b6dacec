"""OLX107: `self.attr = ...` in code reachable from forward."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.rules.trace_hostile._common import under_export_guard
from onnxlint.semantic.kinds import Kind
from onnxlint.semantic.model import SemanticModel
from onnxlint.source.walker import dotted, iter_children, iter_descendants


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
        Valid(  # a chunk cache its parent clears before every encode
            dedent(
                """
                import torch
                class CausalConv(torch.nn.Module):
                    def forward(self, x):
                        if self.cache is not None:
                            x = torch.cat([self.cache, x], dim=2)
                        self.cache = x[:, :, -2:].clone()
                        return x
                class Encoder(torch.nn.Module):
                    def forward(self, x):
                        for m in self.modules():
                            if isinstance(m, CausalConv):
                                m.cache = None
                        return self.convs(x)
                """
            )
        ),
        Valid(  # one-shot lazy initialisation of a constant kernel
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        if self.first_call is True:
                            self.first_call = False
                            self.kernel = self.kernel.repeat(x.shape[1], 1, 1)
                        return torch.nn.functional.conv1d(x, self.kernel)
                """
            )
        ),
        Valid(  # an opt-in cache, off by default
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x, keep_cache=False):
                        if keep_cache and self.emb is not None:
                            return self.emb
                        out = x * 2
                        if keep_cache:
                            self.emb = out.detach()
                        return out
                """
            )
        ),
        Valid(  # a grow-only table, sliced to the input
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def grow(self, shape):
                        self.pe = make(shape).to(self.pe.device)
                    def forward(self, x):
                        if x.size(2) > self.pe.size(2):
                            self.grow(x.shape[2:])
                        return x + self.pe[:, :, : x.size(2)]
                """
            )
        ),
        Valid(  # a grow-only table: an early return while it covers the input (icefall's extend_pe)
            dedent(
                """
                import torch
                class RelPositionalEncoding(torch.nn.Module):
                    def extend_pe(self, x):
                        if self.pe is not None:
                            if self.pe.size(0) >= x.size(0) * 2 - 1:
                                self.pe = self.pe.to(dtype=x.dtype, device=x.device)
                                return
                        self.pe = make_table(x.size(0)).to(device=x.device, dtype=x.dtype)
                    def forward(self, x):
                        self.extend_pe(x)
                        return x + self.pe[: x.size(0)]
                """
            )
        ),
        Valid(  # a loss method: its nested helper's returns are not its own (HuBERT)
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        return self.compute_loss(x)
                    def compute_loss(self, x):
                        loss = x.sum()
                        extra = [x.mean(), x.max()]
                        if len(self.loss_weights) == 1:
                            self.loss_weights = [self.loss_weights[0]] * len(extra)
                        def compute_correct(logits):
                            return logits.argmax(-1), logits.numel()
                        corr, count = compute_correct(x)
                        return loss, count
                """
            )
        ),
        Valid(  # a local moved to the input's device, then kept: the same values (GPT-J)
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def _get_embed_positions(self, position_ids):
                        embed_positions = self.embed_positions
                        if embed_positions.device != position_ids.device:
                            embed_positions = embed_positions.to(position_ids.device)
                            self.embed_positions = embed_positions
                        return embed_positions.repeat(position_ids.shape[0], 1, 1)
                    def forward(self, position_ids):
                        return self._get_embed_positions(position_ids)
                """
            )
        ),
        Valid(  # a constant cached per dtype and device (GPTBigCode's mask value)
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def _get_mask_value(self, device, dtype):
                        if self.mask_value is None or self.mask_value.dtype != dtype:
                            self.mask_value = torch.full(
                                [], torch.finfo(dtype).min, dtype=dtype, device=device
                            )
                        return self.mask_value
                    def forward(self, x):
                        return torch.where(x > 0, x, self._get_mask_value(x.device, x.dtype))
                """
            )
        ),
        Valid(  # a debugging branch switched off in the code
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        print_max = False
                        if print_max == True:
                            if x.max() > self.max_feat:
                                self.max_feat = x.max()
                                print(self.max_feat)
                        return x
                """
            )
        ),
    ]
    INVALID = [
        Invalid(  # an early return that does not depend on the input's size: the first size stays
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        if self.pe is not None:
                            return x + self.pe
                        self.pe = make_table(x.size(0)) + self.base
                        return x + self.pe
                """
            ),
            line=6,
            message="`self.pe`",
        ),
        Invalid(  # a lazy initialisation that keeps the first batch size
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        if not self.built:
                            self.built = True
                            self.h0 = torch.zeros(x.shape[0], 8) + self.h0
                        return x + self.h0
                """
            ),
            line=6,
            message="`self.h0`",
        ),
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
        Invalid(  # a method whose own returns do not lead with a loss
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        return self.step(x)
                    def step(self, x):
                        def loss_of(y):
                            loss = y.sum()
                            return loss
                        self.total = self.total + x.sum()
                        return x, loss_of(x)
                """
            ),
            line=9,
            message="`self.total`",
        ),
        Invalid(  # a local that is not a move of the attribute: new values carried
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        w = self.w
                        w = w * x.mean()
                        self.w = w
                        return x + w
                """
            ),
            line=6,
            message="`self.w`",
        ),
        Invalid(  # a size from the input next to the dtype: still from the inputs
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def _mask(self, n, dtype):
                        if self.mask is None or self.mask.shape[0] != n:
                            self.mask = torch.zeros(n, dtype=dtype)
                        return self.mask
                    def forward(self, x):
                        return x + self._mask(x.shape[0], x.dtype)
                """
            ),
            line=5,
            message="`self.mask`",
        ),
        Invalid(  # a debug switch that can be turned on: still reported
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        show = False
                        if x.dim() > 3:
                            show = True
                        if show == True:
                            if x.max() > self.peak:
                                self.peak = x.max()
                        return x
                """
            ),
            line=9,
            message="`self.peak`",
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
        if value is not None and (
            _moves_itself(value, attr) or _moved_local(func.node, value, attr)
        ):
            return  # `self.w = self.w.to(x.device)`: a device/dtype move, same value
        if value is not None and not _read_before_written(func.node, target.attr.value):
            return  # written before any read in this call: nothing carried across calls
        if value is not None and not self._from_inputs(value):
            return  # a constant, a flag, a lazily built table: the same for every input
        if target.attr.value in _reset_by_owner(self.ctx.semantic):
            return  # a per-call cache its owner clears before each encode/decode
        if self._guarded_write(target.attr.value, value):
            return
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

    def _guarded_write(self, attr: str, value: cst.BaseExpression | None) -> bool:
        """Whether an enclosing `if` makes the write carry nothing an exported call
        depends on: a one-shot lazy initialisation (`if self.first_call: self.first_call =
        False; self.kernel = ...`, unless it keeps the batch size), an opt-in argument that
        is off by default (`if keep_cache:` with `keep_cache=False`), or a grow-only table
        (`if x.size(2) > self.pe.size(2): self.pe = ...`, sliced to the input after)."""
        func = self.ctx.function
        if func is None:
            return False
        off = _off_by_default(func.node)
        for anc in self.ctx.ancestors:
            if not isinstance(anc, cst.If):
                continue
            test = anc.test
            flag = _one_shot_flag(anc)
            if flag is not None and (value is None or not _batch_sized(value)):
                return True
            names = {n.value for n in (test, *iter_descendants(test)) if isinstance(n, cst.Name)}
            if names & off or _opt_in_kwarg(test):
                return True
            if _grows(test, attr):
                return True
        if _returns_while_covered(func.node, self.ctx.ancestors, attr):
            return True
        cls = self.ctx.class_info
        if cls is not None and func.name != "forward":  # the grow test at the call site
            for n in iter_descendants(cls.node):
                if isinstance(n, cst.If) and _grows(n.test, attr):
                    calls = (m for m in iter_descendants(n.body) if isinstance(m, cst.Call))
                    if any(dotted(c.func) == f"self.{func.name}" for c in calls):
                        return True
        return False

    def _from_inputs(self, value: cst.BaseExpression) -> bool:
        """Whether the value is computed from the call's inputs: a tensor, a shape or a
        size, or an expression mentioning a name that holds one (`self.compute(h, w)`
        with `h, w = x.shape[-2:]`) or a parameter of the method (`x.shape[0]`)."""
        if self.ctx.kind(value) in _INPUT_KINDS and not _factory(value):
            return True  # a factory's tensor is from the inputs when its arguments are
        kinds = self.ctx.kinds()
        func = self.ctx.function
        params = {p.name.value for p in func.params()} if func is not None else set()
        params -= _PLACEMENT
        for n in _value_parts(value):
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


# A method's `dtype`/`device` parameters place a value; they carry no input data.
_PLACEMENT = frozenset({"dtype", "device"})


def _value_parts(value: cst.BaseExpression) -> Iterator[cst.CSTNode]:
    """`value` and its descendants, without what only places it or reads a dtype's limits:
    `dtype=`/`device=` arguments and `torch.finfo(...)`/`torch.iinfo(...)`
    (`torch.full([], torch.finfo(dtype).min, dtype=dtype, device=device)`, GPTBigCode's
    mask value: the same constant for every input of that dtype)."""
    stack: list[cst.CSTNode] = [value]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Arg) and n.keyword is not None and n.keyword.value in _PLACEMENT:
            continue
        if isinstance(n, cst.Call) and (dotted(n.func) or "").rsplit(".", 1)[-1] in (
            "finfo",
            "iinfo",
        ):
            continue
        yield n
        stack.extend(iter_children(n))


def _moved_local(func: cst.FunctionDef, value: cst.BaseExpression, attr: str) -> bool:
    """`self.w = w` where the function binds `w` only to `self.w` or to a device/dtype
    move of `w` (`w = self.w; if w.device != x.device: w = w.to(x.device); self.w = w`,
    GPT-J's `_get_embed_positions`): the same values, moved."""
    if not isinstance(value, cst.Name):
        return False
    name = value.value
    found = False
    for n in iter_descendants(func.body):
        if isinstance(n, (cst.AugAssign, cst.For)):
            target: cst.BaseExpression = n.target
            if any(
                isinstance(d, cst.Name) and d.value == name
                for d in (target, *iter_descendants(target))
            ):
                return False  # `w += 1`, `for w in ...`: other values
            continue
        if not isinstance(n, (cst.Assign, cst.AnnAssign)) or n.value is None:
            continue
        targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
        for t in targets:
            if isinstance(t, cst.Name):
                if t.value != name:
                    continue
                if dotted(n.value) == attr or _moves_name(n.value, name):
                    found = True
                else:
                    return False
            elif isinstance(t, (cst.Tuple, cst.List)) and any(
                isinstance(d, cst.Name) and d.value == name for d in iter_descendants(t)
            ):
                return False  # bound by unpacking: anything
    return found


_FACTORIES = frozenset({"full", "zeros", "ones", "empty", "tensor", "as_tensor", "eye"})


def _factory(value: cst.BaseExpression) -> bool:
    """`torch.full(...)`, `torch.zeros(...)`: a new tensor made from its arguments."""
    if not isinstance(value, cst.Call):
        return False
    d = dotted(value.func) or ""
    return d.startswith("torch.") and d.count(".") == 1 and d[6:] in _FACTORIES


def _moves_name(value: cst.BaseExpression, name: str) -> bool:
    """`w.to(x.device)` (`w.cuda()`, `w.half()`, ...) of the local `name`."""
    return (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in _MOVES
        and isinstance(value.func.value, cst.Name)
        and value.func.value.value == name
    )


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


def _is_self_attr(node: cst.CSTNode, attr: str | None) -> bool:
    """`self.<attr>` (any attribute when `attr` is None)."""
    return (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
        and (attr is None or node.attr.value == attr)
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


_EMPTY = ("None", "[]", "{}", "()", "0")


def _reset_by_owner(model: SemanticModel) -> frozenset[str]:
    """Attributes another object clears from outside (`module.cache = None` in a loop over
    submodules, or `module.clear_cache()` whose body sets `self.cache = None`): the
    per-call caches of causal/chunked convolutions that the parent resets before each
    encode/decode, so nothing is carried from one exported call to the next."""
    key = "olx107.reset_by_owner"
    found = model.memo.get(key)
    if isinstance(found, frozenset):
        return found
    out: set[str] = set()
    clearing: dict[str, set[str]] = {}  # method name -> attributes it sets empty
    outside_calls: set[str] = set()
    for stmt in model.module_body:
        for n in (stmt, *iter_descendants(stmt)):
            if isinstance(n, cst.FunctionDef) and n.name.value != "__init__":
                for m in iter_descendants(n):
                    if isinstance(m, cst.Assign) and _is_empty(m.value):
                        for t in m.targets:
                            if _is_self_attr(t.target, None):
                                assert isinstance(t.target, cst.Attribute)
                                clearing.setdefault(n.name.value, set()).add(t.target.attr.value)
            elif isinstance(n, cst.Assign) and _is_empty(n.value):
                for t in n.targets:
                    tt = t.target
                    if isinstance(tt, cst.Attribute) and dotted(tt.value) not in (None, "self"):
                        out.add(tt.attr.value)
            elif (
                isinstance(n, cst.Call)
                and isinstance(n.func, cst.Attribute)
                and not n.args
                and dotted(n.func.value) not in (None, "self")
            ):
                outside_calls.add(n.func.attr.value)
    for name in outside_calls:
        out |= clearing.get(name, set())
    frozen = frozenset(out)
    model.memo[key] = frozen
    return frozen


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node).replace(" ", "")


def _is_empty(value: cst.BaseExpression) -> bool:
    """`value` is one of `_EMPTY` (spaces aside). Only an empty literal, `None` or `0` can
    print as one, so other values skip the code generation (most of this rule's time)."""
    if type(value) is cst.Name:
        if value.value != "None":
            return False
    elif type(value) is cst.Integer:
        if value.value != "0":
            return False
    elif type(value) is cst.List or type(value) is cst.Tuple or type(value) is cst.Dict:
        if value.elements:
            return False
    else:
        return False
    return _code(value) in _EMPTY


def _one_shot_flag(node: cst.If) -> str | None:
    """`if self.first_call:` (or `is True`, or `not self.built`) whose body sets the same
    flag to a constant: a lazy initialisation that runs once."""
    test = node.test
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        test = test.left
    if not _is_self_attr(test, None):
        return None
    assert isinstance(test, cst.Attribute)
    flag = test.attr.value
    for n in iter_descendants(node.body):
        if (
            isinstance(n, cst.Assign)
            and _code(n.value) in ("True", "False")
            and any(_is_self_attr(t.target, flag) for t in n.targets)
        ):
            return flag
    return None


def _batch_sized(value: cst.BaseExpression) -> bool:
    """Whether the value keeps the batch size (`x.shape[0]`, `x.size(0)`, `len(x)`)."""
    text = _code(value)
    return any(s in text for s in ("shape[0]", "size(0)", "len("))


def _off_by_default(func: cst.FunctionDef) -> set[str]:
    """Parameters whose default is False or None: opt-in switches an export leaves off;
    and local switches the function only ever sets to False (`debug = False` then `if
    debug == True:`, a debugging branch left off in the code)."""
    p = func.params
    params = {
        a.name.value
        for a in (*p.params, *p.kwonly_params)
        if a.default is not None and _code(a.default) in ("False", "None")
    }
    values: dict[str, set[str]] = {}
    for n in iter_descendants(func.body):
        if isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.For)) and isinstance(
            n.target, cst.Name
        ):
            values.setdefault(n.target.value, set()).add("?")
        elif isinstance(n, cst.Assign):
            for t in n.targets:
                for d in (t.target, *iter_descendants(t.target)):
                    if isinstance(d, cst.Name):
                        code = _code(n.value) if d is t.target else "?"
                        values.setdefault(d.value, set()).add(code)
    all_names = {p.name.value for p in (*p.params, *p.kwonly_params)}
    local_off = {n for n, vs in values.items() if vs == {"False"} and n not in all_names}
    return params | local_off


def _opt_in_kwarg(test: cst.BaseExpression) -> bool:
    """`kwargs.get("keep_cache", False)` in the test."""
    for n in (test, *iter_descendants(test)):
        if (
            isinstance(n, cst.Call)
            and isinstance(n.func, cst.Attribute)
            and n.func.attr.value == "get"
            and len(n.args) == 2
            and _code(n.args[1].value) in ("False", "None")
        ):
            return True
    return False


def _returns_while_covered(
    func: cst.FunctionDef, ancestors: Sequence[cst.CSTNode], attr: str
) -> bool:
    """The write follows a statement of the function that returns early while the table
    covers the input (`if self.pe.size(1) >= x.size(1): return`, possibly inside `if
    self.pe is not None:`): a grow-only table written the other way round."""
    body = func.body
    if not isinstance(body, cst.IndentedBlock):
        return False
    inside = {id(a) for a in ancestors}
    for stmt in body.body:
        if id(stmt) in inside:
            return False  # reached the statement holding the write
        for n in (stmt, *iter_descendants(stmt)):
            if (
                isinstance(n, cst.If)
                and _grows(n.test, attr)
                and any(isinstance(r, cst.Return) for r in iter_descendants(n.body))
            ):
                return True
    return False


def _grows(test: cst.BaseExpression, attr: str) -> bool:
    """`x.size(2) > self.pe.size(2)`: the attribute is rebuilt only to cover a larger
    input, and smaller inputs slice it."""
    for n in (test, *iter_descendants(test)):
        if not isinstance(n, cst.Comparison):
            continue
        if not all(
            isinstance(
                c.operator, (cst.GreaterThan, cst.LessThan, cst.GreaterThanEqual, cst.LessThanEqual)
            )
            for c in n.comparisons
        ):
            continue
        if f"self.{attr}." in _code(n):
            return True
    return False
