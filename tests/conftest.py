"""Shared fixtures: the repository root, a runner for the real `onnxlint` command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None, env: dict | None = None):
    """Run `python -m onnxlint ...` as a real subprocess."""
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "onnxlint", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=300,
    )


@pytest.fixture
def cli():
    return run_cli
