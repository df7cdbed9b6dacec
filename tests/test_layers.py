"""The house's layers, checked: no import circle, and each package imports only those below it.

Every import counts, wherever it is written: at module level, inside a function (made there
to defer a heavy import at start-up, never to hide a circle) and under `if TYPE_CHECKING:`.
`from pkg import name` counts as an import of the submodule `pkg.name` when there is one,
else of `pkg`. There are no exceptions; a new edge that breaks the order fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "onnxlint"

# Bottom up: a package may import the packages before it, never one after it.
LAYERS = (
    "core",
    "source",
    "semantic",
    "analysis",
    "project",
    "rules",
    "engine",
    "deep",
    "server",
    "cli",
)
# The worker runs in the user's interpreter with only the stdlib and torch.
WORKER = "onnxlint.deep.worker"


def modules(package: Path) -> dict[str, Path]:
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(package: Path) -> dict[str, set[str]]:
    """module -> the onnxlint modules it imports (every kind of import, see above)."""
    mods = modules(package)

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
                targets = [t for t in targets[:-1] if t in mods] or [base]
            else:
                continue
            found.update(t for t in map(resolve, targets) if t and t.startswith("onnxlint"))
        found.discard(name)
        graph[name] = found
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer_of(module: str) -> int | None:
    """The index of a module's package in LAYERS; None for `onnxlint` itself (its version,
    importable from anywhere) and `onnxlint.__main__` (above everything)."""
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for module, targets in sorted(graph.items()):
        low = layer_of(module)
        for target in sorted(targets):
            high = layer_of(target)
            if module == "onnxlint" or (low is not None and high is not None and high > low):
                bad.append(f"{module} -> {target}")
            if target == "onnxlint.__main__":
                bad.append(f"{module} -> {target}")
    return bad


def test_every_module_belongs_to_a_layer() -> None:
    loose = [m for m in modules(PACKAGE) if layer_of(m) is None]
    assert sorted(loose) == ["onnxlint", "onnxlint.__main__"], loose


def test_no_import_circle() -> None:
    found = circles(imports(PACKAGE))
    assert found == [], "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_each_package_imports_only_the_packages_below_it() -> None:
    bad = upward_imports(imports(PACKAGE))
    assert bad == [], "imports of a higher layer:\n" + "\n".join(bad)


def test_the_deep_worker_imports_nothing_of_onnxlint_outside_itself() -> None:
    graph = imports(PACKAGE)
    outside = [
        f"{m} -> {t}"
        for m, targets in graph.items()
        if m.startswith(WORKER)
        for t in targets
        if not t.startswith(WORKER)
    ]
    assert outside == []


def test_each_package_says_in_its_first_line_what_it_is_and_may_import() -> None:
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        first = doc.splitlines()[0] if doc else ""
        assert "import" in first.lower() and len(first) <= 100, f"{init}: {first!r}"


def test_the_analysis_modules_import_only_those_listed_before_them() -> None:
    """`onnxlint/analysis/__init__.py` lists its modules bottom up: the list is complete,
    and no module imports one listed after it (so the list is also the reading order)."""
    init = PACKAGE / "analysis" / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    order = [f"onnxlint.analysis.{m}" for m in re.findall(r"^- `(\w+)`:", doc, re.M)]
    graph = imports(PACKAGE)
    inside = sorted(m for m in graph if m.startswith("onnxlint.analysis."))
    assert sorted(order) == inside, "list every module of onnxlint/analysis once"
    bad = [
        f"{m} -> {t}"
        for i, m in enumerate(order)
        for t in sorted(graph[m])
        if t in order and order.index(t) > i
    ]
    assert bad == [], "imports of a module listed later:\n" + "\n".join(bad)


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    """A circle, and an import of a higher layer, in a small made-up package."""
    pkg = tmp_path / "onnxlint"
    for folder in ("core", "source"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text('"""x. Imports nothing."""\n')
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from onnxlint.source import b\n"
    )
    (pkg / "source" / "b.py").write_text("def f():\n    from onnxlint.core.a import x\n")
    graph = imports(pkg)
    assert circles(graph) == [["onnxlint.core.a", "onnxlint.source.b"]]
    assert upward_imports(graph) == ["onnxlint.core.a -> onnxlint.source.b"]
