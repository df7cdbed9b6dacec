"""The server's state: open documents, their check results, settings, configuration.

`Session` is the bottom of the server: the engine handle (one engine, one thread for every
check), the documents' state (`DocState`, `Result`), settings per workspace folder and the
project configuration that applies to a file. It imports no feature and no service:
`Diagnostics` (diagnostics.py) publishes on top of it, `Checks` (checks.py) schedules the
checks, and `OnnxlintServer` (app.py) adds the deep-analysis service; the features
(lifecycle, text_sync, notebooks, code_actions, hover, code_lens, commands) register on that.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from onnxlint import __version__
from onnxlint.core.config import Config, ConfigError, load_config
from onnxlint.core.violation import Violation
from onnxlint.server import documents
from onnxlint.server.convert import Lines
from onnxlint.server.protocol import ClientSupport, OnnxlintProtocol
from onnxlint.server.settings import InitOptions, Settings, parse_settings

if TYPE_CHECKING:
    from onnxlint.engine import Engine

log = logging.getLogger("onnxlint.server")

T = TypeVar("T")

# How long a project configuration read from pyproject.toml is trusted before re-reading.
CONFIG_TTL_S = 2.0
# Parsed blocks kept by the engine beyond those of the open documents (recent edits, undo),
# bounded in entries and in characters: while a bracket is open, a block runs to the end of
# the file, and 64 such versions kept +15 MB after 10,000 keystrokes (bench_server.py).
PARSE_CACHE_SLACK = 64
PARSE_CACHE_SLACK_CHARS = 16_384


class UnknownDocument(JsonRpcInvalidParams):
    """A request named a document that was never opened (or is closed)."""


@dataclass
class Result:
    """The static findings for one version of a document's text."""

    version: int | None
    text: str
    violations: list[Violation]
    config_error: str | None = None
    generation: int = 0  # the server's settings generation it was computed under
    deps: frozenset[str] = frozenset()  # other files the check read or looked for
    stale: bool = False  # one of `deps` changed since
    # The project model's export_files_changes when it ran (see _after_model_change).
    export_files: int = 0


@dataclass
class DocState:
    uri: str
    result: Result | None = None
    # target name -> its deep findings in this file, for the version they were computed on
    deep: dict[str, list[Violation]] = field(default_factory=dict)
    deep_version: int | None = None
    timer: asyncio.TimerHandle | None = None
    running: bool = False
    dirty: bool = False
    deps_changed: bool = False  # a file it read changed while its check was running
    tell_after_check: bool = False  # edited while its check was due: see dependency_changed
    quiet: bool = False  # a re-check after the project model was built: publish only changes
    must_publish: bool = False  # a re-check someone asked for (restart, settings): always publish
    revision: int = 0  # bumped whenever what would be published changes (pull result ids)
    published: tuple[int | None, int] | None = None  # (version, revision) last pushed
    waiters: list[asyncio.Future[Result]] = field(default_factory=list)
    fix_cache: dict[Any, Any] = field(default_factory=dict)  # per result version
    last_change: float = 0.0  # time.monotonic() of the last didChange
    # A notebook: what was last pushed per cell URI (version, diagnostics), to push only changes.
    cells_published: dict[str, Any] = field(default_factory=dict)

    @property
    def check_due(self) -> bool:
        """A check of it runs or waits for its debounce timer."""
        return self.running or self.timer is not None


class Session(LanguageServer):
    """pygls server holding onnxlint's state (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(
            # the launcher of the VS Code extension's bundle says when its copy runs
            "onnxlint (bundled)" if os.environ.get("ONNXLINT_BUNDLED") else "onnxlint",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=documents.NOTEBOOK_SYNC,
            protocol_cls=OnnxlintProtocol,
            max_workers=4,
        )
        self._engine: Engine | None = None
        self._engine_lock = threading.Lock()
        self._blocks: dict[str, list[str]] = {}  # uri -> the block texts of its last check
        self._trim_timer: asyncio.TimerHandle | None = None
        self._building = False  # the project model is being built on the engine thread
        self.checker = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="onnxlint-check"
        )
        self.docs: dict[str, DocState] = {}
        self.init = InitOptions()
        self.global_settings = Settings()
        self.folder_settings: dict[str, Settings] = {}  # folder URI -> settings
        self.pull_diagnostics = False
        self.shown_errors: set[str] = set()
        self._config_cache: dict[str, tuple[float, Config, str | None]] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.check_count = 0
        self.generation = 0  # bumped by every settings/configuration change
        self.pending_errors: list[str] = []
        self.supports = ClientSupport()  # set from the client's capabilities at initialize

    @property
    def engine(self) -> Engine:
        """The one Engine of this server (its parse cache makes re-checks incremental)."""
        if self._engine is None:
            with self._engine_lock:
                if self._engine is None:
                    self.load_engine()
        assert self._engine is not None
        return self._engine

    def load_engine(self) -> None:
        """Import libcst and every rule, and make the Engine. `serve` does this at start
        on a loader thread, under the generated-code cache (see `onnxlint.core.codecache`),
        while the event loop answers `initialize`; callers go through `engine`."""
        from onnxlint.engine import Engine
        from onnxlint.rules import all_rules

        all_rules()
        self._engine = Engine(cache_entries=PARSE_CACHE_SLACK, read=self._read_source)
        # The project model is built after the first diagnostics, never inside them.
        self._engine.project_model.deferred = True

    def _read_source(self, path: str) -> str | None:
        """On the engine thread: another module's text for the project index, the open
        document's (unsaved) text when the editor has it open, else the file's."""
        from onnxlint.project import read_disk

        if path.endswith(".ipynb"):
            text = documents.module_text(self, path)  # an open notebook: its cells' text
            if text is not None:
                return text
        for doc in list(self.workspace.text_documents.values()):
            # (a notebook cell's document has the notebook's path: never a module's text)
            if doc.path == path and doc.uri.startswith("file:"):
                return str(doc.source)
        return read_disk(path)

    def get_loop(self) -> asyncio.AbstractEventLoop:
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        return self.loop

    def document(self, uri: str) -> TextDocument:
        """An open document, or an InvalidParams error for a request about an unknown one."""
        doc = self.workspace.text_documents.get(uri) or documents.cell_document(self, uri)
        if doc is None:
            raise UnknownDocument(f"unknown document (not open): {uri}")
        assert isinstance(doc, TextDocument)
        return doc

    def position_encoding(self) -> str:
        enc = self.workspace.position_encoding
        return str(getattr(enc, "value", enc)) if enc else types.PositionEncodingKind.Utf16.value

    def lines(self, text: str) -> Lines:
        return Lines(text, self.position_encoding())

    def run_check(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        """Run `fn` on the engine's thread; awaitable from the event loop."""
        return self.get_loop().run_in_executor(self.checker, fn)

    def show_error_once(
        self, message: str, kind: types.MessageType = types.MessageType.Error
    ) -> None:
        if message in self.shown_errors:
            return
        self.shown_errors.add(message)
        log.warning("%s", message)
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def apply_init_options(self, init: InitOptions) -> None:
        self.init = init
        self.global_settings = init.global_settings
        self.folder_settings = {
            _norm_uri(s.workspace): s for s in init.folder_settings if s.workspace
        }

    def settings_for(
        self, uri: str, settings: tuple[Settings, dict[str, Settings]] | None = None
    ) -> Settings:
        """The settings of the workspace folder holding `uri` (longest match), else global;
        from `settings` (global, per folder) when given, else the current ones."""
        global_settings, folder_settings = settings or (self.global_settings, self.folder_settings)
        uri = documents.notebook_of(self, uri) or uri  # a notebook cell: its notebook's
        best: tuple[int, Settings] | None = None
        key = _norm_uri(uri)
        for folder, s in folder_settings.items():
            prefix = folder.rstrip("/") + "/"
            if key.startswith(prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), s)
        return best[1] if best else global_settings

    def update_settings(self, values: list[tuple[str | None, Any]]) -> list[str]:
        """Apply settings objects (scope URI or None for global); returns errors."""
        errors: list[str] = []
        for scope, obj in values:
            if obj is None:
                continue
            s, errs = parse_settings(obj)
            errors.extend(e for e in errs if e not in errors)
            if scope is None:
                self.global_settings = s
            else:
                self.folder_settings[_norm_uri(scope)] = s
        return errors

    def report_settings_errors(self, errors: list[str]) -> None:
        """One window/showMessage for all of a batch's bad settings."""
        new = [e for e in errors if e not in self.shown_errors]
        if not new:
            return
        self.shown_errors.update(new)
        text = "onnxlint: some settings are invalid and use their defaults: " + "; ".join(new)
        log.warning("%s", text)
        self.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=text)
        )

    def path_of(self, uri: str) -> str:
        path = to_fs_path(uri)
        return path if path else uri

    def module_of(self, uri: str, text: str) -> tuple[str, str]:
        """The file path and text the project model knows `uri` by: for a notebook cell,
        its notebook's path and cells as one module; else the document's own."""
        notebook = documents.notebook_of(self, uri)
        if notebook is not None:
            path = self.path_of(notebook)
            module = documents.module_text(self, path)
            if module is not None:
                return path, module
        return self.path_of(uri), text

    def is_file(self, uri: str) -> bool:
        return uri.startswith("file:")

    def _project_dir(self, uri: str) -> Path:
        if self.is_file(uri):
            return Path(self.path_of(uri)).parent
        # untitled buffers: the first workspace folder, else the server's cwd
        for folder in self.workspace.folders.values():
            p = to_fs_path(folder.uri)
            if p:
                return Path(p)
        root = self.workspace.root_path
        return Path(root) if root else Path.cwd()

    def project_config(self, uri: str) -> tuple[Config, str | None]:
        """`[tool.onnxlint]` that applies to `uri` (cached briefly), and its error if bad."""
        folder = self._project_dir(uri)
        key = str(folder)
        now = time.monotonic()
        hit = self._config_cache.get(key)
        if hit is not None and now - hit[0] < CONFIG_TTL_S:
            return hit[1], hit[2]
        try:
            cfg, err = load_config(folder), None
        except ConfigError as exc:
            cfg, err = Config(root=folder), str(exc)
        except OSError as exc:
            cfg, err = Config(root=folder), f"cannot read the configuration: {exc}"
        self._config_cache[key] = (now, cfg, err)
        return cfg, err

    def config_for(self, uri: str) -> tuple[Config, Settings, str | None]:
        uri = documents.notebook_of(self, uri) or uri  # a notebook cell: its notebook's
        settings = self.settings_for(uri)
        cfg, err = self.project_config(uri)
        if settings.select:
            cfg = cfg.with_overrides(select=settings.select, extend_select=())
        if settings.ignore:
            cfg = cfg.with_overrides(ignore=(*cfg.ignore, *settings.ignore))
        return cfg, settings, err

    def invalidate_config(self) -> None:
        self._config_cache.clear()

    def state(self, uri: str) -> DocState:
        st = self.docs.get(uri)
        if st is None:
            st = self.docs[uri] = DocState(uri)
        return st

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log every error; answer unparsable input; show one message per distinct failure."""
        protocol = self.protocol
        if isinstance(protocol, OnnxlintProtocol):
            protocol.answer_parse_error(error)
        if isinstance(error, JsonRpcException) and getattr(source, "__name__", "") in (
            "FeatureRequestError",
            "JsonRpcException",
        ):
            log.warning("request error: %s", error)
            return
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)
        name = getattr(source, "__name__", "")
        if name == "FeatureNotificationError":
            self.show_error_once(f"onnxlint: internal error: {error} (see the server log)")


def _norm_uri(uri: str | None) -> str:
    if not uri:
        return ""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    if path:
        return "file://" + Path(os.path.normcase(os.path.abspath(path))).as_posix()
    return uri
