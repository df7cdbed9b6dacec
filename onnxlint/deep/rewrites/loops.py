"""A Python loop over a tensor's first dim that is a map (OLX804: the loop pins the dim to
the example's size; OLX802/OLX803 at the loop).

- `out = []` / `for row in x: out.append(f(row))` / `torch.stack(out)`: the map as
  `torch.vmap(lambda row: f(row))(x)`, in place of the `torch.stack(out)`;
- `torch.stack([f(row) for row in x])`: the same.

Whether `f` maps row by row (no Python branch on the row's values, no in-place writes to
what the rows share) is for the proof to say: the same outputs at the example and at a
second size, the export and onnxruntime.
"""

from __future__ import annotations

import libcst as cst

from onnxlint.deep.rewrites.base import Candidate, Parsed, Rewriter, Site, torch_alias
from onnxlint.deep.rewrites.exprs import attr, call, ensure_import, loaded_names, name_assignment

TITLE = "Map over the first dim with torch.vmap"


def _finish(parsed: Parsed, code: str) -> str:
    if torch_alias(parsed) is not None:
        return code
    return ensure_import(cst.parse_module(code), "torch", "import torch").code


def _vmap(torch: str, name: str, expr: cst.BaseExpression, over: cst.BaseExpression) -> cst.Call:
    fn = cst.Lambda(params=cst.Parameters(params=[cst.Param(cst.Name(name))]), body=expr)
    return call(call(attr(torch, "vmap"), fn), over)


def _is_stack_of(node: cst.CSTNode, torch: str, list_name: str) -> bool:
    """`torch.stack(list_name)` / `torch.stack(list_name, 0)` / `torch.stack(list_name, dim=0)`."""
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
        return False
    f = node.func
    if not (isinstance(f.value, cst.Name) and f.value.value == torch and f.attr.value == "stack"):
        return False
    if not node.args or not isinstance(node.args[0].value, cst.Name):
        return False
    if node.args[0].value.value != list_name or node.args[0].keyword is not None:
        return False
    return all(isinstance(a.value, cst.Integer) and a.value.value == "0" for a in node.args[1:])


def _append_of(for_: cst.For) -> tuple[str, cst.BaseExpression] | None:
    """`for ...: LIST.append(EXPR)` (one statement): (LIST, EXPR)."""
    body = for_.body
    if not isinstance(body, cst.IndentedBlock) or len(body.body) != 1 or for_.orelse:
        return None
    st = body.body[0]
    if not isinstance(st, cst.SimpleStatementLine) or len(st.body) != 1:
        return None
    e = st.body[0]
    if not isinstance(e, cst.Expr) or not isinstance(e.value, cst.Call):
        return None
    c = e.value
    if not (
        isinstance(c.func, cst.Attribute)
        and c.func.attr.value == "append"
        and isinstance(c.func.value, cst.Name)
        and len(c.args) == 1
        and c.args[0].keyword is None
        and not c.args[0].star
    ):
        return None
    return c.func.value.value, c.args[0].value


def loop_candidates(site: Site) -> list[Candidate]:
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    torch = torch_alias(parsed) or "torch"
    out = _comprehension(site, parsed, torch)
    if out:
        return out
    fors = parsed.at_line(site.line, cst.For)
    if not fors:
        return []
    for_: cst.For = fors[0]
    if not isinstance(for_.target, cst.Name) or for_.asynchronous is not None:
        return []
    found = _append_of(for_)
    if found is None:
        return []
    list_name, expr = found
    if list_name in loaded_names(expr):
        return []
    block = parsed.parent(for_)
    body = list(getattr(block, "body", ()))
    if for_ not in body:
        return []
    i = body.index(for_)
    if i == 0:
        return []
    init = body[i - 1]
    assigned = name_assignment(init)
    if not (
        assigned is not None
        and assigned[0] == list_name
        and isinstance(assigned[1], cst.List)
        and not assigned[1].elements
    ):
        return []
    # the list is read once after the loop, by torch.stack, and nowhere else in the function
    fn = parsed.enclosing(for_, cst.FunctionDef)
    if fn is None:
        return []
    uses = [
        n
        for n in parsed.nodes(cst.Name)
        if n.value == list_name and parsed.enclosing(n, cst.FunctionDef) is fn
    ]
    stacks = [
        c
        for c in parsed.nodes(cst.Call)
        if _is_stack_of(c, torch, list_name)
        and parsed.enclosing(c, cst.FunctionDef) is fn
        and parsed.start_line(c) > parsed.end_line(for_)
    ]
    # uses: the `= []`, the `.append`, and the stack's argument
    if len(stacks) != 1 or len(uses) != 3:
        return []
    stack = stacks[0]
    new_body = body[: i - 1] + body[i + 1 :]
    first = body[i - 1]
    if new_body and i - 1 < len(new_body):  # keep the comments and blank lines above
        new_body[i - 1] = new_body[i - 1].with_changes(leading_lines=first.leading_lines)
    assert block is not None
    new_block = block.with_changes(body=new_body)
    replaced = new_block.deep_replace(stack, _vmap(torch, for_.target.value, expr, for_.iter))
    code = parsed.module.deep_replace(block, replaced)
    assert isinstance(code, cst.Module)
    return [Candidate("vmap", TITLE, {site.path: _finish(parsed, code.code)})]


def _comprehension(site: Site, parsed: Parsed, torch: str) -> list[Candidate]:
    """`torch.stack([EXPR for row in x])` at the line."""
    for c in parsed.at_line(site.line, cst.Call):
        if not (
            isinstance(c.func, cst.Attribute)
            and isinstance(c.func.value, cst.Name)
            and c.func.value.value == torch
            and c.func.attr.value == "stack"
            and c.args
            and isinstance(c.args[0].value, cst.ListComp)
            and all(isinstance(a.value, cst.Integer) and a.value.value == "0" for a in c.args[1:])
        ):
            continue
        comp = c.args[0].value
        assert isinstance(comp, cst.ListComp)
        f = comp.for_in
        if f.inner_for_in is not None or f.ifs or not isinstance(f.target, cst.Name):
            continue
        new = _vmap(torch, f.target.value, comp.elt, f.iter)
        return [Candidate("vmap", TITLE, {site.path: _finish(parsed, parsed.replace(c, new))})]
    return []


REWRITERS = [
    Rewriter(
        "vmap",
        "loop over the first dim (a map) -> torch.vmap",
        frozenset({"OLX804", "OLX802", "OLX803"}),
        loop_candidates,
    ),
]
