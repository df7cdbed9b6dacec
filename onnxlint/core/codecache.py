"""A disk cache for the code that attrs and dataclasses generate while libraries import.

Importing lsprotocol (pygls's types) defines ~550 attrs classes and libcst ~200 dataclasses;
both generate `__init__`/`__eq__`/`__repr__` source per class and compile it, and that
compiling is about half of the language server's start-up (~200 ms of ~450 ms measured
here). Python caches the bytecode of modules in `.pyc` files but not of generated code, so
this module does the same for it: while `generated_code_cache()` is active, the `compile`
that `attr._make` calls and the `exec` of source that `dataclasses` calls are served from a
marshal file of code objects keyed by a hash of (source, filename, flags), so a hit is the
exact code object `compile` would have returned.

The cache is an optimisation only: it is skipped when `ONNXLINT_NO_CODE_CACHE` is set,
when attrs or dataclasses do not look as expected, or when the file cannot be read or
written; the file is per Python bytecode version and is rewritten whenever something was missing
(with only the latest start's entries once it holds too many).
"""

from __future__ import annotations
import __future__

import builtins
import contextlib
import hashlib
import importlib.util
import marshal
import os
import sys
import tempfile
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

_ENV_OFF = "ONNXLINT_NO_CODE_CACHE"
_ANNOTATIONS = __future__.annotations.compiler_flag
_MAX_ENTRIES = 8000  # one server start compiles ~3,000


def cache_file() -> Path:
    """Where the code objects live: per user, per Python bytecode version."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    tag = f"{sys.implementation.cache_tag}-{importlib.util.MAGIC_NUMBER.hex()}"
    return Path(base) / "onnxlint" / f"generated-code-{tag}.marshal"


class CacheStats:
    """What one use of the cache did (for tests and the log)."""

    used: dict[bytes, types.CodeType]
    missed: int


class _Store(CacheStats):
    def __init__(self, path: Path) -> None:
        self.path = path
        self.known: dict[bytes, types.CodeType] = {}
        self.used: dict[bytes, types.CodeType] = {}
        self.missed = 0
        with contextlib.suppress(Exception):  # absent, unreadable or corrupt: start empty
            loaded = marshal.loads(path.read_bytes())
            if isinstance(loaded, dict):
                self.known = loaded

    def compile(self, source: str, filename: str, flags: int) -> types.CodeType:
        key = hashlib.blake2b(
            f"{flags}\0{filename}\0{source}".encode("utf-8", "surrogatepass"), digest_size=16
        ).digest()
        code = self.known.get(key)
        if code is None:
            code = builtins.compile(source, filename, "exec", flags=flags, dont_inherit=True)
            self.missed += 1
        self.used[key] = code
        return code

    def save(self) -> None:
        if not self.missed:
            return
        with contextlib.suppress(OSError, ValueError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".generated-code-")
            try:
                # Keep what other entry points (CLI, server) use too, unless the file
                # has grown past what one start needs (old library versions).
                keep = self.used if len(self.known) > _MAX_ENTRIES else {**self.known, **self.used}
                with os.fdopen(fd, "wb") as f:
                    f.write(marshal.dumps(keep))
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise


def _patch_attrs(store: _Store) -> Callable[[], None] | None:
    """attrs' `_make` module calls the builtin `compile(script, filename, "exec")`; a
    module-level `compile` shadows it. `_make` has `from __future__ import annotations`,
    so its compiles carry that flag."""
    try:
        import attr._make as make
    except ImportError:
        return None
    if "compile" in vars(make) or not hasattr(make, "_linecache_and_compile"):
        return None  # not the attrs this was written for: leave it alone

    def compile_(source: Any, filename: Any, mode: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs or mode != "exec" or not isinstance(source, str):
            return builtins.compile(source, filename, mode, *args, **kwargs)
        return store.compile(source, str(filename), _ANNOTATIONS)

    make.compile = compile_  # type: ignore[attr-defined]
    return lambda: delattr(make, "compile")


def _patch_dataclasses(store: _Store) -> Callable[[], None] | None:
    """`dataclasses._create_fn` calls `exec(txt, globals, ns)` on generated source; the
    module has no `__future__` imports, so its exec compiles with no flags."""
    import dataclasses

    if "exec" in vars(dataclasses):
        return None

    def exec_(source: Any, globals_: Any = None, locals_: Any = None, /, **kwargs: Any) -> Any:
        if isinstance(source, str) and not kwargs:
            source = store.compile(source, "<string>", 0)
        return builtins.exec(source, globals_, locals_, **kwargs)

    dataclasses.exec = exec_  # type: ignore[attr-defined]
    return lambda: delattr(dataclasses, "exec")


@contextlib.contextmanager
def generated_code_cache() -> Iterator[CacheStats | None]:
    """Serve attrs' and dataclasses' generated code from the cache inside the block
    (use it around the imports, on one thread, before other threads start). Yields the
    counters, or None when the cache is switched off."""
    if os.environ.get(_ENV_OFF):
        yield None
        return
    store = _Store(cache_file())
    undo = [u for u in (_patch_attrs(store), _patch_dataclasses(store)) if u is not None]
    try:
        yield store
    finally:
        for u in undo:
            u()
        store.save()
