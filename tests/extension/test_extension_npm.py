"""The extension's own build, lint, type check, unit tests and package, as CI runs them."""

from __future__ import annotations

import json
import re
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NpmRunner = Callable[..., subprocess.CompletedProcess[str]]

pytestmark = [pytest.mark.editor, pytest.mark.xdist_group("vscode-extension")]


def _output(result: object) -> str:
    return f"{getattr(result, 'stdout', '')}\n{getattr(result, 'stderr', '')}"


def test_compile_bundles_one_file(npm: NpmRunner) -> None:
    result = npm("compile")
    assert result.returncode == 0, _output(result)
    bundle = REPO / "dist" / "extension.js"
    text = bundle.read_text(encoding="utf8")
    # vscode-languageclient is bundled in (the .vsix ships no node_modules); vscode stays external.
    assert "onnxlint/analysisState" in text
    assert 'require("vscode")' in text
    assert 'require("vscode-languageclient' not in text


def test_lint_has_no_warnings(npm: NpmRunner) -> None:
    result = npm("lint")
    assert result.returncode == 0, _output(result)


def test_typecheck(npm: NpmRunner) -> None:
    result = npm("check")
    assert result.returncode == 0, _output(result)


def test_unit_tests_pass(npm: NpmRunner) -> None:
    result = npm("test")
    out = _output(result)
    assert result.returncode == 0, out
    passed = re.search(r"^# pass (\d+)$", out, re.M)
    failed = re.search(r"^# fail (\d+)$", out, re.M)
    assert passed and failed, out
    assert int(failed.group(1)) == 0, out
    # Guards against the runner silently finding no test files.
    assert int(passed.group(1)) >= 30, out


# What the .vsix may hold: vsce's own two files, and the .vscodeignore allow-list.
REQUIRED = {
    "[Content_Types].xml",
    "extension.vsixmanifest",
    "extension/package.json",
    "extension/dist/extension.js",
    "extension/LICENSE.txt",
    "extension/extension/icon.png",
    "extension/readme.md",
    "extension/changelog.md",
}
# The walkthrough's pages (issue 27, item 7).
WALKTHROUGH = {
    f"extension/extension/walkthrough/{name}.md"
    for name in ("static-deep", "trust", "targets", "arguments")
}
REQUIRED |= WALKTHROUGH
OPTIONAL: set[str] = set()
# The static server, bundled (extension/scripts/bundle_python.py): its launcher and its packages.
BUNDLED = "extension/bundled/"
PYTHONS = ("310", "311", "312", "313", "314")


def test_vsix_holds_only_what_the_extension_needs(vsix: Path) -> None:
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("extension/package.json"))
        readme = archive.read("extension/readme.md").decode()
        icon = archive.read("extension/extension/icon.png")
    bundled = {n for n in names if n.startswith(BUNDLED)}
    unexpected = names - REQUIRED - OPTIONAL - bundled
    assert not unexpected, f"unexpected files in {vsix.name}: {sorted(unexpected)}"
    missing = REQUIRED - names
    assert not missing, f"missing from {vsix.name}: {sorted(missing)}"
    assert manifest["main"] == "./dist/extension.js"
    assert manifest["capabilities"]["untrustedWorkspaces"]["supported"] == "limited"
    # The static server is bundled (issue 27, item 6): its launcher, onnxlint and the server's
    # modules, libcst's parser for every CPython 3.10-3.14 of the platform; no tests; the
    # bytecode of the packaging interpreter (and of any other 3.10-3.14 it found), precompiled.
    assert f"{BUNDLED}tool/server.py" in names
    libs = f"{BUNDLED}libs/"
    for module in ("onnxlint", "pygls", "lsprotocol", "cattrs", "attrs", "libcst", "tomli"):
        assert f"{libs}{module}/__init__.py" in names, module
    assert f"{libs}onnxlint/deep/worker/launch.py" in names  # the worker runs from there too
    for tag in PYTHONS:
        assert f"{libs}libcst/native.cpython-{tag}-x86_64-linux-gnu.so" in names, tag
    assert not [n for n in bundled if "/tests/" in n]
    pyc = [n for n in bundled if n.endswith(".pyc")]
    tags = {n.rsplit(".", 2)[-2] for n in pyc}  # the packaging interpreter's, at least
    assert tags and tags <= {f"cpython-{tag}" for tag in PYTHONS}, tags
    assert all("/__pycache__/" in n for n in pyc)
    for tag in tags:
        assert f"{libs}lsprotocol/__pycache__/types.{tag}.pyc" in names, tag
    assert not [n for n in names - bundled if n.endswith(".py")]
    assert manifest["scripts"]["package"].count("--target linux-x64") == 1
    size = vsix.stat().st_size
    print(f"{vsix.name}: {size / 2**20:.1f} MiB, {len(names)} files ({len(bundled)} bundled)")
    assert size < 13 * 2**20  # 12.0 MiB with the bundle's bytecode (2.6 MiB of it)
    # The extension's page is written for VS Code users, not the repository's README.
    assert readme.startswith("# onnxlint for VS Code")
    assert "pytest" not in readme and "setup-tests" not in readme
    for section in ("## Install", "## Settings", "## Workspace trust", "## The deep analysis"):
        assert section in readme
    assert manifest["icon"] == "extension/icon.png" and icon.startswith(b"\x89PNG")


def test_the_walkthrough_covers_static_and_deep_trust_targets_and_arguments(vsix: Path) -> None:
    """Issue 27, item 7: a Getting Started walkthrough, one step per thing a new user meets,
    each with its page in the .vsix."""
    with zipfile.ZipFile(vsix) as archive:
        manifest = json.loads(archive.read("extension/package.json"))
        pages = {n: archive.read(n).decode() for n in WALKTHROUGH}
    (walkthrough,) = manifest["contributes"]["walkthroughs"]
    steps = {s["id"]: s for s in walkthrough["steps"]}
    assert list(steps) == ["staticVsDeep", "trust", "targets", "arguments"]
    for step in steps.values():
        page = f"extension/{step['media']['markdown']}"
        assert page in pages, page
        assert step["completionEvents"], step["id"]
    assert "fake tensors" in pages["extension/extension/walkthrough/static-deep.md"]
    assert "Manage Workspace Trust" in pages["extension/extension/walkthrough/trust.md"]
    assert "Create a target" in pages["extension/extension/walkthrough/targets.md"]
    assert "[[tool.onnxlint.scripts]]" in pages["extension/extension/walkthrough/arguments.md"]
    commands = {c["command"] for c in manifest["contributes"]["commands"]}
    for step in steps.values():
        for command in re.findall(r"\(command:(onnxlint\.[\w.]+)\)", step["description"]):
            assert command in commands, command
