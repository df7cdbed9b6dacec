"""Work-done progress (`$/progress`) created by the server, for anything over a second.

The deep analysis reports its phases through `Progress`; short requests such as "Fix all"
(the command, and the resolve of the `source.fixAll` code action) use `with_progress`,
which shows a progress item only when the work is still running after `PROGRESS_AFTER_S`,
so quick results do not flash one.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Awaitable
from typing import TYPE_CHECKING, TypeVar

from lsprotocol import types

from onnxlint.server.protocol import ClientSupport

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

log = logging.getLogger("onnxlint.server")

T = TypeVar("T")
PROGRESS_AFTER_S = 1.0


class Progress:
    """One progress item (a no-op when the client does not support work-done progress)."""

    def __init__(self, ls: LanguageServer, token: str | None) -> None:
        self.ls = ls
        self.token = token

    @classmethod
    async def start(
        cls,
        ls: LanguageServer,
        title: str,
        cancel: threading.Event | None = None,
        message: str = "starting",
    ) -> Progress:
        """Create and begin a progress item; with `cancel`, the user may cancel it and
        the event is set when they do."""
        # (the session's ClientSupport; any other LanguageServer gets no progress)
        supports = getattr(ls, "supports", None)
        if not (isinstance(supports, ClientSupport) and supports.work_done_progress):
            return cls(ls, None)
        token = f"onnxlint-{uuid.uuid4()}"
        try:
            await ls.work_done_progress.create_async(token)
        except Exception as exc:
            log.warning("window/workDoneProgress/create failed: %s", exc)
            return cls(ls, None)
        fut = ls.work_done_progress.tokens.get(token)
        if fut is not None and cancel is not None:
            fut.add_done_callback(lambda f: cancel.set() if f.cancelled() else None)
        ls.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(
                title=title, cancellable=cancel is not None, message=message
            ),
        )
        return cls(ls, token)

    def report(self, phase: str, percent: int | None) -> None:
        if self.token is None:
            return
        self.ls.work_done_progress.report(
            self.token,
            types.WorkDoneProgressReport(
                message=phase, percentage=percent if isinstance(percent, int) else None
            ),
        )

    def end(self, message: str) -> None:
        if self.token is None:
            return
        self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.ls.work_done_progress.tokens.pop(self.token, None)
        self.token = None


async def with_progress(
    ls: LanguageServer,
    title: str,
    work: Awaitable[T],
    message: str = "",
    after_s: float | None = None,
) -> T:
    """Await `work`; if it takes longer than `after_s` (default PROGRESS_AFTER_S), show a
    progress item titled `title` until it ends."""
    task = asyncio.ensure_future(work)
    delay = PROGRESS_AFTER_S if after_s is None else after_s
    done, _ = await asyncio.wait({task}, timeout=delay)
    if done:
        return task.result()
    progress = await Progress.start(ls, title, message=message or "working")
    try:
        return await task
    finally:
        progress.end("done")
