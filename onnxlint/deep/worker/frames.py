"""Where a finding goes: the innermost line outside torch, and the chain that leads there.

Every stack the analysis sees (an exception's traceback, dynamo's break frames,
the ShapeEnv's call stack when a dim is pinned, an FX node's `stack_trace`) is
classified frame by frame:

- *internal*: torch and the export stack (torch, onnxscript, onnx, onnx_ir,
  onnxruntime, sympy), the standard library, onnxlint itself, `<frozen ...>`;
- *library*: any other file in site-packages (transformers, MONAI, ...);
- *project*: a file under the project root (or any other file, e.g. an editable
  install outside site-packages).

The primary location is the innermost frame that is not internal, whether it is
in the project or in a library. The *chain* is the path from the user's code to
it: the project-side frames and library frames of the stack, outermost first,
led by the target's factory when no project frame is on the stack (a library
model's forward is called by torch, not by the user).
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
import traceback
from collections.abc import Iterable, Sequence
from typing import Any

_STACK_TRACE_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>\S+)')
_RAISED_AT = re.compile(r'The following call raised this error:\s*\n\s*File "([^"]+)", line (\d+)')

INTERNAL_PACKAGES = (
    "torch",
    "torchgen",
    "functorch",
    "onnxscript",
    "onnx",
    "onnx_ir",
    "onnxruntime",
    "sympy",
    "typing_extensions",
)
"""Top-level packages whose frames are never a finding's place: the export machinery."""

MAX_CHAIN = 8
"""Links kept in a chain: the outermost project link and the innermost ones."""

Frame = dict[str, Any]


def _site_dirs() -> tuple[str, ...]:
    dirs = set()
    for key in ("purelib", "platlib"):
        try:
            dirs.add(os.path.realpath(sysconfig.get_paths()[key]))
        except KeyError:
            continue
    for entry in sys.path:
        if entry.endswith(("site-packages", "dist-packages")):
            dirs.add(os.path.realpath(entry))
    return tuple(sorted(dirs))


def _stdlib_dirs() -> tuple[str, ...]:
    dirs = set()
    for key in ("stdlib", "platstdlib"):
        try:
            dirs.add(os.path.realpath(sysconfig.get_paths()[key]))
        except KeyError:
            continue
    return tuple(sorted(dirs))


_SITE_DIRS = _site_dirs()
_STDLIB_DIRS = _stdlib_dirs()
_ONNXLINT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
_cache: dict[str, str] = {}


def _in_site_packages(parts: list[str]) -> int | None:
    """Index just after the last site-packages/dist-packages component, if any."""
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] in ("site-packages", "dist-packages"):
            return i + 1
    return None


def classify(filename: str) -> str:
    """ "internal", "library" or "project" (see the module docstring)."""
    if not filename or filename.startswith("<"):
        return "internal"
    hit = _cache.get(filename)
    if hit is not None:
        return hit
    real = os.path.realpath(filename)
    parts = real.replace("\\", "/").split("/")
    after = _in_site_packages(parts)
    if real.startswith(_ONNXLINT + os.sep):
        kind = "internal"
    elif after is not None:
        top = parts[after] if after < len(parts) else ""
        top = top[:-3] if top.endswith(".py") else top
        kind = "internal" if top in INTERNAL_PACKAGES else "library"
    elif any(real.startswith(d + os.sep) for d in _STDLIB_DIRS):
        kind = "internal"
    elif any(real.startswith(d + os.sep) for d in _SITE_DIRS):
        kind = "library"
    else:
        kind = "project"
    _cache[filename] = kind
    return kind


def is_library_file(filename: str) -> bool:
    """Not the user's own code: torch and friends, the stdlib, site-packages."""
    return classify(filename) != "project"


def is_project_file(filename: str, root: str) -> bool:
    if classify(filename) != "project":
        return False
    real = os.path.realpath(filename)
    return real.startswith(os.path.realpath(root) + os.sep)


def frame_dict(filename: str, line: int, name: str = "") -> Frame:
    return {"file": os.path.realpath(filename), "line": int(line), "name": name}


def visible(stack: Iterable[Any]) -> list[Frame]:
    """The frames of a stack (FrameSummary-like or frame dicts) that are not internal,
    outermost first, each with its `where` ("library" or "project")."""
    out = []
    for fr in stack:
        if isinstance(fr, dict):
            filename, lineno, name = fr.get("file"), fr.get("line"), fr.get("name", "")
        else:
            filename = getattr(fr, "filename", None)
            lineno = getattr(fr, "lineno", None)
            name = getattr(fr, "name", "")
        if filename is None or lineno is None:
            continue
        kind = classify(str(filename))
        if kind == "internal":
            continue
        d = frame_dict(str(filename), int(lineno), str(name or ""))
        d["where"] = kind
        out.append(d)
    return out


def locate(
    stack: Iterable[Any], root: str, lead: Frame | None = None, *, in_project: bool = False
) -> tuple[Frame | None, list[Frame]]:
    """(primary frame, chain) for a stack, outermost first.

    `lead`: the target's factory, put at the head of the chain when the primary
    frame is in a library and no project frame is on the stack.
    `in_project`: the primary frame is the innermost frame of the project's own code when
    there is one (the library frames below it stay in the chain). For a script or factory
    that stops before the export: the user's line that called into numpy, argparse or a
    hub download is what to change, not the library's line that raised.
    """
    frames = visible(stack)
    if not frames:
        return None, []
    primary = dict(frames[-1])
    if in_project and primary["where"] != "project":
        mine = [f for f in frames if f["where"] == "project"]
        if mine:
            primary = dict(mine[-1])
    if primary["where"] == "project" and len(frames) == 1:
        return primary, []
    first_project = next((i for i, f in enumerate(frames) if f["where"] == "project"), None)
    chain = frames[first_project:] if first_project is not None else list(frames)
    if first_project is None and lead is not None:
        chain = [{**lead, "where": "project", "name": f"factory {lead.get('name') or ''}"}, *chain]
    if len(chain) > MAX_CHAIN:
        chain = [chain[0], *chain[-(MAX_CHAIN - 1) :]]
    if len(chain) < 2:
        return primary, []
    return primary, chain


def exception_stack(exc: BaseException) -> list[Any]:
    """The whole traceback of an exception and its causes, outermost first; dynamo's
    `real_stack` (the user frames it was tracing) appended."""
    stack: list[Any] = []
    e: BaseException | None = exc
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        stack = list(traceback.extract_tb(e.__traceback__)) + stack
        e = e.__cause__ or e.__context__
    real_stack = getattr(exc, "real_stack", None)
    if real_stack:
        stack = stack + list(real_stack)
    return stack


def raised_at(exc: BaseException) -> Frame | None:
    """torch's own pointer in an export error ("The following call raised this error")."""
    m = _RAISED_AT.search(str(exc))
    if m and classify(m.group(1)) != "internal":
        d = frame_dict(m.group(1), int(m.group(2)))
        d["where"] = classify(m.group(1))
        return d
    return None


def parse_stack_trace(text: str | None) -> list[Frame]:
    """Frames from an FX node's `meta["stack_trace"]` (traceback text), outermost first."""
    if not text:
        return []
    return [
        frame_dict(m.group("file"), int(m.group("line")), m.group("name"))
        for m in _STACK_TRACE_LINE.finditer(text)
    ]


def pick(frames: Sequence[Frame], root: str) -> Frame | None:
    """The innermost frame that is not internal (no chain)."""
    return locate(frames, root)[0]
