"""Unit tests of the pure parts: settings parsing, position conversion, edits, comments."""

from __future__ import annotations

from lsprotocol import types

from onnxlint.core.violation import Span
from onnxlint.server.code_actions import suppression_edit
from onnxlint.server.convert import Lines, whole_text_edit
from onnxlint.server.hover import code_in_comment
from onnxlint.server.settings import (
    Settings,
    parse_initialization_options,
    parse_settings,
    settings_to_json,
)


def test_defaults_round_trip() -> None:
    s, errors = parse_settings(settings_to_json(Settings()))
    assert errors == [] and s == Settings()


def test_bad_values_fall_back_with_one_error_each() -> None:
    s, errors = parse_settings(
        {
            "enable": "yes",
            "debounceMs": -5,
            "select": ["F401"],
            "severity": {"OLX401": "loud", "OLX2": "Hint"},
            "deep": {"timeout": 0, "onSave": 1},
            "trace": {"server": "loud"},
            "debounce_ms": 3,
        }
    )
    assert s.enable is True and s.debounce_ms == 150 and s.select == ()
    assert s.severity == (("OLX2", "hint"),)
    assert s.deep.timeout == 300 and s.deep.on_save is False
    assert len(errors) == 8
    assert any("did you mean `debounceMs`" in e for e in errors)


def test_flat_dotted_keys_and_strings_are_accepted() -> None:
    s, errors = parse_settings({"deep.onSave": True, "interpreter": "/usr/bin/python3"})
    assert errors == []
    assert s.deep.on_save is True and s.interpreter == ("/usr/bin/python3",)


def test_initialization_options_shapes() -> None:
    vs, errors = parse_initialization_options(
        {
            "settings": [{"workspace": "file:///a", "ignore": ["OLX4"]}],
            "globalSettings": {"debounceMs": 10},
            "clientCommands": ["onnxlint.restart"],
            "trusted": False,
        }
    )
    assert errors == []
    assert vs.global_settings.debounce_ms == 10
    assert vs.folder_settings[0].ignore == ("OLX4",)
    assert vs.client_commands == {"onnxlint.restart"} and vs.trusted is False
    nvim, errors = parse_initialization_options({"debounceMs": 0})  # the settings themselves
    assert errors == [] and nvim.global_settings.debounce_ms == 0 and nvim.trusted is True


def test_severity_prefix_longest_match() -> None:
    s, _ = parse_settings({"severity": {"OLX": "info", "OLX40": "hint"}})
    assert s.severity_for("OLX401") == "hint"
    assert s.severity_for("OLX201") == "info"


def test_positions_in_utf16_utf8_and_utf32() -> None:
    text = "a\U0001d569\u00e9 = 1\nlast"  # an astral char (2 UTF-16 units), an e-acute
    for enc, col in (
        (types.PositionEncodingKind.Utf16, 4),
        (types.PositionEncodingKind.Utf8, 7),
        (types.PositionEncodingKind.Utf32, 3),
    ):
        lines = Lines(text, enc)
        assert lines.position(1, 4) == types.Position(0, col)
        assert lines.code_point_column(types.Position(0, col)) == (1, 4)
    lines = Lines(text)
    assert lines.position(9, 1) == types.Position(1, 4)  # past the end: end of text
    assert Lines("x\n").position(5, 1) == types.Position(1, 0)


def test_lines_break_where_the_engine_and_lsp_do() -> None:
    # \r, \n and \r\n break lines; \f and \u2028 do not (str.splitlines would split there).
    text = "a\rb\x0cc\r\nd\u2028e\nf"
    assert list(Lines(text).lines) == ["a", "b\x0cc", "d\u2028e", "f"]
    assert Lines(text).position(3, 3) == types.Position(2, 2)
    assert list(Lines("").lines) == [] and list(Lines("x\n").lines) == ["x"]


def test_whole_text_edit_touches_only_changed_lines() -> None:
    old = "a\nb\nc\n"
    new = "a\nB\nc\n"
    (edit,) = whole_text_edit(old, new, Lines(old))
    assert edit.range == types.Range(types.Position(1, 0), types.Position(2, 0))
    assert edit.new_text == "B\n"


def test_suppression_comment_merge_and_append() -> None:
    e = suppression_edit("x = f()  # onnxlint: ignore[OLX101]", 3, "OLX401")
    assert e.text == "OLX101, OLX401" and e.span.line == 3
    e = suppression_edit("x = f()   ", 2, "OLX401")
    assert e.span == Span(2, 8, 2, 11) and e.text == "  # onnxlint: ignore[OLX401]"


def test_code_under_the_cursor_in_a_comment() -> None:
    line = "x = 1  # onnxlint: ignore[OLX101, OLX401]  # noqa: OLX201"
    assert code_in_comment(line, line.index("OLX401") + 1)[0] == "OLX401"  # type: ignore[index]
    assert code_in_comment(line, line.index("OLX201"))[0] == "OLX201"  # type: ignore[index]
    assert code_in_comment(line, 0) is None


def test_editing_one_document_keeps_the_other_documents_blocks_parsed() -> None:
    """The parse cache pins every open document's blocks: typing in B (each keystroke a
    new version of a block, some running to the end of the file while a bracket is open)
    never evicts A's, and once idle only the open documents' blocks stay."""
    from pygls.workspace import Workspace

    from onnxlint.core.config import Config
    from onnxlint.server.app import OnnxlintServer
    from onnxlint.server.session import PARSE_CACHE_SLACK

    server = OnnxlintServer()
    server.protocol._workspace = Workspace(None, types.TextDocumentSyncKind.Incremental)
    model = "import torch\n\n" + "".join(
        f"class M{i}(torch.nn.Module):\n    def forward(self, x):\n        return x + {i}\n\n"
        for i in range(20)
    )
    texts = {"file:///a.py": model, "file:///b.py": model.replace("x + ", "x * ")}
    for uri, text in texts.items():
        server.workspace.put_text_document(
            types.TextDocumentItem(uri=uri, language_id="python", version=0, text=text)
        )
        server._check(uri, uri[7:], text, Config())
    cache = server.engine.parse_cache
    server._check("file:///a.py", "/a.py", texts["file:///a.py"], Config())
    a_blocks = list(server.engine.last_block_texts)
    b = texts["file:///b.py"]
    at = b.index("return x * 3") + len("return ")
    for n in range(3 * PARSE_CACHE_SLACK):  # distinct versions, half with an open bracket
        edited = b[:at] + ("(" if n % 2 else "") + f"{n} + " + b[at:]
        server._check("file:///b.py", "/b.py", edited, Config())
    assert all(cache.get(t) is not None for t in a_blocks)
    assert len(cache) <= len(cache.pinned) + PARSE_CACHE_SLACK
    server._drop_slack()
    assert len(cache) == len(set(a_blocks) | set(server._blocks["file:///b.py"]))


class _Loop:
    """Records `call_later` instead of running it."""

    def __init__(self) -> None:
        self.later: list[float] = []

    def call_later(self, delay: float, *args: object) -> object:
        self.later.append(delay)

        class Handle:
            def cancel(self) -> None:
                pass

        return Handle()


def _bare_server() -> tuple[object, _Loop, list[str]]:
    import dataclasses

    from pygls.workspace import Workspace

    from onnxlint.server.app import OnnxlintServer

    server = OnnxlintServer()
    server.protocol._workspace = Workspace(None, types.TextDocumentSyncKind.Incremental)
    server.global_settings = dataclasses.replace(Settings(), debounce_ms=0)
    loop = _Loop()
    triggered: list[str] = []
    server.get_loop = lambda: loop  # type: ignore[method-assign]
    server.trigger = triggered.append  # type: ignore[method-assign]
    return server, loop, triggered


def test_a_burst_waits_only_while_the_last_edit_is_still_being_checked() -> None:
    """Edits closer than BURST_MS wait for a pause when the previous edit's check has not
    ended (a paste, a storm); an edit after that check ended is checked at once, however
    soon it comes (the next keystroke of someone typing)."""
    from onnxlint.server.checks import BURST_MS

    server, loop, triggered = _bare_server()
    uri = "file:///a.py"
    server.schedule(uri)  # type: ignore[attr-defined]
    assert triggered == [uri] and loop.later == []
    st = server.state(uri)  # type: ignore[attr-defined]
    st.running = True  # its check runs: the next edit, 0 ms later, is a burst
    server.schedule(uri)  # type: ignore[attr-defined]
    assert triggered == [uri] and loop.later == [BURST_MS / 1000]
    st.running, st.timer = False, None  # checked and published
    server.schedule(uri)  # type: ignore[attr-defined]
    assert triggered == [uri, uri] and loop.later == [BURST_MS / 1000]


def test_a_document_tells_the_project_model_of_its_own_edit_after_its_check() -> None:
    """While the edited document's check runs, telling the project model waits (it would
    take the GIL from the publish, and a storm would index every keystroke); it is told
    once the check has ended."""
    server, _loop, _triggered = _bare_server()
    told: list[object] = []

    class Done:
        def add_done_callback(self, fn: object) -> None:
            pass

    def run_check(fn: object) -> Done:
        told.append(fn)
        return Done()

    server.run_check = run_check  # type: ignore[attr-defined]
    uri = "file:///a.py"
    st = server.state(uri)  # type: ignore[attr-defined]
    st.running = True
    for _ in range(3):  # three keystrokes during the check
        server.dependency_changed(uri)  # type: ignore[attr-defined]
    assert told == []
    st.running = False
    server._flush_changed(uri)  # type: ignore[attr-defined]
    assert len(told) == 1
    server._flush_changed(uri)  # type: ignore[attr-defined]
    assert len(told) == 1
    server.dependency_changed(uri)  # type: ignore[attr-defined]  # no check due: at once
    assert len(told) == 2


def test_features_register_named_module_level_handlers() -> None:
    """Issue 28: a feature module's handlers are module-level functions (they can be read,
    imported and tested by name); `register()` only hands them to the server."""
    import ast
    from pathlib import Path

    import onnxlint.server as server_package

    nested = []
    for module in sorted(Path(server_package.__file__).parent.glob("*.py")):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("register"):
                nested += [
                    f"{module.name}: {inner.name}"
                    for inner in ast.walk(node)
                    if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                    and inner is not node
                ]
    assert nested == [], nested


def test_client_support_is_read_once_from_the_capabilities() -> None:
    """Issue 28: what the client can do is resolved once at initialize (Session.supports);
    no feature walks the nested ClientCapabilities itself."""
    import ast
    from pathlib import Path

    from pytest_lsp import client_capabilities

    import onnxlint.server as server_package
    from onnxlint.server.protocol import ClientSupport

    vscode = ClientSupport.of(client_capabilities("visual_studio_code"))
    assert vscode.show_document and vscode.work_done_progress and vscode.configuration
    assert vscode.document_changes and vscode.resolve_code_action_edit and vscode.watch_files
    assert vscode.code_lens_refresh and not vscode.pull_diagnostics  # (VS Code 1.65's)
    nvim11 = ClientSupport.of(client_capabilities("neovim@v0.11.0"))
    assert nvim11.pull_diagnostics
    bare = ClientSupport.of(types.ClientCapabilities())
    assert bare == ClientSupport() and not any(vars(bare).values())

    readers = []
    for module in sorted(Path(server_package.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "client_capabilities":
                readers.append(f"{module.name}:{node.lineno}")
    assert readers == [], readers


def test_the_collector_runs_again_once_the_engine_has_loaded() -> None:
    """`serve` turns the garbage collector off for the start-up's imports (they make next to
    no garbage; walking their objects again and again was ~15% of the start). Once the
    engine has loaded it runs again with those objects frozen, and the first idle trim
    unfreezes and collects them."""
    import gc

    from onnxlint.server import _load_engine, create_server
    from onnxlint.server.checks import _malloc_trim

    server = create_server()
    gc.disable()
    try:
        _load_engine(server)
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0
        _malloc_trim()
        assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
        gc.enable()
