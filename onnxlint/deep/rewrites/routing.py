"""A mixture-of-experts routing loop that gathers each expert's tokens (OLX802/OLX803 at
the loop: how many tokens an expert gets is data, and so is the loop over the experts hit).

The loop as transformers' Mixtral, Qwen2-MoE, OLMoE, ... blocks write it:

    expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
    for expert_idx in expert_hit:
        idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
        current = hidden_states[None, top_x].reshape(-1, dim)
        out = expert(current) * routing_weights[top_x, idx, None]
        final.index_add_(0, top_x, out)

becomes its dense form: every expert runs on every token, and a token's output is
weighted by its routing weight for that expert, 0 where the expert was not chosen (the
weight `w` here is written in place of `routing_weights[top_x, idx, None]`):

    for expert_idx in range(expert_mask.shape[0]):
        current = hidden_states[None].reshape(-1, dim)
        w = (routing_weights * expert_mask[expert_idx].transpose(0, 1)).sum(dim=-1, keepdim=True)
        final.add_(expert(current) * w)

(`torch.where(mask)` gives the top-k slot `idx` and the token `top_x` of each of the
expert's entries; `x[top_x]` becomes every token's `x`, `w[top_x, idx]` the weight summed
over the slots with the mask, `index_add_(0, top_x, v)` an add; a row of `nonzero()` read
as `expert_idx[0]`, as Switch Transformers' experts are looked up, the int itself, and
`expert_idx = expert_idx[0]`, transformers 5's form, goes.) It computes more (each
expert on each token), and exports with no data-dependent size. That the experts act
token by token, so that the dense form computes the same outputs, is for the proof to say.
"""

from __future__ import annotations

import libcst as cst

from onnxlint.deep.rewrites.base import Candidate, Parsed, Rewriter, Site, torch_alias
from onnxlint.deep.rewrites.exprs import call, ensure_import, loaded_names, name_assignment, paren

TITLE = "Run every expert on every token, weighted by its routing mask (no data-dependent gather)"


def _finish(parsed: Parsed, code: str) -> str:
    if torch_alias(parsed) is not None:
        return code
    return ensure_import(cst.parse_module(code), "torch", "import torch").code


def _is_torch_where(node: cst.BaseExpression, torch: str) -> bool:
    f = node.func if isinstance(node, cst.Call) else None
    return (
        isinstance(f, cst.Attribute)
        and f.attr.value == "where"
        and isinstance(f.value, cst.Name)
        and f.value.value == torch
    )


def _gather(st: cst.BaseStatement, torch: str) -> tuple[str, str, cst.BaseExpression] | None:
    """`A, B = torch.where(MASK)`: (A, B, MASK)."""
    if not isinstance(st, cst.SimpleStatementLine) or len(st.body) != 1:
        return None
    a = st.body[0]
    if not isinstance(a, cst.Assign) or len(a.targets) != 1:
        return None
    target = a.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != 2:
        return None
    names = [e.value for e in target.elements]
    if not all(isinstance(n, cst.Name) for n in names):
        return None
    value = a.value
    if not _is_torch_where(value, torch):
        return None
    assert isinstance(value, cst.Call)
    if len(value.args) != 1 or value.args[0].keyword is not None or value.args[0].star:
        return None
    n0, n1 = names
    assert isinstance(n0, cst.Name) and isinstance(n1, cst.Name)
    return n0.value, n1.value, value.args[0].value


def _expert_mask(mask: cst.BaseExpression, expert: str) -> cst.Subscript | None:
    """`BASE[expert]` (or `BASE[expert].squeeze(0)`, the form for an index taken from
    `nonzero()`, a 1-element tensor): `BASE[expert]`, the expert's (slot, token) mask when
    the expert is an int."""
    if (
        isinstance(mask, cst.Call)
        and isinstance(mask.func, cst.Attribute)
        and mask.func.attr.value == "squeeze"
        and len(mask.args) == 1
        and isinstance(mask.args[0].value, cst.Integer)
        and mask.args[0].value.value == "0"
    ):
        mask = mask.func.value
    if not isinstance(mask, cst.Subscript) or len(mask.slice) != 1:
        return None
    el = mask.slice[0].slice
    if not (isinstance(el, cst.Index) and isinstance(el.value, cst.Name)):
        return None
    if el.value.value != expert or not _plain(mask.value):
        return None
    return mask.with_changes(lpar=[], rpar=[])


def _plain(e: cst.BaseExpression) -> bool:
    """A name or an attribute of one (`expert_mask`, `self.mask`): safe to read again."""
    if isinstance(e, cst.Name):
        return True
    return isinstance(e, cst.Attribute) and _plain(e.value)


def _element_names(node: cst.Subscript) -> list[str | None] | None:
    """The names indexing a subscript (`x[None, b]` -> [None, "b"]; `None` for `None`),
    or None when an element is anything else."""
    out: list[str | None] = []
    for el in node.slice:
        s = el.slice
        if not isinstance(s, cst.Index) or s.star is not None:
            return None
        if isinstance(s.value, cst.Name):
            out.append(None if s.value.value == "None" else s.value.value)
        else:
            return None
    return out


class _Densify(cst.CSTTransformer):
    """Every use of the gathered slots `a` and tokens `b` in the loop's body, made dense."""

    def __init__(self, slot: str, token: str, mask: cst.Subscript) -> None:
        self.slot, self.token, self.mask = slot, token, mask
        self.added = 0

    def _weights(self, value: cst.BaseExpression, keepdim: bool) -> cst.BaseExpression:
        # w[b, a]: the routing weight of each token for this expert (its slots' sum, 0 when
        # the expert is not among them); the mask is (slot, token), w (token, slot)
        masked = cst.BinaryOperation(
            left=paren(value),
            operator=cst.Multiply(),
            right=call(
                cst.Attribute(value=self.mask, attr=cst.Name("transpose")),
                cst.Integer("0"),
                cst.Integer("1"),
            ),
            lpar=[cst.LeftParen()],
            rpar=[cst.RightParen()],
        )
        args = [cst.Arg(_neg1(), keyword=cst.Name("dim"), equal=_eq())]
        if keepdim:
            args.append(cst.Arg(cst.Name("True"), keyword=cst.Name("keepdim"), equal=_eq()))
        return cst.Call(func=cst.Attribute(value=masked, attr=cst.Name("sum")), args=args)

    def leave_Subscript(
        self, original: cst.Subscript, updated: cst.Subscript
    ) -> cst.BaseExpression:
        names = _element_names(updated)
        if names is None or not ({self.slot, self.token} & set(names)):
            return updated
        value = updated.value
        if names == [self.token]:  # x[b]: every token's x
            return value
        if names == [None, self.token]:  # x[None, b]
            return updated.with_changes(slice=[cst.SubscriptElement(cst.Index(cst.Name("None")))])
        if names == [self.token, self.slot]:
            return self._weights(value, keepdim=False)
        if names == [self.token, self.slot, None]:
            return self._weights(value, keepdim=True)
        return updated  # left as it is: the check below finds the names still read

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        f = updated.func
        if not (isinstance(f, cst.Attribute) and f.attr.value in ("index_add_", "index_add")):
            return updated
        args = updated.args
        if len(args) != 3 or any(a.keyword is not None or a.star for a in args):
            return updated
        dim, index, source = (a.value for a in args)
        if not (isinstance(dim, cst.Integer) and dim.value == "0"):
            return updated
        if not (isinstance(index, cst.Name) and index.value == self.token):
            return updated
        # index_add_(0, b, v): v's rows added at their tokens; dense, v has every token's
        add = "add_" if f.attr.value == "index_add_" else "add"
        self.added += 1
        return updated.with_changes(func=f.with_changes(attr=cst.Name(add)), args=[cst.Arg(source)])


def _neg1() -> cst.UnaryOperation:
    return cst.UnaryOperation(operator=cst.Minus(), expression=cst.Integer("1"))


def _eq() -> cst.AssignEqual:
    return cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
    )


def _is_range(e: cst.BaseExpression) -> bool:
    return isinstance(e, cst.Call) and isinstance(e.func, cst.Name) and e.func.value == "range"


class _FirstOf(cst.CSTTransformer):
    """`expert[0]` -> `expert`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def leave_Subscript(
        self, original: cst.Subscript, updated: cst.Subscript
    ) -> cst.BaseExpression:
        v, sl = updated.value, updated.slice
        if (
            isinstance(v, cst.Name)
            and v.value == self.name
            and len(sl) == 1
            and isinstance(sl[0].slice, cst.Index)
            and isinstance(sl[0].slice.value, cst.Integer)
            and sl[0].slice.value.value == "0"
        ):
            return v.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        return updated


def _unwrap_first(st: cst.BaseStatement, expert: str) -> bool:
    """`expert_idx = expert_idx[0]` (the index taken out of nonzero()'s row)."""
    assigned = name_assignment(st)
    if assigned is None or assigned[0] != expert:
        return False
    value = assigned[1]
    return (
        isinstance(value, cst.Subscript)
        and isinstance(value.value, cst.Name)
        and value.value.value == expert
        and len(value.slice) == 1
        and isinstance(value.slice[0].slice, cst.Index)
        and isinstance(value.slice[0].slice.value, cst.Integer)
        and value.slice[0].slice.value.value == "0"
    )


def _dense(parsed: Parsed, for_: cst.For, torch: str) -> str | None:
    if not isinstance(for_.target, cst.Name) or for_.orelse is not None or for_.asynchronous:
        return None
    if not isinstance(for_.body, cst.IndentedBlock):
        return None
    expert = for_.target.value
    body = list(for_.body.body)
    if body and _unwrap_first(body[0], expert):
        body = body[1:]
    elif not _is_range(for_.iter):
        # a row of nonzero() read as `expert_idx[0]` (Switch's `self[f"expert_{expert_idx[0]}"]`):
        # the int itself once the loop is over range()
        unwrapped = [st.visit(_FirstOf(expert)) for st in body]
        if not all(isinstance(st, cst.BaseStatement) for st in unwrapped):
            return None
        body = [st for st in unwrapped if isinstance(st, cst.BaseStatement)]
    found = [(i, g) for i, st in enumerate(body) if (g := _gather(st, torch)) is not None]
    if len(found) != 1:
        return None
    at, (slot, token, mask_expr) = found[0]
    mask = _expert_mask(mask_expr, expert)
    if mask is None or slot == token:
        return None
    if any({slot, token} & loaded_names(st) for st in body[:at]):
        return None
    densify = _Densify(slot, token, mask)
    rest: list[cst.BaseStatement] = []
    for st in body[at + 1 :]:
        new = st.visit(densify)
        if not isinstance(new, cst.BaseStatement):
            return None
        rest.append(new)
    if any({slot, token} & loaded_names(st) for st in rest):
        return None  # a use of the gather the dense form does not know
    if not densify.added:  # the experts' outputs are not added at their tokens
        return None
    gather_line = body[at]
    assert isinstance(gather_line, cst.SimpleStatementLine)
    leading = list(gather_line.leading_lines)  # its comments and blank lines stay
    new_body: list[cst.BaseStatement] = [*body[:at], *rest]  # the gather itself goes
    if at < len(new_body) and leading:
        first = new_body[at]
        own = list(getattr(first, "leading_lines", ()))
        new_body[at] = first.with_changes(leading_lines=[*leading, *own])
    range_ = call(
        cst.Name("range"),
        cst.Subscript(
            value=cst.Attribute(value=mask.value, attr=cst.Name("shape")),
            slice=[cst.SubscriptElement(cst.Index(cst.Integer("0")))],
        ),
    )
    new_for = for_.with_changes(
        iter=range_,
        body=for_.body.with_changes(body=new_body),
    )
    block = parsed.parent(for_)
    stmts = list(getattr(block, "body", ()))
    if block is None or for_ not in stmts:
        return None
    i = stmts.index(for_)
    stmts[i] = new_for
    # the experts hit (`expert_hit = ....nonzero()`), read by the loop only: no longer needed
    if isinstance(for_.iter, cst.Name):
        made = _made_only_for(parsed, stmts[:i], for_, for_.iter.value)
        if made is not None:
            j = stmts.index(made)
            del stmts[j]
            if j < len(stmts) and made.leading_lines:
                nxt = stmts[j]
                stmts[j] = nxt.with_changes(leading_lines=[*made.leading_lines, *nxt.leading_lines])
    new_block = block.with_changes(body=stmts)
    module = parsed.module.deep_replace(block, new_block)
    assert isinstance(module, cst.Module)
    return module.code


def _made_only_for(
    parsed: Parsed, before: list[cst.BaseStatement], for_: cst.For, name: str
) -> cst.SimpleStatementLine | None:
    """The statement before the loop that makes `name` (`name = ...`), when nothing in the
    function but the loop reads it."""
    fn = parsed.enclosing(for_, cst.FunctionDef)
    if fn is None:
        return None
    uses = [
        n
        for n in parsed.nodes(cst.Name)
        if n.value == name and parsed.enclosing(n, cst.FunctionDef) is fn
    ]
    if len(uses) != 2:  # its assignment and the loop's iterable
        return None
    for st in reversed(before):
        assigned = name_assignment(st)
        if assigned is not None and assigned[0] == name and isinstance(st, cst.SimpleStatementLine):
            return st
    return None


def moe_candidates(site: Site) -> list[Candidate]:
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    torch = torch_alias(parsed) or "torch"
    for for_ in parsed.covering(site.line, cst.For):
        code = _dense(parsed, for_, torch)
        if code is not None:
            return [Candidate("moe-dense", TITLE, {site.path: _finish(parsed, code)})]
    return []


REWRITERS = [
    Rewriter(
        "moe-dense",
        "expert routing loop over torch.where(mask) -> every expert on every token",
        frozenset({"OLX802", "OLX803"}),
        moe_candidates,
    ),
]
