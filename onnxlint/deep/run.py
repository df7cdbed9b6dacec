"""`onnxlint analyze` and `onnxlint check --deep`: the deep analysis from the command line.

`onnxlint/cli/__init__.py` owns the parser and calls `add_analyze_arguments`,
`run_analyze` and `deep_check`; `python -m onnxlint.deep.run` runs `analyze`
on its own. Exit codes follow `check`: 0 clean, 1 findings, 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from onnxlint.core.config import project_python
from onnxlint.core.violation import Severity, Violation
from onnxlint.deep import report
from onnxlint.deep.analyzer import DeepAnalyzer
from onnxlint.deep.notebooks import NotebookError, in_cells, is_notebook, read_module
from onnxlint.deep.result import DeepResult, gb, line_span
from onnxlint.deep.targets import (
    Target,
    TargetError,
    classes_built_by,
    discover_targets,
    factory_location,
    load_targets,
)

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
CACHE_SUBDIR = Path(".onnxlint_cache") / "deep"

Progress = Callable[[str, str, "int | None"], None]


def add_analyze_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "targets",
        nargs="*",
        metavar="TARGET",
        help="target names ([[tool.onnxlint.targets]] or module:function), or export scripts "
        "(SCRIPT.py: every export call it makes; SCRIPT.py:LINE: the call on that line), or "
        "Jupyter notebooks (NB.ipynb: its code cells run in order as one script; "
        "'NB.ipynb:cell N:LINE': the call on that line of that cell); default: all targets",
    )
    parser.add_argument(
        "--argv",
        metavar="ARGS",
        help="command-line arguments for the export scripts analysed (one string, split "
        "like a shell; or everything after `--`: `onnxlint analyze export.py -- --opset 17`; "
        "default: [[tool.onnxlint.scripts]] `argv`, else none)",
    )
    parser.add_argument(
        "--report", metavar="FILE", type=Path, help="write a report (.html, else Markdown)"
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--verify", action="store_true", help="also run onnxruntime vs eager")
    parser.add_argument("--python", metavar="PY", help="interpreter for the worker")
    parser.add_argument("--no-cache", action="store_true", help="ignore cached results")
    parser.add_argument(
        "--path",
        dest="discover",
        action="append",
        type=Path,
        default=None,
        help="look for `# onnxlint: target` functions here (default: the project root)",
    )


def _config_parts(config: Any) -> tuple[Path, list[dict[str, Any]], dict[str, Any]]:
    root = Path(getattr(config, "root", None) or Path.cwd())
    raw = [dict(t) for t in getattr(config, "targets", ()) or ()]
    deep = dict(getattr(config, "deep", {}) or {})
    return root, raw, deep


def _stderr_progress(name: str, phase: str, percent: int | None) -> None:
    pct = f" {percent}%" if percent is not None else ""
    print(f"onnxlint: {name}: {phase}{pct}", file=sys.stderr, flush=True)


def collect_targets(
    raw: list[dict[str, Any]], root: Path, paths: Iterable[Path]
) -> tuple[list[Target], list[Violation]]:
    """Declared plus discovered targets; an invalid declaration becomes an OLX812 finding."""
    problems: list[Violation] = []
    targets: list[Target] = []
    for i, entry in enumerate(raw):
        try:
            targets += load_targets([entry], root)
        except TargetError as e:
            problems.append(_config_violation(root, entry, i, str(e)))
    names = {t.name for t in targets}
    factories = {t.factory for t in targets}
    unusable: list[tuple[Path, int, str]] = []
    found = discover_targets(paths, root, unusable)
    for path, line, message in unusable:
        problems.append(_invalid_target(path, line, message))
    for t in found:
        # A marked function that a [[tool.onnxlint.targets]] entry already declares is
        # the same target (the declaration, with its options, wins).
        if t.name not in names and t.factory not in factories:
            names.add(t.name)
            factories.add(t.factory)
            targets.append(t)
    return targets, problems


def _config_violation(root: Path, entry: dict[str, Any], index: int, message: str) -> Violation:
    from onnxlint.deep.targets import _pyproject_line

    path = root / "pyproject.toml"
    name = entry.get("name")
    line = _pyproject_line(path, name) if isinstance(name, str) else 1
    return _invalid_target(path, line, message)


def _invalid_target(path: Path, line: int, message: str) -> Violation:
    """OLX812 (invalid analysis target) at a line of a file."""
    return Violation(
        path=str(path),
        span=line_span(str(path), line),
        code="OLX812",
        message=message,
        severity=Severity.ERROR,
        source="deep",
    )


def run_targets(
    targets: Sequence[Target],
    *,
    python: str | None,
    verify: bool,
    root: Path,
    use_cache: bool = True,
    progress: Progress | None = None,
    fix_reports: list[Any] | None = None,
) -> list[DeepResult]:
    """Analyse each target. With `fix_reports` (a list to fill), the candidate fixes of
    each result's findings are also proven (`onnxlint.deep.fixes`) and the proven ones put
    on its findings: only when fixes are asked for, since proofs cost a real run each."""
    results = []
    cache_dir = root / CACHE_SUBDIR if use_cache else None  # --no-cache: no folder at all
    with DeepAnalyzer(python, targets=list(targets), cache_dir=cache_dir) as analyzer:
        for t in targets:

            def on_progress(phase: str, percent: int | None, _name: str = t.name) -> None:
                if progress is not None:
                    progress(_name, phase, percent)

            res = analyzer.analyze(t, on_progress, verify=verify or None, use_cache=use_cache)
            if fix_reports is not None and res.ok:
                from onnxlint.deep.fixes import prove_fixes

                def on_proof(phase: str, percent: int | None, _name: str = t.name) -> None:
                    if progress is not None:
                        progress(_name, f"proving fixes: {phase}", percent)

                report = prove_fixes(analyzer, t, res, progress=on_proof, together=True)
                res.violations = report.fixed(res.violations)
                fix_reports.append(report)
            # a notebook's findings (and fixes) at its cells' lines, as the static engine's
            # (the worker and the proofs have them at the lines of its cells as one module)
            res.violations = in_cells(res.violations)
            results.append(res)
    return results


NO_TARGETS = (
    "no targets to analyse: declare one in pyproject.toml ([[tool.onnxlint.targets]] with "
    '`name` and `factory = "package.module:function"`) or put `# onnxlint: target` above a '
    "function that returns (model, args), or name an export script: "
    "`onnxlint analyze tools/export.py`"
)


def scripts_instead(
    paths: Sequence[Path],
    scripts: Sequence[dict[str, Any]],
    root: Path,
    messages: list[str] | None,
) -> list[Target]:
    """With no targets declared: the export calls of the project's scripts, said once."""
    from onnxlint.deep.scripts import project_scripts

    found = project_scripts(paths, scripts, root)
    if found and messages is not None:
        files = len({t.script for t in found})
        messages.append(
            f"no deep-analysis targets declared: analysing the "
            f"{plural(len(found), 'export call')} of {plural(files, 'script')} "
            "(set `scripts = false` in [tool.onnxlint.deep] to turn this off)"
        )
    return found


def targets_under(targets: Sequence[Target], paths: Sequence[str | Path]) -> list[Target]:
    """The targets whose factory, or a model class it builds, lives under one of `paths`."""
    wanted = [Path(p).resolve() for p in paths]

    def under(file: Path) -> bool:
        file = file.resolve()
        return any(file == w or w in file.parents for w in wanted)

    out = []
    for t in targets:
        files = [p for p, _ in classes_built_by(t)]
        loc = factory_location(t)
        if loc is not None:
            files.append(loc[0])
        if t.decl_path is not None and t.origin in ("marker", "exportable", "script"):
            files.append(t.decl_path)
        # A factory that cannot be located (an installed package) belongs to the project.
        if any(under(f) for f in files) or (not files and under(t.root)):
            out.append(t)
    return out


def deep_check(
    paths: Sequence[str | Path],
    root: Path,
    raw_targets: list[dict[str, Any]],
    python: str | None = None,
    verify: bool = False,
    progress: Progress | None = None,
    *,
    use_cache: bool = True,
    messages: list[str] | None = None,
    scripts: Sequence[dict[str, Any]] = (),
    run_scripts: bool = True,
    fix_reports: list[Any] | None = None,
) -> list[Violation]:
    """OLX8xx findings for the declared targets and the `# onnxlint: target` functions whose
    factory or model lives under `paths`; when the project declares none, for the export
    calls of the scripts under `paths` (unless `run_scripts` is off). `messages` gets what
    the user should know (no targets, scripts analysed instead). With `fix_reports`, the
    findings' fixes are proven and carried (see `run_targets`)."""
    root = Path(root)
    targets, problems = collect_targets(raw_targets, root, [Path(p) for p in paths])
    chosen = targets_under(targets, paths)
    if not targets and run_scripts:
        chosen = scripts_instead([Path(p) for p in paths], scripts, root, messages)
    if not chosen and not problems and messages is not None:
        if targets:
            names = ", ".join(t.name for t in targets)
            messages.append(
                f"no deep-analysis target builds a model from the paths given "
                f"(targets: {names}); --deep analysed nothing"
            )
        else:
            messages.append(NO_TARGETS)
    results = run_targets(
        chosen,
        python=python,
        verify=verify,
        root=root,
        progress=progress,
        use_cache=use_cache,
        fix_reports=fix_reports,
    )
    out = list(problems)
    for r in results:
        out += r.violations
    return sorted(out, key=Violation.sort_key)


def run_analyze(args: argparse.Namespace, config: Any) -> int:
    root, raw, deep = _config_parts(config)
    discover = getattr(args, "discover", None) or [root]
    targets, problems = collect_targets(raw, root, discover)
    wanted = list(getattr(args, "targets", []) or [])
    if wanted:
        by_name = {t.name: t for t in targets}
        chosen = []
        for w in wanted:
            script = _script_spec(w)
            if script is not None:
                found = _script_targets(script, root, config, getattr(args, "argv", None))
                if isinstance(found, str):
                    print(f"onnxlint: {found}", file=sys.stderr)
                    return EXIT_USAGE
                chosen += found
            elif w in by_name:
                chosen.append(by_name[w])
            elif ":" in w:
                chosen.append(Target(name=w, factory=w, root=root, origin="cli"))
            else:
                known = ", ".join(sorted(by_name)) or "none declared"
                print(f"onnxlint: no target named {w!r} (known: {known})", file=sys.stderr)
                return EXIT_USAGE
        targets = chosen
    elif not targets and deep.get("scripts", True):
        said: list[str] = []
        targets = scripts_instead(discover, getattr(config, "scripts", ()) or (), root, said)
        for m in said:
            print(f"onnxlint: {m}", file=sys.stderr)
    if not targets and not problems:
        print(f"onnxlint: {NO_TARGETS}", file=sys.stderr)
        return EXIT_USAGE
    # `--python` as typed, from the working directory; the project's from its pyproject.toml
    python = getattr(args, "python", None) or project_python(deep.get("python"), root)
    fmt = getattr(args, "format", "text")
    results = run_targets(
        targets,
        python=python,
        verify=bool(getattr(args, "verify", False)),
        root=root,
        use_cache=not getattr(args, "no_cache", False),
        progress=None if fmt == "json" else _stderr_progress,
    )
    report_path = getattr(args, "report", None)
    if report_path is not None:
        report.write_report(results, Path(report_path))
    violations = sorted(
        [*problems, *(v for r in results for v in r.violations)], key=Violation.sort_key
    )
    if fmt == "json":
        print(
            json.dumps(
                {
                    "violations": [v.to_json() for v in violations],
                    "targets": [
                        {k: v for k, v in r.to_json().items() if k != "violations"} for r in results
                    ],
                },
                indent=2,
                default=str,
            )
        )
    else:
        _print_text(results, problems, root)
        if report_path is not None:
            print(f"onnxlint: report written to {report_path}", file=sys.stderr)
    # an export call the script's run did not reach (it took another path) is said, as
    # information, but is no finding against the code
    counted = [v for v in violations if not (v.code == "OLX812" and v.severity is Severity.INFO)]
    return EXIT_FINDINGS if counted else EXIT_CLEAN


_SCRIPT_SPEC = re.compile(
    r"^(?P<path>.+\.(?:py|ipynb))(?::(?:cell (?P<cell>\d+):)?(?P<line>\d+))?$", re.IGNORECASE
)


def _script_spec(spec: str) -> tuple[Path, int | None, int | None] | None:
    """`export.py` or `export.py:42` -> (path, None, line), `export.ipynb:cell 5:2` -> (path,
    cell, line in the cell); None for a target name."""
    m = _SCRIPT_SPEC.match(spec)
    if m is None:
        return None
    cell = int(m.group("cell")) if m.group("cell") else None
    return Path(m.group("path")), cell, int(m.group("line")) if m.group("line") else None


def _script_targets(
    spec: tuple[Path, int | None, int | None], root: Path, config: Any, argv: str | None
) -> list[Target] | str:
    """The script targets of `analyze SCRIPT.py[:LINE]` (or a notebook, `NB.ipynb[:cell
    N:LINE]`), or what is wrong with the spec."""
    from dataclasses import replace

    from onnxlint.deep.scripts import export_call_lines, script_targets

    path, cell, line = spec
    if not path.is_file():
        return f"no such {'notebook' if is_notebook(str(path)) else 'script'}: {path}"
    if is_notebook(str(path)):
        found_line = _notebook_line(path, cell, line)
        if isinstance(found_line, str):
            return found_line
        line = found_line
    elif cell is not None:
        return f"{path}: only a notebook has cells (give `{path}:LINE`)"
    elif line is not None and not 1 <= line <= len(path.read_text(errors="replace").splitlines()):
        known = ", ".join(map(str, export_call_lines(path))) or "none found"
        return f"{path}:{line}: the script has no such line (export calls: {known})"
    found = script_targets(path, root, line, getattr(config, "scripts", ()) or ())
    if argv is not None:
        found = [replace(t, argv=tuple(shlex.split(argv))) for t in found]
    return found


def _notebook_line(path: Path, cell: int | None, line: int | None) -> int | str | None:
    """The module line (the notebook's code cells as one script) of `cell`:`line`; None for
    every export call; a message when the notebook cannot be run or has no such place."""
    try:
        module = read_module(path)
    except NotebookError as exc:
        return f"{path}: {exc}"
    if line is None:
        return None
    if cell is None:
        return f"{path}: name a place in a notebook by its cell: `{path}:cell N:LINE`"
    place = module.place_of_cell(cell - 1)
    if place is None or not 1 <= line <= place.line_count:
        return f"{path}: the notebook has no code line at cell {cell}:{line}"
    return place.start_line + line - 1


def _as_what(r: DeepResult) -> str:
    """What the outcome is of, where the script's own call is not the dynamo exporter's: the
    analysis runs the model the way `torch.onnx.export` (dynamo) would export it, and
    `torch.jit.trace` or `dynamo=False` (TorchScript) may well run where that fails
    (yolov7's export.py traces, then exports)."""
    data = r.data or {}
    call = data.get("script_call") or {}
    if call.get("kind") == "trace":
        return "as torch.onnx.export (dynamo) would export the traced model: "
    if data.get("script_exporter"):
        return "as torch.onnx.export with the dynamo exporter would: "
    return ""


def _print_text(results: list[DeepResult], problems: list[Violation], root: Path) -> None:
    for v in problems:
        print(_line(v, root))
    for r in results:
        mem = gb(r.peak_rss) if r.peak_rss else "?"
        head = f"{r.target.name}: {_as_what(r)}{r.outcome}{' (cached)' if r.cached else ''}"
        if r.detail and not r.ok and r.detail not in r.outcome:
            head += f" ({r.detail})"
        print(f"{head}, {plural(len(r.violations), 'finding')}, {r.wall:.1f} s, peak {mem}")
        skipped = report.script_skipped(r, root)
        if skipped:
            print(f"  skipped ({report.SKIPPED_WHY}): {skipped}")
        for said in report.script_notes(r):  # a direct call, a loop's several models
            print(f"  {said}")
        for line in report.memory_lines(r):
            print(f"  memory: {line}" if line.startswith("weights") else f"          {line}")
        for v in r.violations:
            print("  " + _line(v, root))
            for n in v.notes:
                first = n.splitlines()[0] if n else n
                print(f"      {first}")


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def _line(v: Violation, root: Path) -> str:
    try:
        path = str(Path(v.path).resolve().relative_to(root.resolve()))
    except ValueError:
        path = v.path
    cell = f"cell {v.cell}:" if v.cell is not None else ""
    return f"{path}:{cell}{v.line}:{v.column}: {v.code} [{v.severity.value}] {v.message}"


def split_script_argv(args: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """`analyze export.py -- --weights w.pt`: what follows the first `--` is the scripts'
    command line, as a user copies it from a README (argparse would take it for targets)."""
    args = list(args)
    if "--" not in args:
        return args, None
    at = args.index("--")
    return args[:at], args[at + 1 :]


def use_script_argv(args: argparse.Namespace, script_argv: list[str] | None) -> None:
    """Put the arguments given after `--` where `--argv` puts them; both at once is an error."""
    if script_argv is None:
        return
    if getattr(args, "argv", None) is not None:
        raise TargetError("give the script's arguments either after `--` or with --argv, not both")
    args.argv = shlex.join(script_argv)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m onnxlint.deep.run [TARGET ...]` = `onnxlint analyze`."""
    parser = argparse.ArgumentParser(prog="onnxlint analyze")
    add_analyze_arguments(parser)
    own, script_argv = split_script_argv(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(own)
    try:
        use_script_argv(args, script_argv)
    except TargetError as e:
        print(f"onnxlint: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        from onnxlint.core.config import load_config

        config: Any = load_config(Path.cwd())
    except Exception as e:
        print(f"onnxlint: {e}", file=sys.stderr)
        return EXIT_USAGE
    return run_analyze(args, config)


if __name__ == "__main__":
    raise SystemExit(main())
