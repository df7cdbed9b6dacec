"""`workspace/executeCommand`: analyzeExport, createTarget, fixAll, restart, showReport.

Commands the client registers itself (`initializationOptions.clientCommands`, e.g. VS Code's
`onnxlint.restart`) are left out of `executeCommandProvider`. Arguments are lenient: a URI
string, a `{"uri": ...}` object or a TextDocumentIdentifier, then an optional options object.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from onnxlint.server.app import OnnxlintServer
from onnxlint.server.protocol import (
    ANALYZE_EXPORT,
    CREATE_TARGET,
    FIX_ALL,
    RESTART,
    SET_SCRIPT_ARGUMENTS,
    SHOW_REPORT,
)

log = logging.getLogger("onnxlint.server")


def _uri_and_options(
    args: tuple[Any, ...], required: bool = True
) -> tuple[str | None, dict[str, Any]]:
    uri: str | None = None
    options: dict[str, Any] = {}
    for a in args:
        if isinstance(a, str) and uri is None:
            uri = a
        elif isinstance(a, dict):
            if uri is None and isinstance(a.get("uri"), str):
                uri = a["uri"]
                options.update({k: v for k, v in a.items() if k != "uri"})
            else:
                options.update(a)
        elif hasattr(a, "uri") and uri is None:
            uri = str(a.uri)
    if required and uri is None:
        raise JsonRpcInvalidParams("expected a document URI as the first argument")
    return uri, options


async def analyze_export(ls: OnnxlintServer, *args: Any) -> Any:
    uri, options = _uri_and_options(args)
    assert uri is not None
    ls.document(uri)
    if ls.deep is None:
        return {"status": "unavailable", "message": "deep analysis is not available"}
    msg_id = ls.protocol.msg_id
    outer = ls.protocol._request_futures.get(msg_id) if msg_id is not None else None
    return await ls.deep.analyze(uri, options, token=outer)


def target_text(
    ls: OnnxlintServer, uri: str, text: str, cls: str, cls_path: str | None
) -> tuple[str, str]:
    """On the engine thread: (function name, text to append) of a `# onnxlint: target`
    factory that builds `cls` (defined in `cls_path`) in the file `uri`."""
    from onnxlint.deep.targets import module_name_for

    path = os.path.abspath(ls.path_of(uri))
    facts = ls.engine.project.facts(path, text)
    bound = set(facts.semantic.imports) | set(facts.semantic.classes) if facts else set()
    taken = set(facts.semantic.functions) if facts else set()
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", cls).lower()
    while name in taken or name in bound:
        name += "_target"
    body = []
    if cls not in bound and cls_path is not None and os.path.abspath(cls_path) != path:
        cfg, _, _ = ls.config_for(uri)
        root = Path(cfg.root) if cfg.root is not None else Path(path).parent
        module = module_name_for(Path(cls_path), root)
        if module is not None:
            body.append(f"    from {module} import {cls}\n")
    if "torch" not in bound:
        body.append("    import torch\n")
    body += [
        '    """The model the export above exports, built for the deep analysis."""\n',
        f"    model = {cls}().eval()\n",
        "    example = torch.randn(1, 3, 224, 224)  # replace with an input your model takes\n",
        "    return model, (example,)\n",
    ]
    sep = "" if text.endswith("\n") or not text else "\n"
    return name, f"{sep}\n\n# onnxlint: target\ndef {name}():\n{''.join(body)}"


async def create_target(ls: OnnxlintServer, *args: Any) -> Any:
    """Append a `# onnxlint: target` factory for the class an export call exports (the code
    lens over an export no target builds), and show it."""
    uri, options = _uri_and_options(args)
    assert uri is not None
    doc = ls.document(uri)
    cls = options.get("class")
    if not isinstance(cls, str) or not cls.isidentifier():
        raise JsonRpcInvalidParams("expected {'class': <the exported class name>}")
    path = options.get("path")
    text, version = doc.source, doc.version
    name, added = await ls.run_check(
        lambda: target_text(ls, uri, text, cls, path if isinstance(path, str) else None)
    )
    lines = ls.lines(text)
    end = lines.position(len(lines.lines) + 1, 1)
    edit = types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri, version),
                edits=[types.TextEdit(types.Range(end, end), added)],
            )
        ]
    )
    result = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=edit, label=f"Create analysis target {name}")
    )
    if not (result and result.applied):
        return {"created": None}
    full = text + added
    line = full.count("\n", 0, full.rindex(f"\ndef {name}():") + 1)  # 0-based
    caps = ls.client_capabilities.window
    if caps and caps.show_document and caps.show_document.support:
        pos = types.Position(line, 4)
        await ls.window_show_document_async(
            types.ShowDocumentParams(
                uri=uri,
                take_focus=True,
                selection=types.Range(pos, types.Position(line, 4 + len(name))),
            )
        )
    return {"created": name, "line": line + 1}


async def fix_all(ls: OnnxlintServer, *args: Any) -> Any:
    from onnxlint.server.code_actions import FIX_ALL_TITLE, fix_all_edit_with_progress

    uri, options = _uri_and_options(args)
    assert uri is not None
    ls.document(uri)
    version = (await ls.current(uri)).version
    edit = await fix_all_edit_with_progress(ls, uri, options)
    if edit is None:
        _say(ls, "onnxlint: nothing to fix")
        return {"applied": False, "reason": "nothing to fix", "fixes": 0}
    result = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=edit, label=FIX_ALL_TITLE)
    )
    if not (result and result.applied):
        _say(ls, "onnxlint: the fixes could not be applied (the file changed meanwhile?)")
        return {"applied": False, "reason": "not applied", "fixes": 0}
    count = ls.state(uri).fix_cache.get(("fixAllCount", version), 0)
    _say(ls, f"onnxlint: {count} fix{'es' if count != 1 else ''} applied")
    return {"applied": True, "fixes": count}


def _say(ls: OnnxlintServer, message: str) -> None:
    ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=message))


async def restart(ls: OnnxlintServer, *args: Any) -> Any:
    """Stop the deep worker (the next analysis starts a fresh one), re-read every
    configuration, drop the parse cache and check every open document again."""
    if ls.deep is not None:
        await ls.get_loop().run_in_executor(None, ls.deep.restart)
    await ls.run_check(lambda: ls.engine.parse_cache.clear())
    ls.shown_errors.clear()
    ls.recheck_all()
    return {"restarted": True}


async def show_report(ls: OnnxlintServer, *args: Any) -> Any:
    from onnxlint.server.deep_service import DeepUnavailable

    if ls.deep is None:
        return None
    try:
        paths = await ls.get_loop().run_in_executor(None, ls.deep.report)
    except DeepUnavailable as exc:
        ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Info, message=str(exc))
        )
        return {"status": "unavailable", "message": str(exc)}
    _, options = _uri_and_options(args, required=False)
    if options.get("show") is False:  # the client opens the report itself (VS Code: a webview)
        return paths
    caps = ls.client_capabilities.window
    if caps and caps.show_document and caps.show_document.support:
        from pygls.uris import from_fs_path

        uri = from_fs_path(paths["markdown"])
        if uri:
            await ls.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True))
    else:
        ls.window_show_message(
            types.ShowMessageParams(
                type=types.MessageType.Info, message=f"onnxlint report: {paths['html']}"
            )
        )
    return paths


async def set_script_arguments(ls: OnnxlintServer, *args: Any) -> Any:
    """Write a script's `argv` into the project's pyproject.toml (`[[tool.onnxlint.scripts]]`);
    arguments: the script's URI (or any file of the project), then {"script": path, "argv":
    [...]}. The client runs the analysis again afterwards."""
    from onnxlint.server.script_args import write_arguments

    uri, options = _uri_and_options(args)
    assert uri is not None
    script, argv = options.get("script"), options.get("argv")
    if not isinstance(script, str) or not (
        isinstance(argv, list) and all(isinstance(a, str) for a in argv)
    ):
        raise JsonRpcInvalidParams('expected {"script": <path>, "argv": [<strings>]}')
    cfg, _, _ = ls.config_for(uri)
    root = Path(cfg.root) if cfg.root is not None else Path(ls.path_of(uri)).parent
    try:
        written = await ls.get_loop().run_in_executor(
            None, lambda: write_arguments(root, Path(script), list(argv))
        )
    except (ValueError, OSError) as exc:
        _say(ls, f"onnxlint: the arguments were not written: {exc}")
        return {"written": None, "error": str(exc)}
    ls.invalidate_config()
    if ls.deep is not None:
        ls.deep._targets.clear()
    return {"written": str(written), "argv": argv}


_HANDLERS = {
    ANALYZE_EXPORT: analyze_export,
    CREATE_TARGET: create_target,
    FIX_ALL: fix_all,
    RESTART: restart,
    SHOW_REPORT: show_report,
    SET_SCRIPT_ARGUMENTS: set_script_arguments,
}


def register_commands(server: OnnxlintServer, client_commands: frozenset[str]) -> None:
    """Register the commands the client does not handle itself (called from initialize)."""
    for name, handler in _HANDLERS.items():
        if name in client_commands or name in server.protocol.fm.commands:
            continue
        server.command(name)(handler)
