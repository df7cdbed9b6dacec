"""A rewrite's files, seen by the analysis in place of the ones on disk (stdlib only).

A proof of a rewrite (`proof.py`) runs the analysis on the rewritten code without
touching the user's files: the parent sends the new text of each file it changes (and
of each file it adds, such as a module of ONNX translations next to the export script)
as `target["overlay"]`, `{absolute path: text}`. For the rest of the child's life:

- an import of a module whose file is in the overlay compiles the overlay's text, with
  the file's own path as its name (tracebacks, FX stack traces and findings carry the
  user's path and the rewritten line numbers), and writes no bytecode;
- a file the overlay adds is importable by its place on `sys.path` (or in a package);
- `linecache` serves the overlay's lines, so `inspect.getsource` and torch's source
  lookups read the code that runs;
- `read_text(path)` is how the worker reads a script (`script.py`).

Nothing is written to disk.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

_FILES: dict[str, str] = {}


def install(files: Mapping[str, str]) -> None:
    """Serve `files` (absolute path -> text) for the rest of this process."""
    for path, text in files.items():
        real = os.path.realpath(path)
        _FILES[real] = text
        _FILES[os.path.abspath(path)] = text
        for name in {path, real}:
            lines = text.splitlines(keepends=True)
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
            # mtime None: linecache.checkcache never drops it for the file on disk
            linecache.cache[name] = (len(text), None, lines, name)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    importlib.invalidate_caches()


def text_of(path: str) -> str | None:
    """The overlay's text for `path`, or None when the file is not in the overlay."""
    return _FILES.get(os.path.realpath(path)) or _FILES.get(os.path.abspath(path))


def read_text(path: str) -> str:
    """A file's text as the rewritten code has it (the overlay's, else the file's)."""
    text = text_of(path)
    if text is not None:
        return text
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def active() -> bool:
    return bool(_FILES)


class _Loader(importlib.machinery.SourceFileLoader):
    """A source loader that reads the overlay for its file and writes no bytecode."""

    def get_data(self, path: str) -> bytes:
        text = text_of(path)
        if text is not None:
            return text.encode("utf-8")
        return super().get_data(path)

    def path_stats(self, path: str) -> Mapping[str, Any]:
        if text_of(path) is not None:
            raise OSError("overlay: no bytecode cache")  # compiled from the text, each time
        return super().path_stats(path)

    def set_data(self, path: str, data: Any, *, _mode: int = 0o666) -> None:
        return None


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None:
            origin = spec.origin
            if origin and text_of(origin) is not None and origin.endswith(".py"):
                loader = _Loader(fullname, origin)
                return importlib.util.spec_from_file_location(
                    fullname,
                    origin,
                    loader=loader,
                    submodule_search_locations=spec.submodule_search_locations,
                )
            return None
        # a module the rewrite adds: <entry>/<name>.py for an entry of the search path
        leaf = fullname.rpartition(".")[2]
        for entry in path if path is not None else sys.path:
            candidate = os.path.join(entry or os.getcwd(), leaf + ".py")
            if text_of(candidate) is not None:
                return importlib.util.spec_from_file_location(
                    fullname, candidate, loader=_Loader(fullname, candidate)
                )
        return None
