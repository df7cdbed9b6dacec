"""A static lower bound of a model's parameter count, from literals in this file.

Sources, all literal (ints, or module-level int constants):
- a local `nn.Module` class: `nn.Linear(a, b)`, `nn.Embedding(n, d)`, `nn.ConvNd(i, o, k)`,
  `nn.Parameter(torch.empty(a, b))` in `__init__`, plus local submodules it builds
  (`Block(...)`, `nn.ModuleList([Block() for _ in range(N)])` counts N times);
- a transformers-style config built inline: `XConfig(hidden_size=h, num_hidden_layers=L,
  intermediate_size=i, vocab_size=V)` -> L * (4h^2 + 2hi) + Vh (attention + MLP +
  embeddings, a lower bound: gated MLPs have 3hi);
- a checkpoint name with a size: `from_pretrained("meta-llama/Llama-2-7b-hf")` -> 7e9.

`Estimate.exact` is False when a layer's sizes were not literals (then `params` is only a
lower bound of what we could read).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from onnxlint.semantic.calls import positional_args
from onnxlint.semantic.model import SemanticModel
from onnxlint.source.walker import dotted, iter_descendants

_SIZE_IN_NAME = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*([bBmM])(?![a-zA-Z])")
_CONV_DIMS = {"Conv1d": 1, "Conv2d": 2, "Conv3d": 3, "ConvTranspose1d": 1,
              "ConvTranspose2d": 2, "ConvTranspose3d": 3}  # fmt: skip


@dataclass
class Estimate:
    params: int = 0
    exact: bool = True
    source: str = ""

    def add(self, other: Estimate, times: int = 1) -> None:
        self.params += other.params * times
        self.exact = self.exact and other.exact


def _constants(model: SemanticModel) -> dict[str, int]:
    out: dict[str, int] = {}
    for stmt in model.module_body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and isinstance(small.value, cst.Integer):
                    for t in small.targets:
                        if isinstance(t.target, cst.Name):
                            out[t.target.value] = int(small.value.evaluated_value)
    return out


def _int(expr: cst.BaseExpression, consts: dict[str, int]) -> int | None:
    if isinstance(expr, cst.Integer):
        return int(expr.evaluated_value)
    if isinstance(expr, cst.Name):
        return consts.get(expr.value)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        a, b = _int(expr.left, consts), _int(expr.right, consts)
        return a * b if a is not None and b is not None else None
    return None


def _ints(call: cst.Call, n: int, consts: dict[str, int]) -> list[int] | None:
    pos = positional_args(call)
    if len(pos) < n:
        return None
    vals = [_int(a.value, consts) for a in pos[:n]]
    return None if any(v is None for v in vals) else [v for v in vals if v is not None]


def class_estimate(model: SemanticModel, class_name: str, _depth: int = 0) -> Estimate:
    est = Estimate(source=f"`{class_name}`'s layers")
    if _depth > 6:
        est.exact = False
        return est
    init = model.find_method(class_name, "__init__")
    if init is None:
        est.exact = False
        return est
    consts = _constants(model)
    counted: set[int] = set()
    for n in iter_descendants(init.node.body):
        if not isinstance(n, cst.Call) or id(n) in counted:
            continue
        times = 1
        inner = n
        if isinstance(n, cst.Call) and model.qualname(n.func) in (
            "torch.nn.ModuleList",
            "torch.nn.Sequential",
        ):
            continue  # their elements are counted where they are built (comprehensions below)
        comp = _enclosing_comprehension(init.node.body, n)
        if comp is not None:
            reps = _range_count(model, comp, consts)
            if reps is None:
                est.exact = False
                continue
            times = reps
        est.add(_layer(model, inner, consts, _depth), times)
        counted.add(id(n))
    return est


def _enclosing_comprehension(root: cst.CSTNode, target: cst.CSTNode) -> cst.CSTNode | None:
    for n in iter_descendants(root):
        if isinstance(n, (cst.ListComp, cst.GeneratorExp)) and n.elt is target:
            return n
    return None


def _range_count(model: SemanticModel, comp: cst.CSTNode, consts: dict[str, int]) -> int | None:
    assert isinstance(comp, (cst.ListComp, cst.GeneratorExp))
    it = comp.for_in.iter
    if isinstance(it, cst.Call) and model.qualname(it.func) == "builtins.range":
        pos = positional_args(it)
        if len(pos) == 1:
            return _int(pos[0].value, consts)
    return None


def _layer(model: SemanticModel, call: cst.Call, consts: dict[str, int], depth: int) -> Estimate:
    q = model.qualname(call.func) or ""
    name = q.rsplit(".", 1)[-1]
    est = Estimate()
    if q.startswith("torch.nn.") and name in ("Linear", "Bilinear", "LazyLinear"):
        v = _ints(call, 2, consts)
        if v is None:
            est.exact = False
        else:
            est.params = v[0] * v[1] + v[1]
    elif q.startswith("torch.nn.") and name == "Embedding":
        v = _ints(call, 2, consts)
        if v is None:
            est.exact = False
        else:
            est.params = v[0] * v[1]
    elif q.startswith("torch.nn.") and name in _CONV_DIMS:
        v = _ints(call, 3, consts)
        if v is None:
            est.exact = False
        else:
            est.params = v[0] * v[1] * v[2] ** _CONV_DIMS[name] + v[1]
    elif q == "torch.nn.Parameter":
        pos = positional_args(call)
        if pos and isinstance(pos[0].value, cst.Call):
            dims = [_int(a.value, consts) for a in positional_args(pos[0].value)]
            if dims and all(d is not None for d in dims):
                total = 1
                for d in dims:
                    total *= d or 1
                est.params = total
            else:
                est.exact = False
    else:
        # A local module class is sized recursively; norms, activations and unknown
        # callables (helpers, tensor ops) add nothing.
        local = dotted(call.func)
        if local is not None and local in model.classes and model.classes[local].is_module:
            est.add(class_estimate(model, local, depth + 1))
    return est


def config_estimate(model: SemanticModel, call: cst.Call) -> Estimate | None:
    """An inline `XConfig(hidden_size=..., num_hidden_layers=..., ...)`."""
    d = dotted(call.func) or ""
    if not d.endswith("Config"):
        return None
    consts = _constants(model)
    kw = {a.keyword.value: _int(a.value, consts) for a in call.args if a.keyword is not None}
    h, layers = kw.get("hidden_size") or kw.get("d_model"), kw.get("num_hidden_layers")
    if h is None or layers is None:
        return None
    inter = kw.get("intermediate_size") or 4 * h
    vocab = kw.get("vocab_size") or 0
    return Estimate(layers * (4 * h * h + 2 * h * inter) + vocab * h, True, f"`{d}(...)`")


def name_estimate(text: str) -> Estimate | None:
    """`"meta-llama/Llama-2-7b-hf"` -> 7e9 parameters."""
    m = _SIZE_IN_NAME.search(text)
    if m is None:
        return None
    scale = 1e9 if m.group(2) in "bB" else 1e6
    return Estimate(int(float(m.group(1)) * scale), True, f'"{text}"')
