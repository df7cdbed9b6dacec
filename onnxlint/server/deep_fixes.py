"""Proven fixes for the deep findings in the editor (issue 29).

After an analysis has filed its findings (they show at once, and the analysis command
returns), the candidate rewrites of those findings are proven in the background
(`onnxlint.deep.fixes`: the worker runs the rewritten code for real) with work-done
progress, and the findings are filed again with the proven fixes on them: the quick fix
then appears on the deep finding's squiggle (code_actions.py offers a finding's fix after
checking that it applies and parses), titled with what was proven.

A fix is kept only for a file whose editor buffer is the text the proof read (the proof
reads the files on disk): an unsaved edit would move the lines the fix replaces. The
proofs run only when fixes are asked for: the `deep.proveFixes` setting (on by default: the
analysis itself is a request the user made, and the proofs start only once its findings are
shown), or the analysis command's `"proveFixes"` (true or false), which overrides it. A new
analysis stops them (the worker is its).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any

from onnxlint.server.progress import Progress

log = logging.getLogger("onnxlint.server")

_PROVEN: weakref.WeakSet[Any] = weakref.WeakSet()
"""The fixes the proofs made (a static finding the deep analysis confirmed carries its deep
finding's fix: code_actions checks it as a deep fix, not by the static finding's re-check)."""


def is_proven(fix: Any) -> bool:
    return fix is not None and fix in _PROVEN


def placed(found: list[Any], moved: list[Any]) -> None:
    """`moved` are `found` placed elsewhere (a notebook's findings in their cells, their
    fixes' edits with them): a proven fix stays proven there."""
    for v, w in zip(found, moved, strict=True):
        if w.fix is not None and w.fix is not v.fix and is_proven(v.fix):
            _PROVEN.add(w.fix)


def wanted(spec: dict[str, Any], result: Any, setting: bool) -> bool:
    """Whether to prove `result`'s fixes: the command's `proveFixes` if it says, else the
    `deep.proveFixes` setting (`setting`); only for an analysis with deep findings."""
    asked = spec.get("proveFixes")
    return (
        (asked if isinstance(asked, bool) else setting)
        and result.status == "ok"
        and any(v.source == "deep" for v in result.violations)
    )


def start(
    service: Any, analyzer: Any, target: Any, result: Any, refile: Callable[[], None]
) -> None:
    """Prove the fixes of `result`'s findings in the background; `refile` files them again
    once some are proven. A new analysis stops it first (`stop`)."""
    cancel = threading.Event()
    # the findings are about the files as they are now: not filed again if one changes
    files = {os.path.realpath(v.path) for v in result.violations}
    before = {p: _digest(p) for p in files}

    async def run() -> None:
        proven = await prove(service, analyzer, target, result, cancel)
        if proven and all(_digest(p) == d for p, d in before.items()):
            refile()

    service.proving = (cancel, asyncio.ensure_future(run()))


async def stop(service: Any) -> None:
    """Stop the proofs still running (the worker is wanted for an analysis)."""
    running = getattr(service, "proving", None)
    service.proving = None
    if running is None:
        return
    cancel, task = running
    cancel.set()
    with contextlib.suppress(Exception, asyncio.CancelledError):
        await task


async def prove(
    service: Any, analyzer: Any, target: Any, result: Any, cancel: threading.Event
) -> bool:
    """Prove the fixes of `result`'s findings; put the proven ones on its findings. Returns
    whether any was proven (the caller files the findings again)."""
    from onnxlint.deep.fixes import prove_fixes

    ls = service.server
    progress = await Progress.start(ls, f"onnxlint: proving fixes for {target.name}", cancel)
    loop = ls.get_loop()

    def on_progress(phase: str, percent: int | None) -> None:
        loop.call_soon_threadsafe(progress.report, phase, percent)

    report = None
    try:
        report = await loop.run_in_executor(
            service.executor,
            lambda: prove_fixes(analyzer, target, result, progress=on_progress, cancel=cancel),
        )
    except Exception:
        log.exception("proving the fixes of %s failed", target.name)
    finally:
        kept = [p for p in report.proofs if p.fix is not None] if report is not None else []
        progress.end(f"{len(kept)} proven fix(es)" if report is not None else "failed")
    if report is None or cancel.is_set():
        return False
    for p in report.proofs:
        log.info(
            "%s:%d %s: %s: %s",
            p.violation.path,
            p.violation.line,
            p.violation.code,
            p.candidate.title,
            "proven" if p.fix is not None else f"not offered: {p.why}",
        )
    fixed = report.fixed(result.violations)
    fixed = [v if v.fix is None or _buffers_as_read(ls, v) else _unfixed(v) for v in fixed]
    if not any(v.fix is not None for v in fixed):
        return False
    for v in fixed:
        if v.fix is not None:
            _PROVEN.add(v.fix)
    result.violations = fixed
    return True


def _buffers_as_read(ls: Any, v: Any) -> bool:
    """Every file the fix edits has in its open buffer the text the proof read."""
    others = [f.path for f in v.fix.files if not f.create]
    return all(_buffer_as_read(ls, p) for p in (v.path, *others))


def _buffer_as_read(ls: Any, path: str) -> bool:
    """The file's open buffer (if open) has the text on disk that the proof read (an open
    notebook: the code cells on disk)."""
    real = os.path.realpath(path)
    if path.lower().endswith(".ipynb"):
        deep = getattr(ls, "deep", None)
        return deep is None or not deep.notebook_unsaved(real)
    for uri, doc in list(ls.workspace.text_documents.items()):
        p = ls.path_of(uri)
        if os.path.isabs(p) and os.path.realpath(p) == real:
            try:
                with open(real, encoding="utf-8") as fh:
                    return bool(fh.read() == doc.source)
            except OSError:
                return False
    return True


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.sha1(fh.read()).hexdigest()
    except OSError:
        return None


def _unfixed(v: Any) -> Any:
    import dataclasses

    return dataclasses.replace(v, fix=None)
