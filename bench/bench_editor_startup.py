"""VS Code start-up: from opening a Python file in a fresh window to its first squiggles.

    python bench/bench_editor_startup.py [--runs 3] [--checkout OTHER_DIR ...] [--deep]

Runs the extension's end-to-end harness (`extension/test/e2e/run.ts`, scenario `static`) in
code-server with headless Chromium, `--runs` times, each in a fresh window with a fresh user
profile. The page records when the file is asked to open and when its first squiggle is drawn;
the extension logs when it was activated, when the interpreter was resolved, when the server
answered `initialize` and when the first diagnostics arrived (`timing-json` in its output
channel). Prints each phase as milliseconds after the file was opened, per run and the median.
With `--checkout DIR` (repeatable; a `git worktree` of another commit, say), the same runs are
made with that checkout's extension and server too (driven by this checkout's harness),
interleaved with this one's, so that load changes hit both alike: before/after side by side in
one run. The extension host's own log says when it started, when it activated onnxlint (and
whether the file's open or the window woke it) and when the window's eager activations ended.
The server runs with Python's bytecode cache, as from a pip install: each checkout's onnxlint
is compiled first and
`PYTHONDONTWRITEBYTECODE` is removed from the environment (`--dont-write-bytecode` keeps it set:
every onnxlint module is then compiled from source at each server start).
With `--deep`, each run also times the first deep analysis after opening the export script
(scenario `deepstart`, in a fresh window of its own, on a fresh copy of the examples so nothing is
cached): when the server says the deep worker it starts in the background is ready, then from the
click on the legacy export call's lens to the analysis's end notification.
Needs code-server in .e2e/ and Chromium (`.ci/extension.sh --setup`). Prints, never asserts.
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
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DONT_WRITE_BYTECODE = False
PHASES = [
    ("exthost", "extension host started (its log)"),
    ("eager", "eager activations done (its log)"),
    ("activating", "extension host activates onnxlint (its log)"),
    ("activated", "extension activated"),
    ("interpreter", "client loaded, interpreter resolved"),
    ("initialized", "initialize answered (server spawned at activation)"),
    ("diagnostics", "first diagnostics received"),
    ("squiggles", "first squiggles drawn"),
    ("deep_lens", "export script: its lens shown"),
    ("deep_workerReady", "export script: deep worker ready (background)"),
    ("deep_analysis", "first deep analysis: lens click to its end"),
]


def npm(repo: Path, *args: str) -> None:
    subprocess.run(["npm", "run", "--silent", *args], cwd=repo, check=True, capture_output=True)


def one_run(repo: Path, artifacts: Path, scenario: str = "static") -> dict[str, int]:
    # This checkout's harness drives every checkout's extension: the same measurement for all.
    command = [
        shutil.which("node") or "node",
        str(REPO / "out" / "e2e" / "run.js"),
        "--repo",
        str(repo),
        "--e2e-dir",
        os.environ.get("ONNXLINT_E2E_DIR", str(REPO / ".e2e")),
        "--vsix",
        str(repo / "onnxlint.vsix"),
        "--python",
        sys.executable,
        "--artifacts",
        str(artifacts),
        "--only",
        scenario,
    ]
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if DONT_WRITE_BYTECODE:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    run = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    if scenario == "deepstart":
        deep_file = artifacts / "deep-timing.json"
        if not deep_file.exists():
            raise SystemExit(f"the e2e run wrote no deep-timing.json:\n{run.stdout}\n{run.stderr}")
        found: dict[str, int] = json.loads(deep_file.read_text())
        return {f"deep_{k}": v for k, v in found.items()}
    timing_file = artifacts / "timing.json"
    if not timing_file.exists():
        raise SystemExit(f"the e2e run wrote no timing.json:\n{run.stdout}\n{run.stderr}")
    marks: dict[str, int | str] = json.loads(timing_file.read_text())
    opened = int(marks["opened"])
    found = {name: int(marks[name]) - opened for name, _ in PHASES if name in marks}
    # which activation event woke the extension: 1 for the open of the file, 0 for the window's
    found["by_open"] = int(str(marks.get("activationEvent", "")).startswith("onLanguage"))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--checkout", action="append", default=[], help="a checkout to compare")
    parser.add_argument("--dont-write-bytecode", action="store_true")
    parser.add_argument("--deep", action="store_true", help="also time the first deep analysis")
    args = parser.parse_args()
    global DONT_WRITE_BYTECODE
    DONT_WRITE_BYTECODE = args.dont_write_bytecode
    repos = {"this": REPO, **{Path(d).resolve().name: Path(d).resolve() for d in args.checkout}}
    npm(REPO, "compile:e2e")
    for repo in repos.values():
        npm(repo, "package")
        if not DONT_WRITE_BYTECODE:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(repo / "onnxlint")])
    runs: dict[str, list[dict[str, int]]] = {name: [] for name in repos}
    for i in range(args.runs):
        for name, repo in repos.items():
            with tempfile.TemporaryDirectory(prefix="onnxlint-startup-") as tmp:
                runs[name].append(one_run(repo, Path(tmp)))
            if args.deep:
                with tempfile.TemporaryDirectory(prefix="onnxlint-deepstart-") as tmp:
                    runs[name][-1].update(one_run(repo, Path(tmp), "deepstart"))
            shown = ", ".join(
                f"{k} {v:+} ms" for k, v in runs[name][-1].items() if k != "by_open"
            )
            print(f"run {i + 1} {name}: {shown}", flush=True)
    for name, results in runs.items():
        print()
        print(f"{name}: ms after the file was opened (median of {len(results)} runs):")
        for phase, words in PHASES:
            values = [r[phase] for r in results if phase in r]
            if values:
                print(f"  {words:<52} {statistics.median(values):>7.0f}")
        opened_first = sum(r.get("by_open", 0) for r in results)
        print(
            f"  activated by the file's open (not with the window) in {opened_first} "
            f"of {len(results)} runs"
        )
        squiggles = [r["squiggles"] for r in results if "squiggles" in r]
        print(f"  first squiggles, each run: {', '.join(str(v) for v in squiggles)}")
    print()
    print("(negative: before the file was opened; the extension activates with the window when")
    print(" the workspace holds Python files, so the server is ready when the first file opens;")
    print(" the deep analysis's figures are from a window of their own)")


if __name__ == "__main__":
    main()
