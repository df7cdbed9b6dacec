"""Issue 14: `onnxlint analyze` and its reports say what happened, without contradictions.

The results are built by `onnxlint.deep.result.from_worker` from what the worker sends (the
same conversion a real run goes through); the sys.exit case runs a real worker."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from onnxlint.deep import report
from onnxlint.deep.result import DeepResult, from_worker
from onnxlint.deep.run import _print_text
from onnxlint.deep.targets import Target

MODEL = """import torch


class Net(torch.nn.Module):
    def forward(self, x):
        n = x.shape[0]
        if x.sum() > 0:
            return x.view(2, -1)
        return x
"""


def _target(root: Path) -> Target:
    (root / "model.py").write_text(MODEL)
    return Target(name="net", factory="model:make", root=root)


def _result(root: Path, findings: list[dict[str, Any]], **data: Any) -> DeepResult:
    payload = {"findings": findings, "phases": {"export": 0.5}, "skipped": {}, **data}
    end = {"status": "ok", "wall": 1.0, "peak_rss": 300 * 2**20}
    return from_worker(_target(root), end, payload)


def _finding(root: Path, kind: str, message: str, line: int, **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "message": message, "file": str(root / "model.py"), "line": line, **extra}


DATA_DEPENDENT = ("data-dependent-guard", "torch.export failed: GuardOnDataDependentSymNode: u0")
GRAPH_BREAK = ("graph-break", "graph break: Data-dependent branching (`if x.sum() > 0:`)")


@pytest.mark.parametrize(
    ("kind", "message", "status"),
    [
        (*GRAPH_BREAK, "ok"),
        (*DATA_DEPENDENT, "fails at step 1/3 (torch.export)"),
        (
            "translation-failure",
            "ONNX decomposition (step 2/3) failed: RuntimeError: x",
            "fails at step 2/3 (ONNX decompositions)",
        ),
        ("unsupported-aten-op", "`aten.cdist` has no ONNX translation", "fails at step 3/3"),
        ("target-error", "target 'net': factory 'model:make' raised OSError: x", "factory raised"),
        ("target-error", "target 'net': cannot import module 'model'", "cannot be analysed"),
    ],
)
def test_status_is_ok_only_when_every_phase_succeeded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, message: str, status: str
) -> None:
    r = _result(tmp_path, [_finding(tmp_path, kind, message, 7)])
    assert r.ok  # the worker ran to its end...
    assert r.outcome.startswith(status)  # ...which is not the same as the target being ok
    assert json.loads(json.dumps(r.to_json()))["status"] == r.outcome
    _print_text([r], [], tmp_path)
    head = capsys.readouterr().out.splitlines()[0]
    assert head.startswith(f"net: {status}") and ", 1 finding, " in head, head
    page = report.to_html([r])
    assert f">{r.outcome}</span>" in page
    assert f"**{r.outcome}**" in report.to_markdown([r])


def test_finding_count_is_plural_only_for_several(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _print_text([_result(tmp_path, [])], [], tmp_path)
    assert "net: ok, 0 findings, " in capsys.readouterr().out
    _print_text([_result(tmp_path, [_finding(tmp_path, *GRAPH_BREAK, 7)])], [], tmp_path)
    assert "net: ok, 1 finding, " in capsys.readouterr().out
    two = [_finding(tmp_path, *GRAPH_BREAK, 7), _finding(tmp_path, *GRAPH_BREAK, 8)]
    _print_text([_result(tmp_path, two)], [], tmp_path)
    assert "net: ok, 2 findings, " in capsys.readouterr().out


def _failed_export(root: Path) -> DeepResult:
    hist = {f"Op{i}": i + 1 for i in range(30)}
    onnx = {
        "opset": 18,
        "requested_opset": 18,
        "nodes": sum(hist.values()),
        "initializers": 4,
        "checker": "ok",
        "inputs": [{"name": "x", "dtype": "FLOAT", "shape": ["batch", 3]}],
        "outputs": [{"name": "y", "dtype": "FLOAT", "shape": ["batch", 3]}],
        "op_histogram": hist,
    }
    findings = [
        _finding(root, *DATA_DEPENDENT, 7, notes=["use `torch.cond` or **torch.where**"]),
        _finding(root, *GRAPH_BREAK, 7, notes=["https://example.org/gb0170.html"]),
        _finding(
            root,
            "dynamic-dim-specialized",
            "dim 'batch' (x.shape[0]) was requested dynamic, but the code forces it to 2",
            8,
            dim={"input": "x", "dim": 0, "name": "batch", "value": 2},
        ),
    ]
    return _result(
        root,
        findings,
        onnx=onnx,
        assumed_branches=True,
        skipped={"verify": "skipped: the model does not export"},
    )


def test_html_report_does_not_contradict_itself(tmp_path: Path) -> None:
    page = report.to_html([_failed_export(tmp_path)])
    # The header counts findings by severity for each target.
    assert re.search(r'<ul class="targets">\s*<li>.*2 errors, 1 info</li>', page)
    # Not "checker: ok" beside "the model does not export": the ONNX model is qualified.
    assert "checker: ok" not in page
    assert "checker on this model: ok" in page
    assert "assuming each data-dependent condition holds" in page
    # Not `batch` for an input whose batch dim OLX804 says the code forces to 2.
    assert "FLOAT[2 (asked: batch; forced, OLX804), 3]" in page
    # Markdown in messages and notes is rendered.
    assert "`" not in page
    assert "<code>torch.cond</code>" in page and "<b>torch.where</b>" in page
    assert '<a href="https://example.org/gb0170.html">' in page
    # The long op table is folded.
    assert "<details><summary>30 op types, 465 nodes</summary>" in page


def test_markdown_report_folds_long_tables_and_qualifies_the_onnx_model(tmp_path: Path) -> None:
    text = report.to_markdown([_failed_export(tmp_path)])
    assert "## net: fails at step 1/3 (torch.export) (2 errors, 1 info)" in text
    assert "checker on this model: ok" in text and "checker: ok" not in text
    assert "<details><summary>30 op types, 465 nodes</summary>" in text
    assert "`FLOAT[2 (asked: batch; forced, OLX804), 3]`" in text


def test_no_empty_worker_stderr_section(tmp_path: Path) -> None:
    end = {"status": "crashed", "detail": "the worker process died", "stderr_tail": "\n  \n"}
    r = from_worker(_target(tmp_path), end, None)
    (v,) = r.violations
    assert v.code == "OLX813"
    assert not any("worker stderr" in n for n in v.notes)
    assert r.outcome == "crashed"


EXITING = """import sys

import torch


# onnxlint: target
def make():
    sys.exit(3)
"""


@pytest.mark.deep
@pytest.mark.slow
def test_sys_exit_in_user_code_is_named_with_its_code(cli, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "pyproject.toml").write_text("[tool.onnxlint]\n")
    (tmp_path / "quits.py").write_text(EXITING)
    r = cli("analyze", "--no-cache", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    head = r.stdout.splitlines()[0]
    assert head.startswith(
        "quits:make: cannot be analysed: the model code called sys.exit(3), 1 finding,"
    ), r.stdout
    assert "quits.py:8:5: OLX813 [error] analysis of 'quits:make' stopped: the model code " in (
        r.stdout
    )
    assert "exited with code 70" not in r.stdout
    data = json.loads(cli("analyze", "--no-cache", "--format", "json", cwd=tmp_path).stdout)
    assert data["targets"][0]["status"] == "cannot be analysed: the model code called sys.exit(3)"
