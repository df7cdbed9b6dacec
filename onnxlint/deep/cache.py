"""Cache of deep results, keyed by the target, the interpreter and its torch.

The key also covers the worker's own source, so a new onnxlint re-analyses.
An entry also records the project files the model imported and their content
hashes (reported by the worker); it is valid only while every one of them is
unchanged, so an edit anywhere in the model's code invalidates it, and an edit
to an unrelated file does not.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

FORMAT = 1


@cache
def torch_version_of(python: str) -> str:
    """The torch version installed for an interpreter, without importing torch (~50 ms)."""
    code = (
        "import importlib.metadata as m\n"
        "try: print(m.version('torch'))\n"
        "except Exception: print('none')"
    )
    try:
        out = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() or "unknown"


@cache
def worker_digest() -> str:
    """The worker's own code: a new onnxlint (or a local edit of it) re-analyses."""
    h = hashlib.sha256()
    for path in sorted((Path(__file__).resolve().parent / "worker").glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def file_digest(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


class ResultCache:
    """JSON files under `directory`, one per (target, interpreter, torch)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def key(self, wire_target: dict[str, Any], python: str) -> str:
        blob = json.dumps(
            {
                "t": wire_target,
                "py": python,
                "torch": torch_version_of(python),
                "worker": worker_digest(),
                "f": FORMAT,
            },
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:32]

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            entry = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        files = entry.get("files")
        if not isinstance(files, dict) or not files:
            return None
        for path, digest in files.items():
            if file_digest(path) != digest:
                return None
        if not isinstance(entry.get("result"), dict) or not isinstance(entry.get("end"), dict):
            return None
        return dict(entry)

    def put(self, key: str, result: dict[str, Any], end: dict[str, Any]) -> None:
        files = {p: d for p in result.get("project_files") or [] if (d := file_digest(p))}
        if not files:
            return  # nothing to validate against: never serve it
        self.directory.mkdir(parents=True, exist_ok=True)
        data = json.dumps({"files": files, "result": result, "end": end}, default=str)
        fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(data)
            os.replace(tmp, self._path(key))
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
