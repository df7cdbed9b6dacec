"""Benchmarks of the deep analysis (prints figures; not a test).

    python bench/bench_deep.py warm                 # warm re-analysis after an edit (<= 3 s)
    python bench/bench_deep.py highresnet [--ref]   # peak memory vs the exporters (<= 0.15 x TS)
    python bench/bench_deep.py llama                # LLaMA-7B-shaped: <= 1 GB, <= 150 s warm
    python bench/bench_deep.py latency              # static edits while an analysis runs
    python bench/bench_deep.py memory --runs 3 --ref-runs 2   # issue 17: predicted run peak
        # vs the measured no-grad forward and TorchScript exporter (HighResNet and three
        # models of other shapes), then the LLaMA-7B-shaped decoder's weights_bytes
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
    "benchproj/shapes.py": """
        import torch
        from monai.networks.nets import DenseNet121


        def encoder():
            layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True)
            model = torch.nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)
            return model.eval(), (torch.randn(8, 1024, 512),)


        def cnn():
            model = DenseNet121(spatial_dims=2, in_channels=3, out_channels=10)
            return model.eval(), (torch.randn(32, 3, 224, 224),)


        class MoE(torch.nn.Module):
            # dense mixture of experts (every expert runs; top-2 gates weight them)
            def __init__(self, dim=1024, hidden=4096, experts=8):
                super().__init__()
                self.router = torch.nn.Linear(dim, experts)
                self.up = torch.nn.ModuleList(torch.nn.Linear(dim, hidden) for _ in range(experts))
                self.down = torch.nn.ModuleList(
                    torch.nn.Linear(hidden, dim) for _ in range(experts)
                )

            def forward(self, x):
                gates = self.router(x).softmax(-1)
                top, idx = gates.topk(2, dim=-1)
                weights = torch.zeros_like(gates).scatter(-1, idx, top)
                outs = torch.stack(
                    [d(torch.nn.functional.gelu(u(x))) for u, d in zip(self.up, self.down)], -1
                )
                return (outs * weights.unsqueeze(-2)).sum(-1)


        def moe():
            return MoE().eval(), (torch.randn(4096, 1024),)
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


RUN_REFERENCE = """
import resource, sys, os, tempfile, time
sys.path.insert(0, {root!r})
sys.path.insert(0, {repo!r})
import torch, monai
if {what!r} == "baseline":
    print("wall", 0.0)
    raise SystemExit(0)
from benchproj.{module} import {func} as make
model, args = make()
out = os.path.join(tempfile.mkdtemp(), "m.onnx")
t = time.perf_counter()
with torch.no_grad():
    if {what!r} == "forward":
        # the same counter as the analysis, here on real tensors
        from onnxlint.deep.worker.memory import RunMemory
        counter = RunMemory()
        counter.track_all([*model.parameters(), *model.buffers(), *args])
        with counter:
            model(*args)
        print("tensor_peak", counter.peak)
    else:
        torch.onnx.export(model, args, out, dynamo=False)
print("wall", time.perf_counter() - t)
"""


def run_measured(root: Path, factory: str, what: str) -> tuple[float, float, float]:
    """Peak RSS (bytes), wall (s) and, for "forward", the tensor peak counted on the real
    tensors, of one process: `import torch, monai` alone ("baseline"), a no-grad forward
    with real weights ("forward"), or the TorchScript exporter ("torchscript")."""
    module, _, func = factory.partition(":")
    code = RUN_REFERENCE.format(
        root=str(root), repo=str(REPO), module=module.rpartition(".")[2], func=func, what=what
    )
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=err, text=True
        )
        start = time.perf_counter()
        out = proc.stdout.read() if proc.stdout else ""
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        err.seek(0)
        tail = [ln for ln in err.read().splitlines() if ln.strip()][-1:]
    if os.waitstatus_to_exitcode(status) != 0:
        # the exporter ran the model before it failed: its peak still counts
        why = tail[0][:160] if tail else f"exit {os.waitstatus_to_exitcode(status)}"
        print(f"    ({factory} {what} failed: {why})")
    fields = {  # the exporter prints its graph on stdout too: only our two lines
        x.split()[0]: float(x.split()[1])
        for x in out.splitlines()
        if x.startswith(("wall ", "tensor_peak ")) and len(x.split()) == 2
    }
    return usage.ru_maxrss * 1024.0, fields.get("wall", wall), fields.get("tensor_peak", 0.0)


MEMORY_MODELS = [
    # (label, factory): shapes whose memory goes different ways (3D convs, attention,
    # concatenations, wide expert MLPs)
    ("HighResNet 3D (30, 1, 48, 48, 48)", "benchproj.highres:make"),
    ("Transformer encoder 6x512, (8, 1024, 512)", "benchproj.shapes:encoder"),
    ("DenseNet121 2D, (32, 3, 224, 224)", "benchproj.shapes:cnn"),
    ("dense MoE 8 experts 1024->4096, (4096, 1024)", "benchproj.shapes:moe"),
]


def bench_memory(a: DeepAnalyzer, root: Path, runs: int, ref_runs: int) -> None:
    """Predicted `run_peak_bytes` against measured peaks (each minus the import baseline)."""
    print("\n== predicted run peak (fake tensors) vs measured, minus `import torch, monai` ==")
    base = [run_measured(root, "benchproj.highres:make", "baseline")[0] for _ in range(runs)]
    baseline = statistics.median(base)
    print(f"baseline `import torch, monai`: {gb10(baseline)} (median of {runs})")
    header = (
        f"{'model':46} {'weights':>9} {'predicted':>10} {'real tensors':>12} {'forward':>9} "
        f"{'pred/fwd':>8} {'TS export':>10} {'pred/TS':>8} {'analysis':>9}"
    )
    print(header)
    for label, factory in MEMORY_MODELS:
        target = Target(label, factory, root, timeout=1800)
        results = [analyze(a, target) for _ in range(runs)]
        mem = results[-1].data.get("memory") or {}
        predicted = float(mem.get("run_peak_bytes") or 0)
        analysis = statistics.median(
            float((r.data.get("memory") or {}).get("analysis_peak_bytes") or 0) for r in results
        )
        fwd = [run_measured(root, factory, "forward") for _ in range(runs)]
        fwd_peak = statistics.median(f[0] for f in fwd) - baseline
        ts = [run_measured(root, factory, "torchscript") for _ in range(ref_runs)]
        ts_peak = statistics.median(t[0] for t in ts) - baseline
        real_tensors = statistics.median(f[2] for f in fwd)
        print(
            f"{label:46} {gb10(mem.get('weights_bytes')):>9} {gb10(predicted):>10} "
            f"{gb10(real_tensors):>12} {gb10(fwd_peak):>9} {predicted / fwd_peak:>8.2f} "
            f"{gb10(ts_peak):>10} {predicted / ts_peak:>8.2f} {gb10(analysis):>9}"
        )
        at = mem.get("run_peak_op") or {}
        line = f" ({Path(str(at['file'])).name}:{at['line']})" if at.get("file") else ""
        flagged = " [flagged under-counted]" if mem.get("uncounted_kernels") else ""
        print(
            f"    peak at {at.get('op')}{line}{flagged}; "
            f"forward {statistics.median(f[1] for f in fwd):.1f} s, TorchScript export "
            f"{statistics.median(t[1] for t in ts):.1f} s, analysis "
            f"{statistics.median(r.wall for r in results):.1f} s "
            f"(memory phase {results[-1].phases.get('memory', 0):.2f} s)"
        )
    print(
        "predicted: run_peak_bytes on fake tensors; real tensors: the same counter in the "
        "forward process; forward / TS export: process RSS high-water (ru_maxrss) minus the "
        "baseline; analysis: analysis_peak_bytes (worker RSS, torch included); medians of "
        "--runs (TorchScript exporter: --ref-runs)"
    )


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


def gb10(n: float | None) -> str:
    """Decimal units (GB = 10^9 bytes), as onnxlint's memory figures."""
    from onnxlint.deep.result import gb as decimal

    return "?" if not n else decimal(n)


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
    mem = res.data.get("memory") or {}
    print(
        f"parameters {model.get('params', 0):,}; weights_bytes {mem.get('weights_bytes', 0):,} "
        f"= {(mem.get('weights_bytes') or 0) / 1e9:.2f} GB (10^9); predicted run peak "
        f"{(mem.get('run_peak_bytes') or 0) / 1e9:.2f} GB; analysis_peak_bytes "
        f"{(mem.get('analysis_peak_bytes') or 0) / 1e9:.2f} GB (target < 1 GB: "
        f"{'OK' if (mem.get('analysis_peak_bytes') or 2**31) < 1e9 else 'MISSED'})"
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
    parser.add_argument(
        "which", choices=("warm", "highresnet", "llama", "latency", "memory", "all")
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ref", action="store_true", help="run the reference exporters too")
    parser.add_argument("--ref-runs", type=int, default=1)
    args = parser.parse_args()
    if args.which in ("highresnet", "memory", "all"):
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
            if args.which in ("memory", "all"):
                bench_memory(a, root, args.runs, args.ref_runs)
            if args.which in ("llama", "memory", "all"):
                bench_llama(a, root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
