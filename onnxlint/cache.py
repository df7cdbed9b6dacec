"""Results cache: findings keyed by file content, configuration and tool version.

Lives in `.onnxlint_cache/` at the project root, with a `.gitignore` of `*` inside so it
ignores itself. One JSON file per configuration holds content-hash -> findings, so a warm
run reads one file and hashes the sources; nothing is parsed.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from onnxlint import __version__
from onnxlint.config import Config
from onnxlint.violation import Violation

CACHE_DIR = ".onnxlint_cache"


def content_key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def config_key(config: Config, extra: str = "") -> str:
    parts = repr(
        (
            __version__,
            config.select,
            config.ignore,
            config.extend_select,
            config.per_file_ignores,
            config.target_torch,
            config.exporter,
            config.severity,
            config.large_model_parameters,
            extra,
        )
    )
    return hashlib.blake2b(parts.encode(), digest_size=10).hexdigest()


class ResultCache:
    def __init__(self, root: Path, key: str) -> None:
        self.dir = root / CACHE_DIR
        self.file = self.dir / f"results-{key}.json"
        self.entries: dict[str, list[dict[str, Any]]] = {}
        self.dirty = False
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
            return None
        return [Violation.from_json({**row, "path": path}) for row in rows]

    def put(self, digest: str, violations: list[Violation]) -> None:
        self.entries[digest] = [{**v.to_json(), "deprecated": v.deprecated} for v in violations]
        self.dirty = True

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
