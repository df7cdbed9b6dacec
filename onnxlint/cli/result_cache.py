"""Results cache: findings keyed by file content, configuration and tool version.

Lives in `.onnxlint_cache/` at the project root, with a `.gitignore` of `*` inside so it
ignores itself. One JSON file per configuration holds content-hash -> findings, so a warm
run reads one file and hashes the sources; nothing is parsed. A file whose findings read
another module of the project (an imported model class, see `onnxlint.project`) is keyed by
its content and path, with the hash of every file the check read or looked for: it is a hit
only while those files are unchanged (and still absent where they were absent).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from onnxlint import __version__
from onnxlint.core.config import Config
from onnxlint.core.violation import Violation
from onnxlint.source.files import content_key

CACHE_DIR = ".onnxlint_cache"
FORMAT = 2  # 2: entries with dependencies on other files


def config_key(config: Config, extra: str = "") -> str:
    parts = repr(
        (
            __version__,
            FORMAT,
            config.select,
            config.ignore,
            config.extend_select,
            config.per_file_ignores,
            config.target_torch,
            config.exporter,
            config.severity,
            config.large_model_parameters,
            config.unreached,
            extra,
        )
    )
    return hashlib.blake2b(parts.encode(), digest_size=10).hexdigest()


class ResultCache:
    def __init__(self, root: Path, key: str) -> None:
        self.dir = root / CACHE_DIR
        self.file = self.dir / f"results-{key}.json"
        # content hash -> findings, or "<hash> <path>" -> {"deps": ..., "rows": findings}
        self.entries: dict[str, Any] = {}
        self.dirty = False
        self._hashes: dict[str, str | None] = {}
        try:
            with self.file.open(encoding="utf-8") as fh:
                data = json.load(fh)
            if isinstance(data, dict):
                self.entries = data
        except (OSError, ValueError):
            self.entries = {}

    def get(self, digest: str, path: str) -> list[Violation] | None:
        rows = self.entries.get(digest)
        if rows is None:
            entry = self.entries.get(f"{digest} {path}")
            if not isinstance(entry, dict) or not isinstance(entry.get("deps"), dict):
                return None
            if any(self._hash(p) != h for p, h in entry["deps"].items()):
                return None
            rows = entry.get("rows")
        if not isinstance(rows, list):
            return None
        return [Violation.from_json({**row, "path": path}) for row in rows]

    def put(
        self,
        digest: str,
        path: str,
        violations: list[Violation],
        deps: dict[str, str | None] | None = None,
    ) -> None:
        rows = [{**v.to_json(), "deprecated": v.deprecated} for v in violations]
        if deps:
            self.entries[f"{digest} {path}"] = {"deps": deps, "rows": rows}
        else:
            self.entries[digest] = rows
        self.dirty = True

    def _hash(self, path: str) -> str | None:
        if path not in self._hashes:
            self._hashes[path] = _current_hash(path)
        return self._hashes[path]

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            self.dir.mkdir(exist_ok=True)
            ignore = self.dir / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# created by onnxlint\n*\n")
                (self.dir / "CACHEDIR.TAG").write_text(
                    "Signature: 8a477f597d28d172789f06886806bc55\n# onnxlint results cache\n"
                )
            fd, tmp = tempfile.mkstemp(dir=self.dir, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(self.entries, fh, separators=(",", ":"))
            os.replace(tmp, self.file)
        except OSError:
            pass  # a read-only tree still gets its results, just not cached


def _current_hash(path: str) -> str | None:
    """The content hash of a file as the project index reads it, None when absent."""
    from onnxlint.project import read_disk

    text = read_disk(path)
    return None if text is None else content_key(text)
