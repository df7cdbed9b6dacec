"""Choose the user's frame from a stack: skip torch, site-packages and the stdlib.

A finding belongs on the line of the user's code that causes it, not inside
torch. The innermost frame under the project root wins; failing that, the
innermost frame that is not library code (a user's editable install lives
outside site-packages).
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from typing import Any

_STACK_TRACE_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>\S+)')


def _library_dirs() -> tuple[str, ...]:
    dirs = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            dirs.add(os.path.realpath(sysconfig.get_paths()[key]))
        except KeyError:
            continue
    for entry in sys.path:
        if entry.endswith(("site-packages", "dist-packages")):
            dirs.add(os.path.realpath(entry))
    return tuple(sorted(dirs))


_LIB_DIRS = _library_dirs()
_HERE = os.path.dirname(os.path.realpath(__file__))


def is_library_file(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return True
    real = os.path.realpath(filename)
    if real.startswith(_HERE):
        return True
    parts = real.replace("\\", "/").split("/")
    if "site-packages" in parts or "dist-packages" in parts:
        return True
    return any(real.startswith(d + os.sep) for d in _LIB_DIRS)


def is_project_file(filename: str, root: str) -> bool:
    if is_library_file(filename):
        return False
    real = os.path.realpath(filename)
    return real.startswith(os.path.realpath(root) + os.sep)


def frame_dict(filename: str, line: int, name: str = "") -> dict[str, Any]:
    return {"file": os.path.realpath(filename), "line": int(line), "name": name}


def user_frames(stack: Iterable[Any]) -> list[dict[str, Any]]:
    """Frames (FrameSummary-like: filename, lineno, name) that are not library code."""
    out = []
    for fr in stack:
        filename = getattr(fr, "filename", None)
        lineno = getattr(fr, "lineno", None)
        if filename is None or lineno is None or is_library_file(filename):
            continue
        out.append(frame_dict(filename, lineno, getattr(fr, "name", "")))
    return out


def pick(frames: Sequence[dict[str, Any]], root: str) -> dict[str, Any] | None:
    """The innermost project frame, else the innermost non-library frame."""
    for fr in reversed(frames):
        if is_project_file(fr["file"], root):
            return dict(fr)
    for fr in reversed(frames):
        if not is_library_file(fr["file"]):
            return dict(fr)
    return None


def parse_stack_trace(text: str | None) -> list[dict[str, Any]]:
    """Frames from an FX node's `meta["stack_trace"]` (traceback text)."""
    if not text:
        return []
    out = []
    for m in _STACK_TRACE_LINE.finditer(text):
        filename = m.group("file")
        if not is_library_file(filename):
            out.append(frame_dict(filename, int(m.group("line")), m.group("name")))
    return out
