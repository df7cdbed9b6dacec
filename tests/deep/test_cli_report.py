"""`onnxlint analyze` / `check --deep` entry points, the reports and the result cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from onnxlint.deep import report
from onnxlint.deep.analyzer import DeepAnalyzer
from onnxlint.deep.run import deep_check
from onnxlint.deep.targets import Target

from .conftest import line_of

pytestmark = [pytest.mark.deep, pytest.mark.xdist_group("deep")]


def test_analyze_command_json_and_html_report(project: Path, tmp_path: Path) -> None:
    out_html = tmp_path / "report.html"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "onnxlint.deep.run",
            "breaks",
            "--format",
            "json",
            "--no-cache",
            "--report",
            str(out_html),
        ],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    models = project / "deepproj" / "models.py"
    got = {(v["code"], v["line"]) for v in data["violations"]}
    assert ("OLX805", line_of(models, "torch.cdist")) in got
    assert all(v["source"] == "deep" for v in data["violations"])
    # The worker ran to its end, but the model does not export (issue 14: "ok" only
    # when every phase succeeded).
    assert data["targets"][0]["process"] == "ok"
    assert data["targets"][0]["status"] == "fails at step 1/3 (torch.export)"
    page = out_html.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page and "src=" not in page  # self-contained
    for part in (
        "Unsupported operators",
        "aten._cdist_forward.default",
        "worker peak memory",
        "Phases",
        "torch.cdist(y, y)",
    ):
        assert part in page


def test_unknown_target_name_is_a_usage_error(project: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run(
        [sys.executable, "-m", "onnxlint.deep.run", "nope"],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert "no target named 'nope' (known: breaks, clean" in proc.stderr


def test_deep_check_merges_declared_and_marked_targets(project: Path) -> None:
    raw = [
        {"name": "clean", "factory": "deepproj.models:clean", "dynamic_shapes": [{"0": "batch"}]},
        {"name": "bad", "factory": "not a factory"},
    ]
    seen: list[str] = []
    found = deep_check(
        [project / "deepproj"], project, raw, progress=lambda name, phase, _p: seen.append(name)
    )
    assert [(v.code, Path(v.path).name) for v in found] == [("OLX812", "pyproject.toml")]
    assert "target 'bad': `factory` must be" in found[0].message
    assert {"clean", "deepproj.models:marked"} <= set(seen)


def test_markdown_report_lists_ops_signature_and_phases(project: Path, analyzer) -> None:
    breaks = analyzer.analyze(Target("breaks", "deepproj.models:breaks", project))
    clean = analyzer.analyze(
        Target("clean", "deepproj.models:clean", project, dynamic_shapes=({0: "batch"},))
    )
    md = report.to_markdown([breaks, clean])
    assert "| `aten.median.dim` | 1 | deepproj/models.py:" in md
    assert "| `x` | `FLOAT[batch, 4]` |" in md
    assert "> " in md and "torch.linalg.eigh" in md  # code excerpt with the line marked
    assert "Worker peak memory:" in md
    html = report.to_html([breaks, clean])
    assert html.count("<h2 ") == 2


def test_cache_hits_until_an_imported_project_file_changes(project: Path, tmp_path: Path) -> None:
    mod = project / "deepproj" / "cached.py"
    mod.write_text(
        "import torch\nfrom deepproj.helper import K\n\n"
        "def make():\n    return torch.nn.Linear(2, K), (torch.randn(1, 2),)\n"
    )
    helper = project / "deepproj" / "helper.py"
    helper.write_text("K = 3\n")
    target = Target("cached", "deepproj.cached:make", project)
    with DeepAnalyzer(targets=[target], cache_dir=tmp_path / "cache") as a:
        first = a.analyze(target)
        second = a.analyze(target)
        assert (first.cached, second.cached) == (False, True)
        assert second.data["onnx"]["outputs"][0]["shape"] == [1, 3]
        assert str(helper.resolve()) in first.data["project_files"]
        (project / "deepproj" / "unrelated.py").write_text("X = 1\n")
        assert a.analyze(target).cached is True
        helper.write_text("K = 5\n")
        third = a.analyze(target)
        assert third.cached is False
        assert third.data["onnx"]["outputs"][0]["shape"] == [1, 5]


def test_fixing_a_module_whose_import_failed_re_analyses(project: Path, tmp_path: Path) -> None:
    # A module whose import raised is no longer in sys.modules; the cached "cannot be
    # analysed" must still give way once the user fixes that module.
    (project / "deepproj" / "broken.py").write_text("from torch.nn import NoSuchLayer\n")
    mod = project / "deepproj" / "uses_broken.py"
    mod.write_text(
        "import torch\n\n"
        "def make():\n"
        "    from deepproj.broken import NoSuchLayer\n"
        "    return NoSuchLayer(), (torch.randn(1, 2),)\n"
    )
    target = Target("uses_broken", "deepproj.uses_broken:make", project)
    with DeepAnalyzer(targets=[target], cache_dir=tmp_path / "cache") as a:
        first = a.analyze(target)
        assert [v.code for v in first.violations] == ["OLX812"]
        assert a.analyze(target).cached is True
        (project / "deepproj" / "broken.py").write_text(
            "from torch.nn import Identity as NoSuchLayer\n"
        )
        fixed = a.analyze(target)
        assert fixed.cached is False
        assert fixed.violations == []


def test_run_analyze_with_a_config_object(project: Path, tmp_path: Path, capsys) -> None:
    from onnxlint.deep.run import run_analyze

    config = SimpleNamespace(
        root=project,
        targets=({"name": "clean", "factory": "deepproj.models:clean"},),
        deep={},
    )
    args = SimpleNamespace(
        targets=["clean"],
        report=tmp_path / "r.md",
        format="text",
        verify=False,
        python=None,
        no_cache=True,
        discover=None,
    )
    assert run_analyze(args, config) == 0
    assert "clean: ok, 0 findings" in capsys.readouterr().out
    assert "## clean" in (tmp_path / "r.md").read_text()
