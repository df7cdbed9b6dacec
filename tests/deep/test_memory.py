"""Issue 17: the memory a real run needs, counted on fake tensors; the budget finding; ONNX
Runtime's memory over a sweep of sizes. Peaks here are known by construction."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onnxlint.deep import report
from onnxlint.deep.result import from_worker
from onnxlint.deep.targets import Target, TargetError, parse_bytes, validate_target
from onnxlint.deep.worker import ort_memory

from .conftest import line_of

pytestmark = [pytest.mark.deep, pytest.mark.xdist_group("deep")]

MB = 1_000_000
SIDE = 500  # a float32 SIDE x SIDE tensor is exactly 1 MB

MODELS = f"""
import torch

SIDE = {SIDE}


class Known(torch.nn.Module):
    # live at the peak: w (1 MB), x (1 MB), y (1 MB), z (1 MB) = 4 MB, at the relu
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(SIDE, SIDE))

    def forward(self, x):
        y = x @ self.w
        z = y.relu()
        del y
        return z.sum()


def known():
    return Known().eval(), (torch.randn(SIDE, SIDE),)


class Views(torch.nn.Module):
    # views and in-place results share their storage: x (1 MB) + y (1 MB) = 2 MB
    def forward(self, x):
        y = x * 2
        y.add_(1)
        v = y.view(-1)
        return v[: SIDE].unsqueeze(0)


def views():
    return Views(), (torch.randn(SIDE, SIDE),)


class Tied(torch.nn.Module):
    # the same weight twice is one storage (1 MB)
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(SIDE, SIDE, bias=False)
        self.b = torch.nn.Linear(SIDE, SIDE, bias=False)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(self.a(x))


def tied():
    return Tied().eval(), (torch.randn(2, SIDE),)


class Branchy(torch.nn.Module):
    # a data-dependent branch does not stop the count: x + y + z = 3 MB
    def forward(self, x):
        y = x + 1
        if y.sum() > 0:
            z = y * 2
        else:
            z = y * 3
        return z


def branchy():
    return Branchy(), (torch.randn(SIDE, SIDE),)


class Conv(torch.nn.Module):
    # ONNX Runtime's arena grows with the image size and keeps its high-water mark
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 32, 3, padding=1)
        self.b = torch.nn.Conv2d(32, 32, 3, padding=1)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def conv():
    return Conv().eval(), (torch.randn(1, 3, 64, 64),), {{}}, ({{2: "h", 3: "w"}},)


class Flat(torch.nn.Module):
    # a few bytes per row: nothing to see across batch sizes
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.a(x)


def flat():
    return Flat().eval(), (torch.randn(4, 8),), {{}}, ({{0: "batch"}},)
"""

EXPORT = """
import torch

from memproj.models import Known

model = Known().eval()
torch.onnx.export(model, (torch.randn(500, 500),), "known.onnx", dynamo=False)
"""


@pytest.fixture(scope="module")
def memproj(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("memproj")
    pkg = root / "memproj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "models.py").write_text(textwrap.dedent(MODELS).lstrip())
    (root / "pyproject.toml").write_text('[project]\nname = "memproj"\n')
    return root


@pytest.fixture(scope="module")
def results(memproj: Path, analyzer: Any) -> Iterator[dict[str, Any]]:
    """Each model analysed once (verification only where the sweep is tested)."""
    out: dict[str, Any] = {}
    for name, verify in [
        ("known", False),
        ("views", False),
        ("tied", False),
        ("branchy", False),
        ("conv", True),
        ("flat", True),
    ]:
        t = Target(name=name, factory=f"memproj.models:{name}", root=memproj)
        out[name] = analyzer.analyze(t, verify=verify, use_cache=False)
    yield out


def _mem(res: Any) -> dict[str, Any]:
    assert res.status == "ok", (res.detail, res.violations)
    mem = res.data["memory"]
    assert isinstance(mem, dict)
    return mem


def test_peak_known_by_construction_and_where_it_is(memproj: Path, results: Any) -> None:
    mem = _mem(results["known"])
    assert mem["weights_bytes"] == 1 * MB
    assert mem["inputs_bytes"] == 1 * MB
    assert mem["run_peak_bytes"] == 4 * MB
    assert mem["activations_peak_bytes"] == 2 * MB
    models = memproj / "memproj" / "models.py"
    at = mem["run_peak_op"]
    assert at["op"] == "aten.relu.default"
    assert (at["file"], at["line"]) == (str(models), line_of(models, "z = y.relu()"))
    # this analysis's own peak: the worker process, which holds torch (hundreds of MB)
    assert 50 * MB < mem["analysis_peak_bytes"] < 3000 * MB
    assert mem["machine_bytes"] > 100 * MB
    assert "memory" in results["known"].phases


def test_views_in_place_and_tied_weights_are_counted_once(results: Any) -> None:
    assert _mem(results["views"])["run_peak_bytes"] == 2 * MB
    tied = _mem(results["tied"])
    assert tied["weights_bytes"] == 1 * MB
    assert tied["run_peak_bytes"] == 1 * MB + 2 * 2 * SIDE * 4 + 2 * SIDE * 4


def test_a_data_dependent_branch_does_not_stop_the_count(results: Any) -> None:
    mem = _mem(results["branchy"])
    assert mem["run_peak_bytes"] == 3 * MB
    assert "run_partial" not in mem


def test_budget_finding_warning_at_the_target_error_at_a_torchscript_export(
    memproj: Path, results: Any, tmp_path: Path
) -> None:
    res = results["known"]
    assert not [v for v in res.violations if v.code == "OLX819"]  # fits this machine
    # the same figures against a 3 MB budget: the target's declaration, a warning
    small = Target(
        name="known",
        factory="memproj.models:known",
        root=memproj,
        memory_budget=3 * MB,
        decl_path=memproj / "pyproject.toml",
        decl_line=1,
    )
    end = {"status": "ok", "peak_rss": res.peak_rss, "wall": res.wall}
    again = from_worker(small, end, json.loads(json.dumps(res.data)))
    (v,) = [v for v in again.violations if v.code == "OLX819"]
    assert v.severity.value == "warning" and v.path == str(memproj / "pyproject.toml")
    assert "4.0 MB" in v.message and "memory-budget` of 3.0 MB" in v.message
    assert "dynamo=True" in v.message
    assert any("aten.relu.default" in n for n in v.notes)
    # a TorchScript export of the model in the project: the error is on that call
    script = memproj / "export_known.py"
    script.write_text(textwrap.dedent(EXPORT).lstrip())
    call_line = line_of(script, "torch.onnx.export")
    try:
        again = from_worker(small, end, json.loads(json.dumps(res.data)))
    finally:
        script.unlink()
    (v,) = [v for v in again.violations if v.code == "OLX819"]
    assert v.severity.value == "error"
    assert (v.path, v.line) == (str(script), call_line)
    assert v.message.startswith("this TorchScript export will not fit")
    # a budget above the peak: no finding
    roomy = Target(name="known", factory="memproj.models:known", root=memproj, memory_budget=5 * MB)
    assert not [v for v in from_worker(roomy, end, res.data).violations if v.code == "OLX819"]


def test_onnxruntime_sweep_grows_with_the_defaults_and_not_without_the_arena(
    results: Any,
) -> None:
    res = results["conv"]
    sweep = _mem(res)["ort_sweep"]
    assert len(sweep["sizes"]) >= 8
    assert sweep["sizes"][0] == "h=32, w=32" and sweep["sizes"][-1] == "h=512, w=512"
    for name in ("default", "lean"):
        run = sweep["runs"][name]
        assert len(run["pass1"]) == len(run["pass2"]) == len(sweep["sizes"])
    verdict = sweep["verdict"]
    assert not verdict["default"]["leak"] and not verdict["lean"]["leak"]
    # the arena keeps the largest size's memory: much more than without it
    assert verdict["default"]["first_pass_growth"] > 64 * 2**20
    assert verdict["lean_saves"] > 64 * 2**20
    (v,) = [v for v in res.violations if v.code == "OLX821"]
    assert v.severity.value == "info"
    assert "enable_mem_pattern=False" in v.message and "enable_cpu_mem_arena=False" in v.message
    assert not [v for v in res.violations if v.code == "OLX820"]


def test_onnxruntime_memory_findings_are_at_the_export_call(memproj: Path, results: Any) -> None:
    res = results["conv"]
    script = memproj / "export_conv.py"
    script.write_text(
        "import torch\n\nfrom memproj.models import Conv\n\n"
        'torch.onnx.export(Conv().eval(), (torch.randn(1, 3, 64, 64),), "conv.onnx",\n'
        '                  dynamic_shapes=({2: "h", 3: "w"},))\n'
    )
    try:
        end = {"status": "ok", "peak_rss": res.peak_rss, "wall": res.wall}
        again = from_worker(res.target, end, json.loads(json.dumps(res.data)))
    finally:
        script.unlink()
    (v,) = [v for v in again.violations if v.code == "OLX821"]
    assert (v.path, v.line) == (str(script), 5)
    assert any("found by verifying target 'conv'" in n for n in v.notes)


def test_onnxruntime_sweep_flat_model_has_no_finding(results: Any) -> None:
    res = results["flat"]
    sweep = _mem(res)["ort_sweep"]
    assert len(sweep["sizes"]) >= 8 and sweep["sizes"][0] == "batch=2"
    assert not [v for v in res.violations if v.code in ("OLX820", "OLX821")]
    assert res.violations == [], res.violations


def test_leak_is_growth_on_the_second_pass() -> None:
    mb = 2**20
    healthy = {"base": 400 * mb, "pass1": [410 * mb, 500 * mb, 675 * mb], "pass2": [675 * mb] * 3}
    leaking = {
        "base": 400 * mb,
        "pass1": [410 * mb, 500 * mb, 675 * mb],
        "pass2": [700 * mb, 730 * mb, 760 * mb],
    }
    lean = {"base": 400 * mb, "pass1": [420 * mb, 480 * mb, 539 * mb], "pass2": [539 * mb] * 3}
    v = ort_memory.judge({"default": healthy, "lean": lean})
    assert not v["default"]["leak"] and not v["lean"]["leak"]
    assert v["lean_worth_it"] and v["lean_saves"] == 136 * mb
    v = ort_memory.judge({"default": leaking, "lean": lean})
    assert v["default"]["leak"] and v["default"]["second_pass_growth"] == 85 * mb
    assert not v["lean_worth_it"]  # a leak first: the options are not the story
    v = ort_memory.judge({"default": lean, "lean": lean})
    assert not v["lean_worth_it"]


def test_sweep_sizes_cover_the_declared_range() -> None:
    assert ort_memory.sweep_sizes(64, None, None, 512) == [
        32,
        64,
        101,
        169,
        238,
        306,
        375,
        443,
        512,
    ]
    assert ort_memory.sweep_sizes(4, 2, 6, 32) == [2, 3, 4, 5, 6]
    sizes = ort_memory.sweep_sizes(16, 8, 1024, 128)
    assert sizes[0] == 8 and sizes[-1] == 1024 and len(sizes) >= 8 and 16 in sizes


def test_memory_budget_key(tmp_path: Path) -> None:
    assert parse_bytes("16GB") == 16 * 10**9
    assert parse_bytes("1.5 GiB") == int(1.5 * 2**30)
    assert parse_bytes(123) == 123
    assert parse_bytes("lots") is None
    t = validate_target({"name": "n", "factory": "m:f", "memory-budget": "512MB"}, tmp_path)
    assert t.memory_budget == 512 * MB
    with pytest.raises(TargetError, match=r"target 'n': `memory-budget` must be a size like"):
        validate_target({"name": "n", "factory": "m:f", "memory-budget": "big"}, tmp_path)


def test_reports_show_the_memory_figures(results: Any, tmp_path: Path) -> None:
    res = results["conv"]
    page = report.to_html([res])
    section = page[page.index("<h3>Memory</h3>") : page.index("<h3>Findings")]
    assert section.count("<svg") == 2  # the bars and the sweep
    assert "http://www.w3.org/2000/svg" in section and "https://" not in section
    assert "<polyline" in section and section.count("<rect") >= 4
    assert "one run, real weights" in section and "this analysis" in section
    md = report.to_markdown([res])
    assert "### Memory" in md and "running it once at the example inputs" in md
    assert "| h=512, w=512 |" in md
    lines = report.memory_lines(results["known"])
    assert lines[0].startswith("weights 1.0 MB (float32)   running it once at the example ")
    assert "peak 4.0 MB at aten.relu.default (memproj/models.py:" in lines[0]
    assert "this analysis: " in lines[1]


def test_analyze_json_has_the_memory_fields(memproj: Path) -> None:
    (memproj / "pyproject.toml").write_text(
        '[project]\nname = "memproj"\n\n[[tool.onnxlint.targets]]\nname = "known"\n'
        'factory = "memproj.models:known"\nmemory-budget = "3MB"\n'
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "onnxlint", "analyze", "--format", "json", "--no-cache"],
            cwd=memproj,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
    finally:
        (memproj / "pyproject.toml").write_text('[project]\nname = "memproj"\n')
    assert proc.returncode == 1, proc.stderr[-2000:]  # the budget finding
    data = json.loads(proc.stdout)
    mem = data["targets"][0]["data"]["memory"]
    assert mem["weights_bytes"] == 1 * MB and mem["run_peak_bytes"] == 4 * MB
    assert mem["run_peak_op"]["op"] == "aten.relu.default"
    assert mem["analysis_peak_bytes"] > 0
    assert [v["code"] for v in data["violations"]] == ["OLX819"]


def test_a_dim_object_is_named_by_its_name_not_its_repr() -> None:
    """A `Dim("height", min=320, max=7680)` in dynamic_shapes is "height" in every message
    (OLX820's sweep read "Dim('height', min=320, max=7680)=320 .. "), and its bounds are
    kept for the sweep; a string stays as it is, `Dim.DYNAMIC` reads as torch prints it."""
    import torch

    from onnxlint.deep.worker.record import Analysis

    rec = Analysis({"name": "t"}, lambda _s, _p: None)
    rec.model = torch.nn.Identity()
    rec.args = (torch.zeros(2, 3, 320, 8),)
    height = torch.export.Dim("height", min=320, max=7680)
    rec.dynamic_shapes = ({0: "batch", 2: height, 3: torch.export.Dim.DYNAMIC},)
    dims = rec.requested_dims()
    assert [(d, name) for _f, d, name, _label in dims] == [
        (0, "batch"),
        (2, "height"),
        (3, str(torch.export.Dim.DYNAMIC)),
    ]
    assert rec.dim_bounds[(0, 2)] == (320, 7680)
