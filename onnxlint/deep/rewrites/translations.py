"""ATen ops torch 2.13 cannot translate to ONNX (OLX805), given an ONNX translation of their
own: an onnxscript function, written into a new module next to the export script
(`<script>_onnx_translations.py`), imported by the script and registered through the export
call's `custom_translation_table` (a table written in the call is extended; one given by a
name is merged, `{**table, op: fn}`, so the user's dict is left as it is).

The translations are exact (ONNX opset 18 computes what eager computes, up to float
rounding), and each is proven as every rewrite is: the finding gone, the export succeeding,
ONNX Runtime matching eager at the example and at a second size. An argument a translation
does not support (`searchsorted(..., sorter=)`, `cumprod(..., dtype=)`) raises while
exporting, so the proof fails and nothing is offered.

What torch 2.13 (`torch.onnx.export(..., dynamo=True)`, opset 18) does with ops users call,
measured on 2026-11-27 (one call each on a (3, 8) float tensor; "translates": the export
succeeds and ONNX Runtime runs it):

- no translation in torch 2.13, translated here: searchsorted (`aten.searchsorted.Tensor`:
  compare + ReduceSum), cummax and cummin (`.default`: a j <= i mask + ReduceMax/ReduceMin,
  O(n^2) memory in the scanned dim), kthvalue (`.default`: TopK(largest=0) + Gather),
  median (`.dim`, `.default`: TopK of (n - 1) // 2 + 1, the lower median);
- no real-valued translation in torch 2.13 ("No decompositions registered for the
  real-valued input"; torch decomposes them, and the finding names `prims.prod` and
  `prims.hypot`), translated here: cumprod (the mask + ReduceProd), hypot (Sqrt(x*x + y*y));
- no translation, not covered: mode, nanmedian, unique_consecutive, segment_reduce,
  linalg.inv (`linalg_inv_ex`), slogdet, lu_factor (no exact ONNX form), cdist (the
  finding's advice is a rewrite in torch); no real-valued translation, not covered: erfinv,
  i0, lgamma, digamma, polygamma, special.i1, special.ndtri, frexp, nextafter, gcd;
- translated by torch 2.13 already: bucketize, logcumsumexp, histc, bincount, renorm,
  linalg.det, take, polar, special.erfcx, xlog1py, aminmax, diff, quantile, kron, isin,
  trace, cross, rot90, fmod, heaviside, logaddexp, ldexp, stft, embedding_bag.

Indices of ties (kthvalue, median) are TopK's; eager's may differ on tied values, where the
proof compares them exactly and refuses a translation that does not match.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from onnxlint.deep.rewrites.base import Candidate, Parsed, Rewriter, Site, fresh_name, torch_alias


@dataclass(frozen=True)
class Translation:
    """An onnxscript function for one ATen overload, and the helpers it needs."""

    function: str  # its name in the generated module
    source: str
    helpers: tuple[str, ...] = ()


_HELPERS: dict[str, str] = {
    "_dim_last": '''
def _dim_last(x, dim):
    """The permutation that swaps `dim` and the last dim (its own inverse)."""
    rank = len(x.shape)
    perm = list(range(rank))
    if rank:
        dim = dim % rank
        perm[dim], perm[-1] = perm[-1], perm[dim]
    return perm
''',
    "_upto": '''
def _upto(x):
    """For the last dim of `x`: its positions r, and the mask [i, j] = j <= i."""
    n = op.Squeeze(op.Shape(x, start=-1))
    r = op.Range(op.Constant(value_int=0), n, op.Constant(value_int=1))
    return r, op.LessOrEqual(op.Unsqueeze(r, [0]), op.Unsqueeze(r, [-1]))
''',
    "_cumulative": '''
def _cumulative(self, dim, reduce, fill_with):
    """Cumulative max or min along `dim` with the index of the value taken (the last one
    among equal values, as eager): each position i reduces the positions j <= i."""
    perm = _dim_last(self, dim)
    x = op.Transpose(self, perm=perm)
    r, upto = _upto(x)
    rows = op.Unsqueeze(x, [-2])
    fill = op.Unsqueeze(fill_with(x, [-1], keepdims=1), [-1])
    values = reduce(op.Where(upto, rows, fill), [-1], keepdims=0)
    hit = op.And(upto, op.Equal(rows, op.Unsqueeze(values, [-1])))
    indices = op.ReduceMax(op.Where(hit, r, op.Constant(value_int=-1)), [-1], keepdims=0)
    return op.Transpose(values, perm=perm), op.Transpose(indices, perm=perm)
''',
    "_kth": '''
def _kth(self, k, dim, keepdim):
    """The k-th smallest value along `dim` (k a 1-D int64 tensor) and its index."""
    values, indices = op.TopK(self, k, axis=dim, largest=0, sorted=1)
    last = op.Sub(k, op.Constant(value_ints=[1]))
    values = op.Gather(values, last, axis=dim)
    indices = op.Gather(indices, last, axis=dim)
    if not keepdim:
        values = op.Squeeze(values, [dim])
        indices = op.Squeeze(indices, [dim])
    return values, indices
''',
}

TRANSLATIONS: dict[str, Translation] = {
    "aten.searchsorted.Tensor": Translation(
        "aten_searchsorted",
        '''
def aten_searchsorted(sorted_sequence, self, out_int32=False, right=False, side=None, sorter=None):
    """torch.searchsorted: how many values of the sorted sequence come before each value."""
    if sorter is not None:
        raise NotImplementedError("searchsorted(..., sorter=) has no translation here")
    seq = op.Unsqueeze(sorted_sequence, [-2])
    val = op.Unsqueeze(self, [-1])
    before = op.LessOrEqual(seq, val) if right or side == "right" else op.Less(seq, val)
    count = op.ReduceSum(op.Cast(before, to=INT64), [-1], keepdims=0)
    return op.Cast(count, to=INT32) if out_int32 else count
''',
    ),
    "aten.cummax.default": Translation(
        "aten_cummax",
        '''
def aten_cummax(self, dim):
    """torch.cummax: (values, indices)."""
    return _cumulative(self, dim, op.ReduceMax, op.ReduceMin)
''',
        ("_dim_last", "_upto", "_cumulative"),
    ),
    "aten.cummin.default": Translation(
        "aten_cummin",
        '''
def aten_cummin(self, dim):
    """torch.cummin: (values, indices)."""
    return _cumulative(self, dim, op.ReduceMin, op.ReduceMax)
''',
        ("_dim_last", "_upto", "_cumulative"),
    ),
    "aten.cumprod.default": Translation(
        "aten_cumprod",
        '''
def aten_cumprod(self, dim, dtype=None):
    """torch.cumprod: each position the product of the positions up to it."""
    if dtype is not None:
        raise NotImplementedError("cumprod(..., dtype=) has no translation here")
    perm = _dim_last(self, dim)
    x = op.Transpose(self, perm=perm)
    _, upto = _upto(x)
    one = op.CastLike(op.Constant(value_int=1), x)
    out = op.ReduceProd(op.Where(upto, op.Unsqueeze(x, [-2]), one), [-1], keepdims=0)
    return op.Transpose(out, perm=perm)
''',
        ("_dim_last", "_upto"),
    ),
    "aten.kthvalue.default": Translation(
        "aten_kthvalue",
        '''
def aten_kthvalue(self, k, dim=-1, keepdim=False):
    """torch.kthvalue: (values, indices)."""
    return _kth(self, op.Constant(value_ints=[k]), dim, keepdim)
''',
        ("_kth",),
    ),
    "aten.median.dim": Translation(
        "aten_median_dim",
        '''
def aten_median_dim(self, dim, keepdim=False):
    """torch.median(x, dim): the lower median, (values, indices)."""
    n = op.Gather(op.Shape(self), op.Constant(value_ints=[dim]))
    one = op.Constant(value_ints=[1])
    k = op.Add(op.Div(op.Sub(n, one), op.Constant(value_ints=[2])), one)
    return _kth(self, k, dim, keepdim)
''',
        ("_kth",),
    ),
    "aten.median.default": Translation(
        "aten_median",
        '''
def aten_median(self):
    """torch.median(x): the lower median of all the values."""
    flat = op.Reshape(self, op.Constant(value_ints=[-1]))
    n = op.Shape(flat)
    one = op.Constant(value_ints=[1])
    k = op.Add(op.Div(op.Sub(n, one), op.Constant(value_ints=[2])), one)
    values, _ = _kth(flat, k, 0, False)
    return values
''',
        ("_kth",),
    ),
    "aten.hypot.default": Translation(
        "aten_hypot",
        '''
def aten_hypot(self, other):
    """torch.hypot: sqrt(x**2 + y**2)."""
    return op.Sqrt(op.Add(op.Mul(self, self), op.Mul(other, other)))
''',
    ),
}

_HEADER = '''"""ONNX translations of ATen ops torch.onnx.export cannot translate, registered through
the export call's custom_translation_table (written by onnxlint, proven: the export
succeeds and ONNX Runtime matches eager PyTorch)."""

from onnx_ir import DataType
from onnxscript import opset18 as op

INT32 = DataType.INT32
INT64 = DataType.INT64
'''


def module_text(ops: list[str]) -> str:
    """The generated module: the translations of `ops` (ATen overload names) and the
    helpers they use, in a fixed order."""
    wanted = [TRANSLATIONS[o] for o in ops]
    helpers = [h for h in _HELPERS if any(h in t.helpers for t in wanted)]
    parts = [_HEADER, *(_HELPERS[h] for h in helpers), *(t.source for t in wanted)]
    return "\n\n\n".join(p.strip("\n") for p in parts) + "\n"


ALIASES: dict[str, tuple[str, str]] = {
    "prims.prod.default": ("aten.cumprod.default", "cumprod"),
    "prims.hypot.default": ("aten.hypot.default", "hypot"),
}
"""Ops a finding names that are torch's decomposition of the op the code calls (torch
decomposes an ATen op it cannot translate: `torch.cumprod` is reported as `prims.prod`):
the ATen op to translate, and the name the line must call for it."""


def _aten_op(site: Site, op: str, path: str | None, line: int | None) -> str | None:
    """The ATen overload to translate for a finding's `op` at `path:line`."""
    if op in TRANSLATIONS:
        return op
    if op not in ALIASES or not path or not line:
        return None
    aten, name = ALIASES[op]
    text = site.sources.text(path) or ""
    lines = text.splitlines()
    return aten if 0 < line <= len(lines) and name in lines[line - 1] else None


def _covered(site: Site) -> list[str]:
    """The ops of this finding and of the analysis's other untranslated ops that a
    translation here covers (one module answers them all), the finding's first."""
    op = _aten_op(site, str(site.raw.get("op") or ""), site.path, site.line)
    if op is None:
        return []
    others = [
        _aten_op(site, str(u.get("op")), u.get("file"), u.get("line"))
        for u in site.data.get("unsupported_ops") or []
    ]
    return list(dict.fromkeys([op, *(o for o in others if o is not None)]))


def _export_call(parsed: Parsed, line: int) -> cst.Call | None:
    """The `torch.onnx.export(...)` call at `line` (the script's captured call)."""
    found = [
        c
        for c in parsed.covering(line, cst.Call)
        if isinstance(c.func, cst.Attribute)
        and c.func.attr.value == "export"
        and parsed.code(c.func.value).endswith("onnx")
    ]
    found = [c for c in found if parsed.start_line(c) <= line]
    return found[-1] if found else None


def _new_path(script: Path) -> Path:
    base = f"{script.stem}_onnx_translations"
    path = script.with_name(f"{base}.py")
    k = 2
    while path.exists() or (script.parent / path.stem).exists():
        path = script.with_name(f"{base}_{k}.py")
        k += 1
    return path


def _table_with(
    value: cst.BaseExpression | None, entries: list[cst.DictElement]
) -> cst.BaseExpression | None:
    """The call's table with `entries` added: a dict written in the call extended, a table
    given by a name (or attribute) merged into a new dict; None where that is not safe."""
    if value is None:
        return cst.Dict(elements=entries)
    if isinstance(value, cst.Dict):
        if any(
            not isinstance(e, (cst.DictElement, cst.StarredDictElement)) for e in value.elements
        ):
            return None
        elements = list(value.elements)
        if elements:
            elements[-1] = elements[-1].with_changes(comma=_SPACE)
        return value.with_changes(elements=[*elements, *entries])
    if isinstance(value, cst.Name) and value.value == "None":
        return cst.Dict(elements=entries)
    if isinstance(value, (cst.Name, cst.Attribute)):
        return cst.Dict(
            elements=[
                cst.StarredDictElement(value, comma=_SPACE),
                *entries,
            ]
        )
    return None


_SPACE = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def _with_keyword(args: list[cst.Arg], value: cst.BaseExpression) -> list[cst.Arg]:
    """`args` and `custom_translation_table=value` after them, laid out as they are (one
    argument a line when they are, with the trailing comma they have)."""
    arg = cst.Arg(
        value,
        keyword=cst.Name("custom_translation_table"),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )
    last = args[-1]
    if isinstance(last.comma, cst.Comma):
        between = args[-2].comma if len(args) > 1 else _SPACE
        if not isinstance(between, cst.Comma):
            between = _SPACE
        return [*args[:-1], last.with_changes(comma=between), arg.with_changes(comma=last.comma)]
    return [*args[:-1], last.with_changes(comma=_SPACE), arg]


def translation_candidates(site: Site) -> list[Candidate]:
    if site.violation.code != "OLX805":
        return []
    ops = _covered(site)
    call_at = site.data.get("script_call") or {}
    script = site.target_script
    if not ops or call_at.get("kind") != "onnx" or not script or not call_at.get("file"):
        return []
    call_file = str(call_at["file"])
    # the module goes next to the script the target runs, whose folder is on sys.path
    if os.path.realpath(call_file) != os.path.realpath(script) or script.endswith(".ipynb"):
        return []
    parsed = site.sources.parsed(call_file)
    if parsed is None:
        return []
    node = _export_call(parsed, int(call_at.get("line") or 0))
    if node is None or any(a.star for a in node.args):
        return []  # `**options` may hold a table of its own
    keywords = {a.keyword.value: a for a in node.args if a.keyword is not None}
    dynamo = keywords.get("dynamo")
    if dynamo is not None and not (
        isinstance(dynamo.value, cst.Name) and dynamo.value.value == "True"
    ):
        return []  # the TorchScript exporter takes no custom_translation_table
    torch = torch_alias(parsed)
    if torch is None:
        return []
    new_path = _new_path(Path(script))
    module = new_path.stem
    taken: list[str] = []
    entries: list[cst.DictElement] = []
    imports: list[str] = []
    for o in ops:
        fn = TRANSLATIONS[o].function
        local = fresh_name(parsed, fn, taken)
        taken.append(local)
        imports.append(fn if local == fn else f"{fn} as {local}")
        key = cst.parse_expression(f"{torch}.ops.{o}")
        entries.append(cst.DictElement(key, cst.Name(local), comma=_SPACE))
    entries[-1] = entries[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    table = keywords.get("custom_translation_table")
    value = _table_with(table.value if table is not None else None, entries)
    if value is None:
        return []
    if table is not None:
        new_call = node.with_deep_changes(table, value=value)
    else:
        new_call = node.with_changes(args=_with_keyword(list(node.args), value))
    code = parsed.replace(node, new_call)
    code = _with_import(code, f"from {module} import {', '.join(imports)}")
    names = ", ".join(o.split(".")[1] for o in ops)
    return [
        Candidate(
            "onnx-translation",
            f"Register an ONNX translation of {names} (custom_translation_table, "
            f"in {new_path.name})",
            {call_file: code, str(new_path): module_text(ops)},
            frozenset({str(new_path)}),
        )
    ]


def _with_import(code: str, statement: str) -> str:
    """`code` with `statement` after its leading imports."""
    module = cst.parse_module(code)
    body = list(module.body)
    at = 0
    for i, st in enumerate(body):
        if isinstance(st, cst.SimpleStatementLine) and all(
            isinstance(s, (cst.Import, cst.ImportFrom))
            or (isinstance(s, cst.Expr) and isinstance(s.value, cst.SimpleString))
            for s in st.body
        ):
            at = i + 1
            continue
        break
    body.insert(at, cst.parse_statement(statement + "\n"))
    return module.with_changes(body=body).code


REWRITERS = [
    Rewriter(
        "onnx-translation",
        "ATen op without ONNX translation -> onnxscript in custom_translation_table",
        frozenset({"OLX805"}),
        translation_candidates,
    ),
]
