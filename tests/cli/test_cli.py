"""The `onnxlint` command as users and tools run it: real subprocesses, real files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import jsonschema
import pytest

DATA = Path(__file__).parent / "data"

BAD = 'import torch\ntorch.onnx.export(model, (x,), "m.onnx", dynamo=False)\n'
CLEAN = "import torch\n\n\ndef f(x):\n    return torch.relu(x)\n"


def write(path: Path, text: str, mode: str = "w") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode == "wb":
        path.write_bytes(text.encode() if isinstance(text, str) else text)
    else:
        path.write_text(text)
    return path


def test_version(cli) -> None:
    r = cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("onnxlint ")


def test_clean_file_exits_0(cli, tmp_path: Path) -> None:
    write(tmp_path / "ok.py", CLEAN)
    r = cli("check", str(tmp_path), "--no-cache")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "All checks passed" in r.stdout


def test_finding_exits_1_with_code_frame_and_link(cli, tmp_path: Path) -> None:
    write(tmp_path / "bad.py", BAD)
    r = cli("check", str(tmp_path / "bad.py"), "--no-cache")
    assert r.returncode == 1
    out = r.stdout
    assert "bad.py:2:" in out and "OLX401" in out
    assert "^^^^" in out  # the code frame marks the argument
    assert "https://onnxlint.github.io/onnxlint/rules/OLX401/" in out
    assert "\x1b[" not in out  # no colour when not on a terminal


def test_default_command_is_check(cli, tmp_path: Path) -> None:
    write(tmp_path / "bad.py", BAD)
    assert cli(str(tmp_path / "bad.py"), "--no-cache").returncode == 1


def test_json_contract(cli, tmp_path: Path) -> None:
    write(tmp_path / "bad.py", BAD)
    r = cli("check", str(tmp_path), "--format", "json", "--no-cache")
    data = json.loads(r.stdout)
    assert isinstance(data, list) and data
    row = data[0]
    assert set(row) >= {
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "code",
        "severity",
        "message",
        "source",
        "url",
        "fix",
    }
    assert row["severity"] in ("error", "warning", "info")
    assert row["source"] == "static"
    assert row["line"] == 2 and row["column"] >= 1
    assert row["fix"]["edits"][0]["content"] == "True"


def test_sarif_validates_against_the_schema(cli, tmp_path: Path) -> None:
    write(tmp_path / "bad.py", BAD)
    write(tmp_path / "broken.py", "import torch\ndef f(:\n")
    r = cli("check", str(tmp_path), "--format", "sarif", "--no-cache")
    doc = json.loads(r.stdout)
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(doc, schema)
    results = doc["runs"][0]["results"]
    assert {res["ruleId"] for res in results} >= {"OLX401", "OLX000"}
    assert all(
        not res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].startswith("/")
        for res in results
    )


def test_github_annotations(cli, tmp_path: Path) -> None:
    write(tmp_path / "bad.py", BAD)
    r = cli("check", str(tmp_path), "--format", "github", "--no-cache")
    assert r.stdout.startswith("::warning file=")
    assert "line=2" in r.stdout and "OLX401" in r.stdout


def test_select_and_ignore(cli, tmp_path: Path) -> None:
    write(tmp_path / "bad.py", BAD)
    assert cli("check", str(tmp_path), "--ignore", "OLX4", "--no-cache").returncode == 0
    assert cli("check", str(tmp_path), "--select", "OLX401", "--no-cache").returncode == 1
    r = cli("check", str(tmp_path), "--select", "BOGUS")
    assert r.returncode == 2 and "BOGUS" in r.stderr


def test_fix_unsafe_rewrites_file_keeping_crlf_and_mode(cli, tmp_path: Path) -> None:
    f = tmp_path / "bad.py"
    f.write_bytes(BAD.replace("\n", "\r\n").encode())
    os.chmod(f, 0o754)
    r = cli("check", str(f), "--fix", "--no-cache")
    assert r.returncode == 1  # unsafe fix not applied by plain --fix
    assert b"dynamo=False" in f.read_bytes()
    r = cli("check", str(f), "--fix", "--unsafe-fixes", "--no-cache")
    assert r.returncode == 0, r.stdout
    data = f.read_bytes()
    assert b"dynamo=True" in data and b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert stat.S_IMODE(f.stat().st_mode) == 0o754
    assert "Fixed 1 problem" in r.stdout


def test_fix_lands_on_the_right_column_after_a_form_feed(cli, tmp_path: Path) -> None:
    # str.splitlines breaks lines at \f (and \v, \x1c, \u2028...); Python, libcst and the
    # finding's line numbers do not. The fix once landed a few columns off: `dTrue=False`.
    f = tmp_path / "bad.py"
    text = 'import torch\n# page\x0cbreak\ntorch.onnx.export(m, (x,), "m.onnx", dynamo=False)\n'
    f.write_text(text)
    r = cli("check", str(f), "--fix", "--unsafe-fixes", "--no-cache")
    assert r.returncode == 0, r.stdout
    assert f.read_text() == text.replace("dynamo=False", "dynamo=True")


def test_diff_writes_nothing(cli, tmp_path: Path) -> None:
    f = write(tmp_path / "bad.py", BAD)
    r = cli("check", str(f), "--diff", "--unsafe-fixes", "--no-cache")
    assert r.returncode == 1
    assert '-torch.onnx.export(model, (x,), "m.onnx", dynamo=False)' in r.stdout
    assert '+torch.onnx.export(model, (x,), "m.onnx", dynamo=True)' in r.stdout
    assert f.read_text() == BAD


def test_stdin(cli) -> None:
    r = cli("check", "--stdin-filename", "model.py", "--no-cache", stdin=BAD)
    assert r.returncode == 1 and "model.py:2:" in r.stdout
    r = cli("check", "--stdin-filename", "model.py", "--fix", "--unsafe-fixes", stdin=BAD)
    assert r.returncode == 0 and "dynamo=True" in r.stdout and r.stdout.startswith("import torch")


def test_statistics(cli, tmp_path: Path) -> None:
    write(tmp_path / "a.py", BAD)
    write(tmp_path / "b.py", BAD)
    r = cli("check", str(tmp_path), "--statistics", "--no-cache")
    assert "     2  OLX401" in r.stdout


def test_cache_is_self_ignoring_and_reused(cli, tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.onnxlint]\n")
    write(tmp_path / "bad.py", BAD)
    first = cli("check", ".", "--format", "json", cwd=tmp_path)
    cache_dir = tmp_path / ".onnxlint_cache"
    assert (cache_dir / ".gitignore").read_text().strip().endswith("*")
    second = cli("check", ".", "--format", "json", cwd=tmp_path)
    assert json.loads(first.stdout) == json.loads(second.stdout)
    # A changed file is re-checked, not served from the cache.
    write(tmp_path / "bad.py", CLEAN)
    assert cli("check", ".", cwd=tmp_path).returncode == 0


def test_cached_findings_that_read_another_module_follow_it(cli, tmp_path: Path) -> None:
    model = (
        "import torch.nn as nn\n\n\nclass Net(nn.Module):\n"
        "    def forward(self, input_ids):\n        return input_ids\n"
    )
    export = (
        "import torch\nfrom model import Net\n\nm = Net().eval()\n"
        "torch.onnx.export(m, (torch.zeros(2),), 'm.onnx', dynamic_shapes={'ids': {0: 'b'}})\n"
    )
    write(tmp_path / "scripts" / "export.py", export)
    write(tmp_path / "scripts" / "model.py", model)

    def codes() -> list[str]:
        r = cli("check", "scripts/export.py", "--format", "json", cwd=tmp_path)
        return [v["code"] for v in json.loads(r.stdout)]

    assert codes() == ["OLX305"]
    assert codes() == ["OLX305"]  # from the cache, with model.py unchanged
    write(tmp_path / "scripts" / "model.py", model.replace("input_ids", "ids"))
    assert codes() == []
    # A package that shadows the module it was read from makes the entry stale too.
    write(tmp_path / "scripts" / "model" / "__init__.py", model)
    assert codes() == ["OLX305"]
    assert (tmp_path / "scripts" / ".onnxlint_cache").is_dir()  # a file's folder is the root


def test_parallel_jobs_give_the_same_result(cli, tmp_path: Path) -> None:
    for i in range(20):
        write(tmp_path / f"m{i}.py", BAD if i % 3 == 0 else CLEAN)
    one = cli("check", str(tmp_path), "--format", "json", "--no-cache", "--jobs", "1")
    two = cli("check", str(tmp_path), "--format", "json", "--no-cache", "--jobs", "2")
    assert json.loads(one.stdout) == json.loads(two.stdout)
    assert len(json.loads(one.stdout)) == 7


def test_skips_venvs_git_and_excludes(cli, tmp_path: Path) -> None:
    write(tmp_path / ".venv" / "pyvenv.cfg", "home = /usr\n")
    write(tmp_path / ".venv" / "lib" / "bad.py", BAD)
    write(tmp_path / "myenv" / "pyvenv.cfg", "home = /usr\n")
    write(tmp_path / "myenv" / "bad.py", BAD)
    write(tmp_path / ".git" / "bad.py", BAD)
    write(tmp_path / "node_modules" / "bad.py", BAD)
    write(tmp_path / "build" / "bad.py", BAD)
    write(tmp_path / "third_party" / "bad.py", BAD)
    write(tmp_path / "src" / "ok.py", CLEAN)
    r = cli("check", str(tmp_path), "--exclude", "third_party", "--no-cache")
    assert r.returncode == 0, r.stdout


# --------------------------------------------------------------------------- bad input


def test_syntax_error_is_reported_and_the_run_goes_on(cli, tmp_path: Path) -> None:
    write(tmp_path / "a_broken.py", "import torch\ndef forward(self, x)\n    return x\n")
    write(tmp_path / "b_bad.py", BAD)
    r = cli("check", str(tmp_path), "--format", "json", "--no-cache")
    rows = json.loads(r.stdout)
    codes = {(Path(row["path"]).name, row["code"]) for row in rows}
    assert ("a_broken.py", "OLX000") in codes and ("b_bad.py", "OLX401") in codes
    broken = next(row for row in rows if row["code"] == "OLX000")
    assert broken["line"] == 2 and "expected ':'" in broken["message"]
    assert "Traceback" not in r.stderr


def test_rest_of_a_file_is_checked_around_a_syntax_error(cli, tmp_path: Path) -> None:
    write(tmp_path / "m.py", "import torch\nx = (\n" + BAD.split("\n", 1)[1])
    rows = json.loads(cli("check", str(tmp_path), "--format", "json", "--no-cache").stdout)
    assert [r["code"] for r in rows] == ["OLX000"] or "OLX401" in {r["code"] for r in rows}


@pytest.mark.parametrize(
    ("name", "content", "expect"),
    [
        ("latin1.py", b"import torch\nname = '\xe9t\xe9'\n", "cannot decode"),
        ("nul.py", b"import torch\x00\nx = 1\n", "NUL"),
        ("binary.py", bytes(range(256)) * 4, "cannot decode"),
    ],
)
def test_undecodable_files_get_one_clear_line(cli, tmp_path: Path, name, content, expect) -> None:
    (tmp_path / name).write_bytes(content)
    r = cli("check", str(tmp_path / name), "--no-cache")
    assert r.returncode == 1
    assert expect in r.stdout and "Traceback" not in r.stdout + r.stderr


def test_coding_cookie_is_honoured(cli, tmp_path: Path) -> None:
    (tmp_path / "l1.py").write_bytes(b"# -*- coding: latin-1 -*-\nimport torch\nname = '\xe9'\n")
    assert cli("check", str(tmp_path), "--no-cache").returncode == 0


def test_empty_file(cli, tmp_path: Path) -> None:
    write(tmp_path / "empty.py", "")
    assert cli("check", str(tmp_path), "--no-cache").returncode == 0


def test_huge_file_is_skipped_with_a_message(cli, tmp_path: Path) -> None:
    big = tmp_path / "big.py"
    line = "x = torch.zeros(3)  # padding padding padding padding padding padding\n"
    big.write_text("import torch\n" + line * (20 * 1024 * 1024 // len(line)))
    r = cli("check", str(big), "--no-cache")
    assert r.returncode == 1 and "MiB limit" in r.stdout


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read any file")
def test_unreadable_file(cli, tmp_path: Path) -> None:
    f = write(tmp_path / "secret.py", BAD)
    f.chmod(0)
    r = cli("check", str(f), "--no-cache")
    assert r.returncode == 1 and "cannot read" in r.stdout


def test_symlink_loop(cli, tmp_path: Path) -> None:
    write(tmp_path / "pkg" / "bad.py", BAD)
    os.symlink(tmp_path / "pkg", tmp_path / "pkg" / "loop")
    os.symlink(tmp_path / "self.py", tmp_path / "self.py")  # a link to itself
    r = cli("check", str(tmp_path), "--format", "json", "--no-cache")
    rows = json.loads(r.stdout)
    assert sum(1 for row in rows if row["code"] == "OLX401") == 1
    assert any("self.py" in row["path"] and row["code"] == "OLX000" for row in rows)


def test_missing_path_is_a_usage_error(cli, tmp_path: Path) -> None:
    r = cli("check", str(tmp_path / "nope"))
    assert r.returncode == 2 and "no such file" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    ("toml", "expect"),
    [
        ("[tool.onnxlint\nselect = [", "not valid TOML"),
        ("[tool.onnxlint]\nselekt = ['OLX']\n", "unknown key 'selekt'"),
        ("[tool.onnxlint]\nexporter = 'tensorflow'\n", "`exporter` must be one of"),
        ("[tool.onnxlint]\ntarget-torch = 'latest'\n", "`target-torch`"),
        ("[tool.onnxlint]\nseverity = { OLX401 = 'fatal' }\n", "severity.OLX401"),
        ("[[tool.onnxlint.scripts]]\npath = 'export.py'\nargv = '--x'\n", "`argv` must be a list"),
        ("[[tool.onnxlint.scripts]]\npaht = 'export.py'\n", "did you mean 'path'"),
        ("[tool.onnxlint.deep]\nscripts = 'no'\n", "`deep.scripts` must be true or false"),
        ("[tool.onnxlint.deep]\npython = ['python3']\n", "`deep.python` must be a string"),
    ],
)
def test_bad_config_names_the_problem(cli, tmp_path: Path, toml: str, expect: str) -> None:
    write(tmp_path / "pyproject.toml", toml)
    write(tmp_path / "m.py", BAD)
    r = cli("check", ".", cwd=tmp_path)
    assert r.returncode == 2
    assert expect in r.stderr and "pyproject.toml" in r.stderr and "Traceback" not in r.stderr


def test_config_severity_and_per_file_ignores(cli, tmp_path: Path) -> None:
    write(
        tmp_path / "pyproject.toml",
        "[tool.onnxlint]\nseverity = { OLX401 = 'error' }\n"
        "per-file-ignores = { 'legacy/*' = ['OLX401'] }\n",
    )
    write(tmp_path / "legacy" / "old.py", BAD)
    write(tmp_path / "new.py", BAD)
    rows = json.loads(cli("check", ".", "--format", "json", "--no-cache", cwd=tmp_path).stdout)
    assert [(Path(r["path"]).name, r["severity"]) for r in rows] == [("new.py", "error")]


def test_suppression_comments(cli, tmp_path: Path) -> None:
    src = BAD.rstrip("\n")
    write(tmp_path / "a.py", src + "  # onnxlint: ignore[OLX401]\n")
    write(tmp_path / "b.py", src + "  # noqa: OLX401\n")
    write(tmp_path / "c.py", "# onnxlint: ignore-file\n" + BAD)
    write(tmp_path / "d.py", src + "  # noqa: E501\n")
    rows = json.loads(cli("check", str(tmp_path), "--format", "json", "--no-cache").stdout)
    assert [Path(r["path"]).name for r in rows] == ["d.py"]


def test_static_check_never_imports_user_code(cli, tmp_path: Path) -> None:
    mark = tmp_path / "IMPORTED"
    write(tmp_path / "evil.py", f"open({str(mark)!r}, 'w').write('x')\nimport torch\n")
    write(tmp_path / "user.py", "import evil\nimport torch\n" + BAD.split("\n", 1)[1])
    r = cli("check", str(tmp_path), "--no-cache", env={"PYTHONPATH": str(tmp_path)})
    assert r.returncode == 1
    assert not mark.exists()


def test_rule_and_rules_commands(cli) -> None:
    r = cli("rule", "OLX401")
    assert r.returncode == 0 and r.stdout.startswith("# OLX401: legacy-torchscript-exporter")
    assert "## Why is this bad?" in r.stdout
    assert cli("rule", "OLX999").returncode == 2
    listing = cli("rules").stdout
    assert "OLX401" in listing and "OLX000" in listing


def test_docs_are_up_to_date() -> None:
    from onnxlint.rules.docs import main

    assert main(["--check"]) == 0, "run `python -m onnxlint.rules.docs`"


def test_examples_show_every_static_family(cli, repo_root: Path) -> None:
    r = cli("check", "examples", "--format", "json", "--no-cache", cwd=repo_root)
    assert r.returncode == 1
    families = {row["code"][:4] for row in json.loads(r.stdout)}
    assert {"OLX1", "OLX2", "OLX3", "OLX4", "OLX5"} <= families, families


def test_checking_in_process_leaves_garbage_collection_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Automatic collection is paused while a batch is checked (workers keep it paused);
    a batch checked in the calling process gets it back afterwards."""
    import gc

    from onnxlint.cli import main

    write(tmp_path / "m.py", BAD)
    assert gc.isenabled()
    assert main(["check", str(tmp_path), "--no-cache", "-j", "1"]) == 1
    assert gc.isenabled() and gc.get_freeze_count() == 0
    capsys.readouterr()
