"""A grouped matmul with no ONNX translation, as one batched matmul.

`grouped_mm(a, b, offs=offs)` (torch's `_grouped_mm` and `nn.functional.grouped_mm`, and the
custom ops that stand in for them on the CPU, such as the fallback of transformers' experts)
multiplies each row of a 2-D `a` by the matrix of its group in a 3-D `b`: row r belongs to
the first group g with `r < offs[g]` (`offs` the cumulative ends of the groups, the rows
sorted by group). torch 2.13 has no ONNX translation for any of them (OLX807, "no ONNX
translation"). The rewrite computes the same with ops that have one: each row's group from
comparisons with `offs`, the group's matrix gathered for each row (`b[group]`) and one
batched `matmul`; rows past `offs[-1]` (in no group) are zeros, as the CPU fallback leaves
them. It costs a copy of a group's matrix per row, which export does not mind. Where `offs`
means something else (the groups' sizes, say), the outputs differ and the proof refuses it.
"""

from __future__ import annotations

import libcst as cst

from onnxlint.deep.rewrites.base import Candidate, Parsed, Rewriter, Site, fresh_name, torch_alias
from onnxlint.deep.rewrites.exprs import ensure_import

_HELPER = '''
def {name}(mat_a, mat_b, offs):
    """`grouped_mm(mat_a, mat_b, offs=offs)` (a 2-D `mat_a`, a 3-D `mat_b`) with ops that
    export to ONNX: row r times the matrix of its group, the first g with r < offs[g];
    rows past offs[-1] are zeros. Written by onnxlint (a proven fix)."""
    rows = {torch}.arange(mat_a.shape[0], device=mat_a.device)
    group = (rows.unsqueeze(-1) >= offs.unsqueeze(0)).sum(dim=-1)
    group = group.clamp(max=mat_b.shape[0] - 1)
    out = {torch}.matmul(mat_a.unsqueeze(-2), mat_b[group]).squeeze(-2)
    return out.masked_fill((rows >= offs[-1]).unsqueeze(-1), 0)
'''


def _callee(c: cst.Call) -> str:
    f = c.func
    if isinstance(f, cst.Attribute):
        return f.attr.value
    return f.value if isinstance(f, cst.Name) else ""


def _grouped_calls(parsed: Parsed, line: int) -> list[cst.Call]:
    return [c for c in parsed.at_line(line, cst.Call) if "grouped_mm" in _callee(c)]


def _operands(node: cst.Call) -> tuple[cst.Arg, cst.Arg, cst.BaseExpression] | None:
    """(a, b, offs) of `f(a, b, offs)` or `f(a, b, offs=offs)`; None for any other form."""
    if any(a.star for a in node.args):
        return None
    positional = [a for a in node.args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
    if len(positional) == 3 and not keywords:
        return positional[0], positional[1], positional[2].value
    if len(positional) == 2 and set(keywords) == {"offs"}:
        return positional[0], positional[1], keywords["offs"]
    return None


def _top_level(parsed: Parsed, node: cst.CSTNode) -> cst.CSTNode | None:
    """The statement of the module that holds `node`."""
    top = None
    for a in [node, *parsed.ancestors(node)]:
        if isinstance(parsed.parent(a), cst.Module):
            top = a
    return top


def grouped_mm_candidates(site: Site) -> list[Candidate]:
    text = f"{site.raw.get('op') or ''} {site.raw.get('message') or site.violation.message}"
    if "grouped_mm" not in text:
        return []
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    found = _grouped_calls(parsed, site.line)
    if len(found) != 1:
        return []
    node = found[0]
    operands = _operands(node)
    top = _top_level(parsed, node)
    if operands is None or top is None:
        return []
    a, b, offs = operands
    alias = torch_alias(parsed)
    torch = alias or "torch"
    name = fresh_name(parsed, "grouped_mm_dense")
    helper = cst.parse_module(_HELPER.format(name=name, torch=torch)).body[0]
    new_call = cst.Call(
        func=cst.Name(name),
        args=[
            a.with_changes(comma=cst.MaybeSentinel.DEFAULT),
            b.with_changes(comma=cst.MaybeSentinel.DEFAULT),
            cst.Arg(offs),
        ],
        lpar=node.lpar,
        rpar=node.rpar,
    )
    module = parsed.module.deep_replace(node, new_call)
    assert isinstance(module, cst.Module)
    # the helper goes right above the module-level statement that holds the call
    body = list(module.body)
    at = next(i for i, st in enumerate(parsed.module.body) if st is top)
    spaced = helper.with_changes(
        leading_lines=[cst.EmptyLine(), cst.EmptyLine()] if at else [],
    )
    kept = [ln for ln in body[at].leading_lines if ln.comment is not None]
    following = body[at].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine(), *kept])
    body[at : at + 1] = [spaced, following]
    code = module.with_changes(body=body).code
    if alias is None:
        code = ensure_import(cst.parse_module(code), "torch", "import torch").code
    return [
        Candidate(
            "grouped-mm",
            f"Compute `{_callee(node)}` as one batched matmul (each row times its group's matrix)",
            {site.path: code},
        )
    ]


REWRITERS = [
    Rewriter(
        "grouped-mm",
        "grouped_mm with no ONNX translation -> each row times its group's matrix (matmul)",
        frozenset({"OLX807"}),
        grouped_mm_candidates,
    ),
]
