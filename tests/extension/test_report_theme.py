"""Issue 27, item 1: the deep-analysis report reads well in a dark VS Code theme, and as a file.

The report's HTML (a real `to_html` of a result with findings, notes, code excerpts, tables and the
memory plots) is rendered by headless Chromium as VS Code's webview shows it (the theme's
`--vscode-*` variables on `<html>`, its default body styles) and as a browser shows the file (light
and dark colour schemes); every piece of text must stand out from the background it is drawn on.
The e2e reads the same figures back from the real webview in code-server (scenario `deep`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from onnxlint.deep import report
from onnxlint.deep.result import DeepResult, from_worker
from onnxlint.deep.targets import Target

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "report-theme"
MB = 1_000_000

# VS Code's "Default Dark Modern" theme (the default dark theme), as its webviews get it.
DARK_MODERN = {
    "--vscode-editor-background": "#1f1f1f",
    "--vscode-editor-foreground": "#cccccc",
    "--vscode-descriptionForeground": "#9d9d9d",
    "--vscode-textLink-foreground": "#4daafc",
    "--vscode-textCodeBlock-background": "#2b2b2b",
    "--vscode-textPreformat-foreground": "#d0d0d0",
    "--vscode-panel-border": "#2b2b2b",
    "--vscode-errorForeground": "#f85149",
    "--vscode-editorWarning-foreground": "#cca700",
    "--vscode-editorInfo-foreground": "#3794ff",
    "--vscode-testing-iconPassed": "#73c991",
    "--vscode-editor-findMatchHighlightBackground": "#ea5c0055",
    "--vscode-font-family": "system-ui, sans-serif",
}

MODEL = """import torch


class Net(torch.nn.Module):
    def forward(self, x):
        n = x.shape[0]
        if x.sum() > 0:
            return x.view(2, -1)
        return x
"""


def _result(root: Path) -> DeepResult:
    (root / "model.py").write_text(MODEL)
    target = Target(name="net", factory="model:make", root=root)
    where = {"file": str(root / "model.py"), "line": 7}
    findings = [
        {"kind": "graph-break", "message": "graph break: `if x.sum() > 0:`", **where},
        {
            "kind": "data-dependent-guard",
            "message": "torch.export failed: GuardOnDataDependentSymNode: u0",
            **where,
        },
        {"kind": "unsupported-aten-op", "message": "`aten.cdist` has no ONNX translation", **where},
    ]
    sweep = {
        "sizes": [f"b={b}" for b in (1, 2, 4, 8, 16, 32, 64, 128)],
        "runs": {
            name: {"pass1": [(100 + 3 * i) * MB for i in range(8)], "pass2": [124 * MB] * 8}
            for name in ("default", "lean")
        },
        "verdict": {
            name: {"high_water": 124_000_000, "second_pass_growth": 0, "leak": False}
            for name in ("default", "lean")
        },
    }
    memory = {
        "weights_bytes": 90_000,
        "weights_dtype": "float32",
        "run_peak_bytes": 712_000,
        "run_peak_op": {"op": "aten.relu.default", **where},
        "analysis_peak_bytes": 371_000_000,
        "machine_bytes": 24 * 2**30,
        "ort_sweep": sweep,
    }
    payload: dict[str, Any] = {
        "findings": findings,
        "phases": {"export": 0.5},
        "skipped": {},
        "memory": memory,
    }
    end = {"status": "ok", "wall": 1.0, "peak_rss": 300 * 2**20}
    return from_worker(target, end, payload)


@pytest.fixture(scope="module")
def render(npm: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("needs /usr/bin/chromium (.ci/setup-tests.sh)")
    build = npm("compile:e2e")
    assert build.returncode == 0, build.stdout + build.stderr
    root = tmp_path_factory.mktemp("report")
    page = root / "report.html"
    page.write_text(report.to_html([_result(root)]), encoding="utf-8")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def run(name: str, theme: dict[str, Any]) -> dict[str, Any]:
        theme_file = root / f"{name}.json"
        theme_file.write_text(json.dumps(theme))
        out = subprocess.run(
            [
                shutil.which("node") or "node",
                str(REPO / "out" / "e2e" / "report-colors.js"),
                str(page),
                str(theme_file),
                str(ARTIFACTS / f"{name}.png"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        seen: dict[str, Any] = json.loads(out.stdout)
        return seen

    return run


def _assert_readable(seen: dict[str, Any], plain: float = 4.5, coloured: float = 3.0) -> None:
    texts = seen["texts"]
    assert len(texts) > 40, texts  # the whole report was read: titles, values, findings, plots
    body = seen["bodyColor"]
    low = [
        t
        for t in texts
        if t["contrast"] < (plain if t["color"] == body.replace("rgba", "rgb") else coloured)
    ]
    assert not low, "text that does not stand out from its background:\n" + "\n".join(
        f"  {t['what']} {t['text']!r}: {t['color']} on {t['background']} ({t['contrast']})"
        for t in low
    )
    words = " ".join(t["text"] for t in texts)
    for wanted in ("onnxlint deep analysis", "OLX801", "graph break", "weights", "process memory"):
        assert wanted in words, wanted


def test_report_is_readable_in_vs_code_dark_modern(render: Any) -> None:
    seen = render("vscode-dark", {"vars": DARK_MODERN, "bodyClass": "vscode-dark"})
    assert seen["bodyBackground"] == "rgb(31, 31, 31)"  # the theme's own background
    _assert_readable(seen)


def test_standalone_report_is_readable_in_light_and_dark_browsers(render: Any) -> None:
    light = render("standalone-light", {"colorScheme": "light"})
    assert light["bodyBackground"] == "rgb(255, 255, 255)"
    _assert_readable(light)
    dark = render("standalone-dark", {"colorScheme": "dark"})
    assert dark["bodyBackground"] != "rgb(255, 255, 255)"
    _assert_readable(dark)


def test_the_report_s_locations_link_to_the_file_and_line(tmp_path: Path) -> None:
    """Issue 27, item 7: each finding's place is a link (`file:///...#L7`), which VS Code's
    report view turns into a jump to that line in the editor (extension/src/reportlinks.ts)."""
    html = report.to_html([_result(tmp_path)])
    model = (tmp_path / "model.py").as_uri()
    links = html.count(f'<a class="loc" href="{model}#L7"><code>model.py:7</code></a>')
    assert links == 3, html[:3000]
