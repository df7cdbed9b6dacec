"""A script run that stopped for its command line: "Set arguments..." and the pyproject entry.

When the deep analysis runs an export script and the script stops because it needs
command-line arguments (argparse's required option, a config it must read), the finding says
to set `argv` in a `[[tool.onnxlint.scripts]]` entry. Here the editor does it: the finding's
quick-fix menu and the end-of-analysis notification offer "Set arguments..." (the client's
`onnxlint.setArguments`: an input box), and `onnxlint.setScriptArguments` writes the entry
into the project's pyproject.toml (a new table, or the `argv` of the script's table), checks
that the configuration still loads, and the client runs the analysis again.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types

from onnxlint.core.violation import Violation

SET_ARGUMENTS = "onnxlint.setArguments"  # the client's: asks for the arguments
SET_SCRIPT_ARGUMENTS = "onnxlint.setScriptArguments"  # the server's: writes them
ENTRY_HINT = "[[tool.onnxlint.scripts]]"


def asks_for_arguments(v: Violation) -> bool:
    """A deep finding that says the script needs its command line (`argv`)."""
    if v.source != "deep" or v.code != "OLX812":
        return False
    return any(ENTRY_HINT in text and "argv" in text for text in (v.message, *v.notes))


def stop_of(result: Any) -> dict[str, Any] | None:
    """For a script target whose run stopped for its command line: what "Set arguments..."
    needs (the script, its current argv, the lens argument that runs it again)."""
    target = result.target
    if target.script is None or not any(asks_for_arguments(v) for v in result.violations):
        return None
    extra = dict(target.extra or {})
    script = str(extra.get("script") or target.script)
    line = target.decl_line or target.script_line or 1
    rerun: dict[str, Any] = {"line": line, "script": script}
    if extra.get("function"):
        rerun["function"] = extra["function"]
    return {"script": script, "argv": list(target.argv), "rerun": rerun, "target": target.name}


def code_action(
    uri: str, v: Violation, diag: types.Diagnostic, stop: dict[str, Any]
) -> types.CodeAction:
    name = Path(stop["script"]).name
    return types.CodeAction(
        title=f"onnxlint ({v.code}): Set the command-line arguments {name} runs with "
        "(writes argv in pyproject.toml, then analyses again)...",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diag],
        command=types.Command(
            title="Set arguments...", command=SET_ARGUMENTS, arguments=[uri, stop]
        ),
    )


def _toml_string(s: str) -> str:
    return json.dumps(s)  # a TOML basic string (JSON's escapes are TOML's)


def entry_text(rel: str, argv: list[str]) -> str:
    args = ", ".join(_toml_string(a) for a in argv)
    return f"[[tool.onnxlint.scripts]]\npath = {_toml_string(rel)}\nargv = [{args}]\n"


_TABLE = re.compile(r"^\s*\[\[?[^\]]+\]\]?\s*(#.*)?$")


def with_arguments(text: str, rel: str, argv: list[str]) -> str:
    """pyproject.toml's text with the script's `argv` set: in its `[[tool.onnxlint.scripts]]`
    table when it has one, else in a new table at the end. Everything else is kept."""
    lines = text.splitlines(keepends=True)
    args = "argv = [" + ", ".join(_toml_string(a) for a in argv) + "]\n"
    i = 0
    while i < len(lines):
        if lines[i].strip().startswith("[[tool.onnxlint.scripts]]"):
            end = i + 1
            while end < len(lines) and not _TABLE.match(lines[end]):
                end += 1
            body = lines[i + 1 : end]
            paths = [b for b in body if re.match(r"\s*path\s*=", b)]
            if paths and _value(paths[0]) == rel:
                at = next((k for k, b in enumerate(body) if re.match(r"\s*argv\s*=", b)), None)
                if at is not None and "]" in body[at]:
                    body[at] = args
                else:
                    body.insert(body.index(paths[0]) + 1, args)
                return "".join(lines[: i + 1] + body + lines[end:])
            i = end
            continue
        i += 1
    sep = "" if not text or text.endswith("\n") else "\n"
    return text + sep + "\n" + entry_text(rel, argv)


def _value(line: str) -> str | None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

    try:
        value = tomllib.loads(line.strip()).get("path")
    except tomllib.TOMLDecodeError:
        return None
    return value if isinstance(value, str) else None


def write_arguments(root: Path, script: Path, argv: list[str]) -> Path:
    """Set the script's argv in `root`'s pyproject.toml (made if there is none); the file
    is left as it was when the result would not load as a configuration (ValueError)."""
    from onnxlint.core.config import ConfigError, load_config

    pyproject = root / "pyproject.toml"
    try:
        rel = script.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = str(script)
    before = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    after = with_arguments(before, rel, argv)
    tmp = pyproject.with_name(f".{pyproject.name}.onnxlint-tmp")
    tmp.write_text(after, encoding="utf-8")
    os.replace(tmp, pyproject)
    try:
        load_config(pyproject=pyproject)
    except (ConfigError, OSError) as exc:
        pyproject.write_text(before, encoding="utf-8")
        raise ValueError(f"pyproject.toml would not load with these arguments: {exc}") from exc
    return pyproject
