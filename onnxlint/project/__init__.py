"""The project model: what files say of each other, never importing them. Imports analysis, below.

Layers, bottom up (each imports only those below it):

- `resolve`: the files an import could load, the project's files, reading text;
- `summary`: a module's names, classes and bases from `ast` (the files a check only imports);
- `facts`: one file's parsed blocks, semantic model and `FileAnalysis`;
- `index`: facts per file content; classes, functions and bases across files;
- `exports`: every export site, the classes it exports, its exporter and dynamic dims;
- `reach`: which functions each export reaches, submodule composition, parameter kinds;
- `callers`: helpers that other files' forward code calls through imports;
- `model`: the scan for export scripts and the reach table, kept current as files change.

Rules never ask these directly: the engine gives each file's part (`FileReach`) to the
rules' `Context`. `ProjectIndex` is the `ProjectLookup` the file analyses ask.
"""

from onnxlint.project.callers import ImportedNames
from onnxlint.project.exports import ExportSite
from onnxlint.project.index import ProjectIndex
from onnxlint.project.model import ProjectModel
from onnxlint.project.reach import FileReach, ReachTable
from onnxlint.project.resolve import Reader, read_disk

__all__ = [
    "ExportSite",
    "FileReach",
    "ImportedNames",
    "ProjectIndex",
    "ProjectModel",
    "ReachTable",
    "Reader",
    "read_disk",
]
