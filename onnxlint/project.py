"""The user's other modules, read as text (never imported) when a rule needs to know
something about a name a file imports: the `forward` parameters of a model class that
`model.py` defines and `export.py` exports.

`ProjectIndex.find_forward(importer, qualname, root)` finds the module the way `import`
would from the usual places (the importer's folder, the folder above its top package, the
project root and its `src/`), reads it through the engine's parse cache, follows re-exports
(`from .net import Net` in an `__init__.py`) and base classes (local or imported), and keeps
a small summary per file content. Every file it looked for is recorded in `deps` (its
content hash, or None when it was absent), so the CLI's results cache and the server know
when a finding that depends on another file goes stale.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import libcst as cst

from onnxlint.blocks import ParseCache, split_blocks
from onnxlint.files import content_key
from onnxlint.semantic import ClassInfo

# A `forward(*args, **kwargs)`: the parameter names say nothing about the inputs.
_STAR = "*"
# Re-exports and base classes followed across files before giving up.
_MAX_HOPS = 6
# Larger files are not read (generated code; a model definition is far smaller).
_MAX_CHARS = 2_000_000

Reader = Callable[[str], "str | None"]


@dataclass(frozen=True)
class ClassSummary:
    """What other files may ask about a class: its own `forward` and its bases."""

    forward: tuple[str, ...] | None  # parameter names; (`*`,) for *args/**kwargs; None: none
    bases: tuple[str, ...]  # as written (`nn.Module`, `Base`)


@dataclass(frozen=True)
class ModuleSummary:
    """The classes and imports of one module file (no syntax trees are kept)."""

    path: str
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    imports: dict[str, str] = field(default_factory=dict)  # bound name -> qualified name


def read_disk(path: str) -> str | None:
    """A file's text, or None when it is absent, unreadable or too large."""
    from pathlib import Path

    from onnxlint.files import ReadError, read_text

    try:
        text = read_text(Path(path))
    except ReadError:
        return None
    return text if len(text) <= _MAX_CHARS else None


class ProjectIndex:
    """Summaries of the project's modules, one per file content; one per engine."""

    def __init__(self, parse_cache: ParseCache, read: Reader = read_disk) -> None:
        self.parse_cache = parse_cache
        self.read = read
        self._summaries: dict[str, tuple[str, ModuleSummary]] = {}  # path -> (hash, summary)
        self.deps: dict[str, str | None] = {}  # this check's files: content hash or None

    def begin_check(self) -> None:
        self.deps = {}

    # -- questions

    def find_forward(
        self, importer: str, qualname: str, root: str | None
    ) -> tuple[list[str], str] | None:
        """The `forward` parameter names (without `self`) of the class `qualname` names in
        `importer`'s imports (`models.net.Net`, `.net.Net`), and the file of the module
        that defines that `forward`; None when the class or its `forward` cannot be found,
        or `forward` takes `*args`/`**kwargs`."""
        found = self._find_class(importer, qualname, root, _MAX_HOPS)
        hops = _MAX_HOPS
        while found is not None and hops > 0:
            hops -= 1
            module, name = found
            cls = module.classes[name]
            if cls.forward is not None:
                return None if cls.forward == (_STAR,) else (list(cls.forward), module.path)
            found = None
            for base in cls.bases:  # the first base that resolves (single inheritance)
                head, _, rest = base.partition(".")
                if not rest and head in module.classes:
                    found = (module, head)
                elif head in module.imports:
                    q = module.imports[head] + (f".{rest}" if rest else "")
                    found = self._find_class(module.path, q, root, hops)
                if found is not None:
                    break
        return None

    # -- resolution

    def _find_class(
        self, importer: str, qualname: str, root: str | None, hops: int
    ) -> tuple[ModuleSummary, str] | None:
        """The module summary defining the class `qualname`, following re-exports."""
        while hops > 0:
            hops -= 1
            rest = qualname.lstrip(".")
            dots = qualname[: len(qualname) - len(rest)]  # `from . import Net`: ".Net"
            module_name, _, name = rest.rpartition(".")
            module_name = dots + module_name
            if not name or not module_name:
                return None
            module = self._module(importer, module_name, root)
            if module is None:
                return None
            if name in module.classes:
                return module, name
            target = module.imports.get(name)
            if target is None:
                return None
            importer, qualname = module.path, target
        return None

    def _module(self, importer: str, module_name: str, root: str | None) -> ModuleSummary | None:
        for path in _candidates(importer, module_name, root):
            text = self.read(path)
            if text is None:
                self.deps.setdefault(path, None)
                continue
            digest = content_key(text)
            self.deps[path] = digest
            cached = self._summaries.get(path)
            if cached is not None and cached[0] == digest:
                return cached[1]
            summary = _summarise(path, text, self.parse_cache)
            self._summaries[path] = (digest, summary)
            return summary
        return None


def _candidates(importer: str, module_name: str, root: str | None) -> Iterator[str]:
    """The files `import module_name` could load from `importer`, in the order tried: a
    package (`name/__init__.py`) before a module (`name.py`) in each folder."""
    here = os.path.dirname(os.path.abspath(importer))
    level = len(module_name) - len(module_name.lstrip("."))
    parts = [p for p in module_name[level:].split(".") if p]
    if level:
        base = here
        for _ in range(level - 1):
            base = os.path.dirname(base)
        folders = [base]
    else:
        folders = _roots(here, root)
        if not parts:
            return
    for folder in folders:
        target = os.path.join(folder, *parts)
        yield os.path.join(target, "__init__.py")
        if parts:
            yield target + ".py"


def _roots(here: str, root: str | None) -> list[str]:
    """Where absolute imports start: the importer's folder (`python export.py`), the folder
    above its top package, the project root and its `src/`."""
    out = [here]
    top = here
    while os.path.isfile(os.path.join(top, "__init__.py")):
        top = os.path.dirname(top)
    out.append(top)
    if root:
        out += [root, os.path.join(root, "src")]
    return list(dict.fromkeys(out))


def _summarise(path: str, text: str, parse_cache: ParseCache) -> ModuleSummary:
    from onnxlint.engine import block_index  # the engine imports this module

    summary = ModuleSummary(path)
    for block in split_blocks(text, parse_cache):
        if block.module is None:
            continue
        idx = block_index(block)
        summary.imports.update(idx.imports)
        for c in idx.classes:
            summary.classes[c.name] = ClassSummary(_forward(c), c.bases)
    return summary


def _forward(c: ClassInfo) -> tuple[str, ...] | None:
    fwd = c.methods.get("forward")
    if fwd is None:
        return None
    p = fwd.node.params
    if isinstance(p.star_arg, cst.Param) or p.star_kwarg is not None:
        return (_STAR,)
    return tuple(x.name.value for x in fwd.params())
