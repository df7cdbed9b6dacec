"""Example inputs that make a wrong export (OLX804 caused by the example, OLX822, OLX823).

- a dim asked to be dynamic whose example has size 0 or 1 (torch specialises both): the
  example made with size 2 there (`torch.randn(1, 3, 64, 64)` -> `torch.randn(2, 3, 64, 64)`);
- one tensor given for several inputs (`model(x, x)`): each place after the first gets its
  own copy (`x.clone()`);
- a Python number as an input (baked into the graph): a 0-d tensor (`torch.tensor(0.1)`),
  so that the ONNX model takes it as an input.

The examples are where the finding is: the factory's `return`, the export call of a script,
or the line that made the example tensor.
"""

from __future__ import annotations

import re
from typing import Any

import libcst as cst

from onnxlint.deep.rewrites.base import Candidate, Parsed, Rewriter, Site, torch_alias
from onnxlint.deep.rewrites.exprs import attr, call, ensure_import

_MAKERS = {
    "randn": 0,
    "rand": 0,
    "zeros": 0,
    "ones": 0,
    "empty": 0,
    "full": 0,
    "randint": 2,  # randint(low, high, size) / randint(high, size)
    "randn_like": -1,
    "new_zeros": 0,
    "new_ones": 0,
    "new_empty": 0,
    "new_full": 0,
}


def _finish(parsed: Parsed, code: str) -> str:
    if torch_alias(parsed) is not None:
        return code
    return ensure_import(cst.parse_module(code), "torch", "import torch").code


# ------------------------------------------------------------------ size 0/1 -> 2


def _size_literals(node: cst.Call) -> list[cst.BaseExpression] | None:
    """The size arguments of a tensor-making call (`randn(1, 3)`, `zeros((1, 3))`,
    `randint(0, 10, (1, 8))`, `full((1, 3), 0.5)`)."""
    f = node.func
    name = (
        f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else ""
    )
    if name not in _MAKERS or _MAKERS[name] < 0:
        return None
    kw = next((a for a in node.args if a.keyword is not None and a.keyword.value == "size"), None)
    if kw is not None:
        return _elements(kw.value)
    positional = [a for a in node.args if a.keyword is None and a.star == ""]
    if name == "randint":
        if len(positional) >= 3:
            return _elements(positional[2].value)
        if len(positional) == 2:
            return _elements(positional[1].value)
        return None
    if name in ("full", "new_full"):
        return _elements(positional[0].value) if positional else None
    if len(positional) == 1 and isinstance(positional[0].value, (cst.Tuple, cst.List)):
        return _elements(positional[0].value)
    return [a.value for a in positional]


def _elements(value: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    if isinstance(value, (cst.Tuple, cst.List)):
        return [e.value for e in value.elements]
    return None


def size_candidates(site: Site) -> list[Candidate]:
    dim = site.raw.get("dim") or {}
    if site.violation.code != "OLX804" or dim.get("cause") != "example":
        return []
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    d, value = int(dim.get("dim", -1)), int(dim.get("value", -1))
    out: list[Candidate] = []
    for node in parsed.at_line(site.line, cst.Call):
        sizes = _size_literals(node)
        if sizes is None or d >= len(sizes):
            continue
        lit = sizes[d]
        if not isinstance(lit, cst.Integer) or int(lit.value) != value:
            continue
        code = parsed.replace(lit, cst.Integer("2"))
        name = dim.get("name") or "the dim"
        out.append(
            Candidate(
                "example-size",
                f"Give the example size 2 on the dynamic dim {name!r}",
                {site.path: code},
            )
        )
    return out


# ------------------------------------------------------------------ the examples' nodes


def _example_nodes(
    parsed: Parsed, line: int
) -> tuple[cst.BaseExpression | None, cst.BaseExpression | None] | None:
    """(args, kwargs) as written at the examples' line: a factory's `return model, args,
    kwargs, ...`, or an export call `export(model, args, ..., kwargs=...)`."""
    for ret in parsed.covering(line, cst.Return):
        value = ret.value
        if isinstance(value, cst.Tuple) and len(value.elements) >= 2:
            els = value.elements
            return els[1].value, els[2].value if len(els) > 2 else None
    for node in parsed.covering(line, cst.Call):
        positional = [a for a in node.args if a.keyword is None]
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        args = positional[1].value if len(positional) > 1 else keywords.get("args")
        if args is None:
            continue
        return args, keywords.get("kwargs")
    return None


_LABEL = re.compile(r"^(?P<base>[A-Za-z_]\w*)(?P<path>(\[[^\]]+\]|\.\w+)*)$")
_STEP = re.compile(r"\[(?P<index>[^\]]+)\]|\.(?P<attr>\w+)")


def _forward_params(site: Site) -> list[str]:
    """The model's `forward` parameters (without self), read from its class's source."""
    loc = (site.data.get("model") or {}).get("class_loc") or {}
    path, line = loc.get("file"), loc.get("line")
    if not path or not line:
        return []
    parsed = site.sources.parsed(str(path))
    if parsed is None:
        return []
    for cls in parsed.at_line(int(line), cst.ClassDef):
        for st in cls.body.body:
            if isinstance(st, cst.FunctionDef) and st.name.value == "forward":
                params = [p.name.value for p in st.params.params]
                return params[1:]
    return []


def _node_for(
    label: str,
    params: list[str],
    args: cst.BaseExpression | None,
    kwargs: cst.BaseExpression | None,
) -> cst.BaseExpression | None:
    m = _LABEL.match(label)
    if m is None:
        return None
    base = m.group("base")
    node: cst.BaseExpression | None = None
    if isinstance(kwargs, cst.Dict):
        for el in kwargs.elements:
            if (
                isinstance(el, cst.DictElement)
                and isinstance(el.key, cst.SimpleString)
                and el.key.evaluated_value == base
            ):
                node = el.value
    if node is None and base in params:
        i = params.index(base)
        if isinstance(args, (cst.Tuple, cst.List)) and i < len(args.elements):
            node = args.elements[i].value
        elif i == 0 and args is not None and not isinstance(args, (cst.Tuple, cst.List)):
            node = args  # `export(model, x)`: one tensor for the only input
    for step in _STEP.finditer(m.group("path") or ""):
        if node is None:
            return None
        index = step.group("index")
        if index is not None and isinstance(node, (cst.Tuple, cst.List)) and index.isdigit():
            k = int(index)
            node = node.elements[k].value if k < len(node.elements) else None
        elif index is not None and isinstance(node, cst.Dict):
            key = index.strip("'\"")
            node = next(
                (
                    el.value
                    for el in node.elements
                    if isinstance(el, cst.DictElement)
                    and isinstance(el.key, cst.SimpleString)
                    and el.key.evaluated_value == key
                ),
                None,
            )
        else:
            return None
    return node


# ------------------------------------------------------------------ aliased -> clone


def alias_candidates(site: Site) -> list[Candidate]:
    if site.violation.code != "OLX822":
        return []
    parsed = site.sources.parsed(site.path)
    labels = list(site.raw.get("inputs") or [])
    if parsed is None or len(labels) < 2:
        return []
    found = _example_nodes(parsed, site.line)
    if found is None:
        return []
    params = _forward_params(site)
    nodes = [_node_for(label, params, *found) for label in labels]
    if any(n is None for n in nodes[1:]):
        return []
    replaced: dict[cst.CSTNode, cst.CSTNode] = {}
    for n in nodes[1:]:
        assert n is not None
        replaced[n] = cst.Call(func=cst.Attribute(value=n, attr=cst.Name("clone")))
    module = parsed.module.visit(_ReplaceNodes(replaced))
    return [
        Candidate(
            "example-alias",
            "Give each place its own tensor (.clone())",
            {site.path: module.code},
        )
    ]


class _ReplaceNodes(cst.CSTTransformer):
    def __init__(self, table: dict[cst.CSTNode, cst.CSTNode]) -> None:
        self.table = table

    def on_leave(self, original: Any, updated: Any) -> Any:
        return self.table.get(original, updated)


# ------------------------------------------------------------------ scalar -> tensor


def scalar_candidates(site: Site) -> list[Candidate]:
    if site.violation.code != "OLX823" or site.violation.severity.value == "info":
        return []
    parsed = site.sources.parsed(site.path)
    label = site.raw.get("input")
    if parsed is None or not isinstance(label, str):
        return []
    found = _example_nodes(parsed, site.line)
    if found is None:
        return []
    node = _node_for(label, _forward_params(site), *found)
    if node is None:
        return []
    torch = torch_alias(parsed) or "torch"
    new = call(attr(torch, "tensor"), node)
    code = parsed.replace(node, new)
    return [
        Candidate(
            "example-scalar",
            f"Pass `{label}` as a tensor (torch.tensor)",
            {site.path: _finish(parsed, code)},
        )
    ]


REWRITERS = [
    Rewriter(
        "example-size",
        "size-0/1 example on a dynamic dim -> size 2",
        frozenset({"OLX804"}),
        size_candidates,
    ),
    Rewriter(
        "example-alias",
        "one tensor for several inputs -> .clone()",
        frozenset({"OLX822"}),
        alias_candidates,
    ),
    Rewriter(
        "example-scalar",
        "Python number input -> torch.tensor",
        frozenset({"OLX823"}),
        scalar_candidates,
    ),
]
