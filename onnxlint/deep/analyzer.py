"""DeepAnalyzer: the long-lived handle on the worker, for the CLI and the server.

Starts the worker (`worker/launch.py`) under the user's interpreter, waits for
it to be warm, sends one analysis at a time and turns its events into a
`DeepResult`. Whatever happens to the worker (crash, hang, garbage on the
pipe), `analyze` returns a result with a finding and the next call starts a
fresh worker; it never raises for the worker's sake. Thread-safe: one analysis
runs at a time, others wait.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from onnxlint.deep import result as result_mod
from onnxlint.deep.cache import ResultCache
from onnxlint.deep.result import DeepResult
from onnxlint.deep.targets import Target, classes_built_by, factory_location
from onnxlint.deep.worker import wire
from onnxlint.source.notebook import is_notebook

LAUNCHER = Path(__file__).resolve().parent / "worker" / "launch.py"
STARTUP_TIMEOUT_S = 240.0  # cold `import torch` is 5-40 s; a busy machine needs margin
GRACE_S = 30.0  # the parent's own backstop beyond the worker's timeout

Progress = Callable[[str, "int | None"], None]


def _with_notebook(wire_target: dict[str, Any], script: str) -> str:
    """A notebook target runs the notebook's code cells as one script: the worker gets
    their module text as the notebook's overlay (a proof's own overlay, the rewritten
    module, wins), and after it the call of the target's `then_call` function, on a line
    past the last cell. Returns what is wrong with the notebook ("" when nothing)."""
    from onnxlint.deep.notebooks import NotebookError, read_module

    files = dict(wire_target.get("overlay") or {})
    mine = [p for p in files if os.path.realpath(p) == os.path.realpath(script)]
    if not mine:
        try:
            files[script] = read_module(script).text
        except NotebookError as exc:
            return f"cannot run the notebook {script}: {exc}"
        mine = [script]
    then_call = wire_target.get("then_call")
    if isinstance(then_call, str) and then_call.isidentifier():
        text = files[mine[0]]
        text += "" if text.endswith("\n") else "\n"
        files[mine[0]] = f"{text}{then_call}()\n"
    wire_target["overlay"] = files
    return ""


class WorkerUnavailable(RuntimeError):
    """The worker could not be started (wrong interpreter, torch missing...)."""


class _Worker:
    """One zygote process and the threads that read its pipes."""

    def __init__(self, python: str, env: dict[str, str] | None, background: bool = False) -> None:
        full_env = dict(os.environ if env is None else env)
        full_env.setdefault("PYTHONUNBUFFERED", "1")
        full_env.setdefault("TORCHDYNAMO_VERBOSE", "0")
        if background:
            full_env[wire.BACKGROUND_ENV] = "1"
        self.proc = subprocess.Popen(
            [python, str(LAUNCHER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            start_new_session=True,  # our signals, not the editor's, reach it
        )
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self.info: dict[str, Any] = {}
        assert self.proc.stdout is not None and self.proc.stderr is not None
        threading.Thread(target=self._read_events, args=(self.proc.stdout,), daemon=True).start()
        threading.Thread(target=self._read_stderr, args=(self.proc.stderr,), daemon=True).start()

    def _read_events(self, stream: IO[bytes]) -> None:
        for line in stream:
            try:
                self.events.put(wire.decode(line))
            except ValueError:
                self.stderr_tail.append("protocol: " + line.decode("utf-8", "replace")[:200])
        self.events.put(None)  # EOF: the worker is gone

    def _read_stderr(self, stream: IO[bytes]) -> None:
        for line in stream:
            self.stderr_tail.append(line.decode("utf-8", "replace").rstrip())

    def send(self, obj: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(wire.encode(obj))
        self.proc.stdin.flush()

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerUnavailable(f"the worker was not ready after {timeout:g} s")
            try:
                ev = self.events.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            if ev is None:
                raise WorkerUnavailable(
                    "the worker exited while starting: " + " | ".join(list(self.stderr_tail)[-5:])
                )
            if ev.get("ev") == wire.EV_FATAL:
                raise WorkerUnavailable(str(ev.get("detail")))
            if ev.get("ev") == wire.EV_READY:
                self.info = ev
                return ev

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def stop(self, timeout: float = 5.0) -> None:
        if self.proc.poll() is None:
            try:
                self.send({"op": wire.OP_SHUTDOWN})
                self.proc.wait(timeout=timeout)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        self.kill()


class DeepAnalyzer:
    """A warm worker pool of one, restarted on demand. See the module docstring.

    `python`: the interpreter to run the worker with (default: this one).
    `targets`: known targets, for `targets_in_file` (code lenses) and `target`.
    `cache_dir`: where results are cached (None: no cache).
    """

    def __init__(
        self,
        python: str | None = None,
        *,
        targets: list[Target] | None = None,
        cache_dir: Path | None = None,
        env: dict[str, str] | None = None,
        startup_timeout: float = STARTUP_TIMEOUT_S,
        background: bool = False,
    ) -> None:
        """`background`: the worker yields the CPU to the editor (the language server's
        static checks): a lower scheduling priority and one core left free for torch."""
        self.python = python or sys.executable
        self.env = env
        self.background = background
        self.startup_timeout = startup_timeout
        self.targets: list[Target] = list(targets or [])
        self.cache = ResultCache(cache_dir) if cache_dir else None
        self._worker: _Worker | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._model_classes: dict[str, tuple[str, int]] = {}
        self.restarts = 0
        self.last_result: DeepResult | None = None
        self._closing = False

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> dict[str, Any]:
        """Start (if needed) and wait until warm; returns the worker's ready info."""
        with self._lock:
            return self._ensure().info

    def _ensure(self) -> _Worker:
        if self._worker is not None and self._worker.alive():
            return self._worker
        if self._worker is not None:
            self._worker.kill()
            self.restarts += 1
        self._closing = False
        try:
            worker = _Worker(self.python, self.env, self.background)
        except OSError as e:
            raise WorkerUnavailable(f"cannot run {self.python!r}: {e}") from e
        try:
            worker.wait_ready(self.startup_timeout)
        except WorkerUnavailable:
            worker.kill()
            raise
        self._worker = worker
        return worker

    def shutdown(self) -> None:
        """Stop the worker. Does not wait for a running analysis: that one is killed
        and returns as cancelled."""
        self._closing = True
        if self._lock.acquire(blocking=False):
            try:
                if self._worker is not None:
                    self._worker.stop()
                    self._worker = None
            finally:
                self._closing = False
                self._lock.release()
            return
        worker = self._worker
        if worker is not None:
            worker.kill()

    @property
    def worker_pid(self) -> int | None:
        w = self._worker
        return w.proc.pid if w is not None and w.alive() else None

    @property
    def info(self) -> dict[str, Any]:
        return dict(self._worker.info) if self._worker is not None else {}

    # ------------------------------------------------------------------ targets

    def set_targets(self, targets: list[Target]) -> None:
        self.targets = list(targets)

    def target(self, name: str) -> Target | None:
        return next((t for t in self.targets if t.name == name), None)

    def targets_in_file(self, path: str | Path) -> list[tuple[Target, int]]:
        """(target, 1-based line) pairs for code lenses in this file: the factory
        function, the `# onnxlint: target` function, the model class it builds."""
        want = Path(path).resolve()
        out: set[tuple[str, int]] = set()
        by_name = {t.name: t for t in self.targets}
        for t in self.targets:
            if t.origin == "marker" and t.decl_path and t.decl_path.resolve() == want:
                out.add((t.name, t.decl_line))
            loc = factory_location(t)
            if loc and loc[0] == want:
                out.add((t.name, loc[1]))
            for cpath, cline in classes_built_by(t):
                if cpath == want:
                    out.add((t.name, cline))
            known = self._model_classes.get(t.name)
            if known and Path(known[0]).resolve() == want:
                out.add((t.name, known[1]))
        return [(by_name[n], line) for n, line in sorted(out, key=lambda x: (x[1], x[0]))]

    # ------------------------------------------------------------------ analysis

    def analyze(
        self,
        target: Target,
        on_progress: Progress | None = None,
        cancel: threading.Event | None = None,
        *,
        verify: bool | None = None,
        use_cache: bool = True,
        wire_extra: dict[str, Any] | None = None,
    ) -> DeepResult:
        """Analyse one target in a fresh child of the warm worker. Never raises for
        worker failures: they come back as a result with an OLX813-815 finding.
        `wire_extra` goes to the worker with the target: a rewrite's proof sends its files
        (`overlay`) and asks for a run with real tensors (`real_run`; see deep/fixes.py)."""
        progress = on_progress or (lambda _phase, _pct: None)
        cancel = cancel or threading.Event()
        with self._lock:
            want_verify = target.verify if verify is None else verify
            wire_target = {**target.to_wire(verify=want_verify), **(wire_extra or {})}
            if target.script is not None and is_notebook(str(target.script)):
                problem = _with_notebook(wire_target, str(target.script))
                if problem:
                    return result_mod.error_result(target, problem)
            cache_key = None
            if self.cache is not None and use_cache:
                cache_key = self.cache.key(wire_target, self.python)
                hit = self.cache.get(cache_key)
                if hit is not None:
                    progress("cached", 100)
                    res = result_mod.from_worker(target, hit["end"], hit["result"])
                    res.cached = True
                    self._remember(res)
                    return res
            progress("starting worker", None)
            try:
                worker = self._ensure()
            except WorkerUnavailable as e:
                return result_mod.error_result(target, str(e))
            if cancel.is_set():
                return DeepResult(target=target, status=wire.STATUS_CANCELLED)
            rid = next(self._ids)
            options = {"timeout": target.timeout, "memory_limit_mb": target.memory_limit_mb}
            try:
                worker.send(
                    {"op": wire.OP_ANALYZE, "id": rid, "target": wire_target, "options": options}
                )
            except (OSError, ValueError):
                worker.kill()
                return result_mod.error_result(target, "the worker closed its input")
            res = self._collect(worker, target, rid, progress, cancel)
            if res.status == wire.STATUS_OK and self.cache is not None and cache_key:
                self.cache.put(cache_key, res.data, self._end_of(res))
            self._remember(res)
            return res

    def _collect(
        self, worker: _Worker, target: Target, rid: int, progress: Progress, cancel: threading.Event
    ) -> DeepResult:
        data: dict[str, Any] | None = None
        deadline = time.monotonic() + target.timeout + GRACE_S
        cancel_sent = False
        phase = ""  # the worker's last phase started
        while True:
            if cancel.is_set() and not cancel_sent:
                cancel_sent = True
                deadline = min(deadline, time.monotonic() + 10.0)
                with contextlib.suppress(OSError, ValueError):
                    worker.send({"op": wire.OP_CANCEL, "id": rid})
            if time.monotonic() > deadline:
                # the worker itself is stuck: kill it, the next call starts a fresh one
                worker.kill()
                status = wire.STATUS_CANCELLED if cancel_sent else wire.STATUS_TIMEOUT
                end = {
                    "status": status,
                    "detail": "cancelled"
                    if cancel_sent
                    else f"no answer within {target.timeout:g} s",
                }
                return result_mod.from_worker(target, end, data)
            try:
                ev = worker.events.get(timeout=0.1)
            except queue.Empty:
                if worker.alive():
                    continue
                ev = None  # exited, even if an orphan still holds its pipes
            if ev is None and self._closing:
                return DeepResult(target=target, status=wire.STATUS_CANCELLED, detail="shut down")
            if ev is None:
                tail = "\n".join(list(worker.stderr_tail)[-12:])
                worker.kill()
                end = {
                    "status": wire.STATUS_CRASHED,
                    "detail": "the worker process died",
                    "stderr_tail": tail,
                }
                return result_mod.from_worker(target, end, data)
            if ev.get("id") not in (rid, None):
                continue  # a late event of an earlier, cancelled analysis
            kind = ev.get("ev")
            if kind == wire.EV_PROGRESS:
                phase = str(ev.get("phase"))
                with contextlib.suppress(Exception):
                    progress(phase, ev.get("percent"))
            elif kind == wire.EV_RESULT:
                data = ev.get("result") or {}
            elif kind == wire.EV_END:
                if ev.get("status") == wire.STATUS_CRASHED:
                    ev["stderr_tail"] = "\n".join(list(worker.stderr_tail)[-12:])
                    ev["phase"] = phase  # where it died: torch's own crash is in a step
                return result_mod.from_worker(target, ev, data)

    @staticmethod
    def _end_of(res: DeepResult) -> dict[str, Any]:
        return {
            "status": res.status,
            "detail": res.detail,
            "peak_rss": res.peak_rss,
            "wall": res.wall,
        }

    def _remember(self, res: DeepResult) -> None:
        self.last_result = res
        loc = (res.data.get("model") or {}).get("class_loc")
        if loc and loc.get("file"):
            self._model_classes[res.target.name] = (str(loc["file"]), int(loc["line"]))

    def __enter__(self) -> DeepAnalyzer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
