"""The real `pre-commit` tool runs our hooks (from .pre-commit-hooks.yaml) on a git repo."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BAD = (
    "import torch\n\n\n"
    "def export(model, x):\n"
    "    model.eval()\n"
    '    torch.onnx.export(model, (x,), "m.onnx", do_constant_folding=True)\n'
)


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("pre-commit") is None and shutil.which("git") is None, reason="needs git"
)
def test_hook_fails_on_a_staged_bad_file_then_passes_after_the_fix(
    tmp_path: Path, repo_root: Path
) -> None:
    repo = tmp_path / "user-repo"
    repo.mkdir()
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "NO_COLOR": "1",
    }
    _run(["git", "init", "-q"], repo, env)
    (repo / "export_model.py").write_text(BAD)
    _run(["git", "add", "export_model.py"], repo, env)
    pc = [sys.executable, "-m", "pre_commit", "try-repo", str(repo_root)]

    first = _run([*pc, "onnxlint", "--files", "export_model.py"], repo, env)
    out = first.stdout + first.stderr
    assert first.returncode == 1, out
    assert "OLX405" in out and "do_constant_folding" in out

    fixed = _run([*pc, "onnxlint-fix", "--files", "export_model.py"], repo, env)
    assert fixed.returncode == 1, (
        fixed.stdout + fixed.stderr
    )  # pre-commit fails when a hook edits files
    text = (repo / "export_model.py").read_text()
    assert "do_constant_folding" not in text and "torch.onnx.export(model, (x,)" in text

    _run(["git", "add", "export_model.py"], repo, env)
    second = _run([*pc, "onnxlint", "--files", "export_model.py"], repo, env)
    assert second.returncode == 0, second.stdout + second.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_hook_checks_a_staged_notebook(tmp_path: Path, repo_root: Path) -> None:
    import json

    repo = tmp_path / "user-repo"
    repo.mkdir()
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "NO_COLOR": "1"}
    _run(["git", "init", "-q"], repo, env)
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": []}
    nb = {
        "cells": [{**cell, "source": BAD}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (repo / "export.ipynb").write_text(json.dumps(nb, indent=1) + "\n")
    _run(["git", "add", "export.ipynb"], repo, env)
    run = _run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(repo_root), "onnxlint", "--all-files"],
        repo,
        env,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "export.ipynb:cell 1:6:" in out and "OLX405" in out, out
