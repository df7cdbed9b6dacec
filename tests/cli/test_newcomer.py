"""Issue 14: what got in a newcomer's way in their first hour with the CLI (real subprocesses)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

BAD = 'import torch\ntorch.onnx.export(model, (x,), "m.onnx", dynamo=False)\n'
REMOVED = "import torch\nprogram = torch.onnx.dynamo_export(model, x)\n"
MULTILINE = (
    "import torch\n\n"
    "torch.onnx.export(\n"
    "    model,\n"
    "    (x,),\n"
    '    "m.onnx",\n'
    "    dynamo=False,\n"
    "){comment}\n"
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- the CLI


def test_unsafe_fixes_alone_shows_them_and_writes_nothing(cli, tmp_path: Path) -> None:
    f = write(tmp_path / "bad.py", BAD)
    r = cli("check", str(f), "--unsafe-fixes", "--no-cache")
    assert f.read_text() == BAD, "--unsafe-fixes without --fix wrote the file"
    assert r.returncode == 1
    assert "[~] 1 fixable with `onnxlint check --fix --unsafe-fixes`." in r.stdout
    assert "Fixed" not in r.stdout
    r = cli("check", str(f), "--fix", "--unsafe-fixes", "--no-cache")
    assert r.returncode == 0 and "dynamo=True" in f.read_text()


def test_unsafe_fixes_help_says_what_it_does_alone(cli) -> None:
    out = re.sub(r"\s+", " ", cli("check", "--help").stdout)
    assert "--unsafe-fixes show unsafe fixes as available; with --fix, apply them too" in out


def test_text_output_names_the_severity_in_words(cli, tmp_path: Path) -> None:
    write(tmp_path / "a.py", BAD)
    write(tmp_path / "b.py", REMOVED)
    r = cli("check", str(tmp_path), "--no-cache")
    assert re.search(r"a\.py:2:\d+: warning\[OLX401\] \[~\] ", r.stdout), r.stdout
    assert re.search(r"b\.py:2:\d+: error\[OLX402\] \[\*\] ", r.stdout), r.stdout
    assert "Found 2 problems (1 error, 1 warning)" in r.stdout
    quiet = cli("check", str(tmp_path), "--no-cache", "-q").stdout
    assert "warning[OLX401]" in quiet and "error[OLX402]" in quiet


@pytest.mark.parametrize("comment", ["  # onnxlint: ignore[OLX401]", "  # noqa: OLX401"])
def test_suppression_on_the_last_line_of_a_multiline_statement(
    cli, tmp_path: Path, comment: str
) -> None:
    write(tmp_path / "silenced.py", MULTILINE.format(comment=comment))
    write(tmp_path / "other_code.py", MULTILINE.format(comment="  # noqa: OLX402"))
    write(tmp_path / "plain.py", MULTILINE.format(comment=""))
    rows = json.loads(cli("check", str(tmp_path), "--format", "json", "--no-cache").stdout)
    assert sorted(Path(r["path"]).name for r in rows) == ["other_code.py", "plain.py"]


def test_suppression_on_a_middle_line_covers_only_that_line(tmp_path: Path) -> None:
    from onnxlint.core.suppression import line_suppressions

    text = "f(\n    a,  # noqa: OLX401\n    b,\n)\nx = 1  # noqa\n"
    sup = line_suppressions(text)
    assert sup == {2: frozenset({"OLX401"}), 5: frozenset({"*"})}
    # ...while the closing line's comment covers the whole call, and nothing after it.
    sup = line_suppressions("f(\n    a,\n)  # noqa: OLX401\ny = 2\n")
    assert sorted(sup) == [1, 2, 3]


def test_mistyped_command_gets_a_did_you_mean(cli, tmp_path: Path) -> None:
    r = cli("chek", "src", cwd=tmp_path)
    assert r.returncode == 2
    assert "unknown command 'chek'; did you mean 'check'?" in r.stderr
    assert "no such file" not in r.stderr
    r = cli("analyse", cwd=tmp_path)
    assert "did you mean 'analyze'?" in r.stderr
    # A file that happens to be called like a command is still checked.
    write(tmp_path / "chek", BAD)
    assert "did you mean" not in cli("chek", "--no-cache", cwd=tmp_path).stderr


def test_statistics_in_every_format(cli, tmp_path: Path) -> None:
    write(tmp_path / "a.py", BAD)
    write(tmp_path / "b.py", BAD + REMOVED.split("\n", 1)[1])
    text = cli("check", str(tmp_path), "--statistics", "--no-cache")
    assert text.returncode == 1
    assert "     2  OLX401  [~] legacy-torchscript-exporter" in text.stdout
    assert "     1  OLX402  [*] removed-dynamo-export" in text.stdout
    assert "     3  total" in text.stdout
    assert "Found 3 problems" in text.stdout
    rows = json.loads(cli("check", str(tmp_path), "--statistics", "--format", "json").stdout)
    assert {
        "code": "OLX401",
        "name": "legacy-torchscript-exporter",
        "count": 2,
        "fix": "unsafe",
    } in rows
    assert sum(r["count"] for r in rows) == 3
    github = cli("check", str(tmp_path), "--statistics", "--format", "github", "--no-cache")
    assert "     3  total" in github.stdout and "::" not in github.stdout


def test_statistics_without_findings_says_so(cli, tmp_path: Path) -> None:
    write(tmp_path / "ok.py", "x = 1\n")
    r = cli("check", str(tmp_path), "--statistics", "--no-cache")
    assert r.returncode == 0 and "All checks passed (1 file checked)." in r.stdout
    assert json.loads(cli("check", str(tmp_path), "--statistics", "--format", "json").stdout) == []


def test_explicit_file_that_the_configuration_excludes_says_so(cli, tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.onnxlint]\nexclude = ["legacy/*"]\n')
    write(tmp_path / "legacy" / "old.py", BAD)
    r = cli("check", "legacy/old.py", "--no-cache", cwd=tmp_path)
    assert r.returncode == 0
    assert "legacy/old.py: excluded by `exclude`/`extend-exclude` in" in r.stderr
    assert "pyproject.toml" in r.stderr


def test_empty_folder_says_no_python_files(cli, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    r = cli("check", "empty", "--no-cache", cwd=tmp_path)
    assert r.returncode == 0
    assert "no Python files found under empty" in r.stderr


def test_non_python_file_gets_one_line(cli, tmp_path: Path) -> None:
    write(tmp_path / "notes.md", "# Notes\n\nSome *markdown*: `x = (`\n")
    r = cli("check", "notes.md", "--no-cache", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "onnxlint: error: notes.md: not a Python file (onnxlint checks *.py, *.pyi and *.ipynb); "
        "not checked"
    )
    assert "OLX000" not in r.stdout
    # A script without a suffix that runs Python is checked.
    write(tmp_path / "tool", "#!/usr/bin/env python3\n" + BAD)
    assert cli("check", "tool", "--no-cache", cwd=tmp_path).returncode == 1


def test_deep_without_targets_says_how_to_declare_one(cli, tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.onnxlint]\n")
    write(tmp_path / "m.py", "x = 1\n")
    r = cli("check", "--deep", ".", "--no-cache", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "no targets to analyse" in r.stderr
    assert "[[tool.onnxlint.targets]]" in r.stderr and "# onnxlint: target" in r.stderr


@pytest.mark.parametrize("flag", ["--ignore", "--select", "--extend-select"])
def test_error_names_the_flag_typed(cli, tmp_path: Path, flag: str) -> None:
    r = cli("check", str(tmp_path), flag, "OLX4,BOGUS")
    assert r.returncode == 2
    assert f"{flag} has 'BOGUS'" in r.stderr
    other = {"--ignore": "select", "--select": "ignore", "--extend-select": "ignore"}[flag]
    assert f"`{other}`" not in r.stderr


def _readme_markers(repo_root: Path) -> dict[str, str]:
    out = {}
    for line in (repo_root / "README.md").read_text().splitlines():
        m = re.match(r"\| \[(OLX\d+)\]\([^)]*\) \| `[^`]+` \| \w+ \| ([^|]*) \|", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def test_fix_markers_agree_in_rules_readme_and_findings(cli, repo_root: Path) -> None:
    """A rule's marker is its least safe fix: OLX404's fix is safe for `fallback=False` and
    unsafe for `fallback=True`, so it is `[~]` everywhere, and a finding is never marked
    less safe than its rule."""
    from onnxlint.core.config import parse_table
    from onnxlint.engine import Engine
    from onnxlint.rules import all_rules

    listing = {
        line.split()[0]: line.split()[1] for line in cli("rules").stdout.splitlines() if line
    }
    readme = _readme_markers(repo_root)
    assert listing["OLX404"] == "[~]" and readme["OLX404"] == "[~]"
    rank = {"safe": 0, "unsafe": 1, "display": 2}
    engine = Engine()
    for rule in all_rules():
        marker = {"safe": "[*]", "unsafe": "[~]", "display": "[-]"}.get(
            rule.fix_safety.value if rule.fix_safety else "", ""
        )
        assert readme[rule.code] == marker, rule.code
        if marker:
            assert listing[rule.code] == marker, rule.code
        for case in rule.INVALID:
            found = engine.check("case.py", case.code, parse_table(dict(case.config or {}), None))
            for v in found:
                if v.code == rule.code and v.fix is not None:
                    assert rule.fix_safety is not None, rule.code
                    assert rank[v.fix.safety.value] <= rank[rule.fix_safety.value], (
                        f"{rule.code}: a {v.fix.safety.value} fix under a "
                        f"{rule.fix_safety.value} marker"
                    )


def test_findings_brought_about_by_fixes_are_reported_as_such(cli, tmp_path: Path) -> None:
    f = write(
        tmp_path / "m.py",
        'import torch\n\ntorch.onnx.export(\n    model,\n    (x,),\n    "m.onnx",\n'
        "    dynamo=False,\n    opset_version=13,\n)\n",
    )
    before = cli("check", str(f), "--no-cache", "--format", "json")
    assert [r["code"] for r in json.loads(before.stdout)] == ["OLX401"]
    r = cli("check", str(f), "--fix", "--unsafe-fixes", "--no-cache")
    assert "dynamo=True" in f.read_text()
    assert r.returncode == 1
    assert "warning[OLX501]" in r.stdout
    assert "note: this finding appeared after the fixes were applied" in r.stdout
    assert "1 of these findings was brought about by the fixes just applied" in r.stdout


# --------------------------------------------------------------------------- configuration


TARGETS = """[tool.onnxlint]

[[tool.onnxlint.targets]]
name = "net"
factory = "model:make"
{extra}
"""


def test_target_keys_are_kebab_case_and_snake_case_is_deprecated(cli, tmp_path: Path) -> None:
    write(tmp_path / "m.py", "x = 1\n")
    write(tmp_path / "pyproject.toml", TARGETS.format(extra='dynamic-shapes = { x = { 0 = "b" } }'))
    r = cli("check", ".", "--no-cache", cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    write(tmp_path / "pyproject.toml", TARGETS.format(extra='dynamic_shapes = { x = { 0 = "b" } }'))
    r = cli("check", ".", "--no-cache", cwd=tmp_path)
    assert r.returncode == 0
    assert (
        "pyproject.toml:3: [[tool.onnxlint.targets]] target 'net': `dynamic_shapes` is " in r.stderr
    )
    assert "deprecated, write `dynamic-shapes`" in r.stderr


def test_kebab_case_target_keys_reach_the_analysis(tmp_path: Path) -> None:
    from onnxlint.core.config import load_config
    from onnxlint.deep.targets import load_targets

    write(
        tmp_path / "pyproject.toml",
        TARGETS.format(
            extra='dynamic-shapes = { x = { 0 = "b" } }\nmemory-limit-mb = 512\n'
            'verify-max-params = 10\nexporter = { opset = 19, translation-table = "ops:TABLE" }'
        ),
    )
    config = load_config(tmp_path)
    (t,) = load_targets(config.targets, tmp_path)
    assert (t.dynamic_shapes, t.memory_limit_mb, t.verify_max_params) == ({"x": {0: "b"}}, 512, 10)
    assert (t.opset, t.translation_table) == (19, "ops:TABLE")


@pytest.mark.parametrize(
    ("extra", "expect"),
    [
        ('dynamic-shape = { x = { 0 = "b" } }', "unknown key `dynamic-shape`; did you mean "),
        ("timout = 10", "unknown key `timout`; did you mean 'timeout'?"),
        ("exporter = { opst = 18 }", "unknown key `exporter.opst`; did you mean 'opset'?"),
        (
            '[[tool.onnxlint.targets]]\nname = "net"\nfactory = "m:g"',
            "pyproject.toml:6: [[tool.onnxlint.targets]] target 'net': two targets are named "
            "'net' (the other is on line 3)",
        ),
    ],
)
def test_bad_target_keys_are_an_error_in_check(
    cli, tmp_path: Path, extra: str, expect: str
) -> None:
    write(tmp_path / "m.py", "x = 1\n")
    write(tmp_path / "pyproject.toml", TARGETS.format(extra=extra))
    r = cli("check", ".", "--no-cache", cwd=tmp_path)
    assert r.returncode == 2, r.stdout
    assert expect in r.stderr and re.search(r"pyproject\.toml:\d+: ", r.stderr)
    assert "Traceback" not in r.stderr


def test_analyze_names_the_bad_key_not_a_missing_target(cli, tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", TARGETS.format(extra="timout = 10"))
    r = cli("analyze", "net", cwd=tmp_path)
    assert r.returncode == 2
    assert "unknown key `timout`; did you mean 'timeout'?" in r.stderr
    assert "no target named" not in r.stderr


def test_misspelt_top_level_key_gets_a_did_you_mean(cli, tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.onnxlint]\nextend-exlude = ["x"]\n')
    r = cli("check", ".", cwd=tmp_path)
    assert r.returncode == 2
    assert "unknown key 'extend-exlude'; did you mean 'extend-exclude'?" in r.stderr


def test_target_marker_in_a_file_that_cannot_be_imported_says_so(cli, tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.onnxlint]\n")
    write(
        tmp_path / "001_model.py",
        "import torch\n\n\n# onnxlint: target\ndef make():\n    return torch.nn.Linear(2, 2), ()\n",
    )
    r = cli("analyze", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "001_model.py:5:" in r.stdout
    assert "`# onnxlint: target` on `make` is ignored" in r.stdout
    assert "cannot be imported" in r.stdout and "rename it" in r.stdout


def test_factory_can_name_a_file(tmp_path: Path) -> None:
    from onnxlint.deep.targets import TargetError, validate_target

    write(tmp_path / "vision" / "__init__.py", "")
    write(tmp_path / "vision" / "targets.py", "def make():\n    pass\n")
    t = validate_target({"name": "n", "factory": "vision/targets.py:make"}, tmp_path)
    assert t.factory == "vision.targets:make"
    with pytest.raises(TargetError, match=r"names 'nope\.py', which does not exist"):
        validate_target({"name": "n", "factory": "nope.py:make"}, tmp_path)
    write(tmp_path / "scripts" / "001_net.py", "def make():\n    pass\n")
    with pytest.raises(TargetError, match="cannot be imported"):
        validate_target({"name": "n", "factory": "scripts/001_net.py:make"}, tmp_path)


def test_readme_documents_every_configuration_key_and_analyze_exit_codes(repo_root: Path) -> None:
    from onnxlint.core.config import _KEYS, DEEP_KEYS, TARGET_EXPORTER_KEYS, TARGET_KEYS

    readme = (repo_root / "README.md").read_text()
    config = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    for key in sorted(_KEYS):
        assert re.search(rf"^{re.escape(key)} = ", config, re.M) or (
            key in ("targets", "deep") and f"[tool.onnxlint.{key}]" in config
        ), key
    for key in (*TARGET_KEYS, *DEEP_KEYS, *TARGET_EXPORTER_KEYS):
        assert re.search(rf"\b{re.escape(key)} = ", config), key
    assert "ignore-file[" in readme
    deep = readme.split("## Deep analysis", 1)[1].split("\n## ", 1)[0]
    assert "Exit codes of `onnxlint analyze`" in deep
