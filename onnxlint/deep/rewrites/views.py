"""A reshape that the ONNX decomposition turns into a `view` of a strided tensor.

torch.export records `x.transpose(1, 2).contiguous().reshape(*shape, -1)` on a dynamic dim
as a `view` of the transposed tensor: `.contiguous()` is dropped where the symbolic strides
cannot be shown not to be contiguous, and `reshape` becomes `view`. The ONNX exporter's
decomposition (step 2/3) then runs that `view` on the strided tensor and fails (OLX808:
"Cannot view a tensor with shape ... and strides ..."; transformers' T5 and Swin attention
outputs). The rewrite copies the tensor into the contiguous layout first,
`x.clone(memory_format=torch.contiguous_format).reshape(...)`, a copy that export keeps; the
values are the same, so the proof only has to show that the export gets through.
"""

from __future__ import annotations

import libcst as cst

from onnxlint.deep.rewrites.base import Candidate, Parsed, Rewriter, Site, torch_alias
from onnxlint.deep.rewrites.exprs import attr, ensure_import, paren

_METHODS = ("reshape", "view", "flatten")


def _contiguous_copy(x: cst.BaseExpression, torch: str) -> cst.Call:
    return cst.Call(
        func=cst.Attribute(value=paren(x), attr=cst.Name("clone")),
        args=[
            cst.Arg(
                attr(torch, "contiguous_format"),
                keyword=cst.Name("memory_format"),
                equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""),
                    whitespace_after=cst.SimpleWhitespace(""),
                ),
            )
        ],
    )


def _reshapes(parsed: Parsed, line: int) -> list[cst.Call]:
    """`x.reshape(...)`, `x.view(...)`, `x.flatten(...)` and `torch.reshape(x, ...)` calls that
    start on `line` (the receiver of a method is not `torch` itself)."""
    torch = torch_alias(parsed) or "torch"
    out = []
    for c in parsed.at_line(line, cst.Call):
        f = c.func
        if not isinstance(f, cst.Attribute) or f.attr.value not in _METHODS:
            continue
        if isinstance(f.value, cst.Name) and f.value.value == torch:
            if f.attr.value == "reshape" and c.args and c.args[0].keyword is None:
                out.append(c)
            continue
        out.append(c)
    return out


def view_candidates(site: Site) -> list[Candidate]:
    message = str(site.raw.get("message") or site.violation.message)
    if "Cannot view a tensor" not in message or "strides" not in message:
        return []
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    found = _reshapes(parsed, site.line)
    if len(found) != 1:
        return []
    node = found[0]
    alias = torch_alias(parsed)
    torch = alias or "torch"
    assert isinstance(node.func, cst.Attribute)
    if isinstance(node.func.value, cst.Name) and node.func.value.value == torch:
        first = node.args[0]
        new: cst.Call = node.with_changes(
            args=[first.with_changes(value=_contiguous_copy(first.value, torch)), *node.args[1:]]
        )
    else:
        new = node.with_changes(
            func=node.func.with_changes(value=_contiguous_copy(node.func.value, torch))
        )
    code = parsed.replace(node, new)
    if alias is None:
        code = ensure_import(cst.parse_module(code), "torch", "import torch").code
    method = node.func.attr.value
    return [
        Candidate(
            "contiguous-copy",
            f"Copy the tensor into the contiguous layout before `{method}` "
            "(clone(memory_format=torch.contiguous_format))",
            {site.path: code},
        )
    ]


REWRITERS = [
    Rewriter(
        "contiguous-copy",
        "reshape of a strided tensor that ONNX decomposes to a view -> a contiguous copy first",
        frozenset({"OLX808"}),
        view_candidates,
    ),
]
