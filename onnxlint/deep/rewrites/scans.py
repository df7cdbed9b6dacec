"""A Python recurrence over a dynamic dim, as torch's `scan` (OLX804 at the loop: the loop
unrolls to the example's size and pins the dim).

    ys = []
    for i in range(n):
        state = a[:, :, i] * state + b[:, :, i]
        ys.append(state @ c[:, i])
    out = torch.stack(ys, dim=-1)

(a state-space model's scan without its CUDA kernel, an RNN cell unrolled) becomes

    def scan_step(carry, xs):
        (state,) = carry
        a_i, b_i, c_i = xs
        state = a_i * state + b_i
        return (state.clone(),), (state @ c_i).clone()

    scan_init = (state,)
    scan_xs = (a.movedim(2, 0).clone(...), b.movedim(2, 0).clone(...), c.movedim(1, 0).clone(...))
    if torch.compiler.is_exporting():  # no gradients in ONNX: ...
        scan_init = tuple(t.detach() for t in scan_init)
        scan_xs = tuple(t.detach() for t in scan_xs)
    (state,), ys_scanned = scan(scan_step, scan_init, scan_xs)
    out = ys_scanned.movedim(0, -1)

(with `from torch._higher_order_ops.scan import scan` above the step) which torch.export
keeps as one `scan` with a dynamic length, and the ONNX exporter translates. While exporting,
the scan's inputs are detached: torch 2.13's ONNX decomposition runs a scan whose inputs need
gradients through autograd, and fails there (a SymInt among the saved intermediates); eager
runs keep their gradients. Each sliced tensor is copied into the contiguous layout
(`clone(memory_format=torch.contiguous_format)`): non-strict torch.export fails to wrap a
strided one of symbolic size as the scan's input.

The loop's index may only pick one element of a dim of tensors the loop does not
assign (`x[:, :, i]`, every other index a bare `:`); the names the body assigns and reads
before assigning are the carried state (their last values are assigned back); the rest are
the step's own. What the loop computes is for the proof to confirm (eager outputs at two
sizes, the export, onnxruntime).
"""

from __future__ import annotations

import libcst as cst

from onnxlint.deep.rewrites.base import Candidate, Parsed, Rewriter, Site, fresh_name, torch_alias
from onnxlint.deep.rewrites.exprs import ensure_import, name_assignment

_DETACH = "no gradients in ONNX: torch 2.13 cannot decompose a scan that needs them"


def _range_loop(for_: cst.For) -> tuple[str, cst.BaseExpression] | None:
    """(index, n) of `for index in range(n):`."""
    it = for_.iter
    if not isinstance(for_.target, cst.Name) or for_.orelse is not None:
        return None
    if not (
        isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range"
    ):
        return None
    if len(it.args) != 1 or it.args[0].keyword is not None or it.args[0].star:
        return None
    return for_.target.value, it.args[0].value


def _stack(node: cst.BaseExpression, torch: str, lst: str) -> cst.BaseExpression | None:
    """The dim of `torch.stack(lst[, dim])`: an expression, or None when it is not one."""
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
        return None
    f = node.func
    if not (isinstance(f.value, cst.Name) and f.value.value == torch and f.attr.value == "stack"):
        return None
    args = list(node.args)
    if not args or args[0].keyword is not None or not isinstance(args[0].value, cst.Name):
        return None
    if args[0].value.value != lst or len(args) > 2:
        return None
    if len(args) == 1:
        return cst.Integer("0")
    if args[1].keyword is not None and args[1].keyword.value != "dim":
        return None
    dim = args[1].value
    ok = isinstance(dim, cst.Integer) or (
        isinstance(dim, cst.UnaryOperation) and isinstance(dim.expression, cst.Integer)
    )
    return dim if ok else None


def _index_position(sub: cst.Subscript, index: str) -> int | None:
    """k for `x[:, ..., index, ...]` (index at position k, every other element `:`)."""
    at = None
    for k, el in enumerate(sub.slice):
        s = el.slice
        if isinstance(s, cst.Index) and isinstance(s.value, cst.Name) and s.value.value == index:
            if at is not None:
                return None
            at = k
        elif not (
            isinstance(s, cst.Slice) and s.lower is None and s.upper is None and s.step is None
        ):
            return None
    return at


class _Names(cst.CSTVisitor):
    """Names read and assigned, in order, in a statement."""

    def __init__(self) -> None:
        self.reads: list[str] = []
        self.writes: list[str] = []

    def visit_Assign(self, node: cst.Assign) -> bool:
        node.value.visit(self)
        for t in node.targets:
            if isinstance(t.target, cst.Name):
                self.writes.append(t.target.value)
            else:
                t.target.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.reads.append(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False


def _names(node: cst.CSTNode) -> _Names:
    v = _Names()
    node.visit(v)
    return v


class _Slices(cst.CSTTransformer):
    """`x[:, :, index]` -> the step's slice of x (collected: (x, k) -> its name)."""

    def __init__(self, index: str, local: set[str], parsed: Parsed) -> None:
        self.index, self.local, self.parsed = index, local, parsed
        self.xs: dict[tuple[str, int], str] = {}
        self.bad = False
        self.taken: list[str] = []

    def leave_Subscript(
        self, original: cst.Subscript, updated: cst.Subscript
    ) -> cst.BaseExpression:
        if self.index not in {n.value for n in _walk_names(original.slice)}:
            return updated
        k = _index_position(original, self.index)
        if k is None or not isinstance(original.value, cst.Name):
            self.bad = True
            return updated
        base = original.value.value
        if base in self.local:
            self.bad = True
            return updated
        key = (base, k)
        if key not in self.xs:
            name = fresh_name(self.parsed, f"{base}_i", self.taken)
            self.taken.append(name)
            self.xs[key] = name
        return cst.Name(self.xs[key])


def _walk_names(nodes: object) -> list[cst.Name]:
    out: list[cst.Name] = []

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            out.append(n)

    for n in nodes if isinstance(nodes, (list, tuple)) else [nodes]:
        if isinstance(n, cst.CSTNode):
            n.visit(V())
    return out


def _tuple(names: list[str]) -> str:
    return f"({names[0]},)" if len(names) == 1 else f"({', '.join(names)})"


def scan_candidates(site: Site) -> list[Candidate]:
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    loops = parsed.at_line(site.line, cst.For)
    if len(loops) != 1:
        return []
    for_: cst.For = loops[0]
    rl = _range_loop(for_)
    block = parsed.parent(for_)
    func = parsed.enclosing(for_, cst.FunctionDef)
    if rl is None or not isinstance(block, cst.IndentedBlock) or func is None:
        return []
    index, _n = rl
    body = list(for_.body.body) if isinstance(for_.body, cst.IndentedBlock) else []
    stmts = list(block.body)
    i = stmts.index(for_)
    if i == 0 or i + 1 >= len(stmts) or not body:
        return []
    init, after = name_assignment(stmts[i - 1]), name_assignment(stmts[i + 1])
    if init is None or after is None:
        return []
    lst, empty = init
    if not (isinstance(empty, cst.List) and not empty.elements):
        return []
    torch = torch_alias(parsed) or "torch"
    out_name, stack = after
    dim = _stack(stack, torch, lst)
    if dim is None:
        return []
    # the body: `name = expr` lines and one `lst.append(expr)`, the last
    *steps, last = body
    if not (isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1):
        return []
    app = last.body[0]
    if not (
        isinstance(app, cst.Expr)
        and isinstance(app.value, cst.Call)
        and isinstance(app.value.func, cst.Attribute)
        and isinstance(app.value.func.value, cst.Name)
        and app.value.func.value.value == lst
        and app.value.func.attr.value == "append"
        and len(app.value.args) == 1
    ):
        return []
    y = app.value.args[0].value
    if any(name_assignment(s) is None for s in steps):
        return []
    # carried: assigned in the body and read before (or without) being assigned there
    assigned: list[str] = []
    carried: list[str] = []
    for s in steps:
        n = _names(s)
        for r in n.reads:
            if (
                r not in assigned
                and r not in carried
                and r in {w for t in steps for w in _names(t).writes}
            ):
                carried.append(r)
        assigned += n.writes
    for r in _names(last).reads:
        if r not in assigned and r in {w for t in steps for w in _names(t).writes}:
            carried.append(r)
    if not carried or lst in assigned or index in assigned:
        return []
    # the step's own names must not be read after the loop (except the stack's target)
    later = [st for st in stmts[i + 2 :]]
    own = set(assigned) - set(carried)
    for st in later:
        if own & (set(_names(st).reads) - {out_name}):
            return []
    # the loop's index only as x[:, index]; the list only in its three lines
    if sum(1 for n in parsed.nodes(cst.Name) if n.value == lst and _inside(parsed, n, func)) != 3:
        return []
    slicer = _Slices(index, set(assigned) | set(carried), parsed)
    new_steps = [_visited(s, slicer) for s in steps]
    new_y = y.visit(slicer)
    if not isinstance(new_y, cst.BaseExpression):
        return []
    if slicer.bad or not slicer.xs:
        return []
    if any(
        n.value == index for s in [*new_steps, new_y] for n in _walk_names(s)
    ):  # another use of the index
        return []
    step_name = fresh_name(parsed, "scan_step", list(slicer.xs.values()))
    scan_name = fresh_name(parsed, "scan", [step_name, *slicer.xs.values()])
    ys_name = fresh_name(parsed, f"{lst}_scanned", [step_name, *slicer.xs.values()])
    xs_names = list(slicer.xs.values())
    # each a contiguous copy: non-strict torch.export (2.13) fails to wrap a strided slice
    # of symbolic size as a scan input ("vr must not be None for symbol ...")
    xs_exprs = [
        f"{b}.movedim({k}, 0).clone(memory_format={torch}.contiguous_format)"
        for (b, k) in slicer.xs
    ]
    m = cst.Module([])
    indent = "    "
    body_code = "".join(
        m.code_for_node(s.with_changes(leading_lines=[]))
        for s in new_steps
        if isinstance(s, cst.SimpleStatementLine)
    )
    body_code = "".join(indent + line + "\n" for line in body_code.splitlines())
    returned = _tuple([f"{c}.clone()" for c in carried])
    fn = (
        f"def {step_name}(carry, xs):\n"
        f"    {_tuple(carried)} = carry\n"
        f"    {_tuple(xs_names)} = xs\n"
        f"{body_code}"
        f"    return {returned}, ({m.code_for_node(new_y)}).clone()\n"
    )
    init_name = fresh_name(parsed, "scan_init", [step_name, scan_name, ys_name, *xs_names])
    seq_name = fresh_name(parsed, "scan_xs", [step_name, scan_name, ys_name, init_name, *xs_names])
    call = f"{_tuple(carried)}, {ys_name} = {scan_name}({step_name}, {init_name}, {seq_name})\n"
    prepare = [
        f"{init_name} = {_tuple(carried)}\n",
        f"{seq_name} = {_tuple(xs_exprs)}\n",
        f"if {torch}.compiler.is_exporting():  # {_DETACH}\n"
        f"    {init_name} = tuple(t.detach() for t in {init_name})\n"
        f"    {seq_name} = tuple(t.detach() for t in {seq_name})\n",
    ]
    result = f"{out_name} = {ys_name}.movedim(0, {m.code_for_node(dim)})\n"
    cfg = parsed.module.config_for_parsing
    new_stmts: list[cst.BaseStatement] = [
        cst.parse_statement(
            f"from torch._higher_order_ops.scan import scan as {scan_name}\n"
            if scan_name != "scan"
            else "from torch._higher_order_ops.scan import scan\n",
            config=cfg,
        ).with_changes(leading_lines=_leading(stmts[i - 1])),
        cst.parse_statement(fn, config=cfg),
        *(cst.parse_statement(p, config=cfg) for p in prepare),
        cst.parse_statement(call, config=cfg),
        cst.parse_statement(result, config=cfg),
    ]
    new_block = block.with_changes(body=[*stmts[: i - 1], *new_stmts, *stmts[i + 2 :]])
    code = parsed.replace(block, new_block)
    if torch_alias(parsed) is None:
        code = ensure_import(cst.parse_module(code), "torch", "import torch").code
    return [
        Candidate(
            "scan",
            f"Run the loop over range() as torch's scan (carrying {', '.join(carried)})",
            {site.path: code},
        )
    ]


def _visited(node: cst.CSTNodeT, v: cst.CSTTransformer) -> cst.CSTNodeT:
    out = node.visit(v)
    assert isinstance(out, type(node))
    return out


def _leading(st: cst.BaseStatement) -> list[cst.EmptyLine]:
    return list(st.leading_lines) if isinstance(st, cst.SimpleStatementLine) else []


def _inside(parsed: Parsed, node: cst.CSTNode, func: cst.CSTNode) -> bool:
    return any(a is func for a in parsed.ancestors(node))


REWRITERS = [
    Rewriter(
        "scan",
        "recurrence over range(n) -> torch scan (the loop's state carried, its outputs stacked)",
        frozenset({"OLX804"}),
        scan_candidates,
    ),
]
