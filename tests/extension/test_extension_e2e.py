"""The extension in a real VS Code (code-server), driven through its UI by headless Chromium.

Runs extension/test/e2e/run.ts once per session against the packaged .vsix and reports each scenario
as its own test. Needs code-server (.ci/install-code-server.sh .e2e, which
`.ci/extension.sh --setup` runs) and Chromium; without them the tests fail and say so, unless
ONNXLINT_SKIP_E2E=1. Screenshots land in test-artifacts/e2e/; with
ONNXLINT_UPDATE_SCREENSHOT=1 the quick-fix screenshot also replaces docs/images/vscode.png, and
the hover, deep-analysis progress and report screenshots docs/images/vscode-{hover,deep,report}.png.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
E2E_DIR = Path(os.environ.get("ONNXLINT_E2E_DIR", REPO / ".e2e"))
ARTIFACTS = REPO / "test-artifacts" / "e2e"
SCREENSHOT = REPO / "docs" / "images" / "vscode.png"
SCENARIOS = [
    "static",
    "quickfix",
    "lens",
    "deep",
    "script",
    "deepfix",
    "deepnotebook",
    "setup",
    "untrusted",
    "missing",
    "switch",
    "restart",
    "partial",
    "notebook",
]
DEEP_SCENARIOS = ("deep", "script", "deepfix", "deepnotebook", "setup")  # they need torch
NpmRunner = Callable[..., subprocess.CompletedProcess[str]]

pytestmark = [pytest.mark.editor, pytest.mark.slow, pytest.mark.xdist_group("vscode-extension")]


def _missing_prerequisite() -> str | None:
    if not (E2E_DIR / "cs" / "node_modules" / ".bin" / "code-server").exists():
        return f"code-server is not installed in {E2E_DIR} (run .ci/extension.sh)"
    if not Path("/usr/bin/chromium").exists():
        return "Chromium is not installed (apt-get install chromium)"
    examples = REPO / "examples"
    if not any(
        re.search(r"dynamo\s*=\s*False", p.read_text(encoding="utf8", errors="replace"))
        for p in examples.rglob("*.py")
    ):
        return f"no file under {examples} has dynamo=False for the quick-fix scenario"
    return None


@pytest.fixture(scope="session")
def e2e_results(
    npm: NpmRunner, vsix: Path, exclusive: Callable[[str], contextlib.AbstractContextManager[None]]
) -> dict[str, Any]:
    """The e2e's results, run once per pytest run: a session fixture runs once per xdist
    worker, and `--dist loadgroup` does not always keep the scenarios on one worker, so the
    first worker runs it and the others read its results (two runs at once share one
    artifacts folder and fail each other's windows)."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    shared = ARTIFACTS.parent / f"e2e-results-{run_id}.json" if run_id else None
    with exclusive("e2e"):
        if shared is not None and shared.exists():
            found: dict[str, Any] = json.loads(shared.read_text())
            return found
        results = _run_e2e(npm, vsix)
        if shared is not None:
            shared.write_text(json.dumps(results))
        return results


def _run_e2e(npm: NpmRunner, vsix: Path) -> dict[str, Any]:
    reason = _missing_prerequisite()
    if reason is not None:
        # A missing VS Code is a failure (CI installs it with .ci/extension.sh --setup); a developer
        # without it can opt out explicitly.
        if os.environ.get("ONNXLINT_SKIP_E2E") == "1":
            pytest.skip(f"ONNXLINT_SKIP_E2E=1: {reason}")
        pytest.fail(reason)
    build = npm("compile:e2e")
    assert build.returncode == 0, build.stdout + build.stderr
    scenarios = [
        s for s in SCENARIOS if s not in DEEP_SCENARIOS or importlib.util.find_spec("torch")
    ]
    command = [
        shutil.which("node") or "node",
        str(REPO / "out" / "e2e" / "run.js"),
        "--repo",
        str(REPO),
        "--e2e-dir",
        str(E2E_DIR),
        "--vsix",
        str(vsix),
        "--python",
        sys.executable,
        "--artifacts",
        str(ARTIFACTS),
        "--only",
        ",".join(scenarios),
    ]
    if os.environ.get("ONNXLINT_UPDATE_SCREENSHOT") == "1":
        command += ["--screenshot", str(SCREENSHOT)]
    # stdin from /dev/null: under pytest-xdist the worker's stdin is its channel to the
    # controller, which code-server and its children must not inherit.
    run = subprocess.run(
        command,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    print(run.stdout)
    print(run.stderr, file=sys.stderr)
    results_file = ARTIFACTS / "results.json"
    assert results_file.exists(), (
        f"the e2e wrote no results (exit {run.returncode}):\n{run.stdout}\n{run.stderr}"
    )
    results: dict[str, Any] = json.loads(results_file.read_text())
    return results


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_vscode_scenario(e2e_results: dict[str, Any], scenario: str) -> None:
    if scenario in DEEP_SCENARIOS and importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed, so deep analysis cannot run")
    result = e2e_results.get(scenario)
    assert result is not None, f"scenario {scenario} did not run: {e2e_results}"
    detail = "\n".join(result.get("detail", []))
    assert result["status"] == "passed", f"{result.get('error')}\n{detail}"
