"""Issue 27, item 5: getting an export to run without hand-written TOML.

"Set arguments...": a script run that stops for its command line (argparse's required
`--config`) offers it on the finding (a quick fix running the client's `onnxlint.setArguments`)
and in the end notification (`setArguments`); the server's `onnxlint.setScriptArguments` writes
the `[[tool.onnxlint.scripts]]` entry, and the same analysis then runs past `parse_args()`.

"Create a target": the factory it writes builds the model with the constructor arguments of the
call site (a literal, a module constant), leaves a placeholder for what the file does not say
(`cfg.classes`, a required argument no call gives) with a comment naming it, takes the export
call's example inputs, and answers what to run once the file is saved.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from onnxlint.server.script_args import with_arguments

from .conftest import (
    Client,
    action_entry,
    analyze_export,
    change_doc,
    code_actions,
    open_checked,
    start,
    uri_of,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

NETS = """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, width, classes, *, depth=2, act="relu"):
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, padding=1)
        self.head = nn.Conv2d(width, classes, 1)

    def forward(self, x):
        y = self.head(torch.relu(self.conv(x)))
        if y.sum() > 0:
            return y * 2
        return y - 1
"""

REQUIRED_ARG = """import argparse

import torch

from nets import Net

p = argparse.ArgumentParser()
p.add_argument("--config", required=True, help="the model's config file")
a = p.parse_args()
model = Net(8, 4).eval()
torch.onnx.export(model, (torch.randn(2, 3, 16, 16),), "out.onnx")
"""


def _line_of(path: Path, needle: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.onnxlint]\n')
    (tmp_path / "nets.py").write_text(NETS)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


async def _open_script(
    lsp: Client, tmp_path: Path, text: str, **start_options: Any
) -> tuple[Path, str]:
    """A project whose export.py is `text`, a VS Code session on it, export.py open and
    checked: (export.py, its URI)."""
    root = _project(tmp_path, {"export.py": text})
    script = root / "export.py"
    uri = uri_of(script)
    await start(lsp, "vscode", folders=[root], **start_options)
    await open_checked(lsp, uri, text)
    return script, uri


async def _lenses(lsp: Client, uri: str) -> list[tuple[int, str, list[Any]]]:
    lenses = await lsp.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri))
    )
    out = []
    for lens in lenses or []:
        assert lens.command is not None
        out.append(
            (lens.range.start.line + 1, lens.command.title, list(lens.command.arguments or []))
        )
    return out


def _plain(value: Any) -> Any:
    """A notification's params as plain dicts and lists (pygls gives named tuples)."""
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _finished(lsp: Client) -> list[Any]:
    return [
        p
        for name, p in lsp.notifications
        if name == "onnxlint/analysisState" and p.state == "finished"
    ]


async def test_with_arguments_sets_the_argv_of_the_script_s_table_and_keeps_the_rest() -> None:
    text = (
        "[tool.onnxlint]\nselect = ['OLX1']\n\n"
        '[[tool.onnxlint.scripts]]\npath = "tools/other.py"\nargv = ["-x"]\n\n'
        '[[tool.onnxlint.scripts]]\npath = "tools/export.py"\nargv = ["--old"]\n\n'
        "[tool.ruff]\nline-length = 99\n"
    )
    out = with_arguments(text, "tools/export.py", ["--config", 'a "b".yaml'])
    assert out == text.replace('argv = ["--old"]', 'argv = ["--config", "a \\"b\\".yaml"]')
    new = with_arguments("[tool.onnxlint]\n", "export.py", [])
    assert new == '[tool.onnxlint]\n\n[[tool.onnxlint.scripts]]\npath = "export.py"\nargv = []\n'


@pytest.mark.deep
@pytest.mark.slow
async def test_set_arguments_for_a_script_that_stops_on_a_required_argument(
    lsp: Client, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    script, uri = await _open_script(
        lsp, tmp_path, REQUIRED_ARG, client_commands=["onnxlint.setArguments"]
    )
    call = _line_of(script, "torch.onnx.export(")
    (lens,) = [a for at, title, a in await _lenses(lsp, uri) if at == call and "runs" in title]
    out = await analyze_export(lsp, lens)
    assert out["status"] == "ok", out

    # the end notification offers "Set arguments..." with what it needs
    stop = _plain(_finished(lsp)[-1].setArguments)
    assert stop["uri"] == uri and Path(stop["script"]) == script.resolve(), stop
    assert stop["argv"] == [] and stop["rerun"]["script"] == stop["script"], stop
    # ... and so does the finding, at parse_args(), in its quick-fix menu
    parse = _line_of(script, "p.parse_args()") - 1

    def stopped() -> list[types.Diagnostic]:
        return [
            d
            for d in lsp.diagnostics.get(uri, [])
            if d.code == "OLX812" and d.range.start.line == parse
        ]

    (diag,) = await wait_for(stopped, 30, "the OLX812 at parse_args()")
    assert "--config" in diag.message
    actions = await code_actions(lsp, uri, diag)
    found = [
        (title, command)
        for title, _, command in map(action_entry, actions)
        if command.get("command") == "onnxlint.setArguments"
    ]
    assert len(found) == 1, actions
    ((title, command),) = found
    assert title.startswith("onnxlint (OLX812): Set the command-line arguments export.py"), title
    assert command["arguments"][0] == uri
    assert command["arguments"][1]["rerun"] == stop["rerun"]

    # what the input box sends: the entry is written, the configuration still loads
    written = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="onnxlint.setScriptArguments",
            arguments=[uri, {"script": stop["script"], "argv": ["--config", "net.yaml"]}],
        )
    )
    assert written["written"] == str(script.parent / "pyproject.toml"), written
    pyproject = (script.parent / "pyproject.toml").read_text()
    assert pyproject.startswith('[project]\nname = "demo"\n\n[tool.onnxlint]\n'), pyproject
    assert '[[tool.onnxlint.scripts]]\npath = "export.py"\nargv = ["--config", "net.yaml"]\n' in (
        pyproject
    )

    # the same analysis again: past parse_args(), to the model's own problem
    n = len(_finished(lsp))
    out = await analyze_export(lsp, [uri, stop["rerun"]])
    assert out["status"] == "ok", out
    await wait_for(lambda: len(_finished(lsp)) > n, 30, "the second end")
    assert getattr(_finished(lsp)[-1], "setArguments", None) is None
    report = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="onnxlint.showReport", arguments=[uri])
    )
    md = Path(report["markdown"]).read_text(encoding="utf-8")
    assert "OLX812" not in md and "OLX802" in md, md


async def test_set_arguments_is_not_offered_to_a_client_without_the_input_box(
    lsp: Client, tmp_path: Path
) -> None:
    """Without the client's `onnxlint.setArguments`, the server writes the entry on request
    (`onnxlint.setScriptArguments`) and refuses an argv that is not a list of strings."""
    root = _project(tmp_path, {"export.py": REQUIRED_ARG})
    await start(lsp, "neovim", folders=[root])
    uri = uri_of(root / "export.py")
    with pytest.raises(Exception, match="argv"):
        await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="onnxlint.setScriptArguments",
                arguments=[uri, {"script": str(root / "export.py"), "argv": "--config x"}],
            )
        )
    written = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="onnxlint.setScriptArguments",
            arguments=[uri, {"script": str(root / "export.py"), "argv": ["--config", "x y"]}],
        )
    )
    assert written["argv"] == ["--config", "x y"]
    assert 'argv = ["--config", "x y"]' in (root / "pyproject.toml").read_text()


BUILT_FROM_CONFIG = """import torch

from nets import Net

WIDTH = 8


def export(cfg, path):
    model = Net(WIDTH, cfg.classes, act="gelu")
    x = torch.randn(2, 3, 16, 16)
    torch.onnx.export(model.eval(), (x,), path, opset_version=18)
"""


async def _create(lsp: Client, uri: str, call: int) -> dict[str, Any]:
    titles = {title: a for at, title, a in await _lenses(lsp, uri) if at == call}
    assert set(titles) == {"No analysis target builds Net: create one"}, titles
    n = len(lsp.applied)
    out = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="onnxlint.createTarget",
            arguments=titles["No analysis target builds Net: create one"],
        )
    )
    await wait_for(lambda: len(lsp.applied) > n, what="the edit")
    assert isinstance(out, dict)
    return out


async def test_create_target_fills_the_call_site_s_arguments_and_marks_the_rest(
    lsp: Client, tmp_path: Path
) -> None:
    script, uri = await _open_script(lsp, tmp_path, BUILT_FROM_CONFIG)
    call = _line_of(script, "torch.onnx.export(")
    out = await _create(lsp, uri, call)
    assert out["created"] == "net" and out["placeholders"] == ["classes"], out
    assert out["rerun"] == {"target": "export:net", "line": call, "call": {"opset": 18}}, out
    added = lsp.texts[uri][len(BUILT_FROM_CONFIG) :]
    assert added == (
        "\n\n# onnxlint: target\n"
        "def net():\n"
        f'    """The model the export at line {call} exports, built for the deep analysis."""\n'
        "    # onnxlint: fill in `classes`: Net(...) on line 9 gets `cfg.classes`, not a value "
        "written in the file\n"
        "    model = Net(width=8, classes=..., act='gelu').eval()\n"
        "    return model, (torch.randn(2, 3, 16, 16),)\n"
    ), added
    compile(lsp.texts[uri], "export.py", "exec")


async def test_a_create_target_lens_clicked_after_an_edit_builds_for_the_call_it_showed(
    lsp: Client, tmp_path: Path
) -> None:
    """Two lines added above the call before the editor redrew the lens: its argument still
    says the old line, and the target is made for the call it showed, now 2 lines down."""
    script, uri = await _open_script(lsp, tmp_path, BUILT_FROM_CONFIG)
    call = _line_of(script, "torch.onnx.export(")
    (shown,) = [a for at, t, a in await _lenses(lsp, uri) if at == call and "create" in t]
    change_doc(lsp, uri, "# exports Net\n# (see nets.py)\n" + BUILT_FROM_CONFIG)
    n = len(lsp.applied)
    out = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="onnxlint.createTarget", arguments=shown)
    )
    await wait_for(lambda: len(lsp.applied) > n, what="the edit")
    assert isinstance(out, dict) and out["created"] == "net", out
    assert out["rerun"] == {"target": "export:net", "line": call + 2, "call": {"opset": 18}}
    assert f"The model the export at line {call + 2} exports" in lsp.texts[uri]


CLASS_ONLY = """import torch

from nets import Net


def export(model, x):
    torch.onnx.export(model, (x,), "net.onnx")


def main():
    export(Net(16, 3), torch.randn(1, 3, 8, 8))
"""


async def test_create_target_marks_a_required_argument_and_inputs_the_file_does_not_give(
    lsp: Client, tmp_path: Path
) -> None:
    """A wrapper `export(model, x)`: the class comes from its caller; nothing in export()
    says the model's arguments or the example's shape, so both are placeholders, and the
    first `...` is what the editor selects."""
    text = CLASS_ONLY.replace("Net(16, 3)", "Net(16)")
    script, uri = await _open_script(lsp, tmp_path, text)
    out = await _create(lsp, uri, _line_of(script, "torch.onnx.export("))
    assert out["placeholders"] == ["the example inputs", "classes"], out
    added = lsp.texts[uri][len(text) :]
    assert "model = Net(width=16, classes=...).eval()\n" in added, added
    assert "    return model, ...\n" in added, added
    assert "# onnxlint: fill in `classes`: Net() requires it, and Net(...) on line 11" in added
    assert "# onnxlint: fill in the example inputs: the export on line 7 gets `(x,)`" in added


@pytest.mark.deep
@pytest.mark.slow
async def test_a_created_target_once_filled_in_and_saved_is_what_the_rerun_analyses(
    lsp: Client, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    script, uri = await _open_script(lsp, tmp_path, BUILT_FROM_CONFIG)
    call = _line_of(script, "torch.onnx.export(")
    out = await _create(lsp, uri, call)
    # the user fills in the placeholder and saves (the VS Code client saves by itself)
    filled = lsp.texts[uri].replace("classes=...", "classes=4")
    change_doc(lsp, uri, filled)
    script.write_text(filled)
    lsp.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
    ran = await analyze_export(lsp, [uri, out["rerun"]])
    assert ran["status"] == "ok", ran
    report = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="onnxlint.showReport", arguments=[uri])
    )
    md = Path(report["markdown"]).read_text(encoding="utf-8")
    assert "export:net" in md and "OLX802" in md, md
