"""Deep fixes, proven before they are offered (onnxlint/deep/fixes.py): each rewrite kind
on a small real model through the real warm worker, and rewrites that would change the
outputs, which must not be offered."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from onnxlint.deep.targets import Target

pytestmark = [pytest.mark.deep, pytest.mark.slow, pytest.mark.xdist_group("deep")]

MODELS = """
import torch


class Where(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if y.sum() > 0:
            y = y * 2
        else:
            y = y - 1
        return y


def where():
    return Where(), (torch.randn(3, 4),), {}, ({0: "batch"},)


class ShapeChanges(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if y.sum() > 0:
            y = y.sum(dim=0, keepdim=True)
        return y


def shape_changes():
    return ShapeChanges(), (torch.randn(3, 4),), {}, ({0: "batch"},)


class Cond(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if y.mean() > 0:
            for _ in range(2):
                y = y * 0.5
        else:
            y = -y
        return y


def cond():
    return Cond(), (torch.randn(3, 4),)


class Check(torch.nn.Module):
    def forward(self, x):
        if torch.isnan(x).any():
            raise ValueError("NaN in the input")
        return x.relu() + 1


def check():
    return Check(), (torch.randn(3, 4),), {}, ({0: "batch"},)


class IntShape(torch.nn.Module):
    def forward(self, x):
        b = int(x.shape[0])
        return x.reshape(b, -1) * 2


def int_shape():
    return IntShape(), (torch.randn(3, 2, 4),), {}, ({0: "batch"},)


class Literal(torch.nn.Module):
    def forward(self, x):
        return x.view(2, 12) * 2


def literal():
    return Literal(), (torch.randn(2, 3, 4),), {}, ({0: "batch"},)


class NegativeIndex(torch.nn.Module):
    def forward(self, x, n):
        k = int(n)
        return x[:, k:]


def negative_index():
    return NegativeIndex(), (torch.randn(4, 6), torch.tensor(-2)), {}, None


class ItemSize(torch.nn.Module):
    def forward(self, x, n):
        k = int(n)
        return torch.zeros(k) + x.sum()


def item_size():
    return ItemSize(), (torch.randn(4, 6), torch.tensor(3)), {}, None


class AddBias(torch.nn.Module):
    def forward(self, x, y, bias):
        return x + y + bias


def aliased():
    x = torch.randn(2, 3)
    return AddBias(), (x, x, 0.1)


class Attention3d(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(8, 8)

    def forward(self, x, kv):
        return torch.nn.functional.scaled_dot_product_attention(self.q(x), kv, kv * 2)


class ScatterMean(torch.nn.Module):
    def forward(self, x, index):
        base = torch.zeros(4, x.shape[1])
        return base.scatter_reduce(0, index, x, reduce="mean", include_self=False) + 1


def scatter_mean():
    x = torch.randn(6, 3)
    index = torch.tensor([[0, 0, 0], [1, 1, 1], [0, 0, 0], [2, 2, 2], [3, 3, 3], [1, 1, 1]])
    return ScatterMean(), (x, index)


class RowLoop(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        # rows, one at a time
        out = []
        for row in x:
            out.append(self.lin(row) * 2)
        return torch.stack(out)


def row_loop():
    return RowLoop(), (torch.randn(3, 4),), {}, ({0: "batch"},)


class RowLoopItem(torch.nn.Module):
    def forward(self, x):
        return torch.stack([r * r.max().item() for r in x])


def row_loop_item():
    return RowLoopItem(), (torch.randn(3, 4),), {}, ({0: "batch"},)


def attention_3d():
    return Attention3d().eval(), (torch.randn(2, 5, 8), torch.randn(2, 7, 8)), {}, None


class Moe(torch.nn.Module):
    # transformers' routing loop (Mixtral, Qwen2-MoE, ...): each expert on its tokens
    def __init__(self, experts=3, top_k=2):
        super().__init__()
        self.num_experts, self.top_k = experts, top_k
        self.gate = torch.nn.Linear(8, experts, bias=False)
        self.experts = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(experts))

    def forward(self, x):
        weights, chosen = torch.topk(self.gate(x).softmax(dim=-1), self.top_k, dim=-1)
        out = torch.zeros_like(x)
        expert_mask = torch.nn.functional.one_hot(chosen, self.num_experts).permute(2, 1, 0)
        hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in hit:
            expert_idx = expert_idx[0]
            slot, token = torch.where(expert_mask[expert_idx])
            y = self.experts[expert_idx](x[token]) * weights[token, slot, None]
            out.index_add_(0, token, y)
        return out


def moe():
    torch.manual_seed(0)
    return Moe(), (torch.randn(6, 8),), {}, ({0: "tokens"},)


class SwitchExperts(torch.nn.ModuleDict):
    # Switch Transformers' experts: each looked up by name with the nonzero() row's [0]
    def __init__(self, n=3):
        super().__init__()
        for idx in range(n):
            self[f"expert_{idx}"] = torch.nn.Linear(8, 8)

    def forward(self, x, selected, weights):
        out = torch.zeros_like(x)
        expert_mask = selected.permute(2, 1, 0)
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
            y = self[f"expert_{expert_idx[0]}"](x[None, top_x].reshape(-1, 8))
            out.index_add_(0, top_x, y * weights[top_x, idx, None])
        return out


def switch_experts():
    torch.manual_seed(0)
    selected = torch.nn.functional.one_hot(torch.tensor([[0], [2], [2], [1], [0]]), 3)
    return SwitchExperts(), (torch.randn(5, 8), selected, torch.rand(5, 1)), {}, None


class MoeAcrossTokens(Moe):
    # an expert that centres its tokens on their mean: not token by token
    def forward(self, x):
        weights, chosen = torch.topk(self.gate(x).softmax(dim=-1), self.top_k, dim=-1)
        out = torch.zeros_like(x)
        expert_mask = torch.nn.functional.one_hot(chosen, self.num_experts).permute(2, 1, 0)
        hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in hit:
            slot, token = torch.where(expert_mask[expert_idx].squeeze(0))
            h = x[token]
            y = (h - h.mean(dim=0, keepdim=True)) * weights[token, slot, None]
            out.index_add_(0, token, y)
        return out


class ScanRows(torch.nn.Module):
    # pytorch#153705: a scan body that indexes with its loop index's `.item()`
    def forward(self, x, y):
        def body(acc, z, iv, x, y):
            z = z.clone()
            i = iv.item()
            z[i] = (x[i, :] * y).sum(dim=-1) + acc
            return [acc + 1, z, iv]

        z = torch.zeros((x.shape[0], y.shape[0]))
        r = torch.ops.higher_order.scan(
            body, [torch.zeros(()), z], [torch.arange(x.shape[0])], [x, y]
        )
        return r[1]


def scan_rows():
    return ScanRows(), (torch.rand(3, 4), torch.rand(5, 4)), {}, ({0: "rows"}, {0: "cols"})


class Euler(torch.nn.Module):
    # a complex spectrum from magnitudes and phases: `1j * x` has no ONNX translation
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 8)

    def forward(self, x):
        mag, p = self.lin(x).chunk(2, dim=-1)
        spec = mag.exp() * (torch.cos(p) + 1j * torch.sin(p))
        return torch.view_as_real(spec)


def euler():
    return Euler(), (torch.randn(3, 4),), {}, ({0: "batch"},)


class EulerIstft(torch.nn.Module):
    # pytorch#138830 (vocos): the same spectrum into torch.istft, whose ONNX model
    # onnxruntime refuses: the mul's rewrite exports, and must still not be offered
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 10)
        self.register_buffer("window", torch.hann_window(8))

    def forward(self, x):
        mag, p = self.lin(x).transpose(1, 2).chunk(2, dim=1)
        spec = mag.exp() * (torch.cos(p) + 1j * torch.sin(p))
        return torch.istft(spec, 8, 2, 8, self.window)


def euler_istft():
    return EulerIstft(), (torch.randn(2, 10, 4),), {}, None


def moe_across_tokens():
    torch.manual_seed(0)
    return MoeAcrossTokens(), (torch.randn(6, 8),), {}, ({0: "tokens"},)


class StridedAttention(torch.nn.Module):
    # T5's and Swin's attention: a relative position bias as the mask; export keeps the
    # reshape of the transposed output as a view, which the ONNX decomposition cannot run
    def __init__(self, inplace=False):
        super().__init__()
        self.q = torch.nn.Linear(32, 32)
        self.bias = torch.nn.Embedding(16, 4)
        self.inplace = inplace

    def forward(self, x):
        shape = x.shape[:-1]
        h = self.q(x).view(*shape, -1, 8).transpose(1, 2)
        pos = torch.arange(h.shape[2])
        rel = (pos[:, None] - pos[None, :] + 8).clamp(0, 15)
        bias = self.bias(rel).permute(2, 0, 1).unsqueeze(0)
        a = torch.nn.functional.scaled_dot_product_attention(h, h, h, attn_mask=bias)
        a = a.transpose(1, 2).contiguous()
        if not self.inplace:
            return a.reshape(*shape, -1)
        o = a.reshape(*shape, -1)  # a view of `a`: scaling it scales `a`
        o.mul_(2)
        return a


def strided_attention():
    return StridedAttention(), (torch.randn(2, 8, 32),), {}, ({0: "batch", 1: "seq"},)


def strided_attention_inplace():
    return StridedAttention(inplace=True), (torch.randn(2, 8, 32),), {}, ({0: "batch", 1: "seq"},)


@torch.library.custom_op("fixproj::grouped_mm", mutates_args=())
def grouped_mm(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    # a CPU grouped matmul: each row times its group's matrix, the groups ending at offs
    out = a.new_zeros(a.shape[0], b.shape[2])
    start = 0
    for g, end in enumerate(offs.tolist()):
        out[start:end] = a[start:end] @ b[g]
        start = end
    return out


@grouped_mm.register_fake
def _(a, b, offs):
    return a.new_empty(a.shape[0], b.shape[2])


@torch.library.custom_op("fixproj::grouped_mm_by_size", mutates_args=())
def grouped_mm_by_size(a: torch.Tensor, b: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    # the same, the groups given by their sizes
    return grouped_mm(a, b, torch.cumsum(sizes, dim=0))


@grouped_mm_by_size.register_fake
def _(a, b, sizes):
    return a.new_empty(a.shape[0], b.shape[2])


class GroupedExperts(torch.nn.Module):
    # transformers' grouped experts: tokens sorted by expert, one grouped matmul
    def __init__(self, by_size=False):
        super().__init__()
        self.gate = torch.nn.Linear(8, 3)
        self.weight = torch.nn.Parameter(torch.randn(3, 8, 8) / 3)
        self.by_size = by_size

    def forward(self, x):
        expert = self.gate(x).argmax(dim=-1)
        _, order = torch.sort(expert)
        per_expert = torch.nn.functional.one_hot(expert, 3).sum(dim=0)
        if self.by_size:
            y = torch.ops.fixproj.grouped_mm_by_size(x[order], self.weight, per_expert)
        else:
            offs = torch.cumsum(per_expert, dim=0).to(torch.int32)
            y = torch.ops.fixproj.grouped_mm(x[order], self.weight, offs=offs)
        return y[torch.argsort(order)]


def grouped_experts():
    torch.manual_seed(0)
    return GroupedExperts(), (torch.randn(7, 8),), {}, ({0: "tokens"},)


def grouped_experts_by_size():
    torch.manual_seed(0)
    return GroupedExperts(by_size=True), (torch.randn(7, 8),), {}, ({0: "tokens"},)


def attend(q, k, v, mask):
    # attention as transformers' interfaces return it: (batch, query, heads, dim)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return out.transpose(1, 2), None


def attend_padded(q, k, v, pad_mask):
    # the other convention: True where a key is padding
    return attend(q, k, v, ~pad_mask)


class PaddedAttention(torch.nn.Module):
    # a padded batch row: the padded queries' mask rows allow no key
    def __init__(self, convention="keep"):
        super().__init__()
        self.qkv = torch.nn.Linear(8, 24)
        self.convention = convention

    def forward(self, x, keep):
        q, k, v = self.qkv(x).view(x.shape[0], x.shape[1], 3, 4, 2).permute(2, 0, 3, 1, 4)
        attn_mask = keep[:, None, :, None] & keep[:, None, None, :]
        if self.convention == "keep":
            out, _ = attend(q, k, v, attn_mask)
        else:
            pad_mask = ~attn_mask
            out, _ = attend_padded(q, k, v, pad_mask)
        return out


def _padded(convention):
    torch.manual_seed(0)
    keep = torch.tensor([[True, True, True, True], [True, True, False, False]])
    return PaddedAttention(convention), (torch.randn(2, 4, 8), keep), {}, None


def padded_attention():
    return _padded("keep")


def padded_attention_other_convention():
    return _padded("pad")


class Recurrence(torch.nn.Module):
    # a state-space model's scan without its CUDA kernel (transformers' Mamba slow path)
    def __init__(self, steps_short=0):
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = torch.nn.Linear(4, 4)
        self.c = torch.nn.Linear(4, 4)
        self.steps_short = steps_short

    def forward(self, x):
        batch, seq_len, _ = x.shape
        a, b, c = self.a(x).sigmoid(), self.b(x), self.c(x)
        state = torch.zeros(batch, 4)
        outs = []
        for i in range(seq_len - self.steps_short):
            state = a[:, i] * state + b[:, i]
            y = state * c[:, i]
            outs.append(y.sum(dim=-1))
        out = torch.stack(outs, dim=1)
        return out, state


def recurrence():
    return Recurrence(), (torch.randn(2, 5, 4),), {}, ({0: "batch", 1: "seq"},)


def recurrence_short():
    # one step fewer than the sequence: a scan over the whole dim would take one more
    return Recurrence(steps_short=1), (torch.randn(2, 5, 4),), {}, ({0: "batch", 1: "seq"},)
"""


@pytest.fixture(scope="module")
def fixproj(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fixproj")
    pkg = root / "fixproj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "models.py").write_text(textwrap.dedent(MODELS).lstrip())
    return root


def _prove(
    analyzer: object, root: Path, factory: str, *, verify: bool = False, strict: bool = False
) -> tuple[object, object]:
    from onnxlint.deep.fixes import prove_fixes

    target = Target(
        name=factory, factory=f"fixproj.models:{factory}", root=root, verify=verify, strict=strict
    )
    res = analyzer.analyze(target, lambda _p, _pct: None, use_cache=False)  # type: ignore[attr-defined]
    assert res.status == "ok", res.detail
    return res, prove_fixes(analyzer, target, res)


def _at(report: object, line: int) -> list[object]:
    return [p for p in report.proofs if p.violation.line == line]  # type: ignore[attr-defined]


def _line(fixproj: Path, text: str, nth: int = 0) -> int:
    """The line of the `nth` occurrence of `text` in the test project's models.py."""
    lines = (fixproj / "fixproj" / "models.py").read_text().splitlines()
    found = [i for i, t in enumerate(lines, 1) if text in t]
    assert len(found) > nth, (text, found)
    return found[nth]


def _found(res: object, code: str, line: int) -> None:
    """The analysis reports `code` at `line`."""
    findings = {(v.code, v.line) for v in res.violations}  # type: ignore[attr-defined]
    assert (code, line) in findings, findings


def _proven(report: object, line: int, kind: str) -> Any:
    """The first proof of the finding at `line`: proven, by a rewrite of `kind`."""
    proofs = _at(report, line)
    assert proofs, report.to_json()  # type: ignore[attr-defined]
    p = proofs[0]
    assert p.proven and p.candidate.kind == kind, report.to_json()  # type: ignore[attr-defined]
    return p


def _not_offered(res: object, report: object, line: int) -> None:
    """No proof of the finding at `line` became a fix, and the finding keeps its words."""
    assert not any(p.fix for p in _at(report, line)), report.to_json()  # type: ignore[attr-defined]
    fixed = report.fixed(res.violations)  # type: ignore[attr-defined]
    assert all(v.fix is None for v in fixed if v.line == line)


def test_tensor_if_of_two_assignments_is_rewritten_with_where(fixproj: Path, analyzer) -> None:
    line = _line(fixproj, "if y.sum() > 0:")
    res, report = _prove(analyzer, fixproj, "where")
    _found(res, "OLX802", line)
    proofs = _at(report, line)
    assert proofs and proofs[0].proven, [(p.candidate.title, p.why) for p in proofs]
    p = proofs[0]
    assert p.candidate.kind == "where"
    assert p.exports and p.eager_match and p.onnx_match
    assert p.sizes == {"batch": [3, 4]}
    assert p.title == "Rewrite with torch.where (exports; outputs match at 2 sizes)"
    # the fix replaces the if/else (its 4 lines) by one torch.where, nothing else
    (edit,) = p.fix.edits
    assert (edit.span.line, edit.span.end_line) == (line, line + 4)
    assert edit.text.strip() == "y = torch.where(y.sum() > 0, y * 2, y - 1)"
    # what was proven is a real change: the finding is gone from the rewritten code
    assert not [v for v in p.found_after if v.code == "OLX802"]


def test_a_rewrite_that_would_change_the_outputs_is_not_offered(fixproj: Path, analyzer) -> None:
    line = _line(fixproj, "if y.sum() > 0:", 1)  # the second model's
    res, report = _prove(analyzer, fixproj, "shape_changes")
    proofs = _at(report, line)
    assert proofs, report.to_json()
    where = next(p for p in proofs if p.candidate.kind == "where")
    # torch.where broadcasts the (1, 4) branch to (B, 4): it exports, but its outputs are not
    # the original's, and the proof says so
    assert where.stage == "eager" and not where.proven, where.to_json()
    assert "differ" in where.why and "shape" in where.why
    _not_offered(res, report, line)  # the finding keeps its words and gets no fix


def test_a_branch_with_a_loop_is_rewritten_with_cond(fixproj: Path, analyzer) -> None:
    line = _line(fixproj, "if y.mean() > 0:")
    _res, report = _prove(analyzer, fixproj, "cond")
    proofs = _at(report, line)
    assert [p.candidate.kind for p in proofs] == ["cond"], report.to_json()
    p = proofs[0]
    assert p.proven, p.to_json()
    assert p.title.startswith("Rewrite with torch.cond (the branches as functions) (exports;")
    text = "".join(e.text for e in p.fix.edits)
    assert "torch.cond(y.mean() > 0, true_fn, false_fn, (y,))" in text


def test_a_check_that_raises_is_skipped_while_exporting(fixproj: Path, analyzer) -> None:
    line = _line(fixproj, "if torch.isnan(x).any():")
    _res, report = _prove(analyzer, fixproj, "check")
    proofs = _at(report, line)
    assert proofs and proofs[0].proven, report.to_json()
    p = proofs[0]
    assert p.candidate.kind == "check"
    (edit,) = p.fix.edits
    assert "torch.compiler.is_exporting()" in edit.text


SCRIPT = """
import torch


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if y.sum() > 0:
            y = y * 2
        else:
            y = y - 1
        return y


model = M()
torch.onnx.export(model, (torch.randn(3, 4),), "m.onnx", dynamo=True)
"""


def test_check_fix_writes_the_proven_rewrite_of_a_script(cli, tmp_path: Path) -> None:
    # the rewrite moves the script's export call up 3 lines: the proof follows it there
    script = tmp_path / "m.py"
    script.write_text(SCRIPT.lstrip())
    r = cli("check", "--deep", "--no-cache", "--diff", "--unsafe-fixes", "m.py", cwd=tmp_path)
    assert "+        y = torch.where(y.sum() > 0, y * 2, y - 1)" in r.stdout, r.stderr
    assert "proven: Rewrite with torch.where (exports; outputs match" in r.stderr
    assert script.read_text() == SCRIPT.lstrip()  # --diff writes nothing
    r = cli(
        "check",
        "--deep",
        "--no-cache",
        "--fix",
        "--unsafe-fixes",
        "--format",
        "json",
        "m.py",
        cwd=tmp_path,
    )
    assert "torch.where(y.sum() > 0, y * 2, y - 1)" in script.read_text(), r.stderr
    assert "OLX802" not in r.stdout, r.stdout
    r = cli("check", "--deep", "--no-cache", "m.py", cwd=tmp_path)
    assert "OLX802" not in r.stdout and r.returncode == 0, (r.stdout, r.stderr)


def test_int_of_a_dynamic_size_is_kept_symbolic(fixproj: Path, analyzer) -> None:
    line = _line(fixproj, "b = int(x.shape[0])")
    res, report = _prove(analyzer, fixproj, "int_shape")
    _found(res, "OLX804", line)
    p = _proven(report, line, "int-size")
    assert p.title.endswith("(exports; outputs match at 2 sizes)")
    (edit,) = p.fix.edits
    assert edit.text.strip() == "b = x.shape[0]"


def test_a_literal_size_becomes_the_inputs_size(fixproj: Path, analyzer) -> None:
    line = _line(fixproj, "return x.view(2, 12) * 2")
    _res, report = _prove(analyzer, fixproj, "literal")
    p = _proven(report, line, "literal-size")
    # the original runs at batch 2 only: the rewrite's ONNX model is checked against its own
    # eager at a second batch size (the dim it pinned now works)
    assert p.sizes == {"batch": [2]} and p.onnx_sizes == {"batch": "batch=3 (the rewrite's own)"}
    assert p.title.endswith(
        "(exports; outputs match at the example size; the ONNX model matches eager at 2 sizes)"
    )
    (edit,) = p.fix.edits
    assert edit.text.strip() == "return x.view(x.shape[0], 12) * 2"


def test_a_size_check_that_would_change_the_outputs_is_not_offered(fixproj: Path, analyzer) -> None:
    # k = int(n) with n = -2 at the example: `x[:, k:]` takes the last two columns; telling
    # export that k is a size (>= 0) would make the model raise there instead. (torch.onnx's
    # strict fallback captures this model; a user of strict export or torch.compile, which
    # has no fallback, gets the finding as an error and is the one a fix would be for.)
    line = _line(fixproj, "k = int(n)")  # the first: NegativeIndex's
    res, report = _prove(analyzer, fixproj, "negative_index", strict=True)
    _found(res, "OLX802", line)
    proofs = _at(report, line)
    assert [p.candidate.kind for p in proofs] == ["size-check", "size-check"], report.to_json()
    for p in proofs:
        assert p.stage == "eager" and "example inputs" in p.why, p.to_json()
    _not_offered(res, report, line)


def test_an_int_read_from_data_is_told_to_be_a_size(fixproj: Path, analyzer) -> None:
    line = _line(fixproj, "k = int(n)", 1)  # the second: ItemSize's
    _res, report = _prove(analyzer, fixproj, "item_size")
    p = _proven(report, line, "size-check")
    (edit,) = p.fix.edits
    assert edit.text == "        k = n.item()\n        torch._check_is_size(k)\n"


def test_aliased_and_scalar_examples_get_their_own_tensors(fixproj: Path, analyzer) -> None:
    line = _line(fixproj, "return AddBias(), (x, x, 0.1)")
    res, report = _prove(analyzer, fixproj, "aliased")
    assert {("OLX822", line), ("OLX823", line)} <= {(v.code, v.line) for v in res.violations}
    by_code = {p.violation.code: p for p in _at(report, line)}
    alias, scalar = by_code["OLX822"], by_code["OLX823"]
    assert alias.proven and alias.candidate.kind == "example-alias", alias.to_json()
    assert scalar.proven and scalar.candidate.kind == "example-scalar", scalar.to_json()
    assert [e.text.strip() for e in alias.fix.edits] == ["return AddBias(), (x, x.clone(), 0.1)"]
    assert [e.text.strip() for e in scalar.fix.edits] == [
        "return AddBias(), (x, x, torch.tensor(0.1))"
    ]
    assert alias.onnx_match and scalar.onnx_match


def test_3d_attention_gets_a_head_dim(fixproj: Path, analyzer) -> None:
    # torch 2.13's ONNX translation of SDPA takes only 4-D inputs (pytorch#152018, #135615)
    line = _line(fixproj, "scaled_dot_product_attention(self.q(x), kv, kv * 2)")
    res, report = _prove(analyzer, fixproj, "attention_3d")
    _found(res, "OLX808", line)
    p = _proven(report, line, "sdpa-4d")
    assert p.exports and p.onnx_match
    (edit,) = p.fix.edits
    assert edit.text.strip() == (
        "return torch.nn.functional.scaled_dot_product_attention(self.q(x).unsqueeze(-3), "
        "kv.unsqueeze(-3), (kv * 2).unsqueeze(-3)).squeeze(-3)"
    )


def test_a_scatter_mean_onnxruntime_gets_wrong_is_a_sum_and_a_count(
    fixproj: Path, analyzer
) -> None:
    line = _line(fixproj, 'base.scatter_reduce(0, index, x, reduce="mean"')
    res, report = _prove(analyzer, fixproj, "scatter_mean", verify=True)
    _found(res, "OLX810", line)
    p = _proven(report, line, "scatter-mean")
    assert p.exports and p.onnx_match
    (edit,) = p.fix.edits
    assert edit.text.splitlines() == [
        "        sums = torch.zeros_like(base).scatter_add(0, index, x)",
        "        counts = torch.zeros_like(base).scatter_add(0, index, torch.ones_like(x))",
        "        return torch.where(counts > 0, sums / counts.clamp(min=1), base) + 1",
    ]


def test_no_fix_is_offered_in_an_installed_package_or_the_standard_library(
    tmp_path: Path,
) -> None:
    import json as stdlib_module

    import torch

    from onnxlint.deep.fixes import in_library

    assert in_library(torch.__file__)  # site-packages
    assert in_library(stdlib_module.__file__)
    assert not in_library(str(tmp_path / "models.py"))


def test_proofs_run_only_when_unsafe_fixes_are_asked_for() -> None:
    import argparse

    from onnxlint.cli.check import deep_fixes_wanted

    def ask(**kw: bool) -> bool:
        base = {"deep": True, "fix": False, "diff": False, "unsafe_fixes": False}
        return deep_fixes_wanted(argparse.Namespace(**{**base, **kw}))

    assert not ask()
    assert not ask(fix=True)  # a rewrite of model code is unsafe: --unsafe-fixes too
    assert not ask(unsafe_fixes=True)  # shown, not asked for
    assert ask(fix=True, unsafe_fixes=True)
    assert ask(diff=True, unsafe_fixes=True)
    assert not ask(deep=False, fix=True, unsafe_fixes=True)


def test_a_loop_that_maps_the_rows_becomes_vmap(fixproj: Path, analyzer) -> None:
    line = _line(fixproj, "for row in x:")
    res, report = _prove(analyzer, fixproj, "row_loop")
    _found(res, "OLX804", line)
    p = _proven(report, line, "vmap")
    assert p.title == "Map over the first dim with torch.vmap (exports; outputs match at 2 sizes)"
    (edit,) = p.fix.edits
    # from `out = []` to the stack; the comment above `out = []` stays
    assert (edit.span.line, edit.span.end_line) == (line - 1, line + 3)
    assert edit.text == "        return torch.vmap(lambda row: self.lin(row) * 2)(x)\n"


def test_a_loop_vmap_cannot_run_is_not_offered(fixproj: Path, analyzer) -> None:
    line = _line(fixproj, "torch.stack([r * r.max().item() for r in x])")
    res, report = _prove(analyzer, fixproj, "row_loop_item")
    assert [p for p in _at(report, line) if p.candidate.kind == "vmap"], report.to_json()
    _not_offered(res, report, line)


def test_an_expert_routing_loop_becomes_dense(fixproj: Path, analyzer) -> None:
    # transformers#38518: the loop over `nonzero()` and `torch.where(mask)` gathers a
    # data-dependent number of tokens; every expert on every token, weighted, exports
    line = _line(fixproj, "for expert_idx in hit:")
    res, report = _prove(analyzer, fixproj, "moe")
    findings = {(v.code, v.line) for v in res.violations}
    proofs = [p for p in report.proofs if p.candidate.kind == "moe-dense"]
    assert proofs and proofs[0].proven, (findings, report.to_json())
    p = proofs[0]
    assert p.violation.line in range(line - 1, line + 6), (p.violation.line, line)
    assert p.exports and p.eager_match and p.onnx_match
    assert p.sizes == {"tokens": [6, 7]}
    assert p.title.endswith("(exports; outputs match at 2 sizes)")
    text = "".join(e.text for e in p.fix.edits)
    assert "for expert_idx in range(expert_mask.shape[0]):" in text
    assert "torch.where" not in text and "nonzero" not in text and "expert_idx[0]" not in text
    assert "self.experts[expert_idx](x)" in text
    assert "(weights * expert_mask[expert_idx].transpose(0, 1)).sum(dim=-1, keepdim=True)" in text
    assert "out.add_(y)" in text
    assert not [v for v in p.found_after if v.code in ("OLX802", "OLX803")]


def test_an_expert_that_mixes_its_tokens_is_not_made_dense(fixproj: Path, analyzer) -> None:
    # the dense form would centre every token on the mean of all of them, not of the
    # expert's own: its outputs differ, and the proof says so
    res, report = _prove(analyzer, fixproj, "moe_across_tokens")
    proofs = [p for p in report.proofs if p.candidate.kind == "moe-dense"]
    assert proofs, ({(v.code, v.line) for v in res.violations}, report.to_json())
    assert not any(p.proven or p.fix for p in proofs), report.to_json()
    assert all(p.stage == "eager" and "differ" in p.why for p in proofs), report.to_json()
    line = _line(fixproj, "h = x[token]")
    assert all(v.fix is None for v in report.fixed(res.violations) if abs(v.line - line) < 4)


def test_an_item_used_as_an_index_in_a_scan_body_indexes_with_the_tensor(
    fixproj: Path, analyzer
) -> None:
    line = _line(fixproj, "z[i] = (x[i, :] * y)")  # where torch fails: an index of SymInt
    res, report = _prove(analyzer, fixproj, "scan_rows")
    findings = {(v.code, v.line) for v in res.violations}
    assert ("OLX803", line) in findings, findings
    p = _proven(report, line, "item-index")
    assert p.exports and p.onnx_match
    assert p.title == (
        "Index with the tensor iv itself, not iv.item() (the scan body returns a copy of iv) "
        "(exports; outputs match at 2 sizes)"
    )
    (edit,) = p.fix.edits
    assert (edit.span.line, edit.span.end_line) == (line - 1, line + 2)  # `i = iv.item()` goes
    assert edit.text.splitlines() == [
        "            z[iv.reshape(1)] = (x[iv.reshape(1), :].squeeze(0) * y).sum(dim=-1) + acc",
        "            return [acc + 1, z, iv.clone()]",
    ]


def test_an_item_with_another_use_than_an_index_gets_no_index_rewrite(tmp_path: Path) -> None:
    from onnxlint.core.violation import Severity, Span, Violation
    from onnxlint.deep.rewrites import Site, Sources, sizes

    path = tmp_path / "m.py"
    path.write_text(
        "def body(z, iv, x):\n"
        "    i = iv.item()\n"
        "    z[i] = x[i] * i\n"  # i read as a number too
        "    return [z, iv]\n"
    )
    v = Violation(
        str(path), Span(2, 1, 2, 2), "OLX803", "got SymInt", Severity.ERROR, source="deep"
    )
    site = Site(v, {"file": str(path), "line": 2}, {}, Sources())
    assert sizes.item_index_candidates(site) == []
    path.write_text(path.read_text().replace("x[i] * i", "x[i] * 2"))
    (cand,) = sizes.item_index_candidates(Site(v, {"file": str(path), "line": 2}, {}, Sources()))
    assert "z[iv.reshape(1)] = x[iv.reshape(1)].squeeze(0) * 2" in cand.files[str(path)]


def test_an_imaginary_number_times_a_tensor_becomes_torch_complex(fixproj: Path, analyzer) -> None:
    line = _line(fixproj, "spec = mag.exp() * (torch.cos(p) + 1j * torch.sin(p))")
    res, report = _prove(analyzer, fixproj, "euler")
    _found(res, "OLX805", line)
    p = _proven(report, line, "complex-scalar")
    assert p.exports and p.onnx_match and p.sizes == {"batch": [3, 4]}
    (edit,) = p.fix.edits
    assert edit.text.strip() == (
        "spec = mag.exp() * (torch.cos(p) + torch.complex(torch.zeros_like(torch.sin(p)), "
        "torch.sin(p)))"
    )


def test_a_complex_rewrite_whose_onnx_model_fails_is_not_offered(fixproj: Path, analyzer) -> None:
    # the rewrite exports, but torch.istft's ONNX model fails the checker (int32 indices):
    # the proof sees a new finding, and the finding keeps its words
    line = _line(fixproj, "spec = mag.exp() * (torch.cos(p) + 1j * torch.sin(p))", 1)
    res, report = _prove(analyzer, fixproj, "euler_istft")
    _found(res, "OLX805", line)
    proofs = _at(report, line)
    assert [p.candidate.kind for p in proofs] == ["complex-scalar"], report.to_json()
    assert not proofs[0].proven, proofs[0].to_json()
    _not_offered(res, report, line)


def test_an_expert_looked_up_by_its_nonzero_row_is_made_dense(fixproj: Path, analyzer) -> None:
    # `expert_idx[0]` of nonzero()'s row becomes the int of range()
    line = _line(fixproj, "for expert_idx in expert_hit:")
    _res, report = _prove(analyzer, fixproj, "switch_experts")
    p = _proven(report, line, "moe-dense")
    assert p.exports and p.onnx_match
    text = "".join(e.text for e in p.fix.edits)
    assert 'self[f"expert_{expert_idx}"](x[None].reshape(-1, 8))' in text
    assert "expert_hit" not in text


def test_a_reshape_onnx_decomposes_to_a_view_copies_the_tensor_first(
    fixproj: Path, analyzer
) -> None:
    # T5's and Swin's attention (transformers): export keeps `a.reshape(...)` of the
    # transposed attention output as a view, which the ONNX decomposition cannot run
    line = _line(fixproj, "return a.reshape(*shape, -1)")
    res, report = _prove(analyzer, fixproj, "strided_attention")
    _found(res, "OLX808", line)
    p = _proven(report, line, "contiguous-copy")
    assert p.exports and p.onnx_match and p.sizes == {"batch": [2, 3], "seq": [8, 9]}
    (edit,) = p.fix.edits
    assert edit.text.strip() == (
        "return a.clone(memory_format=torch.contiguous_format).reshape(*shape, -1)"
    )


def test_a_view_written_in_place_is_not_copied(fixproj: Path, analyzer) -> None:
    # `o` is a view of `a`, scaled in place: a copy would leave `a` unscaled
    line = _line(fixproj, "o = a.reshape(*shape, -1)")
    res, report = _prove(analyzer, fixproj, "strided_attention_inplace")
    _found(res, "OLX808", line)
    proofs = _at(report, line)
    assert [p.candidate.kind for p in proofs] == ["contiguous-copy"], report.to_json()
    assert proofs[0].stage == "eager" and "differ" in proofs[0].why, proofs[0].to_json()
    _not_offered(res, report, line)


def test_a_grouped_matmul_with_no_translation_becomes_one_batched_matmul(
    fixproj: Path, analyzer
) -> None:
    # transformers' MoE experts on the CPU: a grouped_mm custom op with no ONNX translation
    line = _line(fixproj, "y = torch.ops.fixproj.grouped_mm(x[order], self.weight, offs=offs)")
    res, report = _prove(analyzer, fixproj, "grouped_experts")
    _found(res, "OLX807", line)
    p = _proven(report, line, "grouped-mm")
    assert p.exports and p.onnx_match and p.sizes == {"tokens": [7, 8]}
    assert p.title == (
        "Compute `grouped_mm` as one batched matmul (each row times its group's matrix) "
        "(exports; outputs match at 2 sizes)"
    )
    text = "".join(e.text for e in p.fix.edits)
    assert "y = grouped_mm_dense(x[order], self.weight, offs)" in text
    assert "def grouped_mm_dense(mat_a, mat_b, offs):" in text
    assert not [v for v in p.found_after if v.code == "OLX807"]


def test_a_grouped_matmul_of_group_sizes_is_not_rewritten(fixproj: Path, analyzer) -> None:
    # its third argument holds the groups' sizes, not their ends: the outputs would differ
    line = _line(
        fixproj, "y = torch.ops.fixproj.grouped_mm_by_size(x[order], self.weight, per_expert)"
    )
    res, report = _prove(analyzer, fixproj, "grouped_experts_by_size")
    _found(res, "OLX807", line)
    proofs = _at(report, line)
    assert [p.candidate.kind for p in proofs] == ["grouped-mm"], report.to_json()
    assert proofs[0].stage == "eager" and "differ" in proofs[0].why, proofs[0].to_json()
    _not_offered(res, report, line)


def test_fully_masked_attention_rows_are_set_to_zero(fixproj: Path, analyzer) -> None:
    # BERT with a padded batch row: eager PyTorch gives zeros for a mask row that allows no
    # key, the ONNX model the mean of the values; the rewrite zeroes the rows itself
    line = _line(fixproj, "out, _ = attend(q, k, v, attn_mask)")
    res, report = _prove(analyzer, fixproj, "padded_attention", verify=True)
    _found(res, "OLX810", line)
    proofs = _at(report, line)
    assert [p.candidate.kind for p in proofs] == ["masked-rows", "masked-rows"], report.to_json()
    # the first candidate takes the output's dim -2 for the queries: here it is the heads',
    # so the finding stays (a wrong rewrite, refused); the second moves the mask's rows to dim 1
    assert not proofs[0].proven and "still there" in proofs[0].why, proofs[0].to_json()
    p = proofs[1]
    assert p.proven and p.exports and p.onnx_match and p.fix is not None, p.to_json()
    (edit,) = p.fix.edits
    assert edit.text.splitlines() == [  # two lines after the call, the call unchanged
        "            if attn_mask is not None and attn_mask.dtype == torch.bool:"
        "  # rows with no key: zeros",
        "                out = out.masked_fill("
        "~attn_mask.any(-1, keepdim=True).transpose(1, 2), 0)",
    ]


def test_a_mask_of_the_other_convention_gets_no_zeroed_rows(fixproj: Path, analyzer) -> None:
    # True marks padding here: zeroing the rows it does not mask would change the outputs
    line = _line(fixproj, "out, _ = attend_padded(q, k, v, pad_mask)")
    res, report = _prove(analyzer, fixproj, "padded_attention_other_convention", verify=True)
    _found(res, "OLX810", line)
    proofs = _at(report, line)
    assert [p.candidate.kind for p in proofs] == ["masked-rows", "masked-rows"], report.to_json()
    _not_offered(res, report, line)


def test_a_recurrence_over_range_becomes_a_scan(fixproj: Path, analyzer) -> None:
    # the loop unrolls to the example's length and pins the dim; torch's scan keeps it
    line = _line(fixproj, "for i in range(seq_len - self.steps_short):")
    res, report = _prove(analyzer, fixproj, "recurrence")
    _found(res, "OLX804", line)
    p = _proven(report, line, "scan")
    assert p.exports and p.onnx_match and p.sizes == {"batch": [2, 3], "seq": [5, 6]}
    assert p.title == (
        "Run the loop over range() as torch's scan (carrying state) "
        "(exports; outputs match at 2 sizes)"
    )
    text = "".join(e.text for e in p.fix.edits)
    assert "            state = a_i * state + b_i\n" in text
    assert "a.movedim(1, 0).clone(memory_format=torch.contiguous_format)," in text
    # `scan` is a name of this file already (torch.ops.higher_order.scan): the import is renamed
    assert "from torch._higher_order_ops.scan import scan as scan_2\n" in text
    assert "(state,), outs_scanned = scan_2(scan_step, scan_init, scan_xs)" in text
    assert "out = outs_scanned.movedim(0, 1)" in text


def test_a_loop_shorter_than_its_dim_is_not_made_a_scan(fixproj: Path, analyzer) -> None:
    line = _line(fixproj, "for i in range(seq_len - self.steps_short):")
    res, report = _prove(analyzer, fixproj, "recurrence_short")
    _found(res, "OLX804", line)
    proofs = _at(report, line)
    assert [p.candidate.kind for p in proofs] == ["scan"], report.to_json()
    assert proofs[0].stage == "eager" and "differ" in proofs[0].why, proofs[0].to_json()
    _not_offered(res, report, line)


# ------------------------------------------------------------------ onnx-translation

TRANSLATED = """
import torch

TABLE = {}


class Running(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        peak = torch.cummax(y, dim=1).values
        return peak - y


model = Running()
torch.onnx.export(
    model,
    (torch.randn(3, 4),),
    dynamo=True,
    dynamic_shapes=({0: "batch"},),
    custom_translation_table=TABLE,
)
"""

SORTED = """
import torch


class Buckets(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("edges", torch.linspace(-1.0, 1.0, 7))
        self.register_buffer("order", torch.arange(6, -1, -1))

    def forward(self, x):
        edges = self.edges.flip(0)
        return torch.cumprod(x, dim=1, dtype=torch.float64)


torch.onnx.export(Buckets(), (torch.randn(3, 5),), dynamo=True, dynamic_shapes=({0: "b"},))
"""


def _prove_script(analyzer: object, path: Path) -> tuple[object, object]:
    from onnxlint.deep.fixes import prove_fixes
    from onnxlint.deep.scripts import script_target

    target = script_target(path, None, path.parent)
    res = analyzer.analyze(target, lambda _p, _pct: None, use_cache=False)  # type: ignore[attr-defined]
    assert res.status == "ok", res.detail
    return res, prove_fixes(analyzer, target, res)


def _script_line(text: str, part: str) -> int:
    return next(i for i, t in enumerate(text.lstrip().splitlines(), 1) if part in t)


def test_an_op_without_translation_gets_a_proven_onnxscript_translation(
    analyzer, tmp_path: Path
) -> None:
    path = tmp_path / "export_running.py"
    path.write_text(TRANSLATED.lstrip())
    line = _script_line(TRANSLATED, "torch.cummax")
    res, report = _prove_script(analyzer, path)
    _found(res, "OLX805", line)
    p = _proven(report, line, "onnx-translation")
    assert p.exports and p.onnx_match and p.sizes == {"batch": [3, 4]}, p.to_json()
    # the script imports the new module and merges the translation into its named table
    new = tmp_path / "export_running_onnx_translations.py"
    (created,) = [f for f in p.fix.files if f.create]
    assert created.path == str(new) and "def aten_cummax(self, dim):" in created.text
    assert not new.exists()  # proven on the worker's overlay; nothing written
    script = "".join(e.text for e in p.fix.edits)
    assert "from export_running_onnx_translations import aten_cummax" in script
    assert "custom_translation_table={**TABLE, torch.ops.aten.cummax.default: aten_cummax}," in (
        script
    )


def test_a_wrong_translation_is_not_offered(
    analyzer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a translation that exports but computes another thing (cummin for cummax): the ONNX
    # model does not match eager, and the proof refuses it
    from onnxlint.deep.rewrites import translations

    wrong = translations.TRANSLATIONS["aten.cummin.default"]
    monkeypatch.setitem(
        translations.TRANSLATIONS,
        "aten.cummax.default",
        translations.Translation(
            "aten_cummax", wrong.source.replace("aten_cummin", "aten_cummax"), wrong.helpers
        ),
    )
    path = tmp_path / "export_running.py"
    path.write_text(TRANSLATED.lstrip())
    line = _script_line(TRANSLATED, "torch.cummax")
    res, report = _prove_script(analyzer, path)
    proofs = _at(report, line)
    assert [p.candidate.kind for p in proofs] == ["onnx-translation"], report.to_json()
    assert proofs[0].stage == "onnx" and "disagree" in proofs[0].why, proofs[0].to_json()
    _not_offered(res, report, line)


def test_an_argument_the_translation_does_not_support_gets_no_fix(analyzer, tmp_path: Path) -> None:
    # cumprod(..., dtype=): the translation refuses it while exporting, so the finding
    # stays (nothing offered)
    path = tmp_path / "export_buckets.py"
    path.write_text(SORTED.lstrip())
    line = _script_line(SORTED, "torch.cumprod")
    res, report = _prove_script(analyzer, path)
    _found(res, "OLX805", line)  # torch reports its decomposition, prims.prod
    proofs = _at(report, line)
    assert [p.candidate.kind for p in proofs] == ["onnx-translation"], report.to_json()
    assert not proofs[0].proven and "dtype" in proofs[0].why, proofs[0].to_json()
    _not_offered(res, report, line)


def test_the_table_of_the_call_is_extended_or_made() -> None:
    import libcst as cst

    from onnxlint.deep.rewrites.translations import _table_with

    entry = [cst.DictElement(cst.parse_expression("torch.ops.aten.mode.default"), cst.Name("f"))]
    code = cst.Module([]).code_for_node
    extended = _table_with(cst.parse_expression("{torch.ops.x.default: g}"), entry)
    assert extended is not None
    assert code(extended) == "{torch.ops.x.default: g, torch.ops.aten.mode.default: f}"
    assert code(_table_with(None, entry)) == "{torch.ops.aten.mode.default: f}"  # type: ignore[arg-type]
    merged = _table_with(cst.parse_expression("cfg.table"), entry)
    assert code(merged) == "{**cfg.table, torch.ops.aten.mode.default: f}"  # type: ignore[arg-type]
    assert _table_with(cst.parse_expression("make_table()"), entry) is None


CLI_TRANSLATED = """
import torch


class Stats(torch.nn.Module):
    def forward(self, x):
        return torch.kthvalue(x, 2, dim=1).values + torch.hypot(x, x).sum(1)


torch.onnx.export(Stats(), (torch.randn(3, 6),), "stats.onnx", dynamo=True)
"""


def test_check_fix_writes_the_translation_module_and_the_script_exports(
    cli, tmp_path: Path
) -> None:
    import subprocess
    import sys

    script = tmp_path / "stats.py"
    script.write_text(CLI_TRANSLATED.lstrip())
    r = cli("check", "--deep", "--no-cache", "--diff", "--unsafe-fixes", "stats.py", cwd=tmp_path)
    assert "--- /dev/null\n+++ b/stats_onnx_translations.py" in r.stdout, (r.stdout, r.stderr)
    assert "+def aten_kthvalue(self, k, dim=-1, keepdim=False):" in r.stdout
    assert "+def aten_hypot(self, other):" in r.stdout  # reported as prims.hypot
    assert "+from stats_onnx_translations import aten_kthvalue, aten_hypot" in r.stdout
    assert not (tmp_path / "stats_onnx_translations.py").exists()  # --diff writes nothing
    r = cli("check", "--deep", "--no-cache", "--fix", "--unsafe-fixes", "stats.py", cwd=tmp_path)
    assert (tmp_path / "stats_onnx_translations.py").exists(), (r.stdout, r.stderr)
    assert "custom_translation_table={torch.ops.aten.kthvalue.default: aten_kthvalue, " in (
        script.read_text()
    )
    r = cli("check", "--deep", "--no-cache", "stats.py", cwd=tmp_path)
    assert "OLX805" not in r.stdout and r.returncode == 0, (r.stdout, r.stderr)
    # and torch itself, for real: the rewritten script exports
    run = subprocess.run(
        [sys.executable, "stats.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0 and (tmp_path / "stats.onnx").exists(), run.stderr[-2000:]


def test_a_translation_for_a_model_in_another_file_edits_the_script(cli, tmp_path: Path) -> None:
    # the finding is in the model's module; the fix edits the export script (another file)
    # and adds the translations next to it
    (tmp_path / "ranks.py").write_text(
        "import torch\n\n\nclass Ranks(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return torch.median(x, dim=-1).values\n"
    )
    script = tmp_path / "export_ranks.py"
    script.write_text(
        "import torch\nfrom ranks import Ranks\n\n"
        'torch.onnx.export(Ranks(), (torch.randn(2, 7),), "r.onnx", dynamo=True, '
        'dynamic_shapes=({1: "n"},))\n'
    )
    r = cli(
        "check", "--deep", "--no-cache", "--fix", "--unsafe-fixes", "export_ranks.py",
        cwd=tmp_path,
    )  # fmt: skip
    assert "ranks.py:6: OLX805: proven: Register an ONNX translation of median" in r.stderr, (
        r.stdout,
        r.stderr,
    )
    assert "def forward(self, x):" in (tmp_path / "ranks.py").read_text()  # unchanged
    assert "torch.median" in (tmp_path / "ranks.py").read_text()
    text = script.read_text()
    assert "from export_ranks_onnx_translations import aten_median_dim\n" in text, text
    assert "custom_translation_table={torch.ops.aten.median.dim: aten_median_dim})" in text
    assert "def aten_median_dim(" in (tmp_path / "export_ranks_onnx_translations.py").read_text()
    r = cli("check", "--deep", "--no-cache", "export_ranks.py", cwd=tmp_path)
    assert "OLX805" not in r.stdout and r.returncode == 0, (r.stdout, r.stderr)
