"""VS Code start-up: from opening a Python file in a fresh window to its first squiggles.

    python bench/bench_editor_startup.py [--runs 3]

Runs the extension's end-to-end harness (`extension/test/e2e/run.ts`, scenario `static`) in
code-server with headless Chromium, `--runs` times, each in a fresh window with a fresh user
profile. The page records when the file is asked to open and when its first squiggle is drawn;
the extension logs when it was activated, when the interpreter was resolved, when the server
answered `initialize` and when the first diagnostics arrived (`timing-json` in its output
channel). Prints each phase as milliseconds after the file was opened, per run and the median.
Needs code-server in .e2e/ and Chromium (`.ci/extension.sh --setup`). Prints, never asserts.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PHASES = [
    ("activated", "extension activated"),
    ("interpreter", "client loaded, interpreter resolved"),
    ("initialized", "initialize answered (server spawned at activation)"),
    ("diagnostics", "first diagnostics received"),
    ("squiggles", "first squiggles drawn"),
]


def npm(*args: str) -> None:
    subprocess.run(["npm", "run", "--silent", *args], cwd=REPO, check=True, capture_output=True)


def one_run(artifacts: Path) -> dict[str, int]:
    command = [
        shutil.which("node") or "node",
        str(REPO / "out" / "e2e" / "run.js"),
        "--repo",
        str(REPO),
        "--vsix",
        str(REPO / "onnxlint.vsix"),
        "--python",
        sys.executable,
        "--artifacts",
        str(artifacts),
        "--only",
        "static",
    ]
    run = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    timing_file = artifacts / "timing.json"
    if not timing_file.exists():
        raise SystemExit(f"the e2e run wrote no timing.json:\n{run.stdout}\n{run.stderr}")
    marks: dict[str, int] = json.loads(timing_file.read_text())
    opened = marks["opened"]
    return {name: marks[name] - opened for name, _ in PHASES if name in marks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    npm("package")
    npm("compile:e2e")
    runs = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="onnxlint-startup-") as tmp:
            runs.append(one_run(Path(tmp)))
        print(f"run {i + 1}: " + ", ".join(f"{k} +{v} ms" for k, v in runs[-1].items()))
    print()
    print(f"ms after the file was opened (median of {len(runs)} runs):")
    for name, words in PHASES:
        values = [r[name] for r in runs if name in r]
        if values:
            print(f"  {words:<52} {statistics.median(values):>7.0f}")
    print("(negative: before the file was opened; the extension activates with the window when")
    print(" the workspace holds Python files, so the server is ready when the first file opens)")


if __name__ == "__main__":
    main()
