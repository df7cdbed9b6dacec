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
    # The detector's `.item()` branch is found by both depths, at the same line: one
    # finding per cause, as in the editor (the static one, confirmed; the deep one its
    # related place), not two.
    det = [row for row in rows if row["path"].endswith("detector.py")]
    confirmed = [row for row in det if row["message"].endswith("(confirmed by the deep analysis)")]
    assert confirmed, det
    for row in confirmed:
        assert row["source"] == "static"
        folded = [r for r in row["related"] if " (deep): " in r["message"]]
        assert folded and all(r["line"] == row["line"] for r in folded), row
    lines = [(row["path"], row["line"]) for row in det]
    assert len(lines) == len(set(lines)), det
    # related places are shown as the finding's own path is: relative to the working dir
    assert all(not r["path"].startswith("/") for row in rows for r in row.get("related") or [])
