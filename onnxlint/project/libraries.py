"""Where the installed libraries' source lies, for the one question the project's own files
cannot answer: whether a model class imported from a library (`from mmagic.models.editors.srcnn
import SRCNNNet`) behaves the same in train and eval mode. Its file is then read as text, like
the project's files, and judged there; nothing is imported.

The folders are the import path of the interpreter the project runs with, as pyright reads
the selected environment's `site-packages`: the configured `[tool.onnxlint.deep] python` when
set (asked once per process), else the interpreter onnxlint runs in (installed into the
project's environment, as the editor extension and `pip install onnxlint` have it). Only the
`site-packages`/`dist-packages` folders and `PYTHONPATH`'s entries count: not the standard
library, not the working directory (the project is looked up first, by its own rules).
When nothing is found the class stays unknown and the rules treat it as they did before.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

__all__ = ["library_roots"]

# How long asking another interpreter for its import path may take (a cold conda Python).
ASK_TIMEOUT_S = 10.0


def library_roots(python: str | None = None) -> tuple[str, ...]:
    """The library folders of `python` (None or onnxlint's own interpreter: this process's)."""
    # Paths, not their targets: a venv's `python` links to the same binary as its base's.
    if python is None or os.path.abspath(python) == os.path.abspath(sys.executable):
        return _library_folders(tuple(sys.path), os.environ.get("PYTHONPATH", ""))
    return _asked(python)


@functools.lru_cache(maxsize=8)
def _asked(python: str) -> tuple[str, ...]:
    code = "import json, os, sys; print(json.dumps([sys.path, os.environ.get('PYTHONPATH', '')]))"
    try:
        proc = subprocess.run(
            [python, "-c", code],
            capture_output=True,
            text=True,
            timeout=ASK_TIMEOUT_S,
            check=False,
        )
        path, pythonpath = json.loads(proc.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return ()
    return _library_folders(tuple(str(p) for p in path), str(pythonpath))


@functools.lru_cache(maxsize=8)
def _library_folders(path: tuple[str, ...], pythonpath: str) -> tuple[str, ...]:
    given = {os.path.abspath(p) for p in pythonpath.split(os.pathsep) if p}
    out: list[str] = []
    for entry in path:
        if not entry:
            continue
        folder = os.path.abspath(entry)
        name = os.path.basename(folder)
        if (name in ("site-packages", "dist-packages") or folder in given) and os.path.isdir(
            folder
        ):
            out.append(folder)
    return tuple(dict.fromkeys(out))
