"""Benchmarks of the deep analysis (prints figures; not a test).

    python bench/bench_deep.py warm                 # warm re-analysis after an edit (<= 3 s)
    python bench/bench_deep.py highresnet [--ref]   # peak memory vs the exporters (<= 0.15 x TS)
    python bench/bench_deep.py llama                # LLaMA-7B-shaped: <= 1 GB, <= 150 s warm
    python bench/bench_deep.py latency              # static edits while an analysis runs
    python bench/bench_deep.py all --ref

`latency` drives `onnxlint server` over stdio (bench_server.py's client): one-line edits of
modeling_bert.py, each timed to its publishDiagnostics, first with the server idle, then
while the server's `onnxlint.analyzeExport` runs the LLaMA-7B-shaped analysis (worker start
included); target: p95 while analysing <= 1.3 x p95 idle.

Figures are medians of `--runs` runs (default 3) of our analysis; the reference
exporters (`--ref`, each in its own process, real weights) run `--ref-runs`
times (default 1: the TorchScript exporter takes minutes and ~4 GB). monai and
transformers are installed on first use with torch pinned to the installed
version, so an unpinned torch is never pulled in.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from onnxlint.deep.analyzer import DeepAnalyzer  # noqa: E402
from onnxlint.deep.result import DeepResult  # noqa: E402
from onnxlint.deep.targets import Target  # noqa: E402

BENCH_PINS = {"monai": "monai==1.6.1", "transformers": "transformers==5.23.0"}

PROJECT = {
    "benchproj/__init__.py": "",
    "benchproj/highres.py": """
        import torch
        from monai.networks.nets import HighResNet

        def make():
            model = HighResNet(spatial_dims=3, in_channels=1, out_channels=3, norm_type="batch")
            return model.eval(), (torch.randn(30, 1, 48, 48, 48),)
    """,
    "benchproj/llama.py": """
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM

        def make():
            config = LlamaConfig(
                hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                num_attention_heads=32, num_key_value_heads=32, vocab_size=32000,
                use_cache=False,
            )
            model = LlamaForCausalLM(config).eval()
            return model, (torch.randint(0, 32000, (2, 16)),)
    """,
    "benchproj/small.py": """
        import torch

        class Small(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = torch.nn.Linear(16, 32)
                self.b = torch.nn.Linear(32, 4)

            def forward(self, x):
                return self.b(torch.relu(self.a(x))) * SCALE

        SCALE = 1

        def make():
            return Small().eval(), (torch.randn(8, 16),), {}, ({0: "batch"},)
    """,
}

REFERENCE = """
import resource, sys, time, os, tempfile
import torch
sys.path.insert(0, {root!r})
from benchproj.highres import make
model, args = make()
out = os.path.join(tempfile.mkdtemp(), "m.onnx")
t = time.perf_counter()
with torch.no_grad():
    {call}
print("wall", time.perf_counter() - t)
"""

CALLS = {
    "TorchScript exporter (dynamo=False)": "torch.onnx.export(model, args, out, dynamo=False)",
    "dynamo exporter, real weights (optimize=False)": (
        "torch.onnx.export(model, args, out, dynamo=True, optimize=False)"
    ),
}


def ensure(module: str) -> None:
    if importlib.util.find_spec(module) is not None:
        return
    import torch

    pin = f"torch=={torch.__version__.split('+')[0]}"
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(pin + "\n")
    print(f"installing {BENCH_PINS[module]} (constraint {pin})", flush=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "-c", f.name, BENCH_PINS[module]],
        check=True,
    )


def write_project(root: Path) -> Path:
    for rel, text in PROJECT.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return root


def gb(n: float | None) -> str:
    return "?" if not n else f"{n / 2**30:.2f} GB"


def run_reference(root: Path, label: str) -> tuple[float, float]:
    """Peak RSS (bytes) and wall (s) of one exporter run in its own process."""
    code = REFERENCE.format(root=str(root), call=CALLS[label])
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    start = time.perf_counter()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    out = proc.stdout.read() if proc.stdout else ""
    if os.waitstatus_to_exitcode(status) != 0:
        print(f"  {label}: failed (exit {os.waitstatus_to_exitcode(status)})")
    export_wall = next(
        (float(x.split()[1]) for x in out.splitlines() if x.startswith("wall")), wall
    )
    return usage.ru_maxrss * 1024.0, export_wall


def analyze(a: DeepAnalyzer, target: Target) -> DeepResult:
    res = a.analyze(target, use_cache=False)
    if res.status != "ok":
        print(f"  !! {target.name}: {res.status} {res.detail}")
    return res


def bench_warm(a: DeepAnalyzer, root: Path, runs: int, cold_s: float) -> None:
    print("\n== warm worker: a small model, analysed again after an edit ==")
    target = Target("small", "benchproj.small:make", root, dynamic_shapes=({0: "batch"},))
    t = time.perf_counter()
    first = analyze(a, target)
    first_s = time.perf_counter() - t
    print(
        f"cold: worker start (import torch, warm-up) {cold_s:.2f} s; first analysis {first_s:.2f} s"
    )
    path = root / "benchproj" / "small.py"
    walls = []
    for i in range(runs):
        path.write_text(path.read_text().replace(f"SCALE = {i + 1}", f"SCALE = {i + 2}"))
        t = time.perf_counter()
        res = analyze(a, target)
        walls.append(time.perf_counter() - t)
        assert res.data.get("onnx"), res.violations
    med = statistics.median(walls)
    print(
        f"warm second analysis after an edit: median {med:.2f} s over {runs} runs "
        f"(min {min(walls):.2f}, max {max(walls):.2f}); "
        f"target <= 3 s: {'OK' if med <= 3 else 'MISSED'}"
    )
    print(f"  findings {len(first.violations)}; peak {gb(first.peak_rss)}; phases {first.phases}")


def bench_highresnet(a: DeepAnalyzer, root: Path, runs: int, ref: bool, ref_runs: int) -> None:
    print("\n== HighResNet(3D, 1->3, batch norm), input (30, 1, 48, 48, 48) ==")
    target = Target("highresnet", "benchproj.highres:make", root, timeout=1800)
    peaks, walls = [], []
    res = None
    for _ in range(runs):
        res = analyze(a, target)
        peaks.append(res.peak_rss or 0)
        walls.append(res.wall)
    assert res is not None
    ours = statistics.median(peaks)
    print(
        f"onnxlint analysis (fake mode): peak {gb(ours)} (median of {runs}), "
        f"wall {statistics.median(walls):.1f} s, findings {len(res.violations)}, "
        f"ONNX nodes {res.data.get('onnx', {}).get('nodes')}"
    )
    print(f"  phases {res.phases}")
    if not ref:
        print("  (references skipped: pass --ref to run the exporters with real weights)")
        return
    for label in CALLS:
        samples = [run_reference(root, label) for _ in range(ref_runs)]
        peak = statistics.median(s[0] for s in samples)
        wall = statistics.median(s[1] for s in samples)
        print(f"{label}: peak {gb(peak)}, export {wall:.1f} s; onnxlint / this = {ours / peak:.3f}")


def bench_llama(a: DeepAnalyzer, root: Path) -> None:
    print("\n== LlamaForCausalLM at 7B sizes (hidden 4096, 32 layers, vocab 32000), ids (2, 16) ==")
    target = Target("llama7b", "benchproj.llama:make", root, timeout=1800, memory_limit_mb=8192)
    t = time.perf_counter()
    res = analyze(a, target)
    wall = time.perf_counter() - t
    model = res.data.get("model", {})
    print(
        f"parameters {model.get('params', 0):,}; real weights would take "
        f"{gb(model.get('weight_bytes'))}"
    )
    print(
        f"full analysis in the warm worker: {wall:.1f} s (target <= 150 s: "
        f"{'OK' if wall <= 150 else 'MISSED'}), peak {gb(res.peak_rss)} (target <= 1 GB: "
        f"{'OK' if (res.peak_rss or 0) <= 2**30 else 'MISSED'})"
    )
    print(f"  phases {res.phases}")
    print(f"  findings {[(v.code, v.message[:70]) for v in res.violations]}")
    print(
        f"  ONNX nodes {res.data.get('onnx', {}).get('nodes')}, checker "
        f"{res.data.get('onnx', {}).get('checker')}"
    )


def _edit_latencies(client, uri: str, line: int, version: int, done) -> tuple[list[float], int]:  # type: ignore[no-untyped-def]
    """Type a character at the end of `line` and delete it again, each edit timed from
    didChange to the publish of its version, 100 ms apart, until `done(samples so far)`."""
    samples: list[float] = []
    typed = False
    while not done(len(samples)):
        version += 1
        pos = {"line": line, "character": 0}
        end = {"line": line, "character": 1 if typed else 0}
        change = {"range": {"start": pos, "end": end}, "text": "" if typed else "#"}
        typed = not typed
        t = time.perf_counter()
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
        )
        if not client.wait_version(uri, version, timeout=60):
            raise RuntimeError(f"no diagnostics for version {version}")
        samples.append((time.perf_counter() - t) * 1000)
        time.sleep(0.1)
    return samples, version


def bench_latency(root: Path, runs: int) -> None:
    import bench_server

    print("\n== static diagnostics while a deep analysis runs (modeling_bert.py edits) ==")
    bert = bench_server.bert_file(None)
    (root / "pyproject.toml").write_text(
        '[[tool.onnxlint.targets]]\nname = "llama7b"\nfactory = "benchproj.llama:make"\n'
    )
    target_file = root / "benchproj" / "llama.py"
    (root / "modeling_bert.py").write_text(bert.read_text(encoding="utf-8"), encoding="utf-8")
    line = bench_server.edit_line_number(root / "modeling_bert.py") - 1
    idle_all: list[float] = []
    busy_all: list[float] = []
    llama_source = target_file.read_text()
    for run in range(runs):
        # An edit per run, so the result cache does not answer (the worker starts anew too).
        target_file.write_text(llama_source + f"\n# run {run + 1}\n")
        c = bench_server.StdioClient([sys.executable, "-m", "onnxlint", "server"])
        c.initialize(
            root,
            {"window": {"workDoneProgress": True}},
            {"settings": {"debounceMs": 0}},
        )
        bert_uri = c.open(root / "modeling_bert.py")
        c.open(target_file)
        c.wait_version(bert_uri, 0)
        idle, version = _edit_latencies(c, bert_uri, line, 0, lambda k: k >= 60)
        t0 = time.perf_counter()
        rid = c.send_request(
            "workspace/executeCommand",
            {
                "command": "onnxlint.analyzeExport",
                "arguments": [{"uri": target_file.as_uri(), "target": "llama7b"}],
            },
        )
        time.sleep(1.0)
        busy, version = _edit_latencies(
            c, bert_uri, line, version, lambda _k, c=c, rid=rid: rid in c.responses
        )
        wall = time.perf_counter() - t0
        status = (c.responses.get(rid) or {}).get("result", {})
        c.close()
        if not busy:
            print(f"  run {run + 1}: the analysis ended within a second: {status}")
            continue
        idle_all += idle
        busy_all += busy
        print(
            f"  run {run + 1}: idle p50 {statistics.median(idle):.1f} / p95 "
            f"{bench_server.p95(idle):.1f} ms ({len(idle)} edits); during the analysis "
            f"({wall:.0f} s, {status.get('status') if isinstance(status, dict) else status}) "
            f"p50 {statistics.median(busy):.1f} / p95 {bench_server.p95(busy):.1f} ms "
            f"({len(busy)} edits)"
        )
    if not busy_all:
        return
    ratio = bench_server.p95(busy_all) / bench_server.p95(idle_all)
    print(
        f"all runs: idle p95 {bench_server.p95(idle_all):.1f} ms, during analysis p95 "
        f"{bench_server.p95(busy_all):.1f} ms -> {ratio:.2f}x (target <= 1.3x: "
        f"{'met' if ratio <= 1.3 else 'not met'})"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("which", choices=("warm", "highresnet", "llama", "latency", "all"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ref", action="store_true", help="run the reference exporters too")
    parser.add_argument("--ref-runs", type=int, default=1)
    args = parser.parse_args()
    if args.which in ("highresnet", "all"):
        ensure("monai")
    if args.which in ("llama", "latency", "all"):
        ensure("transformers")
    if args.which == "latency":
        with tempfile.TemporaryDirectory() as tmp:
            bench_latency(write_project(Path(tmp)), args.runs)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        root = write_project(Path(tmp))
        t = time.perf_counter()
        with DeepAnalyzer() as a:
            a.start()
            cold = time.perf_counter() - t
            info = a.info
            print(
                f"worker: torch {info.get('torch')}, import {info.get('import_s')} s, "
                f"warm-up {info.get('warm_s')} s, zygote RSS {gb(info.get('rss'))}"
            )
            if args.which in ("warm", "all"):
                bench_warm(a, root, args.runs, cold)
            if args.which in ("highresnet", "all"):
                bench_highresnet(a, root, args.runs, args.ref, args.ref_runs)
            if args.which in ("llama", "all"):
                bench_llama(a, root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
