"""The facts of one file for one check (`FileAnalysis`), and what the knowing layer reads.

`FileAnalysis` is built once, with everything it holds given at construction: the file's
path and text as the check sees them, its config, its semantic model (`SemanticModel`), its
functions by node, and the project it belongs to (`ProjectLookup`, which the project index
implements). `onnxlint.project.facts.file_analysis` builds it; the project model keeps one
per file content (`FileFacts.analysis`) and the engine builds its check's own from it.

The rules walk a file with a `Context` (onnxlint.rules.context), which holds a
`FileAnalysis` and adds the walk: the node being visited, its ancestors, the function and
class around it, the findings. The analyses of this package take a `FileView`: what both
expose, so a rule hands them its `Context` (whose cursor lets `node_path` skip a search) and
the project model a `FileAnalysis` (no cursor: `ancestors` is empty, `function` None).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import libcst as cst

if TYPE_CHECKING:
    from onnxlint.core.config import Config
    from onnxlint.semantic.index import ClassInfo, FunctionInfo
    from onnxlint.semantic.model import SemanticModel
    from onnxlint.source.blocks import Block


class ProjectLookup(Protocol):
    """What a file's analyses ask the project about (`onnxlint.project.ProjectIndex`)."""

    def find_forward(self, importer: str, qualname: str) -> tuple[list[str], str] | None:
        """The `forward` parameters and defining file of the class `qualname` names in
        `importer`'s imports (None when not found)."""
        ...

    def function_at(self, importer: str, qualname: str) -> tuple[FileAnalysis, FunctionInfo] | None:
        """The project function `qualname` names in `importer` (an imported qualified name,
        or a name defined in `importer` itself), with the facts of the file defining it."""
        ...

    def class_at(self, importer: str, qualname: str) -> tuple[FileAnalysis, ClassInfo] | None:
        """The same for a project class."""
        ...

    def library_class_at(
        self, importer: str, qualname: str
    ) -> tuple[FileAnalysis, ClassInfo] | None:
        """A class the project does not define, read from the installed libraries (asked
        only where its own code decides, as whether a model's mode changes anything)."""
        ...

    def constant_at(
        self, importer: str, qualname: str
    ) -> tuple[FileAnalysis, cst.BaseExpression] | None:
        """The one value a module-level name of the project is assigned (`cfg =
        ExportSettings()` in `config.py`), with the facts of its file."""
        ...

    def export_function(
        self, importer: str, qualname: str
    ) -> tuple[FileAnalysis, FunctionInfo] | None:
        """`function_at` for a function whose file can hold an export call (a cheap test of
        its text first: most imported helpers are not export wrappers)."""
        ...


class FileView(Protocol):
    """The facts of a file, and where a walk is in it, as this package's analyses read them."""

    @property
    def path(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def config(self) -> Config: ...
    @property
    def semantic(self) -> SemanticModel: ...
    @property
    def project(self) -> ProjectLookup | None: ...
    @property
    def ancestors(self) -> Sequence[cst.CSTNode]: ...
    @property
    def function(self) -> FunctionInfo | None: ...

    def qualname(self, expr: cst.BaseExpression) -> str | None: ...


@dataclass(frozen=True, eq=False)
class FileAnalysis:
    """The facts of one file for one check, built once (see the module docstring)."""

    path: str
    text: str
    config: Config
    semantic: SemanticModel
    # id(def node) -> its FunctionInfo, top-level functions and methods (a walk adds the
    # nested defs it enters, each under its enclosing function).
    functions: dict[int, FunctionInfo]
    project: ProjectLookup | None = None
    # The file's parsed blocks (where a node's position is looked up, `chains.locate`).
    blocks: Sequence[Block] = ()

    @property
    def ancestors(self) -> Sequence[cst.CSTNode]:
        return ()

    @property
    def function(self) -> FunctionInfo | None:
        return None

    def qualname(self, expr: cst.BaseExpression) -> str | None:
        return self.semantic.qualname(expr)
