"""Issue 14: `check --deep PATH` analyses the targets under PATH, reports them like the static
findings (relative paths, one sorted list) and, with --no-cache, leaves no cache behind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

MODEL = """import torch


class {cls}(torch.nn.Module):
    def forward(self, x):
        x = x * 2
        print("shape", x.shape)
        return x + 1


# onnxlint: target
def make():
    return {cls}(), (torch.randn(2, 3),)
"""


def test_targets_are_picked_by_the_paths_given(repo_root: Path, tmp_path: Path) -> None:
    from onnxlint.core.config import load_config
    from onnxlint.deep.run import collect_targets, targets_under

    project = tmp_path / "examples"
    shutil.copytree(repo_root / "examples", project)
    config = load_config(project)
    targets, problems = collect_targets(list(config.targets), project, [project])
    assert not problems and {t.name for t in targets} == {"classifier", "detector"}
    # The detector's model class lives in vision/detector.py, its factory in vision/targets.py.
    names = lambda paths: sorted(t.name for t in targets_under(targets, paths))  # noqa: E731
    assert names([project / "vision" / "detector.py"]) == ["detector"]
    assert names([project / "vision" / "classifier.py"]) == ["classifier"]
    assert names([project / "vision" / "targets.py"]) == ["classifier", "detector"]
    assert names([project / "export.py"]) == []
    assert names([project]) == ["classifier", "detector"]


@pytest.mark.deep
@pytest.mark.slow
def test_check_deep_paths_are_relative_sorted_and_only_under_the_paths(cli, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "pyproject.toml").write_text("[tool.onnxlint]\n")
    (tmp_path / "net_a.py").write_text(MODEL.format(cls="NetA"))
    (tmp_path / "net_b.py").write_text(MODEL.format(cls="NetB"))
    r = cli("check", "--deep", "--no-cache", "--format", "json", "net_a.py", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    rows = json.loads(r.stdout)
    deep = [row for row in rows if row["source"] == "deep"]
    assert deep and {row["path"] for row in deep} == {"net_a.py"}, rows
    assert {row["path"] for row in rows} == {"net_a.py"}  # net_b's target was not analysed
    keys = [(row["path"], row["line"], row["column"], row["code"]) for row in rows]
    assert keys == sorted(keys)
    # The `print` in forward: a graph break that torch._dynamo.explain lists (OLX801, the
    # print follows an op); the static rules do not report a print (OLX106: the export
    # runs it once and the graph is the same).
    assert "OLX801" in {row["code"] for row in rows if row["line"] == 7}
    assert not (tmp_path / ".onnxlint_cache").exists()
    github = cli("check", "--deep", "--no-cache", "--format", "github", "net_a.py", cwd=tmp_path)
    assert "file=net_a.py,line=7" in github.stdout and str(tmp_path) not in github.stdout
