"""A deep finding inside a library is also shown in the project, at its innermost project
link of the chain (the editor may not have the library file open)."""

from __future__ import annotations

from pathlib import Path

from onnxlint.core.violation import Related, Severity, Violation
from onnxlint.deep.result import DeepResult, line_span
from onnxlint.deep.targets import Target


def test_library_finding_is_also_placed_at_the_project_link(tmp_path: Path) -> None:
    from onnxlint.server.deep_service import editor_placements

    project = tmp_path / "proj"
    (project / "pkg").mkdir(parents=True)
    factory = project / "pkg" / "models.py"
    factory.write_text("import torch\n\n\ndef make():\n    return Lib(), (x,)\n")
    lib = tmp_path / "venv" / "lib" / "site-packages" / "lib" / "ops.py"
    lib.parent.mkdir(parents=True)
    lib.write_text("def f(y):\n    return torch.cdist(y, y)\n")
    target = Target(name="t", factory="pkg.models:make", root=project)
    v = Violation(
        path=str(lib),
        span=line_span(str(lib), 2),
        code="OLX805",
        message="ATen op aten._cdist_forward.default has no ONNX translation",
        severity=Severity.ERROR,
        source="deep",
        related=(
            Related(str(factory), 4, 1, "via factory make"),
            Related(str(project / "pyproject.toml"), 3, 1, "target 't' is declared here"),
        ),
    )
    placed = editor_placements(DeepResult(target=target, status="ok", violations=[v]))
    assert placed[str(lib.resolve())] == [v]
    [mirror] = placed[str(factory.resolve())]
    assert (mirror.line, mirror.column) == (4, 1)
    assert mirror.message.endswith("(in ops.py:2)")
    assert (mirror.related[0].path, mirror.related[0].line) == (str(lib), 2)
    # a finding already in the project is not copied anywhere
    inside = Violation(str(factory), line_span(str(factory), 5), "OLX801", "m", Severity.INFO)
    placed = editor_placements(DeepResult(target=target, status="ok", violations=[inside]))
    assert list(placed) == [str(factory.resolve())]


def test_reports_show_an_excerpt_for_each_link_of_the_chain(tmp_path: Path) -> None:
    from onnxlint.deep import report

    project = tmp_path / "proj"
    (project / "pkg").mkdir(parents=True)
    factory = project / "pkg" / "models.py"
    factory.write_text("import torch\n\n\ndef make():\n    return Lib(), (x,)\n")
    lib = tmp_path / "site-packages" / "lib" / "ops.py"
    lib.parent.mkdir(parents=True)
    lib.write_text("def f(y):\n    return torch.cdist(y, y)\n")
    v = Violation(
        path=str(lib),
        span=line_span(str(lib), 2),
        code="OLX805",
        message="ATen op aten._cdist_forward.default has no ONNX translation",
        severity=Severity.ERROR,
        source="deep",
        related=(Related(str(factory), 4, 1, "via factory make"),),
    )
    res = DeepResult(
        target=Target(name="t", factory="pkg.models:make", root=project),
        status="ok",
        violations=[v],
    )
    md = report.to_markdown([res])
    assert "via factory make: `pkg/models.py:4`" in md
    assert ">    4 | def make():" in md
    html = report.to_html([res])
    # the place links to the file and line (VS Code's report view opens it there)
    assert 'via factory make: <a class="loc" href="file://' in html
    assert 'models.py#L4"><code>pkg/models.py:4</code></a>' in html
    assert "    4 | def make():" in html


def test_the_end_of_analysis_message_names_filled_arguments(tmp_path: Path) -> None:
    from onnxlint.server.deep_service import summary

    target = Target(name="export.py:12", factory="", root=tmp_path)
    skipped = [
        {"what": "required argument --checkpoint (a checkpoint that is not there: no weights)"},
        {"what": "required argument --out (a temporary path: nothing is written there)"},
        {"what": "torch.load (an empty checkpoint instead)"},
    ]
    data = {"script_skipped": skipped, "script_filled": ["--checkpoint", "--out"]}
    res = DeepResult(target=target, status="ok", data=data)
    message = summary(res)["message"]
    assert message.endswith("; the script ran with placeholders for --checkpoint, --out"), message
    plain = summary(DeepResult(target=target, status="ok"))["message"]
    assert "placeholders" not in plain, plain
