"""`onnxlint check --deep` merges the deep analysis into the normal output (real torch)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")


@pytest.mark.deep
@pytest.mark.slow
def test_check_deep_merges_olx8xx_into_json(cli, repo_root: Path, tmp_path: Path) -> None:
    project = tmp_path / "examples"
    shutil.copytree(repo_root / "examples", project)
    r = cli("check", "--deep", "--format", "json", "--no-cache", ".", cwd=project)
    assert r.returncode == 1, r.stderr
    rows = json.loads(r.stdout)
    deep = [row for row in rows if row["source"] == "deep"]
    static = [row for row in rows if row["source"] == "static"]
    assert static and deep, r.stderr
    assert all(row["code"].startswith("OLX8") for row in deep)
    # The detector's `.item()` branch is found by both depths, at the same line.
    det_static = {row["line"] for row in static if row["path"].endswith("detector.py")}
    det_deep = {row["line"] for row in deep if row["path"].endswith("detector.py")}
    assert det_static & det_deep, (det_static, det_deep)
