"""The language server object: documents' state, settings, configuration and the check pipeline.

Every engine call runs on one worker thread (the engine's parse cache is not shared between
threads, and one thread keeps the event loop free to read the next edit). Per document:

- an edit (re)starts the document's debounce timer; when it fires, a check of the text as it
  is *then* is queued on the worker thread;
- at most one check per document runs at a time; edits that arrive meanwhile mark the
  document dirty and one more check runs on the newest text when the running one ends, so a
  storm of edits costs a handful of checks, not one per keystroke;
- a result is stored and published only if the document still has the version it was
  computed for; an older result is dropped, never published;
- static findings and deep findings are two buckets, published together (publishDiagnostics
  replaces everything for a URI); the deep bucket of a file is cleared when it changes;
- a result remembers the other files its check read (a model class imported from another
  module, see `onnxlint.project`); when one of them changes in the editor, or is opened or
  closed, the documents that read it are checked again. The engine reads open documents'
  unsaved text, other files from disk.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import gc
import logging
import os
import sys
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
from onnxlint.core.suppression import apply_suppressions
from onnxlint.core.violation import Severity, Span, Violation
from onnxlint.server import notebooks
from onnxlint.server.convert import Lines, diagnostic, sort_key
from onnxlint.server.protocol import OnnxlintProtocol
from onnxlint.server.settings import InitOptions, Settings, parse_settings

if TYPE_CHECKING:
    from onnxlint.engine import Engine
    from onnxlint.source.blocks import ParseCache

log = logging.getLogger("onnxlint.server")

INTERNAL_ERROR_CODE = "OLX001"  # = onnxlint.engine.INTERNAL_ERROR_CODE

T = TypeVar("T")

# How long a project configuration read from pyproject.toml is trusted before re-reading.
CONFIG_TTL_S = 2.0
# Parsed blocks kept by the engine beyond those of the open documents (recent edits, undo),
# bounded in entries and in characters: while a bracket is open, a block runs to the end of
# the file, and 64 such versions kept +15 MB after 10,000 keystrokes (bench_server.py).
PARSE_CACHE_SLACK = 64
PARSE_CACHE_SLACK_CHARS = 16_384
# Edits closer together than this are a burst: checked once the burst pauses this long.
BURST_MS = 30
# Seconds without a check after which freed memory is returned to the system.
IDLE_TRIM_S = 1.0


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


class OnnxlintServer(LanguageServer):
    """pygls server holding onnxlint's state (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(
            "onnxlint",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=notebooks.NOTEBOOK_SYNC,
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
        self.deep: Any = None  # onnxlint.server.deep.DeepService, set by create_server
        self.check_count = 0
        self.generation = 0  # bumped by every settings/configuration change
        self.pending_errors: list[str] = []
        self.code_action_caps: Any = None

    # ------------------------------------------------------------------ engine

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
            text = notebooks.module_text(self, path)  # an open notebook: its cells' text
            if text is not None:
                return text
        for doc in list(self.workspace.text_documents.values()):
            # (a notebook cell's document has the notebook's path: never a module's text)
            if doc.path == path and doc.uri.startswith("file:"):
                return str(doc.source)
        return read_disk(path)

    # ------------------------------------------------------------------ helpers

    def get_loop(self) -> asyncio.AbstractEventLoop:
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        return self.loop

    def document(self, uri: str) -> TextDocument:
        """An open document, or an InvalidParams error for a request about an unknown one."""
        doc = self.workspace.text_documents.get(uri) or notebooks.cell_document(self, uri)
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

    # ------------------------------------------------------------------ settings

    def apply_init_options(self, init: InitOptions) -> None:
        self.init = init
        self.global_settings = init.global_settings
        self.folder_settings = {
            _norm_uri(s.workspace): s for s in init.folder_settings if s.workspace
        }

    def settings_for(self, uri: str) -> Settings:
        """The settings of the workspace folder holding `uri` (longest match), else global."""
        uri = notebooks.notebook_of(self, uri) or uri  # a notebook cell: its notebook's
        best: tuple[int, Settings] | None = None
        key = _norm_uri(uri)
        for folder, s in self.folder_settings.items():
            prefix = folder.rstrip("/") + "/"
            if key.startswith(prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), s)
        return best[1] if best else self.global_settings

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

    # ------------------------------------------------------------------ configuration

    def path_of(self, uri: str) -> str:
        path = to_fs_path(uri)
        return path if path else uri

    def module_of(self, uri: str, text: str) -> tuple[str, str]:
        """The file path and text the project model knows `uri` by: for a notebook cell,
        its notebook's path and cells as one module; else the document's own."""
        notebook = notebooks.notebook_of(self, uri)
        if notebook is not None:
            path = self.path_of(notebook)
            module = notebooks.module_text(self, path)
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
        uri = notebooks.notebook_of(self, uri) or uri  # a notebook cell: its notebook's
        settings = self.settings_for(uri)
        cfg, err = self.project_config(uri)
        if settings.select:
            cfg = cfg.with_overrides(select=settings.select, extend_select=())
        if settings.ignore:
            cfg = cfg.with_overrides(ignore=(*cfg.ignore, *settings.ignore))
        return cfg, settings, err

    def invalidate_config(self) -> None:
        self._config_cache.clear()

    # ------------------------------------------------------------------ checking

    def state(self, uri: str) -> DocState:
        st = self.docs.get(uri)
        if st is None:
            st = self.docs[uri] = DocState(uri)
        return st

    def _tune_cache(self, uri: str, block_texts: list[str]) -> None:
        """On the engine thread: pin the blocks of every open document's last check in the
        parse cache, and keep only a little slack (versions typed over, for undo) besides.

        An unbounded cache grows with every keystroke; one bounded by count alone evicted
        the blocks of the other open documents while one of them was being edited.
        """
        self._blocks[uri] = block_texts
        cache = self._pin_open_documents()
        cache.max_entries = len(cache.pinned) + PARSE_CACHE_SLACK
        cache.max_chars = sum(map(len, cache.pinned)) + PARSE_CACHE_SLACK_CHARS
        cache.trim()

    def _pin_open_documents(self) -> ParseCache:
        open_uris = set(self.workspace.text_documents) | set(self.workspace.notebook_documents)
        for u in [u for u in self._blocks if u not in open_uris]:
            del self._blocks[u]
        cache = self.engine.parse_cache
        cache.pinned = {t for texts in self._blocks.values() for t in texts}
        return cache

    def schedule(self, uri: str, delay_ms: int | None = None) -> None:
        """(Re)start the debounce timer of `uri`; 0 checks at once."""
        st = self.state(uri)
        busy = st.check_due  # the last edit's check has not ended
        if st.timer is not None:
            st.timer.cancel()
            st.timer = None
        if delay_ms is None:
            delay_ms = self.settings_for(uri).debounce_ms
            now = time.monotonic()
            if delay_ms < BURST_MS and busy and now - st.last_change < BURST_MS / 1000:
                # Edits arriving faster than anyone types (a paste, a macro, a replayed
                # storm) while the last one is still being checked: wait for a pause, or
                # checks would take the GIL from the reader. (An edit after the last
                # check ended is checked at once, however soon it comes.)
                delay_ms = BURST_MS
            st.last_change = now
        if delay_ms <= 0:
            self.trigger(uri)
        else:
            st.timer = self.get_loop().call_later(delay_ms / 1000, self.trigger, uri)

    def source_of(self, uri: str) -> TextDocument | notebooks.Snapshot | None:
        """What a check of `uri` reads: an open text document, or an open notebook as
        nbformat JSON (see onnxlint.server.notebooks); None when it is not open."""
        doc = self.workspace.text_documents.get(uri)
        if doc is None and notebooks.is_notebook(self, uri):
            return notebooks.snapshot(self, uri)
        return doc if isinstance(doc, TextDocument) else None

    def trigger(self, uri: str) -> None:
        """Check `uri` now, or once more after the running check if one runs."""
        notebook = notebooks.notebook_of(self, uri)
        if notebook is not None:  # a cell is checked with its notebook
            uri = notebook
        st = self.docs.get(uri)
        source = self.source_of(uri)
        if st is None or source is None:
            return
        if st.timer is not None:
            st.timer.cancel()
            st.timer = None
        if st.running:
            st.dirty = True
            return
        doc = source
        text, version = doc.source, doc.version
        if self._is_current(st.result, doc):
            self._wake(st)
            self._flush_changed(uri)
            return
        st.running = True
        st.dirty = False
        config, _, config_error = self.config_for(uri)
        path = self.path_of(uri)
        gen = self.generation
        queued = time.perf_counter()

        def work() -> tuple[list[Violation], frozenset[str], int]:
            started = time.perf_counter()
            found, deps = self._check(uri, path, text, config)
            seen = self.engine.project_model.export_files_changes
            log.debug(
                "checked %s v%s: %d findings in %.1f ms (queued %.1f ms)",
                uri,
                version,
                len(found),
                (time.perf_counter() - started) * 1000,
                (started - queued) * 1000,
            )
            return found, deps, seen

        fut = self.run_check(work)
        fut.add_done_callback(lambda f: self._finished(uri, version, text, gen, config_error, f))

    def _is_current(self, res: Result | None, doc: TextDocument | notebooks.Snapshot) -> bool:
        return (
            res is not None
            and res.version == doc.version
            and res.generation == self.generation
            and res.text == doc.source
            and not res.stale
        )

    def _check(
        self, uri: str, path: str, text: str, config: Config
    ) -> tuple[list[Violation], frozenset[str]]:
        """On the engine thread: the engine's findings and the other files it read, or
        OLX001 if the engine itself fails."""
        self.check_count += 1
        if config.is_excluded(path) and os.path.isabs(path):
            return [], frozenset()
        try:
            found = self.engine.check(path, text, config)
            self._tune_cache(uri, self.engine.last_block_texts)
            return found, frozenset(self.engine.last_deps)
        except Exception as exc:
            log.exception("onnxlint failed on %s", path)
            return [
                Violation(
                    path,
                    Span(1, 1, 1, 1),
                    INTERNAL_ERROR_CODE,
                    f"onnxlint failed on this file ({type(exc).__name__}: {exc}); "
                    "see the server log, and please report it",
                    Severity.ERROR,
                )
            ], frozenset()

    def _finished(
        self,
        uri: str,
        version: int | None,
        text: str,
        gen: int,
        config_error: str | None,
        fut: asyncio.Future[tuple[list[Violation], frozenset[str], int]],
    ) -> None:
        st = self.docs.get(uri)
        if st is None:
            return  # closed meanwhile
        st.running = False
        try:
            violations, deps, seen = fut.result()
        except Exception:
            log.exception("check of %s failed", uri)
            violations, deps, seen = [], frozenset(), 0
        doc = self.source_of(uri)
        if doc is None:
            return
        fresh = doc.version == version and doc.source == text and gen == self.generation
        if fresh:
            previous = st.result
            st.result = Result(
                version, text, violations, config_error, gen, deps, export_files=seen
            )
            if st.deps_changed:  # a module it read changed while it ran: check again
                st.deps_changed = False
                st.result.stale = True
                st.dirty = True
            quiet, st.quiet = st.quiet, False
            unchanged = (
                quiet
                and not st.must_publish
                and previous is not None
                and previous.version == version
                and previous.violations == violations
            )
            if not unchanged:  # (after the project model was built: publish only changes)
                st.must_publish = False
                st.fix_cache.clear()
                st.revision += 1
                if config_error:
                    self.show_error_once(f"onnxlint: {config_error}")
                if not self.pull_diagnostics:
                    self.publish(uri)
                elif previous is not None and previous.stale and previous.version == version:
                    self.refresh()  # not edited: a pull client would not ask again by itself
                elif isinstance(doc, notebooks.Snapshot):
                    self.refresh()  # an edit in one cell can change another's findings
            self._wake(st)
        else:
            log.debug(
                "dropped a stale result for %s (version %s, now %s)", uri, version, doc.version
            )
        self._flush_changed(uri)  # (before the next check of it is queued)
        if st.dirty or not fresh:
            st.dirty = False
            # The newest text is not checked yet; a pending debounce timer will ask for it.
            if st.timer is None:
                self.trigger(uri)
        self._after_model_change()
        if self.engine.project_model.pending is not None:
            self._build_project_model()
        self._schedule_trim()

    def _after_model_change(self) -> None:
        """When a file started or stopped exporting (an edit, a new notebook cell, a new
        script), check again the open documents checked before that: their checks did not
        read the file (it exported nothing then), so `dependency_changed` cannot find them."""
        count = self.engine.project_model.export_files_changes
        for other, st in list(self.docs.items()):
            if st.result is not None and st.result.export_files != count:
                self._recheck_later(other, st)

    def _recheck_later(self, uri: str, st: DocState) -> None:
        """Something the last check of `uri` relied on changed: check it again (after the
        check in flight, when one runs)."""
        if st.running:
            st.deps_changed = True
        elif st.result is not None and not st.result.stale:
            st.result.stale = True
            self.schedule(uri)

    def _build_project_model(self) -> None:
        """After a check that used only its own file's exports: build the project model
        on the engine thread, then check the open documents again with it."""
        model = self.engine.project_model
        if self._building or model.pending is None:
            return
        self._building = True
        root = model.pending.root

        def done(fut: asyncio.Future[bool]) -> None:
            self._building = False
            try:
                built = fut.result()
            except Exception:
                log.exception("building the project model failed")
                return
            if built:
                # Only the documents of the project built: the model holds one project at
                # a time, and checking those of another project again would ask for that
                # one's model, whose build would check these again, and so on, forever
                # (two projects' files open at once: a refresh storm).
                for other, st in list(self.docs.items()):
                    if self.config_for(other)[0].root != root:
                        continue
                    if st.result is not None and not st.result.stale:
                        st.result.stale = True
                        st.quiet = True
                        self.schedule(other, 0)

        self.run_check(model.build_pending).add_done_callback(done)

    def _schedule_trim(self) -> None:
        """Once checks have been quiet for a while, give freed memory back to the system.

        Parse trees dropped from the parse cache can sit in reference cycles until a full
        collection, and glibc keeps freed memory in its arenas, so after a burst of edits
        RSS stays high although the memory is free (measured on modeling_bert.py: +35 MB
        over 2,000 keystrokes without this).
        """
        self.cancel_idle_trim()
        # From the main thread: a trim from the engine thread releases far less (measured).
        self._trim_timer = self.get_loop().call_later(IDLE_TRIM_S, self._on_idle)

    def cancel_idle_trim(self) -> None:
        if self._trim_timer is not None:
            self._trim_timer.cancel()
            self._trim_timer = None

    def _on_idle(self) -> None:
        """Drop the parse trees of texts typed over (the cache's slack), then trim."""
        try:
            fut = self.run_check(self._drop_slack)
        except RuntimeError:  # shutting down: the engine thread takes no more work
            return
        fut.add_done_callback(lambda _f: _malloc_trim())

    def _drop_slack(self) -> None:
        """On the engine thread: keep only the blocks of the open documents."""
        if self._engine is not None:
            self._pin_open_documents().trim(0, 0)

    def _wake(self, st: DocState) -> None:
        waiters, st.waiters = st.waiters, []
        keep = []
        for w in waiters:
            if w.done():
                continue
            doc = self.source_of(st.uri)
            if st.result is not None and doc is not None and self._is_current(st.result, doc):
                w.set_result(st.result)
            else:
                keep.append(w)
        st.waiters.extend(keep)

    async def current(self, uri: str) -> Result:
        """The static result for the document's current version (checking now if needed);
        for a notebook cell, its part of its notebook's result."""
        notebook = notebooks.notebook_of(self, uri)
        if notebook is not None:
            return notebooks.cell_result(self, uri, notebook, await self.current(notebook))
        doc = self.source_of(uri)
        if doc is None:
            raise UnknownDocument(f"unknown document (not open): {uri}")
        st = self.state(uri)
        if st.result is not None and self._is_current(st.result, doc):
            return st.result
        fut: asyncio.Future[Result] = self.get_loop().create_future()
        st.waiters.append(fut)
        self.trigger(uri)
        return await fut

    # ------------------------------------------------------------------ publishing

    def merged(self, uri: str) -> tuple[int | None, list[types.Diagnostic]]:
        """Static and deep findings of `uri` as LSP diagnostics, for the stored version."""
        notebook = notebooks.notebook_of(self, uri)
        if notebook is not None:  # a cell: its findings in its notebook's stored result
            nb = self.docs.get(notebook)
            if nb is None or nb.result is None:
                return None, []
            res = notebooks.cell_result(self, uri, notebook, nb.result)
            lines = self.lines(res.text)
            settings = self.settings_for(uri)
            out = [diagnostic(v, lines, settings.severity_for(v.code)) for v in res.violations]
            return res.version, sorted(out, key=sort_key)
        st = self.docs.get(uri)
        if st is None or st.result is None:
            return None, []
        res = st.result
        settings = self.settings_for(uri)
        lines = self.lines(res.text)
        violations = self.violations(uri)
        out = [diagnostic(v, lines, settings.severity_for(v.code)) for v in violations]
        out.sort(key=sort_key)
        return res.version, out

    def violations(self, uri: str) -> list[Violation]:
        notebook = notebooks.notebook_of(self, uri)
        if notebook is not None:
            nb = self.docs.get(notebook)
            if nb is None or nb.result is None:
                return []
            return notebooks.cell_result(self, uri, notebook, nb.result).violations
        st = self.docs.get(uri)
        if st is None or st.result is None:
            return []
        out = list(st.result.violations)
        if st.deep and st.deep_version == st.result.version:
            from onnxlint.server.deep import merge_confirmed  # one cause, one diagnostic

            deep = [v for vs in st.deep.values() for v in vs]
            out = merge_confirmed(out, apply_suppressions(st.result.text, deep))
        return out

    def publish(self, uri: str) -> None:
        st = self.docs.get(uri)
        if st is None or st.result is None:
            return
        if notebooks.is_notebook(self, uri):
            st.published = (st.result.version, st.revision)
            notebooks.publish_cells(self, uri, st.result, self.settings_for(uri).enable)
            return
        diags: list[types.Diagnostic]
        if not self.settings_for(uri).enable:
            version, diags = st.result.version, []
        else:
            version, diags = self.merged(uri)
        st.published = (version, st.revision)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=version)
        )

    def clear(self, uri: str) -> None:
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    def refresh(self, uri: str | None = None) -> None:
        """Tell the client that diagnostics changed outside an edit (settings, deep results)."""
        if self.pull_diagnostics:
            caps = self.client_capabilities.workspace
            if caps and caps.diagnostics and caps.diagnostics.refresh_support:
                self.workspace_diagnostic_refresh(None)
            return
        for u in [uri] if uri else list(self.docs):
            if self.docs.get(u) and self.docs[u].result is not None:
                self.publish(u)

    def dependency_changed(self, uri: str) -> None:
        """`uri`'s text changed in the editor or on disk, or it was opened or closed: tell
        the project model (on the engine thread, before any re-check queued after it) and
        check again the open documents whose last check read it.

        While `uri`'s own check is due or runs (an edit), the telling waits until the
        check has ended and published, and is done then with the documents' marking again:
        queued behind the check on the engine thread, telling the project model took the
        GIL from the event loop as it published and delayed the next keystroke's check
        (~5 ms per edit of a 4,000-line file); and in a storm of keystrokes each one was
        told (indexed) on its own, ~10 ms apiece, while the event loop waited for the GIL
        to read the next. The documents that read it are marked at once all the same, so
        that a pull answers none of them from before the change."""
        own = self.docs.get(uri)
        if own is not None:
            own.tell_after_check = own.check_due
        path = self.path_of(uri)
        if own is None or not own.tell_after_check:

            def tell() -> None:  # (the engine may still be loading: not on the event loop)
                doc = self.workspace.text_documents.get(uri)  # (the text as it is now)
                engine = self.engine
                engine.project_model.changed(
                    path, doc.source if doc is not None else engine.project.read(path)
                )

            self.run_check(tell).add_done_callback(lambda _: self._after_model_change())
        for other, st in list(self.docs.items()):
            # (a check in flight may read it, whatever the last one read)
            if other != uri and (st.running or (st.result and path in st.result.deps)):
                self._recheck_later(other, st)

    def _flush_changed(self, uri: str) -> None:
        """`dependency_changed(uri)` if it waited for the check of `uri` (see there)."""
        st = self.docs.get(uri)
        if st is not None and st.tell_after_check:
            self.dependency_changed(uri)

    def recheck_all(self) -> None:
        """After a settings or configuration change: check every open document again."""
        self.invalidate_config()
        self.generation += 1
        for uri, st in list(self.docs.items()):
            st.revision += 1
            st.must_publish = True  # asked for: publish even when nothing changed
            if self.source_of(uri) is not None:
                self.trigger(uri)
        if self.pull_diagnostics:
            self.refresh()

    def set_deep(
        self, uri: str, version: int | None, target: str, violations: list[Violation]
    ) -> None:
        """Store one target's deep findings for `uri` (for the version they were computed on)."""
        st = self.docs.get(uri)
        if st is None:
            return
        if st.deep_version != version:
            st.deep = {}
        st.deep[target] = violations
        st.deep_version = version
        st.revision += 1
        st.fix_cache.clear()
        self.refresh(uri)

    # ------------------------------------------------------------------ errors

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


def _malloc_trim() -> None:
    """Collect cyclic garbage (evicted parse trees), then return free memory to the system."""
    global _LIBC
    gc.collect()
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL("libc.so.6") if sys.platform.startswith("linux") else False
        except OSError:
            _LIBC = False
    if _LIBC:
        _LIBC.malloc_trim(0)


_LIBC: Any = None


def _norm_uri(uri: str | None) -> str:
    if not uri:
        return ""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    if path:
        return "file://" + Path(os.path.normcase(os.path.abspath(path))).as_posix()
    return uri
