"""action.yml, run as the GitHub runner runs a composite action's steps, on a fixture repository.

Each `run:` step goes to a script file executed with `bash --noprofile --norc -eo pipefail FILE`
(the runner's `shell: bash`), in GITHUB_WORKSPACE, with the runner's variables (GITHUB_ACTION_PATH,
GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, RUNNER_TEMP, CI, ...) and the step's `env:`, whose
`${{ inputs.* }}` and `${{ steps.*.outputs.* }}` are filled in as the runner fills them. What the
check step prints is read as the runner reads workflow commands (`::error file=...::...`), and the
SARIF it writes is validated against the SARIF 2.1.0 schema.

The install step really installs onnxlint from a copy of this checkout's files (the runner
downloads the action's repository at the ref to a folder of its own) into a fresh venv, with pip,
as `uses: onnxlint/onnxlint@<ref>` does; pip fetches onnxlint's dependencies from the package
index, as pre-commit does in tests/cli/test_pre_commit.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from onnxlint.core.violation import DOCS_BASE_URL

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
ACTION = yaml.safe_load((REPO / "action.yml").read_text())

EXPORT = """\
import torch


def export(model, x):
    model.eval()
    torch.onnx.export(model, (x,), "m.onnx", do_constant_folding=True)
    program = torch.onnx.dynamo_export(model, x)
    return program
"""

CLEAN = """\
import torch


def export(model, x):
    model.eval()
    torch.onnx.export(model, (x,), "m.onnx")
"""

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("action")]


def _action_copy(dest: Path) -> Path:
    """The action's repository as the runner has it: the files git knows (tracked, or new and
    not ignored), in a folder of their own, so pip's in-tree build never meets another's."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        src = REPO / name
        if src.is_file() and not src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


@dataclass
class Runner:
    """The parts of the GitHub runner a composite action of `run:` steps sees."""

    workspace: Path
    temp: Path
    action_path: Path = REPO
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)

    def env(self, step_id: str) -> dict[str, str]:
        pip = tuple(k for k in os.environ if k.startswith("PIP_"))
        keep = ("PATH", "HOME", "LANG", "SSL_CERT_FILE", *pip)
        base = {k: os.environ[k] for k in keep if k in os.environ}
        return {
            **base,
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_ACTION_PATH": str(self.action_path),
            "GITHUB_OUTPUT": str(self.temp / f"output-{step_id}"),
            "GITHUB_ENV": str(self.temp / "env"),
            "GITHUB_PATH": str(self.temp / "path"),
            "GITHUB_STEP_SUMMARY": str(self.temp / f"summary-{step_id}"),
            "RUNNER_TEMP": str(self.temp),
            "RUNNER_OS": "Linux",
        }

    def expand(self, text: str, inputs: dict[str, str]) -> str:
        def value(m: re.Match[str]) -> str:
            expr = m.group(1).strip()
            if expr.startswith("inputs."):
                name = expr.removeprefix("inputs.")
                return inputs.get(name, str(ACTION["inputs"][name].get("default", "")))
            step = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
            assert step, f"an expression this runner does not know: {expr}"
            return self.outputs.get(step.group(1), {}).get(step.group(2), "")

        return re.sub(r"\$\{\{(.*?)\}\}", value, text)

    def run_step(
        self, step: dict[str, Any], inputs: dict[str, str], extra_env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        assert step["shell"] == "bash" and "uses" not in step
        step_id = step["id"]
        script = self.temp / f"step-{step_id}.sh"
        script.write_text(step["run"])
        env = self.env(step_id)
        env.update({k: self.expand(str(v), inputs) for k, v in step.get("env", {}).items()})
        env.update(extra_env or {})
        Path(env["GITHUB_OUTPUT"]).write_text("")
        run = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=self.workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            stdin=subprocess.DEVNULL,
        )
        self.outputs[step_id] = _read_outputs(Path(env["GITHUB_OUTPUT"]))
        return run


def _read_outputs(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    lines = iter(path.read_text().splitlines())
    for line in lines:
        if "<<" in line and "=" not in line.split("<<", 1)[0]:
            name, delim = line.split("<<", 1)
            out[name] = "\n".join(iter(lambda: next(lines), delim))
        elif "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
    return out


def _unescape(s: str, prop: bool) -> str:
    if prop:
        s = s.replace("%3A", ":").replace("%2C", ",")
    return s.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _annotations(stdout: str) -> list[dict[str, str]]:
    """Workflow commands as the runner reads them from a step's output."""
    found = []
    for line in stdout.splitlines():
        m = re.fullmatch(r"::(error|warning|notice)(?: ([^:]*))?::(.*)", line)
        if m is None:
            continue
        props = dict(p.split("=", 1) for p in (m.group(2) or "").split(",") if p)
        found.append(
            {"level": m.group(1), "message": _unescape(m.group(3), False)}
            | {k: _unescape(v, True) for k, v in props.items()}
        )
    return found


def _fixture_repo(root: Path, source: str) -> Path:
    repo = root / "workspace"
    (repo / "src" / "models").mkdir(parents=True)
    (repo / "pyproject.toml").write_text('[project]\nname = "m"\n\n[tool.onnxlint]\nignore = []\n')
    (repo / "src" / "models" / "export.py").write_text(source)
    (repo / "README.md").write_text("not checked\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The action's install step, once: a venv in RUNNER_TEMP with onnxlint from this checkout."""
    if shutil.which("python3") is None:
        pytest.skip("needs python3 on PATH, as the runner has")
    root = tmp_path_factory.mktemp("runner")
    temp = root / "runner-temp"
    temp.mkdir()
    action = _action_copy(root / "_actions" / "onnxlint" / "onnxlint" / "v0")
    runner = Runner(workspace=_fixture_repo(root, CLEAN), temp=temp, action_path=action)
    install = next(s for s in ACTION["runs"]["steps"] if s["id"] == "install")
    run = runner.run_step(install, {})
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"installing {action} (without torch)" in run.stdout
    return temp, runner.outputs["install"]


def _check(tmp_path: Path, installed: tuple[Path, dict[str, str]], source: str, **inputs: str):
    temp, install_outputs = installed
    runner = Runner(workspace=_fixture_repo(tmp_path, source), temp=temp)
    runner.outputs["install"] = install_outputs
    check = next(s for s in ACTION["runs"]["steps"] if s["id"] == "check")
    run = runner.run_step(check, inputs)
    return runner, run


def test_the_action_is_a_composite_of_bash_steps_with_the_documented_inputs() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert set(ACTION["inputs"]) == {"paths", "args", "version", "sarif", "python"}
    assert [s["id"] for s in ACTION["runs"]["steps"]] == ["install", "check"]
    readme = (REPO / "README.md").read_text()
    assert "uses: onnxlint/onnxlint@v0" in readme


def test_installs_onnxlint_without_torch(installed: tuple[Path, dict[str, str]]) -> None:
    _, outputs = installed
    onnxlint = Path(outputs["onnxlint"])
    assert onnxlint.is_file()
    python = onnxlint.parent / "python"
    probe = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.util as u, onnxlint; "
            "print(onnxlint.__file__, u.find_spec('torch') is not None)",
        ],
        capture_output=True,
        text=True,
        cwd=onnxlint.parent,  # not the checkout: `-c` puts the working folder on sys.path
    )
    where, has_torch = probe.stdout.split()
    assert has_torch == "False", "the action's onnxlint must not pull in torch"
    assert not where.startswith(str(REPO)), (
        "installed into the venv, not imported from the checkout"
    )


def test_findings_become_annotations_on_their_lines_and_sarif(
    tmp_path: Path, installed: tuple[Path, dict[str, str]]
) -> None:
    import jsonschema

    runner, run = _check(tmp_path, installed, EXPORT, paths="src", sarif="onnxlint.sarif")
    assert run.returncode == 1, "findings fail the step (and so the job)"
    assert runner.outputs["check"]["exit-code"] == "1"
    notes = _annotations(run.stdout)
    assert {(a["level"], a["title"]) for a in notes} >= {
        ("warning", "onnxlint OLX405"),
        ("error", "onnxlint OLX402"),
    }
    lines = (runner.workspace / "src/models/export.py").read_text().splitlines()
    for a in notes:
        assert a["file"] == "src/models/export.py", "relative to the workspace, as GitHub wants"
        code = a["title"].split()[-1]
        assert a["message"].startswith(code)
        start, end = int(a["col"]), int(a["endColumn"])
        text = lines[int(a["line"]) - 1][start - 1 : end - 1]
        expected = {"OLX405": "do_constant_folding=True", "OLX402": "torch.onnx.dynamo_export"}
        if code in expected:
            assert text == expected[code], (code, text)

    sarif_path = runner.workspace / runner.outputs["check"]["sarif"]
    doc = json.loads(sarif_path.read_text())
    jsonschema.validate(doc, json.loads((DATA / "sarif-schema-2.1.0.json").read_text()))
    results = doc["runs"][0]["results"]
    assert sorted(r["ruleId"] for r in results) == sorted(a["title"].split()[-1] for a in notes)
    for r in results:
        loc = r["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == "src/models/export.py"
    rules = doc["runs"][0]["tool"]["driver"]["rules"]
    assert all(rule["helpUri"] == f"{DOCS_BASE_URL}{rule['id']}/" for rule in rules)

    summary = (runner.temp / "summary-check").read_text()
    assert "### onnxlint" in summary and "OLX402" in summary and "total" in summary


def test_a_clean_repository_passes_with_no_annotation(
    tmp_path: Path, installed: tuple[Path, dict[str, str]]
) -> None:
    runner, run = _check(tmp_path, installed, CLEAN)
    assert run.returncode == 0, run.stdout + run.stderr
    assert _annotations(run.stdout) == []
    assert runner.outputs["check"] == {"exit-code": "0"}, "no SARIF unless asked"
    assert not list(runner.workspace.glob("*.sarif"))


def test_args_reach_onnxlint(tmp_path: Path, installed: tuple[Path, dict[str, str]]) -> None:
    _, run = _check(tmp_path, installed, EXPORT, args="--select OLX405 --no-cache")
    assert run.returncode == 1
    assert {a["title"] for a in _annotations(run.stdout)} == {"onnxlint OLX405"}
    bad, bad_run = _check(tmp_path / "bad", installed, EXPORT, args="--select NOPE")
    assert bad_run.returncode == 2 and bad.outputs["check"]["exit-code"] == "2"
    assert "--select has 'NOPE'" in bad_run.stderr


@pytest.mark.parametrize(
    ("version", "spec", "pip_says"),
    [
        ("0.1.0", "onnxlint==0.1.0", "onnxlint==0.1.0"),
        (">=0.1,<0.2", "onnxlint>=0.1,<0.2", "onnxlint<0.2,>=0.1"),
        ("latest", "onnxlint", "onnxlint"),
    ],
)
def test_the_version_input_picks_what_pip_installs(
    tmp_path: Path, version: str, spec: str, pip_says: str
) -> None:
    """With no index to install from, pip says what it was asked for."""
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    runner = Runner(workspace=_fixture_repo(tmp_path, CLEAN), temp=temp)
    install = next(s for s in ACTION["runs"]["steps"] if s["id"] == "install")
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    offline = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(empty), "PIP_CONFIG_FILE": os.devnull}
    run = runner.run_step(install, {"version": version}, offline)
    assert run.returncode != 0
    assert f"installing {spec} (without torch)" in run.stdout
    assert f"No matching distribution found for {pip_says}\n" in run.stderr
