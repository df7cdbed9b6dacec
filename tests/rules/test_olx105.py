"""OLX105 on whole files: how dynamic dims are declared, where the literal sits, edits."""

from __future__ import annotations

import textwrap

import pytest

from onnxlint.core.config import parse_table
from onnxlint.engine import Engine

HEAD = textwrap.dedent(
    """
    import torch
    from torch.export import Dim


    class Net(torch.nn.Module):
        def forward(self, x, mask=None):
            {body}
    """
)


def lines(body: str, export: str) -> list[tuple[int, str]]:
    text = HEAD.replace("{body}", body) + export + "\n"
    cfg = parse_table({"select": ["OLX105"]}, None)
    return [(v.span.line, v.message) for v in Engine().check("m.py", text, cfg)]


X = "x = torch.randn(2, 3, 4)\n"
DYN0 = X + 'torch.onnx.export(Net().eval(), (x,), dynamic_shapes={{"x": {spec}}})'


@pytest.mark.parametrize(
    "spec",
    ['{0: "batch"}', "{0: Dim('batch')}", "{0: Dim.DYNAMIC}", "(Dim('b'), None, None)", "{0: B}"],
)
def test_dim_spellings(spec: str) -> None:
    export = DYN0.format(spec=spec)
    if "B}" in spec:
        export = "B = Dim('batch', min=1)\n" + export
    assert [ln for ln, _ in lines("return x.view(2, 12)", export)] == [8]


@pytest.mark.parametrize("spec", ["{0: Dim.AUTO}", "{0: Dim.STATIC}", "None", "{1: 'seq'}"])
def test_not_dynamic_at_dim0(spec: str) -> None:
    assert lines("return x.view(2, 12)", DYN0.format(spec=spec)) == []


def test_dynamic_axes_list_form_and_input_names() -> None:
    export = X + (
        'torch.onnx.export(Net(), (x,), "m.onnx", input_names=["pixels"],'
        ' dynamic_axes={"pixels": [0]}, dynamo=False)'
    )
    found = lines("return torch.reshape(x, (2, 12))", export)
    assert [ln for ln, _ in found] == [8] and "pixels_dynamic_axes_1" in found[0][1]


def test_expand_aligns_from_the_right() -> None:
    export = DYN0.format(spec='{0: "batch"}')
    assert [ln for ln, _ in lines("return x.expand(5, 2, 3, 4)", export)] == [8]
    assert lines("return x.expand(2, -1, -1, -1)", export) == []


def test_broadcast_forms() -> None:
    export = DYN0.format(spec='{0: "batch"}')
    assert lines("x += torch.ones((2, 3, 4)); return x", export) != []
    assert lines("return torch.add(x.float(), torch.full((2, 3, 4), 0.5))", export) != []
    assert lines("return x.add_(torch.zeros(2, 3, 4))", export) != []
    assert lines("return x + torch.zeros(1, 3, 4)", export) == []
    assert lines("return x + torch.zeros(3, 4)", export) == []
    assert lines("return x @ torch.zeros(2, 4, 4)", export) == []


def test_rebound_input_is_not_followed() -> None:
    export = DYN0.format(spec='{0: "batch"}')
    assert lines("x, _ = self.rnn(x); return x.view(2, 12)", export) == []
    assert lines("x = x.permute(1, 0, 2); return x.view(3, 8)", export) == []


def test_helper_function_is_followed() -> None:
    text = textwrap.dedent(
        """
        import torch

        def head(t):
            return t.view(2, 12)

        class Net(torch.nn.Module):
            def forward(self, x):
                return head(x * 2)

        torch.onnx.export(Net(), (torch.randn(2, 3, 4),), dynamic_shapes=({0: "batch"},))
        """
    )
    cfg = parse_table({"select": ["OLX105"]}, None)
    found = Engine().check("m.py", text, cfg)
    assert [(v.span.line, v.span.column) for v in found] == [(5, 19)]
    assert "input `x`" in found[0].message and "'batch'" in found[0].message


def test_right_operand_followed_only_after_a_number() -> None:
    export = DYN0.format(spec='{0: "batch"}')
    assert [ln for ln, _ in lines("y = 1 - x; return y.view(2, 12)", export)] == [8]
    assert lines("y = self.bias * x; return y.view(2, 12)", export) == []


def test_view_flags_only_a_fixed_element_count() -> None:
    export = DYN0.format(spec='{0: "batch"}')
    assert [ln for ln, _ in lines("return x.view(2, self.dim * 4)", export)] == [8]
    assert lines("n, c, d = x.shape; return x.reshape(1, n, c * d)", export) == []
    assert lines("return x.reshape(1, x.size(0), 12)", export) == []
    assert lines("return x.view(2, seq, 6)", export) == []


def test_concat_needs_matching_sizes_off_the_concat_dim() -> None:
    export = DYN0.format(spec='{0: "batch"}')
    assert [
        ln for ln, _ in lines("return torch.cat([x, torch.zeros(2, 3, 1)], dim=2)", export)
    ] == [8]
    assert lines("return torch.cat([x, torch.zeros(1, 3, 4)], dim=0)", export) == []
    assert lines("return torch.cat((torch.zeros(2, 3, 4), x))", export) == []
    assert lines("return torch.stack([x, torch.ones(2, 3, 4)])", export) != []
    assert lines("return torch.cat([x, pad], dim=-1)", export) == []
