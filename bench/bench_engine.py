"""Engine benchmarks for issue 2: prints figures, never asserts.

    python bench/bench_engine.py [--runs 3] [--jobs 2] [--skip-torchfix] [--torchfix-sample 150]
    python bench/bench_engine.py --only-torchfix --torchfix-sample 0 --torchfix-runs 3  # all files

Corpus: transformers' `models/` and monai's `networks/` (fetched with `pip download` into
bench/corpus/ on first use). Measured side by side in one run:
  - libcst `parse_module` of every file with the same number of processes (the reference);
  - `onnxlint check --no-cache` cold, and warm (cache) re-runs; peak memory;
  - ruff `check --select ALL --no-cache` (the speed-of-light reference);
  - TorchFix in its own venv (it pins an old libcst) on a sample of files (or, with
    --torchfix-sample 0, all of them, copied flat), and onnxlint on the same files right
    before and right after each TorchFix run;
  - re-checking transformers' modeling_bert.py in-process after a one-line edit;
  - findings per 1,000 lines and the top rules by count.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from registry import pip_download

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
WHEELS = CORPUS / "wheels"
BERT = CORPUS / "transformers" / "models" / "bert" / "modeling_bert.py"


def fetch_corpus() -> list[Path]:
    if not (CORPUS / "transformers" / "models").is_dir():
        pip_download(WHEELS, "transformers", "monai")
        for whl in WHEELS.glob("*.whl"):
            with zipfile.ZipFile(whl) as z:
                for name in z.namelist():
                    if name.startswith(("transformers/models/", "monai/networks/")):
                        z.extract(name, CORPUS)
    files = sorted(CORPUS.glob("transformers/models/**/*.py")) + sorted(
        CORPUS.glob("monai/networks/**/*.py")
    )
    return files


def _parse_one(path: str) -> int:
    import libcst as cst

    text = Path(path).read_text(encoding="utf-8")
    try:
        cst.parse_module(text)
    except Exception:
        return 0
    return 1


def libcst_parse_all(files: list[Path], jobs: int) -> float:
    t = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(_parse_one, [str(f) for f in files], chunksize=16))
    return time.perf_counter() - t


def timed(
    cmd: list[str], cwd: Path | None = None
) -> tuple[float, subprocess.CompletedProcess[str], int]:
    """Wall time, the process, and peak RSS (KiB) of it and its children."""
    wrapper = [
        sys.executable,
        "-c",
        "import resource,subprocess,sys,json;"
        "p=subprocess.run(sys.argv[1:],capture_output=True,text=True);"
        "sys.stdout.write(p.stdout);sys.stderr.write(p.stderr);"
        "r=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss;"
        "open('/tmp/onnxlint_bench_rss','w').write(str(r));sys.exit(p.returncode)",
        *cmd,
    ]
    t = time.perf_counter()
    proc = subprocess.run(wrapper, capture_output=True, text=True, cwd=cwd)
    wall = time.perf_counter() - t
    rss = int(Path("/tmp/onnxlint_bench_rss").read_text() or 0)
    return wall, proc, rss


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def bench_edit(runs: int) -> dict[str, float]:
    from onnxlint.engine import Engine

    text = BERT.read_text()
    lines = text.splitlines(keepends=True)
    # A line inside a method body: the first `return` inside a forward.
    target = next(
        i
        for i, line in enumerate(lines)
        if line.strip().startswith("return") and line.startswith("        ")
    )
    engine = Engine()
    engine.check(str(BERT), text)
    samples = []
    for i in range(max(50, runs * 20)):
        indent = lines[target][: len(lines[target]) - len(lines[target].lstrip())]
        edited = "".join([*lines[:target], f"{indent}_tmp_{i} = {i}\n", *lines[target:]])
        t = time.perf_counter()
        engine.check(str(BERT), edited)
        samples.append((time.perf_counter() - t) * 1000)
    cold = []
    for _ in range(3):
        t = time.perf_counter()
        Engine().check(str(BERT), text)
        cold.append((time.perf_counter() - t) * 1000)
    samples.sort()
    return {
        "edit_median_ms": med(samples),
        "edit_p95_ms": samples[int(len(samples) * 0.95) - 1],
        "cold_file_ms": med(cold),
        "lines": float(len(lines)),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--skip-torchfix", action="store_true")
    ap.add_argument(
        "--torchfix-sample", type=int, default=150, help="files for TorchFix; 0: the whole corpus"
    )
    ap.add_argument("--torchfix-runs", type=int, default=0, help="default: --runs")
    ap.add_argument("--only-torchfix", action="store_true", help="just the TorchFix comparison")
    args = ap.parse_args()
    files = fetch_corpus()
    # An installed onnxlint has its bytecode (pip compiles it); a checkout run with
    # PYTHONDONTWRITEBYTECODE=1 would compile ~150 modules in every timed process.
    compileall.compile_dir(str(HERE.parent / "onnxlint"), quiet=1)
    if args.only_torchfix:
        bench_torchfix(files, args)
        return
    nlines = sum(f.read_text(encoding="utf-8").count("\n") for f in files)
    print(f"corpus: {len(files)} files, {nlines:,} lines; {os.cpu_count()} CPUs; jobs={args.jobs}")
    onnxlint = [sys.executable, "-m", "onnxlint"]
    # Interleave the measurements so machine load affects each the same way.
    parse_t, cold_t, cold_rss, warm_t, ruff_t = [], [], [], [], []
    ruff = shutil.which("ruff")
    findings: list[dict[str, object]] = []
    work = Path("/tmp/onnxlint_bench_work")
    for run in range(args.runs):
        parse_t.append(libcst_parse_all(files, args.jobs))
        wall, proc, rss = timed(
            [
                *onnxlint,
                "check",
                str(CORPUS / "transformers"),
                str(CORPUS / "monai"),
                "--no-cache",
                "--jobs",
                str(args.jobs),
                "--format",
                "json",
                "--exit-zero",
            ]
        )
        cold_t.append(wall)
        cold_rss.append(rss)
        if run == 0:
            findings = json.loads(proc.stdout or "[]")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        (work / "pyproject.toml").write_text("[tool.onnxlint]\n")
        cmd = [
            *onnxlint,
            "check",
            str(CORPUS / "transformers"),
            str(CORPUS / "monai"),
            "--jobs",
            str(args.jobs),
            "--quiet",
            "--exit-zero",
        ]
        timed(cmd, cwd=work)  # fills the cache
        warm_t.append(timed(cmd, cwd=work)[0])
        if ruff:
            ruff_t.append(
                timed(
                    [
                        ruff,
                        "check",
                        "--select",
                        "ALL",
                        "--no-cache",
                        "--exit-zero",
                        "--quiet",
                        str(CORPUS / "transformers"),
                        str(CORPUS / "monai"),
                    ]
                )[0]
            )
    print(f"\n== cold full check of the corpus (median of {args.runs} runs) ==")
    print(
        f"libcst parse only ({args.jobs} procs): {med(parse_t):7.1f} s   "
        f"runs {[round(x, 1) for x in parse_t]}"
    )
    print(
        f"onnxlint check --no-cache:      {med(cold_t):7.1f} s   "
        f"runs {[round(x, 1) for x in cold_t]}"
    )
    print(f"ratio onnxlint / libcst parse:  {med(cold_t) / med(parse_t):7.2f}   (target <= 1.1)")
    if ruff_t:
        print(
            f"ruff --select ALL --no-cache:   {med(ruff_t):7.1f} s   (speed-of-light "
            f"reference; onnxlint/ruff = {med(cold_t) / med(ruff_t):.1f})"
        )
    print(f"warm re-run (cache):            {med(warm_t):7.2f} s   (target <= 1.5 s)")
    print(
        f"peak RSS of onnxlint (largest process): {med(cold_rss) / 1024:.0f} MB (target <= 400 MB)"
    )

    edit = bench_edit(args.runs)
    print(f"\n== modeling_bert.py ({edit['lines']} lines), in-process ==")
    print(f"cold check of the file: {edit['cold_file_ms']:.0f} ms")
    print(
        f"re-check after a one-line edit in a method: median {edit['edit_median_ms']:.1f} ms, "
        f"p95 {edit['edit_p95_ms']:.1f} ms (target median <= 60 ms)"
    )

    print("\n== findings on the corpus ==")
    codes = Counter(str(f["code"]) for f in findings)
    print(f"{len(findings)} findings, {1000 * len(findings) / nlines:.2f} per 1,000 lines")
    for code, n in codes.most_common(15):
        print(f"  {code}: {n}")

    if not args.skip_torchfix:
        bench_torchfix(files, args)


def bench_torchfix(files: list[Path], args: argparse.Namespace) -> None:
    venv = Path("/tmp/onnxlint_torchfix_venv")
    tf = venv / "bin" / "torchfix"
    if not tf.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "torchfix"], check=True)
    rng = random.Random(0)
    size = args.torchfix_sample or len(files)
    sample = rng.sample(files, min(size, len(files)))
    sample_dir = Path("/tmp/onnxlint_torchfix_sample")
    shutil.rmtree(sample_dir, ignore_errors=True)
    for i, f in enumerate(sample):
        dest = sample_dir / f"f{i:04d}_{f.name}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dest)
    slines = sum(f.read_text(encoding="utf-8").count("\n") for f in sample)
    onnxlint = [
        sys.executable,
        "-m",
        "onnxlint",
        "check",
        str(sample_dir),
        "--no-cache",
        "--jobs",
        str(args.jobs),
        "--quiet",
        "--exit-zero",
    ]
    torchfix = [str(tf), "-j", str(args.jobs), "--select", "ALL", str(sample_dir)]
    # onnxlint runs right before and right after TorchFix: the machine is measurably slower
    # after TorchFix's minutes at full load, so neither side gets only the fresh machine.
    tf_t, before, after = [], [], []
    for i in range(args.torchfix_runs or args.runs):
        before.append(timed(onnxlint)[0])
        tf_t.append(timed(torchfix)[0])
        after.append(timed(onnxlint)[0])
        print(
            f"  run {i + 1}: onnxlint {before[-1]:.1f} s, TorchFix {tf_t[-1]:.1f} s, "
            f"onnxlint {after[-1]:.1f} s",
            file=sys.stderr,
        )
    ol_t = before + after
    print(
        f"\n== TorchFix (own venv) vs onnxlint on a {len(sample)}-file sample ({slines:,} lines) =="
    )
    print(
        f"torchfix -j {args.jobs} --select ALL: {med(tf_t):.1f} s (runs: "
        + ", ".join(f"{t:.1f}" for t in tf_t)
        + f"); onnxlint: {med(ol_t):.1f} s (before/after each TorchFix run: "
        + ", ".join(f"{a:.1f}/{b:.1f}" for a, b in zip(before, after, strict=True))
        + ")"
    )
    print(
        f"onnxlint is {med(tf_t) / med(ol_t):.1f}x faster (target >= 20x); "
        f"{med(tf_t) / med(after):.1f}x counting only the runs right after TorchFix"
    )


if __name__ == "__main__":
    main()
