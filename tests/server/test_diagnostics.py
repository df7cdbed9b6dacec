"""Diagnostics end to end: appear, clear, versions, positions, pull, settings, robustness."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import client_capabilities

from .conftest import (
    Client,
    change_doc,
    change_range,
    diagnostics_for,
    open_doc,
    start,
    uri_of,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

LEGACY = """import torch

torch.onnx.export(model, (x,), "m.onnx", dynamo=False)
"""
CLEAN = """import torch

torch.onnx.export(model, (x,), "m.onnx")
"""


@pytest.mark.parametrize("editor", ["vscode", "neovim"])
async def test_diagnostics_appear_change_and_clear(lsp: Client, editor: str, tmp_path) -> None:
    await start(lsp, editor)
    uri = uri_of(tmp_path / "model.py")
    open_doc(lsp, uri, LEGACY)
    diags = await diagnostics_for(lsp, uri, version=1)
    assert [d.code for d in diags] == ["OLX401"]
    d = diags[0]
    assert d.source == "onnxlint"
    assert d.severity == types.DiagnosticSeverity.Warning
    assert d.code_description is not None
    assert d.code_description.href == "https://onnxlint.github.io/onnxlint/rules/OLX401/"
    assert list(d.tags or []) == [types.DiagnosticTag.Deprecated]
    assert d.range == types.Range(types.Position(2, 41), types.Position(2, 53))  # dynamo=False
    assert d.data["fix"]["safety"] == "unsafe"

    v2 = change_doc(lsp, uri, CLEAN)
    assert await diagnostics_for(lsp, uri, version=v2) == []

    v3 = change_doc(lsp, uri, LEGACY)
    assert [d.code for d in await diagnostics_for(lsp, uri, version=v3)] == ["OLX401"]

    n = len(lsp.publishes)
    lsp.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert await diagnostics_for(lsp, uri, after=n) == []


async def test_columns_are_utf16(lsp: Client, tmp_path) -> None:
    await start(lsp)
    uri = uri_of(tmp_path / "wide.py")
    # U+1D569 is one code point but two UTF-16 units; "é" is one of each.
    text = 'import torch\ntorch.onnx.export(m, (x,), "é𝕩.onnx", dynamo=False)\n'
    open_doc(lsp, uri, text)
    (d,) = await diagnostics_for(lsp, uri, version=1)
    line = text.splitlines()[1]
    start_cp = line.index("dynamo=False")
    assert d.range.start.character == start_cp + 1  # one extra unit for the astral char
    assert d.range.end.character == start_cp + len("dynamo=False") + 1


async def test_unparsable_file_gets_olx000_and_server_stays_up(lsp: Client, tmp_path) -> None:
    await start(lsp)
    uri = uri_of(tmp_path / "broken.py")
    open_doc(lsp, uri, LEGACY + "def broken(:\n    pass\n")
    diags = await diagnostics_for(lsp, uri, version=1)
    codes = sorted(str(d.code) for d in diags)
    assert "OLX000" in codes
    assert "OLX401" in codes  # the rest of the file is still checked
    err = next(d for d in diags if d.code == "OLX000")
    assert err.severity == types.DiagnosticSeverity.Error
    assert err.range.start.line == 3
    # still answering
    hover = await lsp.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(2, 45))
    )
    assert hover is not None


async def test_every_publish_carries_the_version_and_stale_results_are_dropped(
    lsp: Client, tmp_path
) -> None:
    """Edits sent back to back: versions only go up and the last publish is the last text."""
    await start(lsp)
    uri = uri_of(tmp_path / "stale.py")
    open_doc(lsp, uri, CLEAN)
    await diagnostics_for(lsp, uri, version=1)
    n = len(lsp.publishes)
    last = 1
    for i in range(40):
        last = change_doc(lsp, uri, LEGACY if i % 2 == 0 else CLEAN)
    # 40 edits: the last one (odd i) leaves the clean text.
    await diagnostics_for(lsp, uri, version=last, after=n)
    await wait_for(lambda: True, 0.3)  # a stale publish would arrive now
    versions = [p.version for p in lsp.publishes[n:] if p.uri == uri]
    assert versions == sorted(versions)
    assert versions[-1] == last
    for p in lsp.publishes[n:]:
        # each published version's diagnostics match that version's text
        expected = [] if (p.version or 0) % 2 == 1 else ["OLX401"]
        assert [d.code for d in p.diagnostics] == expected, p.version
    assert len(versions) <= 40  # at most one publish per version (fewer when coalesced)


async def test_debounce_delays_the_check(lsp: Client, tmp_path) -> None:
    await start(lsp, settings={"debounceMs": 400})
    uri = uri_of(tmp_path / "slow.py")
    open_doc(lsp, uri, CLEAN)
    await diagnostics_for(lsp, uri, version=1)  # open is not debounced
    n = len(lsp.publishes)
    v = change_doc(lsp, uri, LEGACY)
    await wait_for(lambda: True, 0.2)
    assert not [p for p in lsp.publishes[n:] if p.uri == uri]
    assert [d.code for d in await diagnostics_for(lsp, uri, version=v, after=n)] == ["OLX401"]


async def test_incremental_edits_keep_the_text_in_sync(lsp: Client, tmp_path) -> None:
    await start(lsp)
    uri = uri_of(tmp_path / "inc.py")
    open_doc(lsp, uri, CLEAN)
    await diagnostics_for(lsp, uri, version=1)
    # type ", dynamo=False" before the closing parenthesis, one character at a time
    line, col = 2, len('torch.onnx.export(model, (x,), "m.onnx"')
    v = 1
    for i, ch in enumerate(", dynamo=False"):
        pos = types.Position(line, col + i)
        v = change_range(lsp, uri, types.Range(pos, pos), ch)
    assert [d.code for d in await diagnostics_for(lsp, uri, version=v)] == ["OLX401"]


async def test_pull_diagnostics_when_the_client_supports_them(lsp: Client, tmp_path) -> None:
    await start(lsp, "neovim11")
    uri = uri_of(tmp_path / "pull.py")
    open_doc(lsp, uri, LEGACY)
    report = await lsp.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
    )
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
    assert [d.code for d in report.items] == ["OLX401"]
    again = await lsp.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri), previous_result_id=report.result_id
        )
    )
    assert isinstance(again, types.RelatedUnchangedDocumentDiagnosticReport)
    change_doc(lsp, uri, CLEAN)
    after = await lsp.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri), previous_result_id=report.result_id
        )
    )
    assert isinstance(after, types.RelatedFullDocumentDiagnosticReport)
    assert list(after.items) == []
    assert not [p for p in lsp.publishes if p.uri == uri]  # pull clients get no pushes


MODEL = """import torch.nn as nn


class Net(nn.Module):
    def forward(self, input_ids):
        return input_ids
"""
EXPORT = """import torch
from model import Net

m = Net().eval()
torch.onnx.export(m, (torch.zeros(2),), "m.onnx", dynamic_shapes={"ids": {0: "b"}})
"""


def _unknown_key(diags: list[types.Diagnostic]) -> bool:
    return any(d.code == "OLX305" and "'ids'" in d.message for d in diags)


async def test_a_document_is_rechecked_when_a_module_it_imports_changes(
    lsp: Client, tmp_path
) -> None:
    """export.py reads Net's forward from model.py: from the editor's unsaved buffer while
    model.py is open, from the file once it is closed, and again after every change."""
    await start(lsp, "neovim")
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "export.py").write_text(EXPORT)
    export, model = uri_of(tmp_path / "export.py"), uri_of(tmp_path / "model.py")
    open_doc(lsp, export, EXPORT)
    assert _unknown_key(await diagnostics_for(lsp, export, version=1))
    n = len(lsp.publishes)
    open_doc(lsp, model, MODEL.replace("input_ids", "ids"))  # unsaved: differs from disk
    assert not _unknown_key(await diagnostics_for(lsp, export, after=n))
    n = len(lsp.publishes)
    change_doc(lsp, model, MODEL)
    assert _unknown_key(await diagnostics_for(lsp, export, after=n))
    n = len(lsp.publishes)
    change_doc(lsp, model, MODEL.replace("input_ids", "ids"))
    assert not _unknown_key(await diagnostics_for(lsp, export, after=n))
    n = len(lsp.publishes)
    lsp.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=model))
    )
    assert _unknown_key(await diagnostics_for(lsp, export, after=n))  # the file on disk again
    assert all(p.version == 1 for p in lsp.publishes if p.uri == export)


async def test_a_pull_after_an_imported_module_changed_is_fresh(lsp: Client, tmp_path) -> None:
    await start(lsp, "neovim11")
    (tmp_path / "model.py").write_text(MODEL)
    export, model = uri_of(tmp_path / "export.py"), uri_of(tmp_path / "model.py")
    open_doc(lsp, export, EXPORT)

    async def pull() -> list[types.Diagnostic]:
        report = await lsp.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(export))
        )
        assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
        return list(report.items)

    assert _unknown_key(await pull())
    open_doc(lsp, model, MODEL.replace("input_ids", "ids"))
    assert not _unknown_key(await pull())


async def test_a_module_changed_outside_the_editor_is_seen_through_file_watchers(
    lsp: Client, tmp_path
) -> None:
    """VS Code registers the server's watchers and reports a `git checkout` or another tool
    changing model.py on disk; export.py, which read it, is checked again."""
    await start(lsp, "vscode")
    registered = await wait_for(lambda: lsp.registrations, what="file watcher registration")
    options = registered[0].register_options
    assert [w["globPattern"] for w in options["watchers"]] == ["**/*.py", "**/pyproject.toml"]
    (tmp_path / "model.py").write_text(MODEL)
    export, model = uri_of(tmp_path / "export.py"), uri_of(tmp_path / "model.py")
    open_doc(lsp, export, EXPORT)
    assert _unknown_key(await diagnostics_for(lsp, export, version=1))
    n = len(lsp.publishes)
    (tmp_path / "model.py").write_text(MODEL.replace("input_ids", "ids"))
    lsp.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams([types.FileEvent(model, types.FileChangeType.Changed)])
    )
    assert not _unknown_key(await diagnostics_for(lsp, export, after=n))


async def test_unknown_document_gets_an_lsp_error(lsp: Client) -> None:
    await start(lsp)
    with pytest.raises(Exception, match="unknown document"):
        await lsp.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier("file:///nowhere/never_opened.py"),
                range=types.Range(types.Position(0, 0), types.Position(0, 0)),
                context=types.CodeActionContext(diagnostics=[]),
            )
        )


async def test_untitled_buffer_and_file_outside_any_folder(lsp: Client, tmp_path) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    await start(lsp, folders=[folder])
    open_doc(lsp, "untitled:Untitled-1", LEGACY)
    assert [d.code for d in await diagnostics_for(lsp, "untitled:Untitled-1", 1)] == ["OLX401"]
    outside = uri_of(tmp_path / "elsewhere" / "x.py")
    open_doc(lsp, outside, LEGACY)
    assert [d.code for d in await diagnostics_for(lsp, outside, 1)] == ["OLX401"]


# ---------------------------------------------------------------------------- settings


async def test_settings_ignore_severity_and_project_config(lsp: Client, tmp_path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    # project b turns the rule off in pyproject.toml
    (b / "pyproject.toml").write_text('[tool.onnxlint]\nignore = ["OLX401"]\n')
    await start(
        lsp,
        settings=[
            {"workspace": uri_of(a), "debounceMs": 0, "severity": {"OLX4": "hint"}},
            {"workspace": uri_of(b), "debounceMs": 0},
        ],
        folders=[a, b],
        capabilities=client_capabilities("neovim@v0.7.0"),  # no workspace/configuration pull
    )
    ua, ub = uri_of(a / "m.py"), uri_of(b / "m.py")
    open_doc(lsp, ua, LEGACY)
    open_doc(lsp, ub, LEGACY)
    (da,) = await diagnostics_for(lsp, ua, 1)
    assert da.severity == types.DiagnosticSeverity.Hint  # folder a's editor override
    assert await diagnostics_for(lsp, ub, 1) == []  # folder b's project config


async def test_did_change_configuration_rechecks(lsp: Client, tmp_path) -> None:
    await start(lsp, "neovim", settings={"ignore": ["OLX401"]})
    uri = uri_of(tmp_path / "m.py")
    open_doc(lsp, uri, LEGACY)
    assert await diagnostics_for(lsp, uri, 1) == []
    n = len(lsp.publishes)
    lsp.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"onnxlint": {"debounceMs": 0}})
    )
    assert [d.code for d in await diagnostics_for(lsp, uri, after=n)] == ["OLX401"]


async def test_workspace_configuration_is_pulled_per_folder(lsp: Client, tmp_path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    await start(
        lsp,
        "vscode",
        folders=[folder],
        configuration={uri_of(folder): {"debounceMs": 0, "ignore": ["OLX401"]}},
    )
    uri = uri_of(folder / "m.py")
    open_doc(lsp, uri, LEGACY)
    # the pulled folder settings win over initializationOptions once they arrive
    await wait_for(
        lambda: any(p.uri == uri and not p.diagnostics for p in lsp.publishes), what="recheck"
    )
    n = len(lsp.publishes)
    lsp.set_configuration({"debounceMs": 0}, section="onnxlint", scope_uri=uri_of(folder))
    lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    assert [d.code for d in await diagnostics_for(lsp, uri, after=n)] == ["OLX401"]


async def test_bad_settings_get_one_message_and_defaults(lsp: Client, tmp_path) -> None:
    await start(
        lsp,
        "neovim",
        settings={"debounceMs": "soon", "select": ["E501"], "severity": {"OLX401": "loud"}},
    )
    uri = uri_of(tmp_path / "m.py")
    open_doc(lsp, uri, LEGACY)
    (d,) = await diagnostics_for(lsp, uri, 1)
    assert d.severity == types.DiagnosticSeverity.Warning  # default, not "loud"
    await wait_for(lambda: lsp.messages, what="showMessage")
    assert len(lsp.messages) == 1
    text = lsp.messages[0].message
    assert "debounceMs" in text and "E501" in text and "loud" in text


async def test_bad_project_config_is_reported_and_defaults_apply(lsp: Client, tmp_path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.onnxlint]\nselct = ["OLX4"]\n')
    await start(lsp, "neovim")
    uri = uri_of(tmp_path / "m.py")
    open_doc(lsp, uri, LEGACY)
    assert [d.code for d in await diagnostics_for(lsp, uri, 1)] == ["OLX401"]
    await wait_for(lambda: lsp.messages, what="showMessage")
    assert "selct" in lsp.messages[0].message
    # and the log (window/logMessage) has it too
    await wait_for(lambda: any("selct" in m.message for m in lsp.log_messages), what="logMessage")


async def test_enable_false_publishes_nothing(lsp: Client, tmp_path) -> None:
    await start(lsp, "neovim", settings={"enable": False})
    uri = uri_of(tmp_path / "m.py")
    open_doc(lsp, uri, LEGACY)
    assert await diagnostics_for(lsp, uri, 1) == []


async def test_columns_follow_the_negotiated_encoding(lsp: Client, tmp_path) -> None:
    """Neovim 0.11 offers utf-8 first: columns are then counted in bytes."""
    result = await start(lsp, "neovim11")
    encoding = result.capabilities.position_encoding
    uri = uri_of(tmp_path / "enc.py")
    text = 'import torch\ntorch.onnx.export(m, (x,), "\u00e9\U0001d569.onnx", dynamo=False)\n'
    open_doc(lsp, uri, text)
    report = await lsp.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
    )
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
    (d,) = report.items
    line = text.splitlines()[1]
    prefix = line[: line.index("dynamo=False")]
    expected = {
        "utf-8": len(prefix.encode("utf-8")),
        "utf-16": len(prefix.encode("utf-16-le")) // 2,
        "utf-32": len(prefix),
    }[str(getattr(encoding, "value", encoding) or "utf-16")]
    assert d.range.start.character == expected
