"""Shared fixtures for the VS Code extension tests: they drive npm, so they need node and npm."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_REPO_ID = hashlib.sha256(bytes(REPO)).hexdigest()[:12]

NpmRunner = Callable[..., subprocess.CompletedProcess[str]]


@contextlib.contextmanager
def file_lock(name: str) -> Iterator[None]:
    """An exclusive lock, across pytest-xdist workers, of this checkout's `name` (the file
    is in the temp folder: outside node_modules/, which `npm ci` deletes while it is held)."""
    lock = Path(tempfile.gettempdir()) / f"onnxlint-{name}-{_REPO_ID}.lock"
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def repo_lock() -> contextlib.AbstractContextManager[None]:
    """Serialises npm runs: parallel workers would write dist/ and node_modules/ at once."""
    return file_lock("extension")


@pytest.fixture(scope="session")
def exclusive() -> Callable[[str], contextlib.AbstractContextManager[None]]:
    """`file_lock` for the test modules (which cannot import this conftest)."""
    return file_lock


def _lock_digest() -> str:
    return hashlib.sha256((REPO / "package-lock.json").read_bytes()).hexdigest()


def ensure_node_modules() -> None:
    """`npm ci` unless node_modules matches package-lock.json (a stamp records which one)."""
    stamp = REPO / "node_modules" / ".onnxlint-lock-sha256"
    if stamp.exists() and stamp.read_text().strip() == _lock_digest():
        return
    result = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, f"npm ci failed:\n{result.stdout}\n{result.stderr}"
    stamp.write_text(_lock_digest())


@pytest.fixture(scope="session")
def npm() -> NpmRunner:
    """Runs `npm run <script>` at the repository root, once node_modules is installed."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed: cannot build or test the VS Code extension")
    with repo_lock():
        ensure_node_modules()

    def run(script: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "0"}
        with repo_lock():
            return subprocess.run(
                ["npm", "run", "--silent", script, *(["--", *args] if args else [])],
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
            )

    return run


@pytest.fixture(scope="session")
def vsix(npm: NpmRunner) -> Path:
    """Packages the extension once per session (`npm run package`) and returns the .vsix."""
    out = REPO / "onnxlint.vsix"
    result = npm("package")
    assert result.returncode == 0, f"npm run package failed:\n{result.stdout}\n{result.stderr}"
    assert out.is_file()
    return out
