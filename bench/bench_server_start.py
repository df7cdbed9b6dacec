"""The language server's own start: from spawning it to the first diagnostics of the open file.

    python bench/bench_server_start.py [--runs 7] [--workspace examples] [--file export.py]
                                       [--no-ruff] [--no-floor] [--checkout OTHER_DIR ...]
                                       [--dont-write-bytecode]

Spawns `python -m onnxlint server` as the VS Code extension does (cwd = the workspace folder,
PYTHONUNBUFFERED=1) and talks to it over stdio like vscode-languageclient: `initialize`
(pull diagnostics, workspace/configuration, dynamic file watching) sent at once, `initialized`,
`didOpen` of the file and its `textDocument/diagnostic` pull as soon as `initialize` is
answered; server requests are answered (configuration with `{}`). Prints, per run and as the
median: the initialize answer and the first diagnostics for the file (pushed or pulled), in ms
after the spawn. Side by side in the same run: `ruff server` (the same client, the same file)
and the floor of any pygls 2 server (`pygls_floor_server.py`, with onnxlint's code cache).
`--checkout DIR` (repeatable; a `git worktree` of another commit) adds the onnxlint of that
checkout (on PYTHONPATH), interleaved with this one's: before/after in one run.
The servers run with Python's bytecode cache, as from a pip install (`PYTHONDONTWRITEBYTECODE`
is removed from their environment); `--dont-write-bytecode` sets it instead, so that every
onnxlint module is compiled from source at each start, as in a checkout with that variable set.

`--workspace` may be a big project (say a transformers checkout): the open file's first
diagnostics must not wait for the project model, which is built afterwards. Prints, never
asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DONT_WRITE_BYTECODE = False

CAPABILITIES: dict[str, Any] = {
    "textDocument": {
        "diagnostic": {"dynamicRegistration": True, "relatedDocumentSupport": False},
        "publishDiagnostics": {"versionSupport": True, "relatedInformation": True},
        "synchronization": {"didSave": True, "dynamicRegistration": True},
    },
    "workspace": {
        "configuration": True,
        "didChangeWatchedFiles": {"dynamicRegistration": True},
        "workspaceFolders": True,
    },
    "window": {"workDoneProgress": True},
}


class Client:
    """A minimal LSP client over the server's stdio that records when things arrived."""

    def __init__(self, cmd: list[str], cwd: Path, path: Path | None = None) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if DONT_WRITE_BYTECODE:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        if path is not None:
            env["PYTHONPATH"] = str(path)
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next_id = 0
        self.marks: dict[str, float] = {}
        self.responses: dict[int, Any] = {}
        self.cv = threading.Condition()
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def mark(self, name: str) -> None:
        with self.cv:
            self.marks.setdefault(name, (time.perf_counter() - self.t0) * 1000)
            self.cv.notify_all()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            msg = json.loads(out.read(length))
            method = msg.get("method")
            if method == "textDocument/publishDiagnostics":
                self.mark("diagnostics")
            elif "id" in msg and method is not None:  # a request from the server
                result: Any = None
                if method == "workspace/configuration":
                    result = [{} for _ in msg["params"]["items"]]
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            elif "id" in msg:
                with self.cv:
                    self.responses[msg["id"]] = msg
                    self.cv.notify_all()

    def _send(self, obj: Any) -> None:
        body = json.dumps(obj).encode()
        assert self.proc.stdin is not None
        with self.lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def request(self, method: str, params: Any) -> int:
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def wait(self, rid: int, timeout: float = 60) -> Any:
        with self.cv:
            self.cv.wait_for(lambda: rid in self.responses, timeout=timeout)
            return self.responses.get(rid)

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def close(self) -> None:
        try:
            self.wait(self.request("shutdown", None), timeout=10)
            self.notify("exit", None)
            self.proc.wait(10)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def one_start(
    cmd: list[str], workspace: Path, file: Path, path: Path | None = None
) -> dict[str, float]:
    c = Client(cmd, workspace, path)
    init = c.request(
        "initialize",
        {
            "processId": os.getpid(),
            "clientInfo": {"name": "bench_server_start"},
            "rootUri": workspace.as_uri(),
            "workspaceFolders": [{"uri": workspace.as_uri(), "name": workspace.name}],
            "capabilities": CAPABILITIES,
            "initializationOptions": {"settings": {}},
        },
    )
    if c.wait(init) is None:
        c.proc.kill()
        raise SystemExit(f"{cmd}: no answer to initialize")
    c.mark("initialized")
    c.notify("initialized", {})
    uri = file.as_uri()
    c.notify(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": uri,
                "languageId": "python",
                "version": 1,
                "text": file.read_text(encoding="utf-8"),
            }
        },
    )
    pulled = c.request("textDocument/diagnostic", {"textDocument": {"uri": uri}})
    deadline = time.monotonic() + 60
    with c.cv:
        while "diagnostics" not in c.marks and pulled not in c.responses:
            if not c.cv.wait(timeout=max(0.0, deadline - time.monotonic())):
                break
    answer = c.responses.get(pulled)
    if answer is not None and "result" in answer:
        c.mark("diagnostics")
    marks = dict(c.marks)
    c.close()
    return marks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--workspace", default=str(REPO / "examples"))
    parser.add_argument("--file", default="export.py", help="relative to the workspace")
    parser.add_argument("--no-ruff", action="store_true")
    parser.add_argument("--no-floor", action="store_true")
    parser.add_argument("--checkout", action="append", default=[], help="another onnxlint checkout")
    parser.add_argument("--dont-write-bytecode", action="store_true")
    args = parser.parse_args()
    global DONT_WRITE_BYTECODE
    DONT_WRITE_BYTECODE = args.dont_write_bytecode
    workspace = Path(args.workspace).resolve()
    file = (workspace / args.file).resolve()
    onnxlint = [sys.executable, "-m", "onnxlint", "server"]
    servers = {"onnxlint": onnxlint}
    paths: dict[str, Path | None] = {"onnxlint": REPO}
    for other in args.checkout:
        label = f"onnxlint@{Path(other).resolve().name}"
        servers[label] = onnxlint
        paths[label] = Path(other).resolve()
    ruff = shutil.which("ruff")
    if ruff and not args.no_ruff:
        servers["ruff server"] = [ruff, "server"]
    if not args.no_floor:
        floor = [sys.executable, str(HERE / "pygls_floor_server.py"), "--code-cache"]
        servers["pygls 2 floor"] = floor
    # Warm the disk caches (.pyc, onnxlint's generated-code cache) once, unmeasured.
    for name, cmd in servers.items():
        one_start(cmd, workspace, file, paths.get(name))
    results: dict[str, list[dict[str, float]]] = {name: [] for name in servers}
    for i in range(args.runs):
        for name, cmd in servers.items():  # interleaved: load changes hit every server alike
            marks = one_start(cmd, workspace, file, paths.get(name))
            results[name].append(marks)
            shown = ", ".join(f"{k} {v:.0f}" for k, v in marks.items())
            print(f"run {i + 1} {name}: {shown}", flush=True)
    print()
    cache = "no bytecode cache" if DONT_WRITE_BYTECODE else "bytecode cached"
    where = f"{file.relative_to(workspace)}, {cache}"
    print(f"ms after the spawn, median of {args.runs} runs ({where}):")
    for name, runs in results.items():
        cells = []
        for key in ("initialized", "diagnostics"):
            values = [r[key] for r in runs if key in r]
            if values:
                cells.append(f"{key} {statistics.median(values):6.0f}")
        print(f"  {name:<22} " + "  ".join(cells))
    print(f"(load average before/after: {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
