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
from pygls.uris import from_fs_path

from onnxlint.server.app import OnnxlintServer
from onnxlint.server.protocol import (
    ANALYZE_EXPORT,
    CREATE_TARGET,
    FIX_ALL,
    RESTART,
    SET_SCRIPT_ARGUMENTS,
    SHOW_DOCUMENTATION,
    SHOW_REPORT,
)
from onnxlint.server.targets import LensGone, deep_targets_of, lens_now

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
    ls: OnnxlintServer, uri: str, text: str, cls: str, cls_path: str | None, line: int | None
) -> tuple[str, str, list[str]]:
    """On the engine thread: (function name, text to append, placeholders left to fill in)
    of a `# onnxlint: target` factory that builds `cls` (defined in `cls_path`) the way the
    export call at `line` of the file `uri` does (new_target.py)."""
    from onnxlint.deep.targets import module_name_for
    from onnxlint.server.new_target import PLACEHOLDER, factory_for

    path = os.path.abspath(ls.path_of(uri))
    facts = ls.engine.project.facts(path, text)
    bound = set(facts.semantic.imports) | set(facts.semantic.classes) if facts else set()
    taken = set(facts.semantic.functions) if facts else set()
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", cls).lower()
    while name in taken or name in bound:
        name += "_target"
    if cls_path is None or os.path.abspath(cls_path) == path:
        class_text: str | None = text
    else:
        doc = ls.workspace.text_documents.get(from_fs_path(cls_path) or "")
        class_text = doc.source if doc is not None else _read_text(cls_path)
    made = factory_for(text, line or 0, cls, class_text)
    body = []
    if cls not in bound and cls_path is not None and os.path.abspath(cls_path) != path:
        cfg, _, _ = ls.config_for(uri)
        root = Path(cfg.root) if cfg.root is not None else Path(path).parent
        module = module_name_for(Path(cls_path), root)
        if module is not None:
            body.append(f"    from {module} import {cls}\n")
    if "torch" not in bound:
        body.append("    import torch\n")
    what = f"the export at line {line}" if line is not None else "the export"
    body.append(f'    """The model {what} exports, built for the deep analysis."""\n')
    body += [f"    # {PLACEHOLDER} {note}\n" for note in made.notes]
    body.append(f"    model = {cls}({', '.join(made.model_args)}).eval()\n")
    body.append(f"    return model, {made.example or '...'}\n")
    sep = "" if text.endswith("\n") or not text else "\n"
    return name, f"{sep}\n\n# onnxlint: target\ndef {name}():\n{''.join(body)}", made.placeholders


def _read_text(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


async def create_target(ls: OnnxlintServer, *args: Any) -> Any:
    """Append a `# onnxlint: target` factory for the class an export call exports (the code
    lens over an export no target builds), with the constructor arguments and example inputs
    of the call site, and show it. The answer says what to run once the file is saved
    (`rerun`, the analyzeExport argument) and what is left to fill in (`placeholders`; the
    first is selected); the VS Code client saves the file and runs it when nothing is."""
    from onnxlint.deep.targets import module_name_for
    from onnxlint.server.new_target import PLACEHOLDER

    uri, options = _uri_and_options(args)
    assert uri is not None
    doc = ls.document(uri)
    try:  # a lens clicked before the editor redrew it after an edit: the lens as it is now
        shown = options
        options = await ls.run_check(lambda: lens_now(ls, uri, shown, deep_targets_of(ls)))
    except LensGone as exc:
        raise JsonRpcInvalidParams(str(exc)) from None
    cls = options.get("class")
    if not isinstance(cls, str) or not cls.isidentifier():
        raise JsonRpcInvalidParams("expected {'class': <the exported class name>}")
    path = options.get("path")
    at = options.get("line")
    call_line = at if isinstance(at, int) and not isinstance(at, bool) else None
    text, version = doc.source, doc.version
    name, added, placeholders = await ls.run_check(
        lambda: target_text(ls, uri, text, cls, path if isinstance(path, str) else None, call_line)
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
    start = full.rindex(f"\ndef {name}():") + 1
    line = full.count("\n", 0, start)  # 0-based
    selection = types.Range(types.Position(line, 4), types.Position(line, 4 + len(name)))
    if placeholders:  # the first `...` to fill in
        body = full[start:].splitlines()
        for i, row in enumerate(body):
            code = row.split("#", 1)[0] if PLACEHOLDER not in row else ""
            col = code.find("...")
            if col >= 0:
                selection = types.Range(
                    types.Position(line + i, col), types.Position(line + i, col + 3)
                )
                break
    if ls.supports.show_document:
        await ls.window_show_document_async(
            types.ShowDocumentParams(uri=uri, take_focus=True, selection=selection)
        )
    cfg, _, _ = ls.config_for(uri)
    here = Path(ls.path_of(uri))
    root = Path(cfg.root) if cfg.root is not None else here.parent
    module = module_name_for(here, root)
    answer: dict[str, Any] = {
        "created": name,
        "line": line + 1,
        "placeholders": placeholders,
        "target": f"{module}:{name}" if module is not None else None,
    }
    if module is not None:
        rerun: dict[str, Any] = {"target": f"{module}:{name}"}
        if call_line is not None:
            rerun["line"] = call_line
            settings = await ls.run_check(lambda: _call_settings(ls, uri, full, call_line))
            if settings:
                rerun["call"] = settings
        answer["rerun"] = rerun
    if ls.deep is not None:
        ls.deep.forget_targets()  # the new factory is a target once the file is saved
    return answer


def _call_settings(ls: OnnxlintServer, uri: str, text: str, line: int) -> dict[str, Any]:
    """The export call's opset and dynamic shapes (what its lens runs a target with)."""
    from onnxlint.project.exports import export_sites
    from onnxlint.server.targets import call_settings

    facts = ls.engine.project.facts(os.path.abspath(ls.path_of(uri)), text)
    if facts is None:
        return {}
    for site, _ in export_sites(ls.engine.project, facts):
        if site.line == line:
            return call_settings(facts, site)
    return {}


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
    if ls.supports.show_document:
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
        ls.deep.forget_targets()
    return {"written": str(written), "argv": argv}


async def show_documentation(ls: OnnxlintServer, *args: Any) -> Any:
    """Open a rule's page (its URL, or its code) in the browser (`window/showDocument`,
    external); a client without it gets the URL in a message."""
    from onnxlint.core.violation import DOCS_BASE_URL

    found = next((a for a in args if isinstance(a, str)), None)
    if found is None:
        raise JsonRpcInvalidParams("expected a rule's URL or code")
    url = found if found.startswith("https://") else f"{DOCS_BASE_URL}{found.upper()}/"
    if not url.startswith(DOCS_BASE_URL):
        raise JsonRpcInvalidParams(f"not a page of onnxlint's documentation: {url}")
    if ls.supports.show_document:
        shown = await ls.window_show_document_async(
            types.ShowDocumentParams(uri=url, external=True)
        )
        if shown is not None and shown.success:
            return {"url": url, "shown": True}
    _say(ls, f"onnxlint: the rule's documentation: {url}")
    return {"url": url, "shown": False}


_HANDLERS = {
    ANALYZE_EXPORT: analyze_export,
    CREATE_TARGET: create_target,
    FIX_ALL: fix_all,
    RESTART: restart,
    SHOW_REPORT: show_report,
    SET_SCRIPT_ARGUMENTS: set_script_arguments,
    SHOW_DOCUMENTATION: show_documentation,
}


def register_commands(server: OnnxlintServer, client_commands: frozenset[str]) -> None:
    """Register the commands the client does not handle itself (called from initialize)."""
    for name, handler in _HANDLERS.items():
        if name in client_commands or name in server.protocol.fm.commands:
            continue
        server.command(name)(handler)
