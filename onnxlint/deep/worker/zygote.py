"""The warm worker: import torch once, then fork a fresh child per analysis.

A forked child starts with torch, the exporter and the ONNX registry already
loaded (seconds saved per analysis) but imports the user's code anew, so edits
are picked up. The zygote watches the child: wall-clock timeout, resident
memory ceiling, cancellation, and any death without a result (segfault,
`os._exit`, OOM kill) becomes an `end` event with a status, never a hang.
Linux and macOS (fork); the RSS watchdog reads /proc and so is Linux only.
"""

from __future__ import annotations

import contextlib
import os
import platform
import resource
import select
import signal
import sys
import tempfile
import time
import traceback
from typing import Any

from . import wire

EXIT_MEMORY = 86  # the child ran out of memory (MemoryError) and says so by its exit code
POLL_S = 0.05


class LineReader:
    """Split a raw fd's bytes into lines without blocking on a partial one."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = b""
        self.eof = False

    def read(self) -> list[bytes]:
        try:
            chunk = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return []
        if not chunk:
            self.eof = True
            lines = [self.buf] if self.buf.strip() else []
            self.buf = b""
            return lines
        self.buf += chunk
        *lines, self.buf = self.buf.split(b"\n")
        return [ln for ln in lines if ln.strip()]


def _rss_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def _self_status(key: str) -> int | None:
    return _rss_bytes_key(os.getpid(), key)


def _rss_bytes_key(pid: int, key: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


class Zygote:
    def __init__(self, proto: Any) -> None:
        self.proto = proto
        self.stdin = LineReader(0)

    def send(self, obj: dict[str, Any]) -> None:
        wire.write(self.proto, obj)

    # ------------------------------------------------------------------ warm-up

    def warm(self) -> dict[str, Any]:
        """Import torch and the exporter and run one tiny analysis in-process.

        Everything lazily imported or built on first use (dynamo, export, the
        ONNX registry, onnx_ir, the checker) is then already in memory in every
        child. Only fake tensors are used, so no thread pool is started before
        fork.
        """
        t0 = time.perf_counter()
        import torch

        from . import analysis, torch_internals

        if wire.in_background():
            # Leave a core to the editor's static checks (inherited by every child).
            torch.set_num_threads(max(1, (os.cpu_count() or 1) - 1))

        t_import = time.perf_counter() - t0
        try:
            with tempfile.TemporaryDirectory() as root:
                a = analysis.Analysis({"name": "warm-up", "root": root}, lambda *_: None)
                a.fake_mode = torch_internals.fake_mode_class()(allow_non_fake_inputs=True)
                with a.fake_mode:
                    a.model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
                    a.args = (torch.randn(2, 4),)
                a.dynamic_shapes = ({0: "batch"},)
                analysis.warm_up(a)
            warm_error = None
        except Exception as e:  # a failed warm-up only costs speed
            warm_error = f"{type(e).__name__}: {e}"
        torch_internals.reset_dynamo()
        return {
            "torch": torch_internals.torch_version(),
            "import_s": round(t_import, 3),
            "warm_s": round(time.perf_counter() - t0, 3),
            "warm_error": warm_error,
            "rss": _self_status("VmRSS"),
        }

    # ------------------------------------------------------------------ loop

    def serve(self) -> int:
        while True:
            ready, _, _ = select.select([0], [], [], 1.0)
            if not ready:
                continue
            for line in self.stdin.read():
                if self.handle(line):
                    return 0
            if self.stdin.eof:
                return 0

    def handle(self, line: bytes) -> bool:
        """Handle one request; True means stop."""
        try:
            req = wire.decode(line)
        except ValueError as e:
            self.send({"ev": wire.EV_FATAL, "detail": f"bad request: {e}"})
            return False
        op = req.get("op")
        if op == wire.OP_SHUTDOWN:
            return True
        if op == wire.OP_ANALYZE:
            return self.run_child(req)
        # a cancel for an analysis that already ended: nothing to do
        return False

    def run_child(self, req: dict[str, Any]) -> bool:
        rid = req.get("id")
        options = req.get("options") or {}
        timeout = float(options.get("timeout") or 300.0)
        memory = int(options.get("memory_limit_mb") or 0) * 1024 * 1024
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child; its exit code is the test
            os.close(r)
            # the protocol pipe belongs to the zygote: holding it would keep onnxlint
            # from seeing the zygote die
            with contextlib.suppress(OSError):
                self.proto.close()
            _child(req, w, memory)
        os.close(w)
        reader = LineReader(r)
        start = time.monotonic()
        got_result = False
        retry: Any = None
        status: str | None = None
        detail = ""
        peak = 0
        stop = False
        try:
            while True:
                ready, _, _ = select.select([r, 0], [], [], POLL_S)
                if r in ready:
                    for line in reader.read():
                        try:
                            ev = wire.decode(line)
                        except ValueError:
                            continue
                        ev["id"] = rid
                        if ev.get("ev") == wire.EV_RESULT:
                            got_result = True
                            retry = (ev.get("result") or {}).get(wire.RETRY_REAL_TENSORS)
                            if retry:
                                continue  # not the answer: a fresh child gives it
                        self.send(ev)
                if 0 in ready:
                    for line in self.stdin.read():
                        try:
                            other = wire.decode(line)
                        except ValueError:
                            continue
                        if other.get("op") == wire.OP_CANCEL and other.get("id") in (rid, None):
                            status, detail = wire.STATUS_CANCELLED, "cancelled"
                        elif other.get("op") == wire.OP_SHUTDOWN:
                            status, detail, stop = wire.STATUS_CANCELLED, "worker shut down", True
                    if self.stdin.eof:
                        status, detail, stop = wire.STATUS_CANCELLED, "onnxlint went away", True
                rss = _rss_bytes(pid)
                if rss is not None:
                    peak = max(peak, rss)
                    if memory and rss > memory and status is None:
                        status = wire.STATUS_MEMORY
                        detail = (
                            f"the analysis used {rss / 2**20:.0f} MB, over the memory limit of "
                            f"{memory / 2**20:.0f} MB"
                        )
                if status is None and time.monotonic() - start > timeout:
                    status = wire.STATUS_TIMEOUT
                    detail = f"the analysis took longer than {timeout:g} s"
                if status is not None:
                    _kill(pid)
                    break
                if reader.eof:
                    break
            _, wstatus, usage = os.wait4(pid, 0)
        finally:
            os.close(r)
        peak = max(peak, int(usage.ru_maxrss) * (1 if sys.platform == "darwin" else 1024))
        code = os.waitstatus_to_exitcode(wstatus)
        if retry and status is None and code == 0:
            # fake tensors failed where only real ones work (eager-mode int8), and the
            # failed attempt may have left the child's torch in a bad state: start clean
            target = {**(req.get("target") or {}), wire.RETRY_REAL_TENSORS: retry}
            return self.run_child({**req, "target": target})
        if status is None:
            if code == EXIT_MEMORY:
                status = wire.STATUS_MEMORY
                detail = "the analysis ran out of memory (MemoryError)"
            elif got_result and code == 0:
                status = wire.STATUS_OK
            elif code < 0:
                status = wire.STATUS_CRASHED
                detail = f"the analysis process was killed by {signal.Signals(-code).name}"
                if -code == signal.SIGKILL:
                    detail += " (the system may have run out of memory)"
            else:
                status = wire.STATUS_CRASHED
                detail = f"the analysis process exited with code {code} before reporting"
        self.send(
            {
                "ev": wire.EV_END,
                "id": rid,
                "status": status,
                "detail": detail,
                "exit": code,
                "peak_rss": peak,
                "wall": round(time.monotonic() - start, 3),
            }
        )
        return stop


def _kill(pid: int) -> None:
    for sig in (signal.SIGKILL,):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)


def _child(req: dict[str, Any], w: int, memory: int) -> None:  # pragma: no cover - child
    """Run one analysis and exit without returning to the zygote's loop."""
    code = 0
    try:
        _die_with_parent()
        os.setpgid(0, 0)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if memory:
            _limit_data(memory)
        out = os.fdopen(w, "wb")
        rid = req.get("id")

        def progress(phase: str, percent: int | None) -> None:
            wire.write(out, {"ev": wire.EV_PROGRESS, "id": rid, "phase": phase, "percent": percent})

        from . import analysis

        try:
            result = analysis.run(req.get("target") or {}, progress)
        except MemoryError:
            code = EXIT_MEMORY
        else:
            wire.write(out, {"ev": wire.EV_RESULT, "id": rid, "result": result})
        out.close()
    except MemoryError:
        code = EXIT_MEMORY
    except BaseException:
        traceback.print_exc()
        code = 70
    finally:
        sys.stderr.flush()
        os._exit(code)


def _die_with_parent() -> None:
    """Linux: the child gets SIGKILL when the zygote dies, so no analysis outlives it."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the zygote died before prctl took effect
        os._exit(71)


def _limit_data(memory: int) -> None:
    """Make allocations past the ceiling fail (MemoryError) instead of swapping the machine."""
    if not hasattr(resource, "RLIMIT_DATA"):
        return
    current = _self_status("VmData") or 0
    soft = current + memory
    try:
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
    except (ValueError, OSError):
        pass


def _torch_threads() -> int | None:
    torch = sys.modules.get("torch")
    return int(torch.get_num_threads()) if torch is not None else None


def main(argv: list[str]) -> int:
    if wire.in_background():
        # Started by the language server: its keystroke checks come first. (Measured by
        # bench/bench_deep.py latency; inherited by every analysis child.)
        with contextlib.suppress(OSError):
            os.nice(wire.BACKGROUND_NICE)
    proto_fd = os.dup(1)
    os.dup2(2, 1)  # user prints go to stderr, never into the protocol
    sys.stdout = sys.stderr
    proto = os.fdopen(proto_fd, "wb")
    z = Zygote(proto)
    try:
        info = z.warm()
    except Exception as e:
        z.send({"ev": wire.EV_FATAL, "detail": f"{type(e).__name__}: {e}"})
        return 2
    info.update(
        {
            "ev": wire.EV_READY,
            "protocol": wire.PROTOCOL_VERSION,
            "python": sys.executable,
            "python_version": platform.python_version(),
            "pid": os.getpid(),
            "nice": os.nice(0),
            "torch_threads": _torch_threads(),
            # the worker must run where onnxlint is not installed: it never imports it
            "imports_onnxlint": any(m.split(".")[0] == "onnxlint" for m in sys.modules),
        }
    )
    z.send(info)
    return z.serve()
