"""Checks: when a document is checked, on which thread, and what happens to the result.

Every engine call runs on one worker thread (the engine's parse cache is not shared between
threads, and one thread keeps the event loop free to read the next edit). Per document:

- an edit (re)starts the document's debounce timer; when it fires, a check of the text as it
  is *then* is queued on the worker thread;
- at most one check per document runs at a time; edits that arrive meanwhile mark the
  document dirty and one more check runs on the newest text when the running one ends, so a
  storm of edits costs a handful of checks, not one per keystroke;
- a result is stored and published only if the document still has the version it was
  computed for; an older result is dropped, never published;
- a result remembers the other files its check read (a model class imported from another
  module, see `onnxlint.project`); when one of them changes in the editor, or is opened or
  closed, the documents that read it are checked again. The engine reads open documents'
  unsaved text, other files from disk.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from pygls.workspace import TextDocument

from onnxlint.core.codes import INTERNAL_ERROR_CODE
from onnxlint.core.config import Config
from onnxlint.core.violation import Severity, Span, Violation
from onnxlint.server import documents
from onnxlint.server.diagnostics import Diagnostics, cell_result
from onnxlint.server.session import (
    PARSE_CACHE_SLACK,
    PARSE_CACHE_SLACK_CHARS,
    DocState,
    Result,
    Session,
    UnknownDocument,
    log,
)

if TYPE_CHECKING:
    from onnxlint.source.blocks import ParseCache

# Edits closer together than this are a burst: checked once the burst pauses this long.
BURST_MS = 30
# Seconds without a check after which freed memory is returned to the system.
IDLE_TRIM_S = 1.0


class Checks(Diagnostics):
    """The session and its diagnostics, and the checks that feed them."""

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

    def source_of(self, uri: str) -> TextDocument | documents.Snapshot | None:
        """What a check of `uri` reads: an open text document, or an open notebook as
        nbformat JSON (see onnxlint.server.notebooks); None when it is not open."""
        doc = self.workspace.text_documents.get(uri)
        if doc is None and documents.is_notebook(self, uri):
            return documents.snapshot(self, uri)
        return doc if isinstance(doc, TextDocument) else None

    def trigger(self, uri: str) -> None:
        """Check `uri` now, or once more after the running check if one runs."""
        notebook = documents.notebook_of(self, uri)
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

    def _is_current(self, res: Result | None, doc: TextDocument | documents.Snapshot) -> bool:
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
            outdated = st.deps_changed
            if outdated:  # a module it read changed while it ran: check again
                st.deps_changed = False
                st.result.stale = True
                st.dirty = True
            quiet, st.quiet = st.quiet, False
            # An outdated result is not published: it may show the module as it was
            # before the change, after the editor showed the change (the check again
            # publishes next).
            unchanged = outdated or (
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
                elif isinstance(doc, documents.Snapshot):
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
        notebook = documents.notebook_of(self, uri)
        if notebook is not None:
            return cell_result(self, uri, notebook, await self.current(notebook))
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


def _malloc_trim() -> None:
    """Collect cyclic garbage (evicted parse trees, and the start-up's, frozen until the
    first trim: see `serve`), then return free memory to the system."""
    global _LIBC
    gc.unfreeze()
    gc.collect()
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL("libc.so.6") if sys.platform.startswith("linux") else False
        except OSError:
            _LIBC = False
    if _LIBC:
        _LIBC.malloc_trim(0)


_LIBC: Any = None


def check_cell_text(ls: Session, cell_uri: str, text: str) -> list[Violation]:
    """On the engine thread: the findings of cell `cell_uri` if its text were `text`."""
    nb_uri = documents.notebook_of(ls, cell_uri)
    index = documents.cell_index(ls, cell_uri)
    if nb_uri is None or index is None:
        return []
    snap = documents.snapshot(ls, nb_uri, (cell_uri, text))
    if snap is None:
        return []
    config, _, _ = ls.config_for(nb_uri)
    found = ls.engine.check(ls.path_of(nb_uri), snap.source, config)
    return documents.cell_violations(found, index, documents.first_code(ls, nb_uri))
