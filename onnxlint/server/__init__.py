"""The language server (pygls 2). Imports engine, deep and below; only it imports features.

The server converts engine results to LSP types and never re-implements analysis. Modules,
bottom up (each imports only those before it): `settings`, `convert`, `protocol` (command
and notification names), `progress`, `documents` (the notebook document model), `session`
(state, settings, configuration), `diagnostics` (publishing), `checks` (when and where a
check runs), `targets` (which target an analysis runs), `deep_service` (the deep analysis on
request), `app` (`OnnxlintServer`); then the features, one module per handler family:
`lifecycle`, `text_sync`, `notebooks`, `code_actions`, `hover`, `code_lens`, `commands`.
Only this module imports the features.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import os
import sys
import threading
import traceback
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onnxlint.server.app import OnnxlintServer

LOG_LEVELS = ("error", "warning", "info", "debug")


def create_server() -> OnnxlintServer:
    """A server with every feature registered (the deep service included)."""
    from onnxlint.server import code_actions, code_lens, hover, lifecycle, notebooks, text_sync
    from onnxlint.server.app import OnnxlintServer
    from onnxlint.server.deep_service import DeepService

    server = OnnxlintServer()
    server.deep = DeepService(server)
    lifecycle.register(server)
    text_sync.register(server)
    notebooks.register(server)
    code_actions.register(server)
    hover.register(server)
    code_lens.register(server)
    return server


class ClientLogHandler(logging.Handler):
    """Forwards onnxlint's log records to the client as `window/logMessage`.

    Records may come from any thread; they are sent from the event loop. Only the
    `onnxlint` loggers are attached (pygls logs every message it sends: no loops).
    """

    def __init__(self, server: OnnxlintServer, level: int) -> None:
        super().__init__(level)
        self.server = server
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        loop = self.server.loop
        if loop is None or loop.is_closed():
            return
        from lsprotocol import types

        if record.levelno >= logging.ERROR:
            kind = types.MessageType.Error
        elif record.levelno >= logging.WARNING:
            kind = types.MessageType.Warning
        else:
            kind = types.MessageType.Log
        params = types.LogMessageParams(type=kind, message=self.format(record))
        with contextlib.suppress(RuntimeError):  # the loop is closing
            loop.call_soon_threadsafe(self._send, params)

    def _send(self, params: object) -> None:
        with contextlib.suppress(Exception):  # logging must never break the server
            self.server.window_log_message(params)  # type: ignore[arg-type]


def _quiet_routine(record: logging.LogRecord) -> bool:
    """Demote pygls's warning about a cancel for an unknown (already answered) request."""
    if record.getMessage().startswith("Cancel notification for unknown message id"):
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
    return True


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="onnxlint server",
        description="Run the onnxlint language server (LSP over stdio).",
    )
    p.add_argument(
        "--stdio", action="store_true", help="use stdio (the default and only transport)"
    )
    p.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="warning",
        help="what the server logs to stderr (default: warning)",
    )
    p.add_argument("--log-file", help="also append the log to this file")
    return p


def _load_engine(server: OnnxlintServer) -> None:
    """On the loader thread: make the server's engine (what needs it meanwhile waits for
    it). An engine that cannot be imported ends the server as a failed start did. Then the
    garbage collector, off since `serve` began, runs again (see `serve`)."""
    from onnxlint.core.codecache import generated_code_cache

    try:
        with generated_code_cache():
            server.engine  # noqa: B018 (the property loads it, under the server's engine lock)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    finally:
        gc.freeze()
        gc.enable()


def serve(argv: list[str] | None = None) -> int:
    """Run the server on stdio until the client says exit; returns the exit code."""
    args = _parser().parse_args(list(argv or []))
    level = getattr(logging, args.log_level.upper())
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if args.log_file:
        handlers.append(logging.FileHandler(args.log_file, encoding="utf-8"))
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=handlers,
        force=True,
    )
    # pygls logs every message at INFO; keep it quiet unless asked for debug output.
    logging.getLogger("pygls").setLevel(level if level <= logging.DEBUG else logging.WARNING)
    # A cancel for a request already answered is routine (editors cancel hovers and code
    # lenses as the cursor moves); pygls warns about each one.
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_quiet_routine)
    # stdout belongs to the protocol: anything printed by accident goes to stderr instead.
    stdout = sys.stdout.buffer
    sys.stdout = sys.stderr
    from onnxlint.core.codecache import generated_code_cache

    # The start-up's imports (lsprotocol's ~550 classes, pygls, libcst, the rules) make
    # hundreds of thousands of objects and next to no garbage, yet the collector walked them
    # ~270 times on the way (~15% of the time to the engine loaded). It is off until the
    # engine has loaded, and what the imports made is then frozen (never walked again, which
    # also makes later collections cheaper); the first idle trim unfreezes and collects it
    # once (checks.py), off the way to the first diagnostics.
    gc.disable()
    with generated_code_cache():  # pygls, lsprotocol, libcst: half their import is codegen
        server = create_server()
    # The engine (libcst, the rules, the project model: ~40% of the start) loads on its own
    # thread while the server answers `initialize` and the client sends the first document:
    # the client's side of that handshake no longer waits behind the imports.
    threading.Thread(target=_load_engine, args=(server,), name="onnxlint-load", daemon=True).start()
    logging.getLogger("onnxlint").addHandler(ClientLogHandler(server, max(level, logging.INFO)))
    # onnxlint's own records reach the client as window/logMessage: not twice on stderr.
    handlers[0].addFilter(lambda r: not r.name.startswith("onnxlint"))
    try:
        server.start_io(sys.stdin.buffer, stdout)
    finally:
        if server.deep is not None:
            server.deep.shutdown()
    return 0 if server.protocol._shutdown else 1


__all__ = ["create_server", "serve"]
