"""Deep analysis, the parent side (worker/ runs torch). Imports project, rules and below.

The parent side (this package) never imports torch: it validates targets,
talks JSON lines to a warm worker running under the user's interpreter
(`worker/`, stdlib + torch only), and turns the worker's findings into OLX8xx
`Violation`s, reports and cached results.

Entry points: `DeepAnalyzer` (server, CLI), `run.deep_check` / `run.run_analyze`
(`onnxlint check --deep`, `onnxlint analyze`), `report.write_report`.
"""

from onnxlint.deep.analyzer import DeepAnalyzer, WorkerUnavailable
from onnxlint.deep.result import DeepResult
from onnxlint.deep.targets import Target, TargetError, discover_targets, load_targets

__all__ = [
    "DeepAnalyzer",
    "DeepResult",
    "Target",
    "TargetError",
    "WorkerUnavailable",
    "discover_targets",
    "load_targets",
]
