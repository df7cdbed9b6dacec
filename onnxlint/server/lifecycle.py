"""initialize / initialized / configuration / workspace folders / shutdown."""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types

from onnxlint.server import commands, text_sync
from onnxlint.server.app import OnnxlintServer
from onnxlint.server.protocol import ClientSupport
from onnxlint.server.settings import parse_initialization_options

log = logging.getLogger("onnxlint.server")


def initialize(ls: OnnxlintServer, params: types.InitializeParams) -> None:
    init, errors = parse_initialization_options(params.initialization_options)
    ls.apply_init_options(init)
    ls.pending_errors = errors
    ls.supports = ClientSupport.of(params.capabilities)
    if ls.supports.pull_diagnostics:
        text_sync.enable_pull(ls)
    commands.register_commands(ls, init.client_commands)
    info = params.client_info
    log.info(
        "initialize: client %s %s, pull diagnostics %s, trusted %s, encoding %s",
        info.name if info else "?",
        info.version if info else "",
        ls.pull_diagnostics,
        init.trusted,
        ls.workspace.position_encoding,
    )


async def initialized(ls: OnnxlintServer, params: types.InitializedParams) -> None:
    ls.get_loop()
    errors = list(ls.pending_errors)
    before = (ls.global_settings, dict(ls.folder_settings))
    if ls.supports.configuration:
        errors += await pull_configuration(ls)
    ls.report_settings_errors(errors)
    # Only when a document opened meanwhile (VS Code sends didOpen with `initialized`)
    # now has other settings than it was checked with: the same ones answered per folder
    # are no change, and a needless check again would send workspace/diagnostic/refresh,
    # which makes VS Code cancel its first pull and ask again (the first squiggles came
    # a round trip and a check later).
    if any(ls.settings_for(uri, before) != ls.settings_for(uri) for uri in ls.docs):
        ls.recheck_all()
    text_sync.watch_files(ls)


async def did_change_configuration(
    ls: OnnxlintServer, params: types.DidChangeConfigurationParams
) -> None:
    errors: list[str] = []
    pushed = params.settings
    if isinstance(pushed, dict) and isinstance(pushed.get("onnxlint"), dict):
        # Neovim and friends push the new settings: they replace the global ones
        # and apply to every folder that has no settings of its own.
        ls.folder_settings = {k: v for k, v in ls.folder_settings.items() if k in _folder_keys(ls)}
        errors += ls.update_settings([(None, pushed["onnxlint"])])
    if ls.supports.configuration:
        errors += await pull_configuration(ls)
    ls.report_settings_errors(errors)
    ls.recheck_all()


async def did_change_folders(
    ls: OnnxlintServer, params: types.DidChangeWorkspaceFoldersParams
) -> None:
    for f in params.event.removed:
        ls.folder_settings.pop(f.uri, None)
    if ls.supports.configuration:
        ls.report_settings_errors(await pull_configuration(ls))
    ls.recheck_all()


def shutdown(ls: OnnxlintServer, params: Any) -> None:
    for st in ls.docs.values():
        if st.timer is not None:
            st.timer.cancel()
    ls.cancel_idle_trim()
    if ls.deep is not None:
        ls.deep.shutdown()
    ls.checker.shutdown(wait=False, cancel_futures=True)


def register(server: OnnxlintServer) -> None:
    server.feature(types.INITIALIZE)(initialize)
    server.feature(types.INITIALIZED)(initialized)
    server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(did_change_configuration)
    server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(did_change_folders)
    server.feature(types.SHUTDOWN)(shutdown)


def _folder_keys(ls: OnnxlintServer) -> set[str]:
    from onnxlint.server.session import _norm_uri

    return {_norm_uri(f.uri) for f in ls.workspace.folders.values()}


async def pull_configuration(ls: OnnxlintServer) -> list[str]:
    """Ask the client for section `onnxlint`, globally and per workspace folder."""
    folders = list(ls.workspace.folders.values())
    items = [types.ConfigurationItem(section="onnxlint")]
    items += [types.ConfigurationItem(scope_uri=f.uri, section="onnxlint") for f in folders]
    try:
        values = await ls.workspace_configuration_async(types.ConfigurationParams(items=items))
    except Exception as exc:
        log.warning("workspace/configuration failed: %s", exc)
        return []
    log.debug("workspace/configuration: %r", values)
    if not isinstance(values, (list, tuple)) or len(values) != len(items):
        return []
    scopes: list[str | None] = [None, *(f.uri for f in folders)]
    pairs = [(scope, v) for scope, v in zip(scopes, values, strict=True) if isinstance(v, dict)]
    # A folder answer identical to the global one is not folder-specific.
    return ls.update_settings(pairs)
