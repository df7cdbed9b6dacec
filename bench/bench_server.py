"""Language-server benchmarks for issue 3: prints figures, never asserts.

    python bench/bench_server.py [--runs 3] [--file modeling_bert.py] [--no-ruff] [--edits 10000]

Measured on transformers' `models/bert/modeling_bert.py` (about 1,400 lines; fetched with
`pip download --no-deps transformers` into bench/corpus/ when it is not there), side by side
with `ruff server` in the same run, through a real editor (headless Neovim 0.7 driven by
`tests/tools/nvim-lsp-probe`, client debounce 0, server debounce 0):

- first diagnostics after open: the probe's `initialize_ms` (server start) plus
  `first_diagnostics_ms` (`:edit` to the first publish), p50 over runs;
- a one-line edit inside a method (BertSelfOutput.forward), 20 per run: p50 and p95 over all;
- a storm of 500 keystrokes: the last publish after the last keystroke, p50 over runs;
- memory, with a small stdio client of our own, once per run: RSS once idle after the
  open, and after 10,000 incremental edits that type a line and delete it again (so the
  text stays the opened one; bursts of 50, each waiting for its publish), with RSS every
  2,000 edits;
- the floor of any pygls 2 server: `pygls_floor_server.py` (one diagnostic per open) opened
  like onnxlint, with and without onnxlint's generated-code cache.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

from registry import pip_download

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CORPUS = HERE / "corpus"
PROBE = REPO / "tests" / "tools" / "nvim-lsp-probe" / "probe"
CANDIDATES = (
    Path("/tmp/corpus/transformers/models/bert/modeling_bert.py"),
    CORPUS / "transformers" / "models" / "bert" / "modeling_bert.py",
)
ONNXLINT = [sys.executable, "-m", "onnxlint", "server"]
ONNXLINT_DIRECT = [sys.executable, "-m", "onnxlint.server"]
PYGLS_FLOOR = [sys.executable, str(HERE / "pygls_floor_server.py")]
INIT = {"settings": {"debounceMs": 0}}
EDIT_LINE = "        probe_value = hidden_states.shape[0]"
STORM_LINE = "        extra = self.dropout(hidden_states) + input_tensor"


# ---------------------------------------------------------------------------- corpus


def bert_file(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit).resolve()
    for c in CANDIDATES:
        if c.is_file():
            return c
    wheels = CORPUS / "wheels"
    print("fetching transformers with pip download (once)...", file=sys.stderr)
    pip_download(wheels, "transformers")
    name = "transformers/models/bert/modeling_bert.py"
    for whl in sorted(wheels.glob("transformers-*.whl")):
        with zipfile.ZipFile(whl) as z:
            if name in z.namelist():
                z.extract(name, CORPUS)
                return CORPUS / name
    raise SystemExit("modeling_bert.py not found in the downloaded transformers wheel")


def edit_line_number(path: Path) -> int:
    """The 1-based line of `return hidden_states` in BertSelfOutput.forward (inside a method)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("class BertSelfOutput"))
    for i in range(start, len(lines)):
        if lines[i].startswith("        return "):
            return i + 1
    raise SystemExit("no method body found for the edit")


# ---------------------------------------------------------------------------- probe runs


def run_probe(
    server: list[str], file: Path, at: int, modes: str, init: dict[str, Any] | None
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        args = [
            str(PROBE),
            "--file",
            str(file),
            "--timeout",
            "60",
            "--report",
            str(report),
            "-q",
            "--mode",
            modes,
            "--line",
            EDIT_LINE,
            "--at",
            str(at),
            "--repeat",
            "20",
            "--gap-ms",
            "50",
            "--count",
            "500",
            "--storm-line",
            STORM_LINE,
            "--storm-at",
            str(at),
        ]
        if init is not None:
            args += ["--init-options", json.dumps(init)]
        proc = subprocess.run([*args, "--", *server], capture_output=True, text=True, timeout=900)
        data: dict[str, Any] = json.loads(report.read_text()) if report.exists() else {}
        if proc.returncode != 0:
            print(f"  probe failed ({proc.returncode}): {data.get('failure')}", file=sys.stderr)
        return data


def p95(samples: list[float]) -> float:
    s = sorted(samples)
    return s[max(0, round(0.95 * len(s)) - 1)] if s else float("nan")


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def collect(reports: list[dict[str, Any]]) -> dict[str, float]:
    init = [r["server"]["initialize_ms"] for r in reports if r.get("open")]
    first = [r["open"]["first_diagnostics_ms"] for r in reports if r.get("open")]
    total = [a + b for a, b in zip(init, first, strict=True)]
    edits: list[float] = []
    medians: list[float] = []
    for r in reports:
        if r.get("edit"):
            edits += r["edit"]["samples_ms"]
            medians.append(r["edit"]["median_ms"])
    storm = [r["storm"]["final_diagnostics_ms"] for r in reports if r.get("storm")]
    match = [bool(r["storm"].get("match")) for r in reports if r.get("storm")]
    return {
        "initialize_ms": median(init),
        "open_to_diagnostics_ms": median(first),
        "first_incl_start_ms": median(total),
        "edit_p50_ms": median(edits),
        "edit_p95_ms": p95(edits),
        "storm_final_ms": median(storm),
        "storm_match": float(all(match)) if match else float("nan"),
        "runs": float(len(reports)),
    }


# ---------------------------------------------------------------------------- memory (own client)


class StdioClient:
    def __init__(self, cmd: list[str]) -> None:
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.next_id = 0
        self.published: dict[str, int | None] = {}
        self.responses: dict[int, Any] = {}
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                ch = out.read(1)
                if not ch:
                    return
                header += ch
            n = int(header.split(b"Content-Length: ")[1].split(b"\r\n")[0])
            msg = json.loads(out.read(n))
            with self.cv:
                if msg.get("method") == "textDocument/publishDiagnostics":
                    self.published[msg["params"]["uri"]] = msg["params"].get("version")
                    self.on_publish(msg["params"])
                elif "id" in msg and "method" in msg:  # a request from the server
                    self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
                elif "id" in msg:
                    self.responses[msg["id"]] = msg
                self.cv.notify_all()

    def on_publish(self, params: dict[str, Any]) -> None:
        """A hook for subclasses: every publishDiagnostics, under the lock."""

    def _send(self, obj: Any) -> None:
        body = json.dumps(obj).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def send_request(self, method: str, params: Any) -> int:
        """Send a request without waiting; its answer lands in `responses[id]`."""
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def request(self, method: str, params: Any) -> Any:
        rid = self.send_request(method, params)
        with self.cv:
            self.cv.wait_for(lambda: rid in self.responses, timeout=120)
            return self.responses.pop(rid, None)

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def initialize(self, root: Path, capabilities: dict[str, Any], init: Any) -> None:
        """`initialize` (waiting for the answer) and `initialized`."""
        self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root.resolve().as_uri(),
                "capabilities": capabilities,
                "initializationOptions": init,
            },
        )
        self.notify("initialized", {})

    def open(self, path: Path) -> str:
        """`didOpen` of `path` as version 0; returns its URI."""
        uri = path.resolve().as_uri()
        self.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": "python",
                    "version": 0,
                    "text": path.read_text(encoding="utf-8"),
                }
            },
        )
        return uri

    def wait_version(self, uri: str, version: int, timeout: float = 60) -> bool:
        with self.cv:
            return self.cv.wait_for(
                lambda: (self.published.get(uri) or -1) >= version, timeout=timeout
            )

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.proc.wait(10)
        except Exception:
            self.proc.kill()


def memory(server: list[str], file: Path, at: int, edits: int, init: Any) -> dict[str, float]:
    c = StdioClient(server)
    c.initialize(
        file.parent, {"textDocument": {"publishDiagnostics": {"versionSupport": True}}}, init
    )
    uri = c.open(file)
    c.wait_version(uri, 0)
    time.sleep(2.5)
    idle = c.rss_mb()
    # Type the storm line and delete it again with backspaces, over and over, so the text
    # after every cycle is the text that was opened: memory is compared like with like.
    line = at - 1
    typed = STORM_LINE + "\n"
    cycle = [("type", ch) for ch in typed] + [("backspace", "")] * len(typed)
    version, col = 0, 0
    series: list[tuple[int, float]] = []
    t0 = time.monotonic()
    for n in range(edits):
        version += 1
        action, ch = cycle[n % len(cycle)]
        if action == "type":
            start = end = {"line": line, "character": col}
            if ch == "\n":
                line, col = line + 1, 0
            else:
                col += 1
        else:
            if col == 0:  # join with the line above: delete its newline
                line -= 1
                col = len(typed) - 1
                start = {"line": line, "character": col}
                end = {"line": line + 1, "character": 0}
            else:
                col -= 1
                start = {"line": line, "character": col}
                end = {"line": line, "character": col + 1}
            ch = ""
        c.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"range": {"start": start, "end": end}, "text": ch}],
            },
        )
        if n % 50 == 49:
            c.wait_version(uri, version)
        if (n + 1) % 2000 == 0:
            c.wait_version(uri, version)
            series.append((n + 1, c.rss_mb()))
    c.wait_version(uri, version)
    wall = time.monotonic() - t0
    time.sleep(2.5)  # idle: the server gives freed memory back after 1 s without checks
    after = c.rss_mb()
    c.close()
    print(
        "  RSS while editing (MB): "
        + ", ".join(f"{n}: {mb:.0f}" for n, mb in series)
        + f"; idle after: {after:.0f}",
    )
    return {"idle_mb": idle, "after_edits_mb": after, "edits": float(edits), "edits_wall_s": wall}


# ---------------------------------------------------------------------------- main


def fmt(v: float, unit: str = "") -> str:
    if v != v:  # nan
        return "-"
    return f"{v:.0f}{unit}" if v >= 10 else f"{v:.1f}{unit}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--file")
    ap.add_argument("--no-ruff", action="store_true")
    ap.add_argument("--edits", type=int, default=10_000, help="edits for the memory run")
    args = ap.parse_args(argv)
    if not shutil.which("nvim"):
        raise SystemExit("nvim is required (apt-get install -y neovim)")
    file = bert_file(args.file)
    at = edit_line_number(file)
    ruff = shutil.which("ruff")
    servers: dict[str, tuple[list[str], dict[str, Any] | None]] = {
        "onnxlint": (ONNXLINT, INIT),
    }
    if ruff and not args.no_ruff:
        servers["ruff"] = ([ruff, "server"], None)
    print(f"file: {file} ({len(file.read_text().splitlines())} lines), edit at line {at}")
    print(f"python {sys.version.split()[0]}, load {os.getloadavg()[0]:.1f}, runs {args.runs}")
    results: dict[str, dict[str, float]] = {}
    for name, (cmd, init) in servers.items():
        reports = []
        for i in range(args.runs):
            print(f"  {name}: probe run {i + 1}/{args.runs}", file=sys.stderr)
            reports.append(run_probe(cmd, file, at, "edit,storm", init))
        results[name] = collect([r for r in reports if r])
    direct = collect([run_probe(ONNXLINT_DIRECT, file, at, "open", INIT) for _ in range(args.runs)])
    floor = {
        label: collect([run_probe(cmd, file, at, "open", None) for _ in range(args.runs)])
        for label, cmd in (
            ("plain", PYGLS_FLOOR),
            ("code cache", [*PYGLS_FLOOR, "--code-cache"]),
        )
    }
    mem: dict[str, dict[str, float]] = {}
    for name, (cmd, init) in servers.items():
        print(f"{name}: memory, {args.runs} runs of {args.edits} edits (type a line, delete it)")
        runs = [memory(cmd, file, at, args.edits, init or {}) for _ in range(args.runs)]
        mem[name] = {k: median([r[k] for r in runs]) for k in runs[0]}
        mem[name]["growth_mb"] = median([r["after_edits_mb"] - r["idle_mb"] for r in runs])

    names = list(servers)
    rows = [
        ("first diagnostics incl. start, p50", "first_incl_start_ms", "ms", "<= 300 ms"),
        ("  initialize (server start), p50", "initialize_ms", "ms", ""),
        ("  :edit -> first publish, p50", "open_to_diagnostics_ms", "ms", ""),
        ("one-line edit in a method, p50", "edit_p50_ms", "ms", "<= 60 ms"),
        ("one-line edit in a method, p95", "edit_p95_ms", "ms", "<= 120 ms"),
        ("storm 500: last publish after last edit", "storm_final_ms", "ms", "<= 1000 ms"),
    ]
    print()
    header = f"{'metric':42}" + "".join(f"{n:>12}" for n in names) + f"{'ratio':>9}  target"
    print(header)
    print("-" * len(header))
    for label, key, unit, target in rows:
        vals = [results[n].get(key, float("nan")) for n in names]
        ratio = (
            f"{vals[0] / vals[1]:.1f}x" if len(vals) > 1 and vals[1] and vals[1] == vals[1] else "-"
        )
        print(
            f"{label:42}"
            + "".join(f"{fmt(v, ' ' + unit):>12}" for v in vals)
            + f"{ratio:>9}  {target}"
        )
    storm_ok = ", ".join(
        f"{n}={'yes' if results[n]['storm_match'] == 1.0 else 'NO'}" for n in names
    )
    print(f"{'storm final == fresh open':42}  {storm_ok}")
    for key, label in (
        ("idle_mb", "idle RSS after open"),
        ("after_edits_mb", f"RSS after {args.edits} edits"),
    ):
        vals = [mem[n][key] for n in names]
        ratio = f"{vals[0] / vals[1]:.1f}x" if len(vals) > 1 and vals[1] else "-"
        target = "<= 120 MB" if key == "idle_mb" else "no growth"
        print(
            f"{label:42}" + "".join(f"{fmt(v, ' MB'):>12}" for v in vals) + f"{ratio:>9}  {target}"
        )
    print(
        f"{'  growth (after - idle), median of runs':42}"
        + "".join(f"{mem[n]['growth_mb']:>+10.1f} MB" for n in names)
    )
    print(
        f"{'  time for the edits (bursts of 50)':42}"
        + "".join(f"{fmt(mem[n]['edits_wall_s'], ' s'):>12}" for n in names)
    )
    print()
    print(
        "python -m onnxlint.server (module entry point): initialize "
        f"{fmt(direct['initialize_ms'], ' ms')}, :edit -> publish "
        f"{fmt(direct['open_to_diagnostics_ms'], ' ms')}, "
        f"total {fmt(direct['first_incl_start_ms'], ' ms')}"
    )
    print(
        "pygls 2 floor (bench/pygls_floor_server.py: one diagnostic per open), first "
        "diagnostics incl. start, p50: "
        + ", ".join(f"{k} {fmt(v['first_incl_start_ms'], ' ms')}" for k, v in floor.items())
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
