"""The worker's layout: one module per phase around the record, locations in frames.py,
and no import circle (a phase never imports another phase or the orchestrator)."""

from __future__ import annotations

import ast
from pathlib import Path

WORKER = Path(__file__).resolve().parents[2] / "onnxlint" / "deep" / "worker"
PHASES = {"load", "memory", "explain", "export", "decompose", "translate", "verify"}


def _local_imports(module: str) -> set[str]:
    tree = ast.parse((WORKER / f"{module}.py").read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(a.name for a in node.names)
    return out


def test_each_phase_is_a_module_and_only_the_orchestrator_runs_them() -> None:
    modules = {p.stem for p in WORKER.glob("*.py")}
    assert PHASES | {"record", "frames", "analysis"} <= modules
    for phase in PHASES:
        deps = _local_imports(phase)
        assert not deps & (PHASES - {phase}), (phase, deps)
        assert "analysis" not in deps, phase
    assert _local_imports("analysis") >= PHASES


def test_no_import_circle_among_worker_modules() -> None:
    modules = {p.stem for p in WORKER.glob("*.py")} - {"__init__"}
    graph = {m: _local_imports(m) & modules for m in modules}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph[start]:
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    circles = [m for m in modules if reaches(m, m, {m})]
    assert circles == []
