"""The editor experience (issue 15): code lenses that name and run the right target, short
hovers, one diagnostic per cause, plain deep messages, "Fix all" saying what it did."""

from __future__ import annotations

import shutil
from collections.abc import Callable
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
        args = list(lens.command.arguments or [])
        if len(args) == 2 and isinstance(args[1], dict) and "shown" in args[1]:
            # where the lens was shown (for a click before the editor redraws it): its title
            shown = args[1].pop("shown")
            assert shown["title"] == lens.command.title and shown["version"] == 1, shown
        out.append((lens.range.start.line + 1, lens.command.title, args))
    return out


def _line_of(path: Path, needle: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


async def test_each_export_call_lens_names_and_analyses_its_own_call(
    lsp: Client, project: Path
) -> None:
    """Issue 27, item 3: the three export calls of examples/export.py (all DetectorHead, which
    the declared `detector` target builds) each get a lens that names that call's exporter,
    opset and dynamic dims and runs that call: the one `__main__` reaches by running the
    script, the two in no-argument functions by calling the function. A call neither reaches
    (a function with arguments, in a module) runs the declared target that builds its model,
    with the call's opset, and the lens says which target."""
    await start(lsp, "vscode", folders=[project])
    export = project / "export.py"
    lenses = await _lenses(lsp, export)
    by_line = {line: (title, args) for line, title, args in lenses}
    here = str(export.resolve())
    legacy = _line_of(export, "tox.export(")
    assert by_line[legacy] == (
        "Analyze export (DetectorHead, TorchScript exporter, opset 13, dynamic batch, width: "
        "runs this script)",
        [uri_of(export), {"line": legacy, "script": here}],
    )
    old = _line_of(export, "torch.onnx.dynamo_export(")
    assert by_line[old] == (
        "Analyze export (DetectorHead, torch.onnx.dynamo_export: runs export_with_dynamo_export())",
        [uri_of(export), {"line": old, "script": here, "function": "export_with_dynamo_export"}],
    )
    memory = _line_of(export, "torch.onnx.export(")
    assert by_line[memory] == (
        "Analyze export (DetectorHead, dynamo exporter, opset 13, dynamic batch: "
        "runs export_to_memory())",
        [uri_of(export), {"line": memory, "script": here, "function": "export_to_memory"}],
    )
    for _, title, _args in lenses:  # every lens says what it analyses
        assert title != "Analyze export" and "(" in title
    deploy = project / "vision" / "deploy.py"
    deploy.write_text(DEPLOY)
    (line, title, args), *rest = [x for x in await _lenses(lsp, deploy) if "Analyze" in x[1]]
    assert not rest and line == _line_of(deploy, "torch.onnx.export(")
    assert title == "Analyze export (DetectorHead, dynamo exporter, opset 17: target detector)"
    assert args[1] == {"line": line, "target": "detector", "call": {"opset": 17}}
    classifier = project / "vision" / "classifier.py"
    titles = {title for _, title, _ in await _lenses(lsp, classifier)}
    assert titles == {"Analyze export (classifier)"}
    targets = project / "vision" / "targets.py"
    got = {(line, title) for line, title, _ in await _lenses(lsp, targets)}
    assert got == {
        (_line_of(targets, "def classifier"), "Analyze export (classifier)"),
        (_line_of(targets, "def detector"), "Analyze export (detector)"),
    }


DEPLOY = """import torch

from vision.detector import DetectorHead


def export_detector(path):
    model = DetectorHead().eval()
    torch.onnx.export(model, (torch.randn(1, 3, 32, 32),), path, opset_version=17)
"""


@pytest.mark.deep
@pytest.mark.slow
async def test_each_lens_runs_its_own_call(lsp: Client, project: Path) -> None:
    """The lenses of test_each_export_call_lens_names_and_analyses_its_own_call, run by the
    real worker: each analysis is of the call under its lens (the report says which call it
    captured), and the deploy.py lens runs `detector` at the call's opset."""
    pytest.importorskip("torch")
    await start(lsp, "vscode", folders=[project])
    export = project / "export.py"
    deploy = project / "vision" / "deploy.py"
    deploy.write_text(DEPLOY)
    lenses = await _lenses(lsp, export) + await _lenses(lsp, deploy)
    ran = {}
    for line, title, args in lenses:
        if not title.startswith("Analyze export"):
            continue
        out = await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="onnxlint.analyzeExport", arguments=args)
        )
        assert out is not None and out["status"] != "error", (title, out)
        ran[line, title] = out["target"]
    legacy = _line_of(export, "tox.export(")
    memory = _line_of(export, "torch.onnx.export(")
    old = _line_of(export, "torch.onnx.dynamo_export(")
    assert sorted(ran.values()) == sorted(
        [
            f"export.py:{legacy}",
            f"export.py:{memory}",
            f"export.py:{old}",
            f"detector (deploy.py:{_line_of(deploy, 'torch.onnx.export(')})",
        ]
    ), ran
    report = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="onnxlint.showReport", arguments=[uri_of(export)])
    )
    assert report is not None
    md = Path(report["markdown"]).read_text(encoding="utf-8")
    assert f"up to its export call `torch.onnx.export` on line {legacy}" in md
    assert (
        "called `export_to_memory()` of `export.py` (imported, not run) up to its export "
        f"call `torch.onnx.export` on line {memory}"
    ) in md
    assert f"on line {old}" in md and "`export_with_dynamo_export()`" in md
    # the cache folder the lens's runs made is never committed
    assert (project / ".onnxlint_cache" / ".gitignore").read_text().endswith("*\n")
    assert (project / ".onnxlint_cache" / "CACHEDIR.TAG").read_text().startswith("Signature: ")


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
    at_line = {title: args for at, title, args in lenses if at == line}
    # export.py is a script: one lens runs it up to this call, one creates a target
    assert set(at_line) == {
        "Analyze export (DetectorHead, TorchScript exporter, opset 13, dynamic batch, width: "
        "runs this script)",
        "Create a target for DetectorHead",
    }
    lens = (line, "Create a target for DetectorHead", at_line["Create a target for DetectorHead"])
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


def _deep_published(
    lsp: Client, uri: str, after: int
) -> Callable[[], list[types.Diagnostic] | None]:
    """The first publish for `uri` since publish number `after` that carries deep findings
    (an OLX8xx code, or a static finding the deep analysis confirmed)."""

    def found() -> list[types.Diagnostic] | None:
        for p in lsp.publishes[after:]:
            if p.uri != uri:
                continue
            if any(
                str(d.code).startswith("OLX8") or "deep analysis" in d.message
                for d in p.diagnostics
            ):
                return list(p.diagnostics)
        return None

    return found


SCRIPT = """import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x - 1


if __name__ == "__main__":
    model = Net()
    model.load_state_dict(torch.load("weights/net.pt"))
    torch.onnx.export(model.eval(), (torch.randn(2, 3),), "net.onnx")
"""


@pytest.mark.deep
@pytest.mark.slow
async def test_the_lens_over_an_export_call_analyses_the_script_with_no_set_up(
    lsp: Client, tmp_path: Path
) -> None:
    """No target declared: the lens above the export call runs the script up to that call
    (the checkpoint it loads is missing: it does not matter) and the deep findings appear."""
    pytest.importorskip("torch")
    (tmp_path / "pyproject.toml").write_text("[tool.onnxlint]\n")
    path = tmp_path / "export_net.py"
    path.write_text(SCRIPT)
    await start(lsp, "vscode", folders=[tmp_path])
    uri = uri_of(path)
    lenses = await _lenses(lsp, path)
    call = _line_of(path, "torch.onnx.export(")
    (lens,) = [x for x in lenses if x[0] == call and x[1].startswith("Analyze export")]
    assert lens[1] == "Analyze export (Net, dynamo exporter: runs this script)"
    n = len(lsp.publishes)
    out = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="onnxlint.analyzeExport", arguments=lens[2])
    )
    assert out["status"] != "error", out

    merged = await wait_for(_deep_published(lsp, uri, n), 90, "the deep findings")
    on_if = [d for d in merged if d.range.start.line == _line_of(path, "if x.sum()") - 1]
    assert len(on_if) == 1 and "confirmed by the deep analysis" in on_if[0].message, merged


DATA_DEPENDENT = """import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x - 1


# onnxlint: target
def net():
    return Net().eval(), (torch.randn(2, 3),)
"""


@pytest.mark.deep
@pytest.mark.slow
async def test_a_deep_finding_confirming_a_static_one_is_one_diagnostic_in_plain_words(
    lsp: Client, tmp_path: Path
) -> None:
    """`if x.sum() > 0:` is OLX101 (static), OLX801 and OLX802 (deep): one diagnostic says
    both, in words about the line; torch's own text is kept in the details."""
    pytest.importorskip("torch")
    (tmp_path / "pyproject.toml").write_text("[tool.onnxlint]\n")
    path = tmp_path / "net.py"
    path.write_text(DATA_DEPENDENT)
    await start(lsp, "vscode", folders=[tmp_path])
    uri = uri_of(path)
    open_doc(lsp, uri, DATA_DEPENDENT)
    static = await diagnostics_for(lsp, uri, 1)
    assert [str(d.code) for d in static if d.range.start.line == 6] == ["OLX101"]
    n = len(lsp.publishes)
    out = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="onnxlint.analyzeExport", arguments=[uri, {"line": 6}])
    )
    assert out["status"] != "error", out

    merged = await wait_for(_deep_published(lsp, uri, n), 60, "the deep findings")
    # one progress item, cancellable, with the phase and percent
    # (the proof of the findings' fixes that follows has a progress item of its own)
    (token,) = [
        t
        for t, reports in lsp.progress_reports.items()
        if reports and isinstance(reports[0], types.WorkDoneProgressBegin)
        and reports[0].title.startswith("onnxlint: analyzing")
    ]
    begin, *reports, end = lsp.progress_reports[token]
    assert isinstance(begin, types.WorkDoneProgressBegin) and begin.cancellable
    assert begin.title == "onnxlint: analyzing net:net"
    assert any(r.percentage is not None and r.message for r in reports)
    assert isinstance(end, types.WorkDoneProgressEnd)
    # the end: counts and one sentence, in the state notification and (this client does
    # not show it itself) a message
    states = [p for name, p in lsp.notifications if name == "onnxlint/analysisState"]
    finished = [p for p in states if p.state == "finished"][-1]
    assert finished.errors >= 1 and finished.findings >= finished.errors
    assert finished.message.startswith("onnxlint: net:net: fails at step 1/3")
    assert f"{finished.errors} error" in finished.message
    assert end.message == finished.message  # the progress ends with the same sentence
    await wait_for(lambda: any(m.message == finished.message for m in lsp.messages), 10)
    on_if = [d for d in merged if d.range.start.line == 6]
    assert len(on_if) == 1, [(d.code, d.message, d.data) for d in on_if]
    (d,) = on_if
    assert d.code == "OLX101"
    # one sentence: the static message and a few words; the deep findings' own messages
    # are the related information (issue 27, item 7)
    head = d.message.split("\n")[0]
    assert head.endswith("(confirmed by the deep analysis)"), head
    assert head.count("(") == head.count(")") and "OLX8" not in head
    assert "Could not guard" not in head
    assert "torch: " in d.message and "Could not guard" in d.message  # the details
    related = {r.message.split(" ")[0] for r in d.related_information or []}
    assert {"OLX802", "OLX801"} <= related
    assert any(
        "this `if` depends on tensor data (`x.sum() > 0`)" in r.message
        for r in d.related_information or []
    )
    hover = await lsp.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), d.range.start)
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.value.startswith("**OLX101**")
    assert "Confirmed by the deep analysis: [OLX802]" in hover.contents.value
    assert len(hover.contents.value) < 900


TWO_SAFE_FIXES = """import torch

torch.onnx.dynamo_export(model, x)
torch.onnx.export(model, (x,), "m.onnx", do_constant_folding=True)
"""


async def test_fix_all_says_what_it_did(lsp: Client, tmp_path: Path) -> None:
    await start(lsp, "vscode")
    uri = uri_of(tmp_path / "m.py")
    open_doc(lsp, uri, TWO_SAFE_FIXES)
    diags = await diagnostics_for(lsp, uri, 1)
    assert {"OLX402", "OLX405"} <= {str(d.code) for d in diags}
    out = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="onnxlint.fixAll", arguments=[uri])
    )
    assert out == {"applied": True, "fixes": 2}
    await wait_for(lambda: lsp.messages, what="a message")
    assert lsp.messages[-1].message == "onnxlint: 2 fixes applied"
    assert "dynamo_export" not in lsp.texts[uri] and "do_constant_folding" not in lsp.texts[uri]
    from .conftest import change_doc

    v = change_doc(lsp, uri, lsp.texts[uri])  # the editor sends the applied edit
    await diagnostics_for(lsp, uri, v)
    n = len(lsp.messages)
    out = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="onnxlint.fixAll", arguments=[uri])
    )
    assert out["applied"] is False
    await wait_for(lambda: len(lsp.messages) > n, what="a second message")
    assert lsp.messages[-1].message == "onnxlint: nothing to fix"
