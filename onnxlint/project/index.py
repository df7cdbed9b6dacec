"""The project's other modules, read as text (never imported), one `FileFacts` per file
content: the classes, functions and imports of `model.py` when `export.py` imports from it.

`ProjectIndex.find_class(importer, qualname, root)` finds the module the way `import`
would (see `resolve.candidates`), follows re-exports (`from .net import Net` in an
`__init__.py`) and answers with the file's facts and the class; `is_module` follows base
classes across files to `torch.nn.Module`; `find_forward` gives the `forward` parameters
of an imported model class. Every file looked for is recorded in `deps` (its content
hash, or None when absent), so the CLI's results cache and the server know when a
finding that depends on another file goes stale.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import libcst as cst

from onnxlint.analysis.file import FileAnalysis
from onnxlint.core.config import Config
from onnxlint.project.facts import FileFacts, file_analysis
from onnxlint.project.libraries import library_roots
from onnxlint.project.resolve import Reader, can_export, candidates, read_disk
from onnxlint.project.summary import ModuleSummary, SummaryStore, summarise
from onnxlint.semantic.frameworks import base_verdict
from onnxlint.semantic.index import ClassInfo, FunctionInfo
from onnxlint.source.blocks import Block, ParseCache, split_blocks
from onnxlint.source.files import content_key

# A `forward(*args, **kwargs)`: the parameter names say nothing about the inputs.
STAR = "*"
# Re-exports and base classes followed across files before giving up.
MAX_HOPS = 6


class ProjectIndex:
    """Facts of the project's modules, one per file content; one per engine."""

    def __init__(self, parse_cache: ParseCache, read: Reader = read_disk) -> None:
        self.parse_cache = parse_cache
        self.read = read
        self._facts: dict[str, FileFacts] = {}  # path -> facts of its last content read
        self.deps: dict[str, str | None] = {}  # this check's files: content hash or None
        self.config = Config()
        self.root: str | None = None
        self._module_memo: dict[tuple[str, str], bool | None] = {}
        self._return_memo: dict[tuple[str, str], str | None] = {}
        self._library_memo: dict[tuple[str, str], tuple[FileAnalysis, ClassInfo] | None] = {}
        self._libraries: tuple[str, ...] | None = None
        self._summaries: dict[str, ModuleSummary] = {}  # path -> summary of its last text
        # Summaries the other processes of this run made (the CLI's pool workers).
        self.shared_summaries: SummaryStore | None = None

    def begin_check(self, config: Config | None = None) -> None:
        self.deps = {}
        self._module_memo = {}
        self._return_memo = {}
        self._library_memo = {}
        if config is not None:
            self.use_config(config)

    def use_config(self, config: Config) -> None:
        """The configuration the project's files are read with (exporter, torch version)
        and its root, where absolute imports start."""
        if config != self.config:
            self._facts.clear()  # their models were built with the old settings
        if config.deep_python() != self.config.deep_python():
            self._libraries = None
        self.config = config
        self.root = str(config.root) if config.root is not None else None

    # -- files

    def facts(self, path: str, text: str | None = None) -> FileFacts | None:
        """The facts of one file (read through `read` unless `text` is given)."""
        if text is None:
            text = self.read(path)
            if text is None:
                self.deps.setdefault(path, None)
                return None
        digest = content_key(text)
        self.deps.setdefault(path, digest)
        cached = self._facts.get(path)
        if cached is not None and cached.digest == digest:
            return cached
        if "\x00" in text:
            return None
        blocks = [b for b in split_blocks(text, self.parse_cache) if b.module is not None]
        analysis = file_analysis(
            path, text, self.config, blocks, self.base_resolver(path), project=self
        )
        facts = FileFacts(path, digest, blocks, analysis)
        self._facts[path] = facts
        return facts

    def take(self, path: str, digest: str, config: Config, parsed: list[Block]) -> FileFacts | None:
        """The facts the index read for `path` at this content and configuration, when no
        engine check has used them yet and they hold the very trees of `parsed` (the
        engine's blocks of the same text): the engine checks with their context instead
        of building a second one (the project model has just read the edited file)."""
        found = self._facts.get(path)
        if found is None or not found.fresh or found.digest != digest or config != self.config:
            return None
        if len(found.blocks) != len(parsed) or any(
            a.module is not b.module for a, b in zip(found.blocks, parsed, strict=True)
        ):
            return None
        found.fresh = False
        return found

    def adopt(self, facts: FileFacts, config: Config) -> None:
        """Keep the engine's facts of the file it checks as the project's facts of that
        file (the reach table and the rules then share one context and its memo)."""
        facts.fresh = False
        if config == self.config:
            self._facts[facts.path] = facts

    def forget(self, path: str | None = None) -> None:
        """Drop the facts of one file, or of all (their SemanticModels resolve bases through
        other files, so a changed file can change what another's classes are)."""
        if path is None:
            self._facts.clear()
            self._summaries.clear()
        else:
            self._facts.pop(path, None)
            self._summaries.pop(path, None)

    def cached(self, path: str) -> FileFacts | None:
        """The facts last read for `path`, without reading it again."""
        return self._facts.get(path)

    def known_facts(self) -> list[FileFacts]:
        return list(self._facts.values())

    def module(
        self, importer: str, module_name: str, libraries: tuple[str, ...] = ()
    ) -> FileFacts | None:
        """The facts of the module `import module_name` loads from `importer`: a project
        file, else one in the `libraries` folders (an absolute import only)."""
        for path in candidates(importer, module_name, self.root):
            found = self.facts(path)
            if found is not None:
                return found
        if module_name.startswith("."):
            return None
        for folder in libraries:
            # as imported from a file in `folder`: `candidates` then looks in it alone
            for path in candidates(os.path.join(folder, "__main__.py"), module_name, None):
                found = self.facts(path)
                if found is not None:
                    return found
        return None

    # -- names across files

    def find_class(
        self,
        importer: str,
        qualname: str,
        hops: int = MAX_HOPS,
        libraries: tuple[str, ...] = (),
    ) -> tuple[FileFacts, ClassInfo] | None:
        """The project file defining the class `qualname` names in `importer`, following
        re-exports (else the `libraries` folders' file); None when it is not found."""
        found = self._definition(importer, qualname, hops, "classes", libraries)
        return found if found is None or isinstance(found[1], ClassInfo) else None

    def find_function(
        self, importer: str, qualname: str, hops: int = MAX_HOPS
    ) -> tuple[FileFacts, FunctionInfo] | None:
        """The same for a module-level function."""
        found = self._definition(importer, qualname, hops, "functions")
        return found if found is None or isinstance(found[1], FunctionInfo) else None

    def _definition(
        self, importer: str, qualname: str, hops: int, table: str, libraries: tuple[str, ...] = ()
    ) -> tuple[FileFacts, Any] | None:
        found = self._find(importer, qualname, hops, libraries)
        if found is None:
            return None
        facts, name = found
        info = getattr(facts.semantic, table).get(name)
        return (facts, info) if info is not None else None

    def function_at(self, importer: str, qualname: str) -> tuple[FileAnalysis, FunctionInfo] | None:
        """`find_function` as the file analyses ask it (`ProjectLookup`): also a name
        defined in `importer` itself (no dot: a builder's own module)."""
        if "." not in qualname:
            facts = self.facts(importer)
            info = facts.semantic.functions.get(qualname) if facts is not None else None
            return (facts.analysis, info) if facts is not None and info is not None else None
        found = self.find_function(importer, qualname)
        return (found[0].analysis, found[1]) if found is not None else None

    def class_at(self, importer: str, qualname: str) -> tuple[FileAnalysis, ClassInfo] | None:
        """The same for a class."""
        if "." not in qualname:
            facts = self.facts(importer)
            info = facts.semantic.classes.get(qualname) if facts is not None else None
            return (facts.analysis, info) if facts is not None and info is not None else None
        found = self.find_class(importer, qualname)
        return (found[0].analysis, found[1]) if found is not None else None

    def library_class_at(
        self, importer: str, qualname: str
    ) -> tuple[FileAnalysis, ClassInfo] | None:
        """`class_at` for a class the project does not define, found in the installed
        libraries (`project.libraries`: the environment's `site-packages`), read as text.
        Asked only where a library class's own code decides (a model's mode)."""
        if "." not in qualname:
            return None
        key = (importer, qualname)
        if key not in self._library_memo:
            found = self.find_class(importer, qualname, libraries=self.libraries())
            self._library_memo[key] = (found[0].analysis, found[1]) if found else None
        return self._library_memo[key]

    def libraries(self) -> tuple[str, ...]:
        """The library folders of the project's interpreter (asked once per configuration)."""
        if self._libraries is None:
            self._libraries = library_roots(self.config.deep_python())
        return self._libraries

    def export_function(
        self, importer: str, qualname: str
    ) -> tuple[FileAnalysis, FunctionInfo] | None:
        """`function_at` for a function whose module's text can hold an export call: the
        module is found from `ast` summaries and its text tested before it is parsed
        (most functions a script imports are no export wrappers)."""
        found = self._summary_definition(importer, qualname, MAX_HOPS, lambda s, n: n in s.defines)
        if found is None:
            return None
        path, _, name = found
        text = self.read(path)
        if text is None or not can_export(text):
            return None
        facts = self.facts(path, text)
        info = facts.semantic.functions.get(name) if facts is not None else None
        return (facts.analysis, info) if facts is not None and info is not None else None

    def find_constant(
        self, importer: str, qualname: str, hops: int = MAX_HOPS
    ) -> cst.BaseExpression | None:
        """The value of a module-level constant (`OPSET = 17`) that `qualname` names in
        `importer`'s imports, when it is assigned exactly once."""
        found = self.constant_at(importer, qualname, hops)
        return found[1] if found is not None else None

    def constant_at(
        self, importer: str, qualname: str, hops: int = MAX_HOPS
    ) -> tuple[FileAnalysis, cst.BaseExpression] | None:
        """`find_constant` with the facts of the file that assigns it (`ProjectLookup`)."""
        found = self._find(importer, qualname, hops)
        if found is None:
            return None
        facts, name = found
        values = [
            node.value
            for stmt in facts.semantic.module_body
            if isinstance(stmt, cst.SimpleStatementLine)
            for node in stmt.body
            if isinstance(node, (cst.Assign, cst.AnnAssign))
            and node.value is not None
            and any(
                isinstance(t.target, cst.Name) and t.target.value == name
                for t in (node.targets if isinstance(node, cst.Assign) else [node])
            )
        ]
        return (facts.analysis, values[0]) if len(values) == 1 else None

    def find_name(self, importer: str, qualname: str) -> tuple[FileFacts, str] | None:
        """The project file that defines the name `qualname` names in `importer` (a class,
        a function or a module-level assignment), following re-exports, and its name there."""
        return self._find(importer, qualname, MAX_HOPS)

    def _find(
        self, importer: str, qualname: str, hops: int, libraries: tuple[str, ...] = ()
    ) -> tuple[FileFacts, str] | None:
        while hops > 0:
            hops -= 1
            split = split_qualname(qualname)
            if split is None:
                return None
            module_name, name = split
            module = self.module(importer, module_name, libraries)
            if module is None:
                return None
            m = module.semantic
            if name in m.classes or name in m.functions or name in m.assigned_names:
                return module, name
            target = m.imports.get(name)
            if target is None:
                # `from .base import *` in a package's `__init__.py`: the name may be there.
                for star in m.star_imports:
                    if not name.startswith("_"):
                        sep = "" if star.endswith(".") else "."
                        found = self._find(module.path, f"{star}{sep}{name}", hops, libraries)
                        if found is not None:
                            return found
                return None
            importer, qualname = module.path, target
        return None

    def resolve_in(self, facts: FileFacts, dotted_name: str) -> str | None:
        """A dotted name as written in `facts`' file to a qualified name (None: local)."""
        return facts.semantic.resolve(dotted_name)

    # -- modules

    def base_resolver(self, importer: str) -> Callable[[str], bool | None]:
        """For `SemanticModel`: whether an imported base (qualified name) is a torch module."""

        def resolve(qualname: str) -> bool | None:
            return self.is_module(importer, qualname)

        return resolve

    def return_kind(self, importer: str, qualname: str) -> str | None:
        """What the project function `qualname` (as imported in `importer`) returns:
        "tensor", "other" or None (unknown, or not a project function). Read from module
        summaries, following re-exports; memoised per check."""
        key = (importer, qualname)
        if key not in self._return_memo:
            found = self._summary_definition(
                importer, qualname, MAX_HOPS, lambda s, n: n in s.returns or n in s.defines
            )
            self._return_memo[key] = None if found is None else found[1].returns.get(found[2])
        return self._return_memo[key]

    def is_module(self, importer: str, qualname: str) -> bool | None:
        """Whether the class `qualname` (as imported in `importer`) is a torch module:
        through project classes to a known base; None when it leaves the project unknown.
        Read from module summaries (`project.summary`), never from full parses."""
        verdict = base_verdict(qualname)
        if verdict is not None:
            return verdict
        key = (importer, qualname)
        if key in self._module_memo:
            return self._module_memo[key]
        self._module_memo[key] = None  # a cycle is unknown
        answer = self._summary_is_module(importer, qualname, MAX_HOPS)
        self._module_memo[key] = answer
        return answer

    def _summary_is_module(self, importer: str, qualname: str, hops: int) -> bool | None:
        found = self._summary_class(importer, qualname, hops)
        if found is None:
            return None
        path, summary, name = found
        return self._class_is_module(path, summary, name, hops - 1)

    def _class_is_module(
        self, path: str, summary: ModuleSummary, name: str, hops: int
    ) -> bool | None:
        """Whether a class of a summarised module is a torch module, through its bases
        (same module by name, or imported): None when a base cannot be resolved."""
        if hops <= 0:
            return None
        unknown = False
        for base in summary.classes.get(name, ()):
            head, _, rest = base.partition(".")
            if not rest and head in summary.classes and head != name:
                inner = self._class_is_module(path, summary, head, hops - 1)
            elif head in summary.imports:
                q = summary.imports[head] + (f".{rest}" if rest else "")
                verdict = base_verdict(q)
                inner = verdict if verdict is not None else self._summary_is_module(path, q, hops)
            else:
                inner = None
                for star in summary.stars:  # `from .base import *` then `class A(Base)`
                    sep = "" if star.endswith(".") else "."
                    q = f"{star}{sep}{base}"
                    verdict = base_verdict(q)
                    inner = (
                        verdict if verdict is not None else self._summary_is_module(path, q, hops)
                    )
                    if inner is not None:
                        break
            if inner:
                return True
            unknown = unknown or inner is None
        return None if unknown else False

    def inherited_forward_calls(self, importer: str, qualname: str) -> frozenset[str] | None:
        """What the `forward` a class inherits from the project class `qualname` (as
        imported in `importer`) calls on `self`: the `forward` of the first class up its
        bases that defines one. None when none is found in the project. From summaries."""
        found = self._summary_class(importer, qualname, MAX_HOPS)
        return self._forward_calls_up(*found, MAX_HOPS) if found is not None else None

    def _forward_calls_up(
        self, path: str, summary: ModuleSummary, name: str, hops: int
    ) -> frozenset[str] | None:
        if hops <= 0:
            return None
        if name in summary.forward_calls:
            return summary.forward_calls[name]
        for base in summary.classes.get(name, ()):
            head, _, rest = base.partition(".")
            if not rest and head in summary.classes and head != name:
                found = self._forward_calls_up(path, summary, head, hops - 1)
            elif head in summary.imports:
                q = summary.imports[head] + (f".{rest}" if rest else "")
                there = self._summary_class(path, q, hops)
                found = self._forward_calls_up(*there, hops - 1) if there is not None else None
            else:
                found = None
                for star in summary.stars:
                    sep = "" if star.endswith(".") else "."
                    there = self._summary_class(path, f"{star}{sep}{base}", hops)
                    if there is not None:
                        found = self._forward_calls_up(*there, hops - 1)
                        break
            if found is not None:
                return found
        return None

    def _summary_class(
        self, importer: str, qualname: str, hops: int
    ) -> tuple[str, ModuleSummary, str] | None:
        """(path, summary, class name) of the module defining the class, via re-exports."""
        return self._summary_definition(importer, qualname, hops, lambda s, n: n in s.classes)

    def _summary_definition(
        self,
        importer: str,
        qualname: str,
        hops: int,
        defines: Callable[[ModuleSummary, str], bool],
    ) -> tuple[str, ModuleSummary, str] | None:
        """(path, summary, name) of the module where `defines` finds the name `qualname`
        names in `importer`, following re-exports (`from .x import Net`) `hops` deep."""
        while hops > 0:
            hops -= 1
            split = split_qualname(qualname)
            if split is None:
                return None
            module_name, name = split
            found = self._summary_module(importer, module_name)
            if found is None:
                return None
            path, summary = found
            if defines(summary, name):
                return path, summary, name
            target = summary.imports.get(name)
            if target is None:
                # `from .base import *` in a package's `__init__.py`: the name may be there.
                for star in summary.stars:
                    if not name.startswith("_"):
                        sep = "" if star.endswith(".") else "."
                        there = self._summary_definition(path, f"{star}{sep}{name}", hops, defines)
                        if there is not None:
                            return there
                return None
            importer, qualname = path, target
        return None

    def _summary_module(self, importer: str, module_name: str) -> tuple[str, ModuleSummary] | None:
        for path in candidates(importer, module_name, self.root):
            summary = self._summaries.get(path)  # kept until `forget` says the file changed
            if summary is None:
                text = self.read(path)
                if text is None:
                    self.deps.setdefault(path, None)
                    continue
                summary = self._summarise(text)
                if summary is None:
                    return None
                self._summaries[path] = summary
            self.deps.setdefault(path, summary.digest)
            return path, summary
        return None

    def _summarise(self, text: str) -> ModuleSummary | None:
        digest = content_key(text)
        shared = self.shared_summaries
        if shared is None:
            return summarise(text, digest)
        known, found = shared.get(digest)
        if known:
            return found
        summary = summarise(text, digest)
        shared.put(digest, summary)
        return summary

    # -- forward

    def find_forward(self, importer: str, qualname: str) -> tuple[list[str], str] | None:
        """The `forward` parameter names (without `self`) of the class `qualname` names in
        `importer`'s imports, and the file that defines that `forward`; None when the class
        or its `forward` cannot be found, or `forward` takes `*args`/`**kwargs`."""
        found = self.find_class(importer, qualname)
        hops = MAX_HOPS
        while found is not None and hops > 0:
            hops -= 1
            facts, cls = found
            fwd = cls.methods.get("forward")
            if fwd is not None:
                p = fwd.node.params
                if isinstance(p.star_arg, cst.Param) or p.star_kwarg is not None:
                    return None
                return [x.name.value for x in fwd.params()], facts.path
            found = self.base_class(facts, cls)
        return None

    def base_class(self, facts: FileFacts, cls: ClassInfo) -> tuple[FileFacts, ClassInfo] | None:
        """The first base of `cls` that is a project class (single inheritance order)."""
        for base in cls.bases:
            head, _, rest = base.partition(".")
            if not rest and head in facts.semantic.classes and head != cls.name:
                return facts, facts.semantic.classes[head]
            q = facts.semantic.resolve(base)
            if q is not None and not q.startswith(("torch.", "builtins.")):
                found = self.find_class(facts.path, q)
                if found is not None:
                    return found
        return None

    def find_method(
        self, facts: FileFacts, cls: ClassInfo, name: str
    ) -> tuple[FileFacts, FunctionInfo] | None:
        """A method through base classes, local or in other project files."""
        hops = MAX_HOPS
        current: tuple[FileFacts, ClassInfo] | None = (facts, cls)
        seen: set[tuple[str, str]] = set()
        while current is not None and hops > 0:
            hops -= 1
            f, c = current
            if (f.path, c.name) in seen:
                return None
            seen.add((f.path, c.name))
            local = f.semantic.find_method(c.name, name)
            if local is not None:
                return f, local
            current = self.base_class(f, c)
        return None


def split_qualname(qualname: str) -> tuple[str, str] | None:
    """(`module`, `name`) of an imported name as the index resolves it: `models.net.Net`
    -> (`models.net`, `Net`), `.net.Net` -> (`.net`, `Net`), `.Net` (`from . import Net`)
    -> (`.`, `Net`); None when it names no module."""
    rest = qualname.lstrip(".")
    dots = qualname[: len(qualname) - len(rest)]
    module_name, _, name = rest.rpartition(".")
    module_name = dots + module_name
    if not name or not module_name:
        return None
    return module_name, name
