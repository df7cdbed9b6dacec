"""A project's own package named like a library the worker has imported.

`python -m onnx.export_onnx` in a project with an `onnx/` folder imports the project's
package: `onnx` is not imported yet when Python starts. The worker has imported the
library `onnx` (and onnxscript, onnxruntime, ...) long before the script runs, so the
script's `from . import modnet` would look inside the library. For the run, such a module
is taken out of `sys.modules` (and put back after), so that the script imports the
project's package, as it does when run by itself.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from types import ModuleType

# What the run itself cannot do without (the capture and the fake tensors run inside it).
_KEEP = frozenset({"torch", "numpy", "sympy", "mpmath", "typing_extensions", "onnxlint"})


def _top_names(folder: str) -> set[str]:
    """The importable top-level names a folder on `sys.path` gives: packages (folders with
    an `__init__.py`) and modules (`.py` files)."""
    names: set[str] = set()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return names
    for e in entries:
        if e.name.endswith(".py") and e.is_file():
            names.add(e.name[:-3])
        elif e.is_dir() and os.path.isfile(os.path.join(e.path, "__init__.py")):
            names.add(e.name)
    return {n for n in names if n.isidentifier()}


def _from(module: ModuleType, folder: str) -> bool:
    where = getattr(module, "__file__", None) or ""
    return bool(where) and os.path.realpath(where).startswith(os.path.realpath(folder) + os.sep)


@contextlib.contextmanager
def project_first(folders: list[str]) -> Iterator[list[str]]:
    """For the run, the modules the project's own folders shadow are not imported yet; the
    names taken out are yielded, and everything is put back afterwards."""
    hidden: dict[str, ModuleType] = {}
    names: list[str] = []
    for folder in folders:
        for name in sorted(_top_names(folder)):
            module = sys.modules.get(name)
            if module is None or name in _KEEP or name in sys.stdlib_module_names:
                continue
            if _from(module, folder) or name in names:
                continue
            names.append(name)
            for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
                hidden[key] = sys.modules.pop(key)
    try:
        yield names
    finally:
        for key, module in hidden.items():
            sys.modules[key] = module
