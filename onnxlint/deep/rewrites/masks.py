"""Attention rows that are fully masked: zeros in eager PyTorch, numbers in the ONNX model.

With a boolean attention mask whose row allows no key (a padded sequence),
`scaled_dot_product_attention` in eager PyTorch gives zeros for that row, and its ONNX
translation the softmax of an all-masked row, a uniform average of the values (OLX810 at the
attention, "fully masked"). The rewrite sets those rows to zero itself, right after the
attention, so that both agree:

    out = attention(q, k, v, mask)
    if mask is not None and mask.dtype == torch.bool:  # rows with no key: zeros
        out = out.masked_fill(~mask.any(-1, keepdim=True), 0)

The mask's query rows are its dim -2; where the attention's output has them at dim 1
(the `(batch, query, heads, dim)` layout attention functions return after their transpose)
a second candidate moves them there (`.transpose(1, 2)`). Eager outputs are unchanged where
the mask is the attention's own; where it is not (a mask of the other convention, True for
padding), the outputs change and the proof refuses the rewrite.
"""

from __future__ import annotations

import libcst as cst

from onnxlint.deep.rewrites.base import Candidate, Rewriter, Site, torch_alias
from onnxlint.deep.rewrites.exprs import ensure_import


def _simple(e: cst.BaseExpression) -> bool:
    if isinstance(e, cst.Name):
        return True
    return isinstance(e, cst.Attribute) and _simple(e.value)


def _mask_arg(node: cst.Call) -> cst.BaseExpression | None:
    """The call's one argument that names a mask (`attn_mask=m`, or a name with "mask")."""
    found = []
    for a in node.args:
        if a.star:
            continue
        if a.keyword is not None and "mask" in a.keyword.value:
            found.append(a.value)
        elif a.keyword is None and _simple(a.value):
            code = cst.Module([]).code_for_node(a.value)
            if "mask" in code.split(".")[-1]:
                found.append(a.value)
    return found[0] if len(found) == 1 and _simple(found[0]) else None


def _output(target: cst.BaseAssignTargetExpression) -> cst.Name | None:
    """The attention's output among the assignment's targets: the name, or a tuple's first."""
    if isinstance(target, cst.Name):
        return target
    if isinstance(target, (cst.Tuple, cst.List)) and target.elements:
        first = target.elements[0].value
        return first if isinstance(first, cst.Name) else None
    return None


def masked_rows_candidates(site: Site) -> list[Candidate]:
    message = str(site.raw.get("message") or site.violation.message)
    if "fully masked" not in message:
        return []
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    stmt = next(iter(parsed.covering(site.line, cst.SimpleStatementLine)), None)
    if stmt is None or len(stmt.body) != 1 or parsed.enclosing(stmt, cst.FunctionDef) is None:
        return []
    assign = stmt.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return []
    if not isinstance(assign.value, cst.Call) or parsed.start_line(stmt) > site.line:
        return []
    out = _output(assign.targets[0].target)
    mask = _mask_arg(assign.value)
    if out is None or mask is None:
        return []
    alias = torch_alias(parsed)
    torch = alias or "torch"
    m = cst.Module([]).code_for_node(mask)
    o = out.value
    candidates = []
    for layout, move in (
        ("(..., query, dim)", ""),
        ("(batch, query, heads, dim)", ".transpose(1, 2)"),
    ):
        guard = cst.parse_statement(
            f"if {m} is not None and {m}.dtype == {torch}.bool:  # rows with no key: zeros\n"
            f"    {o} = {o}.masked_fill(~{m}.any(-1, keepdim=True){move}, 0)\n",
            config=parsed.module.config_for_parsing,
        )
        code = parsed.replace(stmt, cst.FlattenSentinel([stmt, guard]))
        if alias is None:
            code = ensure_import(cst.parse_module(code), "torch", "import torch").code
        title = "Set the attention's fully masked rows to zero, as eager PyTorch does"
        if move:
            title += f" (output {layout})"
        candidates.append(Candidate("masked-rows", title, {site.path: code}))
    return candidates


REWRITERS = [
    Rewriter(
        "masked-rows",
        "attention rows with no unmasked key -> zeros set after the attention (masked_fill)",
        frozenset({"OLX810"}),
        masked_rows_candidates,
    ),
]
