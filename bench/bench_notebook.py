"""Notebook benchmarks for issue 16: prints figures, never asserts.

    python bench/bench_notebook.py [--runs 5] [--edits 40] [--gap-ms 60]

A generated notebook of 200 code cells, 4,000 lines (a model class per cell, a cell magic
line every 20 cells and a shell escape and a line magic every 10, two cells that export a
class with a dynamic batch: `--exports` changes how many), and the same code as one `.py`
file (each IPython line as the `pass` the notebook's masking turns it into), side by side in
each run, so load affects both alike:

- check: `Engine().check` of the file's text in this process, a fresh engine each time (cold:
  every block parsed), and `onnxlint check --no-cache FILE` as a subprocess (wall time, with
  the interpreter's start-up); medians over runs and the notebook/.py ratio (target <= 1.2x);
- a one-cell edit in the language server (`python -m onnxlint server` over stdio, notebook
  sync): a line typed into the forward of cell 100 and deleted again, each edit waiting for
  the edited cell's diagnostics; p50 and p95 over all edits (target p50 <= 30 ms), next to
  the same edit in the `.py` file opened as a text document. Each edit is sent `--gap-ms`
  after the previous one's diagnostics arrived, as keystrokes come: edits closer than the
  server's BURST_MS (30 ms) to the previous one are a burst (a paste, a macro), checked
  once it pauses, so back to back (`--gap-ms 0`) every other edit waits those 30 ms too.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_server import StdioClient  # noqa: E402

CELLS = 200
LINES_PER_CELL = 20
EDIT_CELL = 100
EDIT_LINE = "        probe = x.shape[0]\n"


EXPORT_EVERY = 100  # cells 99 and 199 export (see --exports)


def cell_source(i: int) -> str:
    """Cell `i`: 20 lines, a model class; some export it; some have IPython lines."""
    head = ["%time import torch\n"] if i % 20 == 0 else ["import torch\n"]
    lines = [
        *head,
        "import torch.nn as nn\n",
        f"class Block{i}(nn.Module):\n",
        "    def __init__(self, dim=8):\n",
        "        super().__init__()\n",
        "        self.fc = nn.Linear(dim, dim)\n",
        "        self.norm = nn.LayerNorm(dim)\n",
        "\n",
        "    def forward(self, x):\n",
        "        y = self.norm(self.fc(x))\n",
        "        if y.sum() > 0:\n" if i % 7 == 0 else "        y = torch.relu(y)\n",
        "            y = y * 2\n" if i % 7 == 0 else "        y = y * 2\n",
        "        n = int(x.shape[0])\n" if i % 5 == 0 else "        n = x.shape[0]\n",
        "        return y.reshape(n, -1)\n",
        "\n",
    ]
    if i % EXPORT_EVERY == EXPORT_EVERY - 1:
        lines += [
            f"model = Block{i}().eval()\n",
            "x = torch.randn(2, 8)\n",
            f"torch.onnx.export(model, (x,), 'b{i}.onnx',\n",
            "                  dynamic_shapes={'x': {0: torch.export.Dim('batch')}})\n",
        ]
    elif i % 10 == 4:
        lines += [
            "!nvidia-smi\n",
            f"print(Block{i}())\n",
            "%matplotlib inline\n",
            f"blocks = [Block{i}() for _ in range(2)]\n",
        ]
    else:
        lines += [f"b = Block{i}()\n", "print(b)\n", "b.eval()\n", "del b\n"]
    lines = lines[:LINES_PER_CELL]
    lines += ["\n"] * (LINES_PER_CELL - len(lines))
    lines[-1] = lines[-1].rstrip("\n")  # as Jupyter saves a cell: no newline at its end
    return "".join(lines)


def notebook_text(sources: list[str]) -> str:
    cells = [
        {
            "cell_type": "code",
            "execution_count": i + 1,
            "id": f"c{i}",
            "metadata": {},
            "outputs": [],
            "source": src.splitlines(True),
        }
        for i, src in enumerate(sources)
    ]
    nb = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(nb, indent=1) + "\n"


def py_text(sources: list[str]) -> str:
    """The same code as one module: each IPython line as the `pass` it is masked to."""
    out = []
    for src in sources:
        for line in src.splitlines():
            out.append("pass" if line.startswith(("%", "!")) else line)
    return "\n".join(out) + "\n"


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))] if xs else float("nan")


# ---------------------------------------------------------------------------- check


def engine_check_ms(path: Path, text: str) -> tuple[float, int]:
    from onnxlint.core.config import Config
    from onnxlint.engine import Engine

    engine = Engine()
    t = time.perf_counter()
    found = engine.check(str(path), text, Config())
    return (time.perf_counter() - t) * 1000, len(found)


def cli_check_s(path: Path) -> float:
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "onnxlint", "check", "--no-cache", "-q", str(path)],
        capture_output=True,
        check=False,
    )
    return time.perf_counter() - t


# ---------------------------------------------------------------------------- server


class Client(StdioClient):
    """Keeps the time and version of every publish per URI."""

    def __init__(self, cmd: list[str]) -> None:
        self.log: list[tuple[float, str, Any]] = []
        super().__init__(cmd)

    def on_publish(self, params: dict[str, Any]) -> None:
        self.log.append((time.perf_counter(), params["uri"], params.get("version")))

    def wait(self, uri: str, version: int, timeout: float = 60) -> float:
        def found() -> float | None:
            for t, u, v in reversed(self.log):
                if u == uri and v == version:
                    return t
            return None

        with self.cv:
            self.cv.wait_for(lambda: found() is not None, timeout=timeout)
        t = found()
        if t is None:
            raise SystemExit(f"no publish for {uri} v{version} in {timeout} s")
        return t


CAPS: dict[str, Any] = {
    "textDocument": {"publishDiagnostics": {"versionSupport": True}},
    "notebookDocument": {"synchronization": {"dynamicRegistration": False}},
}
INIT = {"settings": {"debounceMs": 0}, "globalSettings": {"debounceMs": 0}}


def edit_ranges(line: int, n: int) -> list[dict[str, Any]]:
    """Alternately insert EDIT_LINE before `line` and delete it again."""
    out = []
    for k in range(n):
        if k % 2 == 0:
            pos = {"line": line, "character": 0}
            out.append({"range": {"start": pos, "end": pos}, "text": EDIT_LINE})
        else:
            out.append(
                {
                    "range": {
                        "start": {"line": line, "character": 0},
                        "end": {"line": line + 1, "character": 0},
                    },
                    "text": "",
                }
            )
    return out


def server_notebook_edits(
    folder: Path, sources: list[str], edits: int, gap_ms: float
) -> list[float]:
    c = Client([sys.executable, "-m", "onnxlint", "server"])
    try:
        c.initialize(folder, CAPS, INIT)
        nb_uri = (folder / "nb.ipynb").resolve().as_uri()
        cells = [
            f"vscode-notebook-cell:{(folder / 'nb.ipynb').resolve()}#C{i}"
            for i in range(len(sources))
        ]
        c.notify(
            "notebookDocument/didOpen",
            {
                "notebookDocument": {
                    "uri": nb_uri,
                    "notebookType": "jupyter-notebook",
                    "version": 0,
                    "cells": [{"kind": 2, "document": u} for u in cells],
                },
                "cellTextDocuments": [
                    {"uri": u, "languageId": "python", "version": 0, "text": s}
                    for u, s in zip(cells, sources, strict=True)
                ],
            },
        )
        target = cells[EDIT_CELL]
        c.wait(target, 0)
        time.sleep(2.0)  # the project model is built after the first diagnostics
        out = []
        for k, change in enumerate(edit_ranges(9, edits), start=1):
            time.sleep(gap_ms / 1000)
            t = time.perf_counter()
            c.notify(
                "notebookDocument/didChange",
                {
                    "notebookDocument": {"uri": nb_uri, "version": k},
                    "change": {
                        "cells": {
                            "textContent": [
                                {"document": {"uri": target, "version": k}, "changes": [change]}
                            ]
                        }
                    },
                },
            )
            out.append((c.wait(target, k) - t) * 1000)
        return out
    finally:
        c.close()


def server_py_edits(py: Path, edits: int, gap_ms: float) -> list[float]:
    c = Client([sys.executable, "-m", "onnxlint", "server"])
    try:
        c.initialize(py.parent, CAPS, INIT)
        uri = c.open(py)
        c.wait(uri, 0)
        time.sleep(2.0)
        out = []
        line = EDIT_CELL * LINES_PER_CELL + 9
        for k, change in enumerate(edit_ranges(line, edits), start=1):
            time.sleep(gap_ms / 1000)
            t = time.perf_counter()
            c.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": k}, "contentChanges": [change]},
            )
            out.append((c.wait(uri, k) - t) * 1000)
        return out
    finally:
        c.close()


# ---------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--edits", type=int, default=40, help="server edits per run")
    ap.add_argument("--gap-ms", type=float, default=60, help="pause before each edit")
    ap.add_argument("--exports", type=int, default=2, help="cells with an export call")
    args = ap.parse_args(argv)
    global EXPORT_EVERY
    EXPORT_EVERY = max(1, CELLS // max(1, args.exports))
    sources = [cell_source(i) for i in range(CELLS)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "pyproject.toml").write_text("[tool.onnxlint]\n")
        nb, py = folder / "nb.ipynb", folder / "same.py"
        nb.write_text(notebook_text(sources))
        py.write_text(py_text(sources))
        lines = sum(s.count("\n") + 1 for s in sources)
        exports = sum("onnx.export" in s for s in sources)
        print(
            f"notebook: {CELLS} code cells, {lines} lines, {exports} cells with an export; "
            "the same code as one .py"
        )
        eng_nb: list[float] = []
        eng_py: list[float] = []
        cli_nb: list[float] = []
        cli_py: list[float] = []
        edits_nb: list[float] = []
        edits_py: list[float] = []
        counts: set[tuple[int, int]] = set()
        for run in range(args.runs):
            t_py, n_py = engine_check_ms(py, py.read_text())
            t_nb, n_nb = engine_check_ms(nb, nb.read_text())
            eng_py.append(t_py)
            eng_nb.append(t_nb)
            counts.add((n_nb, n_py))
            cli_py.append(cli_check_s(py))
            cli_nb.append(cli_check_s(nb))
            edits_py += server_py_edits(py, args.edits, args.gap_ms)
            edits_nb += server_notebook_edits(folder, sources, args.edits, args.gap_ms)
            print(
                f"  run {run + 1}: check in-process .py {t_py:.0f} ms, .ipynb {t_nb:.0f} ms; "
                f"CLI .py {cli_py[-1]:.2f} s, .ipynb {cli_nb[-1]:.2f} s"
            )
        print(f"findings (.ipynb, .py) per run: {sorted(counts)}")
        print(f"{'':38}{'.py':>10}{'.ipynb':>10}{'ratio':>8}")
        rows = [
            ("check in-process (cold engine), ms", median(eng_py), median(eng_nb)),
            ("onnxlint check --no-cache (wall), s", median(cli_py), median(cli_nb)),
            ("server one-cell edit p50, ms", median(edits_py), median(edits_nb)),
            ("server one-cell edit p95, ms", p95(edits_py), p95(edits_nb)),
        ]
        for name, ref, val in rows:
            digits = 2 if ref < 10 else 0
            print(f"{name:38}{ref:>10.{digits}f}{val:>10.{digits}f}{val / ref:>8.2f}")
        print(
            f"(medians over {args.runs} runs; edits: {len(edits_nb)} per file, each "
            f"{args.gap_ms:g} ms after the last diagnostics; "
            "targets: check ratio <= 1.2, notebook edit p50 <= 30 ms)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
