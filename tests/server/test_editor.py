"""The editor experience (issue 15): code lenses that name and run the right target, short
hovers, one diagnostic per cause, plain deep messages, "Fix all" saying what it did."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types

from .conftest import Client, diagnostics_for, open_doc, start, uri_of, wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    dst = tmp_path / "examples"
    shutil.copytree(REPO / "examples", dst, ignore=shutil.ignore_patterns(".onnxlint_cache"))
    return dst


async def _lenses(lsp: Client, path: Path) -> list[tuple[int, str, list[object]]]:
    uri = uri_of(path)
    open_doc(lsp, uri, path.read_text(encoding="utf-8"))
    await diagnostics_for(lsp, uri, 1)
    lenses = await lsp.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri))
    )
    assert lenses is not None
    out = []
    for lens in lenses:
        assert lens.command is not None
        out.append((lens.range.start.line + 1, lens.command.title, lens.command.arguments or []))
    return out


def _line_of(path: Path, needle: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


async def test_export_call_lens_runs_the_target_that_builds_the_exported_class(
    lsp: Client, project: Path
) -> None:
    """examples/export.py exports DetectorHead; both targets live in vision/targets.py, and
    the lens over `tox.export(` must run `detector`, not the first target of that module."""
    await start(lsp, "vscode", folders=[project])
    export = project / "export.py"
    lenses = await _lenses(lsp, export)
    by_line = {line: title for line, title, _ in lenses}
    assert by_line[_line_of(export, "tox.export(")] == "Analyze export (detector)"
    assert by_line[_line_of(export, "torch.onnx.export(")] == "Analyze export (detector)"
    for _, title, args in lenses:  # every lens says what it analyses
        assert title != "Analyze export"
        assert "(" in title or title.startswith("Create an analysis target")
        if title.startswith("Analyze export"):
            assert isinstance(args[1], dict) and args[1]["target"] in title
    classifier = project / "vision" / "classifier.py"
    titles = {title for _, title, _ in await _lenses(lsp, classifier)}
    assert titles == {"Analyze export (classifier)"}
    targets = project / "vision" / "targets.py"
    got = {(line, title) for line, title, _ in await _lenses(lsp, targets)}
    assert got == {
        (_line_of(targets, "def classifier"), "Analyze export (classifier)"),
        (_line_of(targets, "def detector"), "Analyze export (detector)"),
    }


async def test_export_of_a_class_no_target_builds_offers_to_create_one(
    lsp: Client, project: Path
) -> None:
    await start(lsp, "vscode", folders=[project])
    (project / "pyproject.toml").write_text(
        (project / "pyproject.toml").read_text().split("[[tool.onnxlint.targets]]")[0]
    )
    targets = project / "vision" / "targets.py"
    targets.write_text(targets.read_text().replace("# onnxlint: target\n", ""))
    export = project / "export.py"
    lenses = await _lenses(lsp, export)
    line = _line_of(export, "tox.export(")
    (lens,) = [x for x in lenses if x[0] == line]
    assert lens[1] == "Create an analysis target for DetectorHead"
    n = len(lsp.applied)
    out = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="onnxlint.createTarget", arguments=lens[2])
    )
    assert out["created"] == "detector_head"
    await wait_for(lambda: len(lsp.applied) > n, what="the edit")
    text = lsp.texts[uri_of(export)]
    assert "# onnxlint: target\ndef detector_head():\n" in text
    assert "model = DetectorHead().eval()" in text
    compile(text, "export.py", "exec")
    assert text.splitlines()[out["line"] - 1] == "def detector_head():"
