"""`workspace/executeCommand`: analyzeExport, fixAll, restart, showReport.

Commands the client registers itself (`initializationOptions.clientCommands`, e.g. VS Code's
`onnxlint.restart`) are left out of `executeCommandProvider`. Arguments are lenient: a URI
string, a `{"uri": ...}` object or a TextDocumentIdentifier, then an optional options object.
"""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from onnxlint.server.server import OnnxlintServer

log = logging.getLogger("onnxlint.server")

ANALYZE_EXPORT = "onnxlint.analyzeExport"
FIX_ALL = "onnxlint.fixAll"
RESTART = "onnxlint.restart"
SHOW_REPORT = "onnxlint.showReport"
COMMANDS = (ANALYZE_EXPORT, FIX_ALL, RESTART, SHOW_REPORT)


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


async def fix_all(ls: OnnxlintServer, *args: Any) -> Any:
    from onnxlint.server.code_actions import FIX_ALL_TITLE, fix_all_edit_with_progress

    uri, options = _uri_and_options(args)
    assert uri is not None
    ls.document(uri)
    edit = await fix_all_edit_with_progress(ls, uri, options)
    if edit is None:
        return {"applied": False, "reason": "nothing to fix"}
    result = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=edit, label=FIX_ALL_TITLE)
    )
    return {"applied": bool(result and result.applied)}


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
    from onnxlint.server.deep import DeepUnavailable

    if ls.deep is None:
        return None
    try:
        paths = await ls.get_loop().run_in_executor(None, ls.deep.report)
    except DeepUnavailable as exc:
        ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Info, message=str(exc))
        )
        return {"status": "unavailable", "message": str(exc)}
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


_HANDLERS = {
    ANALYZE_EXPORT: analyze_export,
    FIX_ALL: fix_all,
    RESTART: restart,
    SHOW_REPORT: show_report,
}


def register_commands(server: OnnxlintServer, client_commands: frozenset[str]) -> None:
    """Register the commands the client does not handle itself (called from initialize)."""
    for name, handler in _HANDLERS.items():
        if name in client_commands or name in server.protocol.fm.commands:
            continue
        server.command(name)(handler)
