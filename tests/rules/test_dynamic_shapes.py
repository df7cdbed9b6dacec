"""OLX3xx scenarios: the `dynamic_axes` -> `dynamic_shapes` fix, checked against real torch."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from onnxlint.core.config import parse_table
from onnxlint.engine import Engine
from onnxlint.source.fixes import fix_text

CONFIG = parse_table({"select": ["OLX3"]}, None)


def _fix(code: str, rule: str = "OLX304") -> str:
    engine = Engine()

    def check(text: str):
        return [v for v in engine.check("case.py", text, CONFIG) if v.code == rule]

    return fix_text(code, check(code), check, unsafe=True).text


EXPORT_SCRIPT = textwrap.dedent(
    """
    import torch
    import onnx

    class Net(torch.nn.Module):
        def forward(self, tokens, mask):
            return tokens.float().sum(-1) + mask.sum(-1)

    def main():
        model = Net().eval()
        tokens = torch.randint(0, 9, (2, 5))
        mask = torch.ones(2, 5)
        torch.onnx.export(
            model,
            (tokens, mask),
            "m.onnx",
            input_names=["input_ids", "attention_mask"],
            output_names=["score"],
            dynamic_axes={"attention_mask": {0: "batch"}, "input_ids": {0: "batch"}, "score": [0]},
        )
        m = onnx.load("m.onnx")
        for i in m.graph.input:
            print(i.name, [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim])

    main()
    """
).lstrip()


def test_fix_keys_by_forward_parameters_and_drops_outputs() -> None:
    fixed = _fix(EXPORT_SCRIPT)
    assert 'dynamic_shapes={"tokens": {0: "batch"}, "mask": {0: "batch"}}' in fixed
    assert "dynamic_axes" not in fixed


def test_no_fix_when_a_key_matches_nothing() -> None:
    code = EXPORT_SCRIPT.replace('"input_ids": {0', '"input_idz": {0')
    engine = Engine()
    found = [v for v in engine.check("case.py", code, CONFIG) if v.code == "OLX304"]
    assert found and found[0].fix is None
    assert any(v.code == "OLX301" for v in engine.check("case.py", code, CONFIG))


@pytest.mark.deep
@pytest.mark.slow
def test_fixed_script_exports_with_the_named_dynamic_dims(tmp_path: Path) -> None:
    pytest.importorskip("onnxscript")
    script = tmp_path / "export.py"
    script.write_text(_fix(EXPORT_SCRIPT))
    env = {**os.environ, "PYTHONWARNINGS": "error::DeprecationWarning:torch.onnx"}
    out = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines() if line.strip())
    # Both inputs get the dynamic batch dim the user named (torch's own conversion would
    # have matched the entries by dict order).
    assert lines["input_ids"] == "['batch', 5]"
    assert lines["attention_mask"] == "['batch', 5]"


def test_no_fix_when_the_inputs_cannot_be_counted() -> None:
    code = textwrap.dedent(
        """
        import torch
        from mypkg import Net, make_inputs

        model = Net().eval()
        inputs = make_inputs()  # one tensor or a tuple of them: unknown
        torch.onnx.export(model, inputs, "m.onnx", input_names=["a"], dynamic_axes={"a": [0]})
        """
    )
    found = [v for v in Engine().check("case.py", code, CONFIG) if v.code == "OLX304"]
    assert found and found[0].fix is None


def test_single_tensor_input_gets_a_one_element_tuple() -> None:
    code = textwrap.dedent(
        """
        import torch
        from mypkg import Net

        model = Net().eval()
        dummy = torch.randn(1, 3, 224, 224).to("cpu")
        torch.onnx.export(model, dummy, "m.onnx", input_names=["i"], dynamic_axes={"i": {0: "n"}})
        """
    )
    assert 'dynamic_shapes=({0: "n"},)' in _fix(code)
