"""Finding the Python files and notebooks to check, and reading them without ever failing loudly.

Skips what a user never means to lint: VCS folders, virtual environments, build output,
node_modules, caches, and what `exclude`/`--exclude` name. Symlinked folders are followed
only once (a loop is not walked forever).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from onnxlint.core.config import Config

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".env",
        "env",
        "__pycache__",
        "build",
        "dist",
        "node_modules",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".onnxlint_cache",
        "site-packages",
        ".eggs",
        ".ipynb_checkpoints",  # Jupyter's autosaved copies (ruff skips them too)
    }
)
PY_SUFFIXES = (".py", ".pyi")
# What a folder walk checks: Python files and Jupyter notebooks.
CHECKED_SUFFIXES = (*PY_SUFFIXES, ".ipynb")
MAX_FILE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class PathProblem:
    """A command-line path that cannot be checked (a usage error, exit code 2)."""

    path: str
    message: str


def _is_venv(path: Path) -> bool:
    return (path / "pyvenv.cfg").is_file()


def discover(
    paths: list[str], config: Config, extra_excludes: tuple[str, ...] = ()
) -> tuple[list[Path], list[PathProblem]]:
    """Files to check under `paths`, in a stable order, and the paths that do not exist."""
    files: list[Path] = []
    problems: list[PathProblem] = []
    seen: set[str] = set()
    cfg = config.with_overrides(extend_exclude=config.extend_exclude + extra_excludes)
    for raw in paths:
        p = Path(raw)
        if not os.path.lexists(p):
            problems.append(PathProblem(raw, "no such file or directory"))
            continue
        if p.is_dir():
            for f, key in _walk(p, cfg):
                if key not in seen:
                    seen.add(key)
                    files.append(f)
        else:
            # A file named explicitly is checked even if its suffix is unusual.
            key = os.path.realpath(p)
            if key not in seen and not cfg.is_excluded(str(p)):
                seen.add(key)
                files.append(p)
    return files, problems


def _walk(root: Path, config: Config) -> Iterator[tuple[Path, str]]:
    """The files to check under `root`, each with its real path (for duplicates)."""
    visited: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in visited:  # a symlink loop or a second link to the same folder
            dirnames[:] = []
            continue
        visited.add(real)
        here = Path(dirpath)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in SKIP_DIRS
            and not d.endswith(".egg-info")
            and not _is_venv(here / d)
            and not config.is_excluded(str(here / d))
        )
        for name in sorted(filenames):
            if name.endswith(CHECKED_SUFFIXES):
                f = here / name
                if not config.is_excluded(str(f)):
                    # The folder's real path and the name, unless the file is a link
                    # itself: os.path.realpath's value, without its lstat per component.
                    link = os.path.islink(f)
                    yield f, os.path.realpath(f) if link else os.path.join(real, name)


def content_key(text: str) -> str:
    """A source text's identity for caches (the results cache, the project index)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class ReadError(Exception):
    """A file that cannot be read as Python source; the message says why and what to do."""


def read_text(path: Path) -> str:
    from onnxlint.source.fixes import read_source

    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ReadError(f"cannot read: {exc.strerror}") from None
    if size > MAX_FILE_BYTES:
        raise ReadError(
            f"skipped: {size / 1e6:.1f} MB is over the {MAX_FILE_BYTES // 2**20} MiB limit "
            "for a source file (is it generated?); exclude it with `extend-exclude`"
        )
    try:
        return read_source(path).text
    except UnicodeDecodeError as exc:
        raise ReadError(
            f"cannot decode as {exc.encoding} (byte {exc.object[exc.start]:#04x} at offset "
            f"{exc.start}): save the file as UTF-8 or declare its coding (PEP 263)"
        ) from None
    except OSError as exc:
        raise ReadError(f"cannot read: {exc.strerror}") from None
