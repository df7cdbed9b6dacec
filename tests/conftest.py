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


def make_venv(folder: Path) -> tuple[Path, Path]:
    """A real venv (no pip) at `folder`: its interpreter and its site-packages folder."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return python, Path(purelib)


@pytest.fixture
def cli():
    return run_cli


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """In CI (CI=true), a skipped editor test (Neovim, VS Code) is a failure: CI installs every tool
    they need (.ci/setup-tests.sh), so a skip there means the set-up is broken, not optional."""
    outcome = yield
    report = outcome.get_result()
    if (
        report.skipped
        and os.environ.get("CI", "").lower() in ("1", "true", "yes")
        and item.get_closest_marker("editor") is not None
    ):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"CI does not allow this editor test to skip: {reason}"
