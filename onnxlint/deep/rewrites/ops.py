"""Ops whose ONNX translation refuses the form the code calls them in.

- `scaled_dot_product_attention` on 3-D query, key and value (OLX808: torch 2.13's
  translation supports only 4-D ones): a head dim of 1 added to each and removed from the
  result (`sdpa(q.unsqueeze(-3), k.unsqueeze(-3), v.unsqueeze(-3)).squeeze(-3)`), which
  computes the same attention; an `attn_mask` given is left as it is (it broadcasts) in a
  first candidate and gets the head dim too in a second.
"""

from __future__ import annotations

import libcst as cst

from onnxlint.deep.rewrites.base import Candidate, Rewriter, Site
from onnxlint.deep.rewrites.exprs import paren

_QKV = ("query", "key", "value")


def _unsqueezed(e: cst.BaseExpression) -> cst.Call:
    return cst.Call(
        func=cst.Attribute(value=paren(e), attr=cst.Name("unsqueeze")),
        args=[cst.Arg(cst.UnaryOperation(operator=cst.Minus(), expression=cst.Integer("3")))],
    )


def sdpa_candidates(site: Site) -> list[Candidate]:
    if site.violation.code != "OLX808":
        return []
    message = str(site.raw.get("message") or site.violation.message)
    if "4D" not in message and "4-D" not in message:
        return []
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    calls = [
        c
        for c in parsed.at_line(site.line, cst.Call)
        if (
            isinstance(c.func, cst.Attribute)
            and c.func.attr.value == "scaled_dot_product_attention"
        )
        or (isinstance(c.func, cst.Name) and c.func.value == "scaled_dot_product_attention")
    ]
    if len(calls) != 1:
        return []
    node: cst.Call = calls[0]
    if any(a.star for a in node.args):
        return []
    positional = [a for a in node.args if a.keyword is None]
    keywords = {a.keyword.value: a for a in node.args if a.keyword is not None}
    if len(positional) + sum(1 for k in _QKV if k in keywords) < 3:
        return []
    mask_arg = keywords.get("attn_mask") or (positional[3] if len(positional) > 3 else None)
    out: list[Candidate] = []
    for with_mask in (False, True) if mask_arg is not None else (False,):
        args = []
        for i, a in enumerate(node.args):
            is_qkv = (a.keyword is None and i < 3) or (
                a.keyword is not None and a.keyword.value in _QKV
            )
            if is_qkv or (with_mask and a is mask_arg):
                a = a.with_changes(value=_unsqueezed(a.value))
            args.append(a)
        new = cst.Call(
            func=cst.Attribute(value=node.with_changes(args=args), attr=cst.Name("squeeze")),
            args=[cst.Arg(cst.UnaryOperation(operator=cst.Minus(), expression=cst.Integer("3")))],
        )
        title = "Give attention 4-D inputs (a head dim of 1: unsqueeze(-3), squeeze(-3))"
        if with_mask:
            title = "Give attention and its mask 4-D inputs (unsqueeze(-3), squeeze(-3))"
        out.append(Candidate("sdpa-4d", title, {site.path: parsed.replace(node, new)}))
    return out


REWRITERS = [
    Rewriter(
        "sdpa-4d",
        "3-D scaled_dot_product_attention -> 4-D (a head dim of 1)",
        frozenset({"OLX808"}),
        sdpa_candidates,
    ),
]
