"""The house rules as tests: ruff (lint + format) and mypy --strict are clean on the package,
and CI runs the README's test command."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is in the test extra")
def test_ruff_lint_and_format_are_clean() -> None:
    lint = _run("ruff", "check", "onnxlint")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = _run("ruff", "format", "--check", "onnxlint")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


@pytest.mark.slow
def test_mypy_strict_is_clean() -> None:
    pytest.importorskip("mypy")
    r = _run(sys.executable, "-m", "mypy", "onnxlint")
    assert r.returncode == 0, r.stdout + r.stderr


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line for line in block.splitlines() if line.strip()]
    assert len(commands) == 2, "the quick start is exactly two commands"
    assert commands[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
