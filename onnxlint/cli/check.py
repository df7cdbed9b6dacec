"""Running `onnxlint check`: find files, check them (cached, in parallel), fix, report."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import gc
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from onnxlint.cli.errors import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, UsageError
from onnxlint.cli.output.machine import (
    render_github,
    render_json,
    render_sarif,
    render_statistics_json,
)
from onnxlint.cli.output.text import (
    Painter,
    render_statistics,
    render_text,
    summary_line,
    use_color,
)
from onnxlint.cli.result_cache import ResultCache, config_key
from onnxlint.core.codes import SYNTAX_ERROR_CODE
from onnxlint.core.config import Config, load_config
from onnxlint.core.confirmed import merge_confirmed_files
from onnxlint.core.violation import Edit, Fix, Severity, Span, Violation
from onnxlint.engine import Engine
from onnxlint.project import ImportedNames, ReachTable
from onnxlint.project.summary import SummaryStore
from onnxlint.rules import all_rules
from onnxlint.source.files import (
    CHECKED_SUFFIXES,
    PathProblem,
    ReadError,
    content_key,
    discover,
    read_text,
)
from onnxlint.source.fixes import fix_cells, fix_text, read_source, write_source
from onnxlint.source.notebook import (
    Notebook,
    NotebookError,
    file_position,
    is_notebook,
    read_notebook,
    replace_sources,
)


@dataclass
class FileOutcome:
    path: str
    violations: list[Violation] = field(default_factory=list)
    fixed: int = 0
    diff: str = ""
    new_text: str | None = None
    # Other files the check read (content hash) or looked for (None): see onnxlint.project.
    deps: dict[str, str | None] = field(default_factory=dict)
    created: int = 0  # findings that the applied fixes brought about (among `violations`)


def warn(message: str) -> None:
    print(f"onnxlint: warning: {message}", file=sys.stderr)


def _effective_config(args: argparse.Namespace, start: Path) -> Config:
    config = load_config(start, Path(args.config) if args.config else None)
    for w in config.warnings:
        warn(w)
    changes: dict[str, object] = {}
    if args.select:
        changes["select"] = tuple(args.select)
    if args.extend_select:
        changes["extend_select"] = config.extend_select + tuple(args.extend_select)
    if args.ignore:
        changes["ignore"] = config.ignore + tuple(args.ignore)
    if args.target_torch:
        from onnxlint.core.config import parse_torch_version

        changes["target_torch"] = parse_torch_version(args.target_torch, "--target-torch")
    return config.with_overrides(**changes) if changes else config


def _error_violation(path: str, message: str) -> Violation:
    return Violation(path, Span(1, 1, 1, 1), SYNTAX_ERROR_CODE, message, Severity.ERROR)


def _explicit_files(
    paths: list[str], config: Config, excludes: tuple[str, ...]
) -> tuple[list[str], list[PathProblem]]:
    """Files named on the command line that will not be checked, each with one line: the
    configuration excludes it (a note), or it is not Python (an error). The rest of `paths`
    is returned for `discover`."""
    keep: list[str] = []
    problems: list[PathProblem] = []
    cfg = config.with_overrides(extend_exclude=config.extend_exclude + excludes)
    for raw in paths:
        p = Path(raw)
        if not p.is_file():
            keep.append(raw)
            continue
        if cfg.is_excluded(raw):
            where = "--exclude" if not config.is_excluded(raw) else _config_name(config)
            warn(f"{raw}: excluded by `exclude`/`extend-exclude` in {where}; not checked")
            continue
        if not raw.endswith(CHECKED_SUFFIXES) and not _looks_like_python(p):
            problems.append(
                PathProblem(
                    raw,
                    "not a Python file (onnxlint checks *.py, *.pyi and *.ipynb); not checked",
                )
            )
            continue
        keep.append(raw)
    return keep, problems


def _config_name(config: Config) -> str:
    return str(config.source) if config.source else "the configuration"


def _looks_like_python(path: Path) -> bool:
    """A script without a suffix counts when its first line runs Python."""
    try:
        with path.open("rb") as fh:
            first = fh.readline(200)
    except OSError:
        return True  # let reading it report the problem
    return first.startswith(b"#!") and b"python" in first


def cmd_check(args: argparse.Namespace) -> int:
    if args.add_noqa and (args.fix or args.diff or args.stdin_filename):
        raise UsageError(
            "--add-noqa writes comments only: it cannot go with --fix, --diff or stdin"
        )
    if args.stdin_filename:
        return _check_stdin(args)
    paths = args.paths or ["."]
    config = _effective_config(args, Path(paths[0]))
    excludes = tuple(args.exclude)
    to_walk, problems = _explicit_files(paths, config, excludes)
    files, missing = discover(to_walk, config, excludes)
    problems += missing
    for p in problems:
        print(f"onnxlint: error: {p.path}: {p.message}", file=sys.stderr)
    if problems and not files:
        return EXIT_ERROR
    if not files and to_walk:
        warn(f"no Python files found under {', '.join(to_walk)}")
    outcomes = _check_files(files, config, args)
    violations = sorted((v for o in outcomes for v in o.violations), key=Violation.sort_key)
    if args.deep:
        deep, reports = _deep_violations(paths, config, args)
        if deep_fixes_wanted(args):
            deep, written, fixes = _apply_deep_fixes(deep, reports, args.diff)
            if written:  # the static findings of the rewritten files, as they now are
                _recheck(outcomes, written, config)
                violations = sorted(
                    (v for o in outcomes for v in o.violations), key=Violation.sort_key
                )
            outcomes += fixes
        # one finding per cause, as in the editor: a deep finding that confirms a static one
        # on its line is folded into it
        violations = sorted(merge_confirmed_files(violations, deep), key=Violation.sort_key)
    violations = [_with_related_shown(v) for v in violations]
    if args.add_noqa:
        violations = _add_noqa(violations, sys.stdout if args.format == "text" else sys.stderr)
    fixed = sum(o.fixed for o in outcomes)
    _emit(args, violations, outcomes, config, fixed, len(files))
    if problems:
        return EXIT_ERROR
    if args.diff:
        return EXIT_FINDINGS if any(o.diff for o in outcomes) else EXIT_CLEAN
    if violations and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _add_noqa(violations: list[Violation], out: TextIO) -> list[Violation]:
    """Writes the comments (onnxlint.cli.add_noqa); returns the findings still reported."""
    from onnxlint.cli.add_noqa import add_noqa_comments

    done = add_noqa_comments(violations)
    for problem in done.problems:
        warn(problem)
    s = "" if done.added == 1 else "s"
    files = f"{done.files} file{'' if done.files == 1 else 's'}"
    print(f"Added {done.added} noqa comment{s} to {files}.", file=out)
    return sorted(done.left, key=Violation.sort_key)


def deep_fixes_wanted(args: argparse.Namespace) -> bool:
    """Deep fixes are proven (a real run each) only when they are asked for: `--deep` with
    `--fix` or `--diff`, and `--unsafe-fixes` (they rewrite model code)."""
    return bool(args.deep and (args.fix or args.diff) and args.unsafe_fixes)


def _deep_violations(
    paths: list[str], config: Config, args: argparse.Namespace
) -> tuple[list[Violation], list[object]]:
    try:
        from onnxlint.deep.run import deep_check
    except ImportError as exc:
        raise UsageError(f"--deep needs the deep analysis: {exc}") from None
    root = config.root or Path.cwd()
    messages: list[str] = []
    reports: list[object] | None = [] if deep_fixes_wanted(args) else None
    found = deep_check(
        paths,
        root,
        list(config.targets),
        python=args.python or config.deep_python(),  # --python: from the working directory
        verify=args.verify,
        use_cache=not args.no_cache,
        messages=messages,
        scripts=list(config.scripts),
        run_scripts=bool(config.deep.get("scripts", True)),
        fix_reports=reports,
    )
    for m in messages:
        warn(m)
    for r in reports or ():
        for line in _proof_lines(r):
            print(f"onnxlint: {line}", file=sys.stderr)
    # Paths as the static findings have them: relative to where onnxlint runs.
    return [replace(v, path=_display_path(v.path)) for v in found], list(reports or ())


def _proof_lines(report: object) -> list[str]:
    """What the proofs of one target's fixes found (stderr), one line per candidate."""
    from onnxlint.deep.fixes import FixReport

    assert isinstance(report, FixReport)
    from onnxlint.deep.notebooks import in_cells

    out = []
    for p in report.proofs:
        (v,) = in_cells([p.violation])  # a notebook's: at its cell's line
        cell = f"cell {v.cell}:" if v.cell is not None else ""
        where = f"{_display_path(v.path)}:{cell}{v.line}: {v.code}"
        if p.fix is not None:
            out.append(f"{where}: proven: {p.title} ({p.seconds:.1f} s)")
        else:
            out.append(f"{where}: not offered: {p.candidate.title}: {p.why} ({p.seconds:.1f} s)")
    if report.reference_error and not report.proofs:
        out.append(f"{report.target.name}: no fix proven: {report.reference_error}")
    return out


def _apply_deep_fixes(
    deep: list[Violation], reports: list[object], diff: bool
) -> tuple[list[Violation], list[str], list[FileOutcome]]:
    """Write the proven deep fixes (or make their diff). Returns the deep findings as they
    are after the fixes (for a target whose fixes were written: its proof's analysis of
    the rewritten code), the files written, and an outcome per file (its diff, or how many
    fixes it got)."""
    from onnxlint.deep.fixes import FixReport
    from onnxlint.deep.notebooks import in_cells
    from onnxlint.source.fixes import apply_edits, parses

    by_path: dict[str, list[Violation]] = {}  # a notebook's findings with fixes
    edits_at: dict[str, list[Edit]] = {}  # the other files': every fix's edits there
    fixes_at: Counter[str] = Counter()
    created: dict[str, str] = {}  # files the fixes add
    taken: set[Fix] = set()
    for v in deep:
        if v.fix is None or v.fix in taken:  # findings a fix answers together share it
            continue
        taken.add(v.fix)
        path = os.path.abspath(v.path)
        if is_notebook(path):
            by_path.setdefault(path, []).append(v)
        elif v.fix.edits:
            edits_at.setdefault(path, []).extend(v.fix.edits)
        for f in v.fix.files:
            other = os.path.abspath(f.path)
            if f.create:
                if created.get(other, f.text) != f.text:
                    warn(f"{_display_path(other)}: two deep fixes add it; the second not applied")
                    continue
                created[other] = f.text
            elif not is_notebook(other):
                edits_at.setdefault(other, []).extend(f.edits)
        # counted once, in the first file it edits
        fixes_at[path if v.fix.edits else os.path.abspath(v.fix.files[0].path)] += 1
    written: list[str] = []
    outcomes: list[FileOutcome] = []
    # what each target's findings were, in the cells of the notebooks as they are now
    before = {id(r): _cell_keys(r.before) for r in reports if isinstance(r, FixReport)}
    for path, found in sorted(by_path.items()):
        outcome = _fix_notebook_deep(path, found, diff)
        if outcome is not None:
            outcomes.append(outcome)
            if not diff:
                written.append(path)
    for path, text in sorted(created.items()):
        shown = _display_path(path)
        if os.path.exists(path):
            warn(f"{shown}: exists; the deep fix that adds it was not applied")
            continue
        outcome = FileOutcome(shown, fixed=0 if diff else fixes_at[path])
        if diff:
            outcome.diff = "".join(
                difflib.unified_diff([], text.splitlines(keepends=True), "/dev/null", f"b/{shown}")
            )
        else:
            Path(path).write_text(text, encoding="utf-8")
            written.append(path)
        outcomes.append(outcome)
    for path, edits in sorted(edits_at.items()):
        src = read_source(Path(path))
        try:
            new_text = apply_edits(src.text, edits)
        except ValueError:
            warn(f"{_display_path(path)}: deep fixes overlap; not applied")
            continue
        if new_text == src.text or not parses(new_text):
            continue
        shown = _display_path(path)
        outcome = FileOutcome(shown, fixed=0 if diff else fixes_at[path])
        if diff:
            outcome.diff = "".join(
                difflib.unified_diff(
                    src.text.splitlines(keepends=True),
                    new_text.splitlines(keepends=True),
                    f"a/{shown}",
                    f"b/{shown}",
                )
            )
        else:
            write_source(src, new_text)
            written.append(path)
        outcomes.append(outcome)
    if diff or not written:
        return deep, written, outcomes
    done = set(written)
    out = list(deep)
    for r in reports:
        assert isinstance(r, FixReport)
        after = r.after()
        if after is None or not any(
            os.path.abspath(path) in done
            for p in r.proofs
            if p.fix is not None
            for path in (p.violation.path, *(f.path for f in p.fix.files))
        ):
            continue
        gone = before[id(r)]
        out = [v for v in out if _cell_key(v) not in gone]
        out += [replace(v, path=_display_path(v.path)) for v in in_cells(after)]
    return out, written, outcomes


def _cell_key(v: Violation) -> tuple[str, str, int | None, int]:
    return (v.code, os.path.abspath(v.path), v.cell, v.line)


def _cell_keys(found: list[Violation]) -> set[tuple[str, str, int | None, int]]:
    """The places of findings made at module lines, in their cells (see deep.notebooks)."""
    from onnxlint.deep.notebooks import in_cells

    return {_cell_key(v) for v in in_cells(found)}


def _fix_notebook_deep(path: str, found: list[Violation], diff: bool) -> FileOutcome | None:
    """Write the proven deep fixes of a notebook's findings (their edits in their cells),
    cell by cell as `--fix` writes a notebook: only the fixed cells' sources change."""
    from onnxlint.source.fixes import apply_edits, cell_parses

    shown = _display_path(path)
    try:
        src = read_source(Path(path))
        notebook = read_notebook(src.text)
    except (OSError, UnicodeDecodeError, NotebookError) as exc:
        warn(f"{shown}: deep fixes not applied: {exc}")
        return None
    by_cell: dict[int, list[Violation]] = {}
    for v in found:
        if v.cell is not None and v.fix is not None:
            by_cell.setdefault(v.cell - 1, []).append(v)
    sources: dict[int, str] = {}
    applied = 0
    for index, mine in sorted(by_cell.items()):
        if not 0 <= index < len(notebook.cells):
            continue
        old = notebook.cells[index].source
        try:
            new = apply_edits(old, [e for v in mine for e in (v.fix.edits if v.fix else ())])
        except ValueError:
            warn(f"{shown}: cell {index + 1}: deep fixes overlap; not applied")
            continue
        if new != old and cell_parses(new):
            sources[index] = new
            applied += len(mine)
    if not sources:
        return None
    if diff:
        return FileOutcome(shown, diff=_cells_diff(shown, notebook, sources))
    try:
        new_text = replace_sources(notebook, sources)
    except NotebookError as exc:
        warn(f"{shown}: the deep fixes were not written: {exc}")
        return None
    write_source(src, new_text)
    return FileOutcome(shown, fixed=applied)


def _recheck(outcomes: list[FileOutcome], paths: list[str], config: Config) -> None:
    """Check the files the deep fixes rewrote again (their static findings moved or went)."""
    global _ENGINE
    if _ENGINE is None:
        _ENGINE = Engine(cache_entries=0)
    wanted = {os.path.abspath(p) for p in paths}
    for o in outcomes:
        if os.path.abspath(o.path) in wanted:
            try:
                text = read_text(Path(o.path))
            except ReadError:
                continue
            o.violations = _ENGINE.check(o.path, text, config)


def _display_path(path: str) -> str:
    full = os.path.abspath(path)
    rel = os.path.relpath(full)
    return path if rel.startswith("..") else Path(rel).as_posix()


def _with_related_shown(v: Violation) -> Violation:
    """The finding with its related places' paths shown as its own path is (relative to the
    working directory where they are under it): the project model gives absolute ones."""
    if not v.related:
        return v
    shown = tuple(dataclasses.replace(r, path=_display_path(r.path)) for r in v.related)
    return dataclasses.replace(v, related=shown)


def _emit(
    args: argparse.Namespace,
    violations: list[Violation],
    outcomes: list[FileOutcome],
    config: Config,
    fixed: int,
    nfiles: int,
) -> None:
    out = sys.stdout
    if args.diff:
        out.write("".join(o.diff for o in outcomes))
        return
    created = sum(o.created for o in outcomes)
    if args.statistics:
        # As in ruff: statistics replace the findings; JSON stays JSON, others get the table.
        names = {r.code: r.name for r in all_rules()}
        if args.format == "json":
            out.write(render_statistics_json(violations, names))
        else:
            paint = Painter(use_color(out.isatty()))
            out.write(render_statistics(violations, names))
            out.write(
                summary_line(violations, fixed, nfiles, args.unsafe_fixes, paint, args.fix, created)
                + "\n"
            )
        return
    if args.format == "json":
        out.write(render_json(violations))
    elif args.format == "sarif":
        out.write(render_sarif(_in_files(violations), config.root or Path.cwd()))
    elif args.format == "github":
        out.write(render_github(_in_files(violations)))
    else:
        paint = Painter(use_color(out.isatty()))
        cache: dict[tuple[str, int | None], list[str] | None] = {}

        def lines_of(v: Violation) -> list[str] | None:
            key = (v.path, v.cell)
            if key not in cache:
                try:
                    text = read_text(Path(v.path))
                    if v.cell is not None:
                        text = read_notebook(text).cells[v.cell - 1].source
                    cache[key] = text.splitlines()
                except (ReadError, OSError, NotebookError, IndexError):
                    cache[key] = None
            return cache[key]

        out.write(
            render_text(
                violations,
                lines_of,
                paint,
                fixed=fixed,
                files_checked=nfiles,
                quiet=args.quiet,
                unsafe_fixes=args.unsafe_fixes,
                fixing=args.fix,
                created=created,
            )
        )


def _in_files(violations: list[Violation]) -> list[Violation]:
    """Findings in notebook cells placed in the notebook file itself, for formats whose
    consumers know files, not cells (SARIF, GitHub annotations): at the line of the JSON
    that holds the cell's line, with the cell and its line named in the message."""
    texts: dict[str, str | None] = {}
    out: list[Violation] = []
    for v in violations:
        if v.cell is None:
            out.append(v)
            continue
        if v.path not in texts:
            try:
                texts[v.path] = read_text(Path(v.path))
            except (ReadError, OSError):
                texts[v.path] = None
        text = texts[v.path]
        s = v.span
        if text is None:
            start, end = (1, 1), (1, 1)
        else:
            start = file_position(text, v.cell - 1, s.line, s.column)
            end = file_position(text, v.cell - 1, s.end_line, s.end_column)
        message = f"cell {v.cell}:{s.line}:{s.column}: {v.message}"
        out.append(replace(v, span=Span(*start, *end), message=message, cell=None))
    return out


# Worker-process state: one engine per process, so blocks are parsed once per process.
_ENGINE: Engine | None = None


def _pause_collection() -> None:
    """Batch checking goes file after file, and each file's libcst trees (a node per token)
    are freed by reference counting when the file is done. Automatic collections would
    walk those trees again and again (~12% of a cold run, measured), so they are off while
    checking; the young generation, where a file's leftover cycles sit, is collected once
    per file instead (`_worker_check`)."""
    gc.freeze()
    gc.disable()


@contextmanager
def _collection_paused() -> Iterator[None]:
    """`_pause_collection` for a batch checked in this process, undone afterwards."""
    _pause_collection()
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()


@contextmanager
def _shared_folder() -> Iterator[str | None]:
    """A temporary folder for the pool workers to share what they make (module summaries:
    `SummaryStore`), removed after the run; None when no temporary folder can be made."""
    try:
        folder = tempfile.TemporaryDirectory(prefix="onnxlint-")
    except OSError:
        yield None
        return
    with folder as name:
        yield name


def _worker_init(
    table: ReachTable | None, imported: ImportedNames | None = None, summaries: str | None = None
) -> None:
    """A pool worker: the project model computed once by the parent (see `_check_files`),
    and the folder where the workers share the module summaries they make."""
    global _ENGINE
    _pause_collection()
    _ENGINE = Engine(cache_entries=0)
    _ENGINE.project_model.use_table(table, imported)
    if summaries is not None:
        _ENGINE.project.shared_summaries = SummaryStore(summaries)


def _worker_check(job: tuple[str, str | None, Config, bool, bool, bool]) -> FileOutcome:
    global _ENGINE
    if _ENGINE is None:
        _ENGINE = Engine(cache_entries=0)
    path, text, config, fix, unsafe, diff = job
    try:
        if text is None:  # not read by the parent (no cache): read here, in parallel
            try:
                text = read_text(Path(path))
            except ReadError as exc:
                return FileOutcome(path, [_error_violation(path, str(exc))])
        return _check_one(_ENGINE, path, text, config, fix, unsafe, diff)
    finally:
        gc.collect(1)


def _check_one(
    engine: Engine, path: str, text: str, config: Config, fix: bool, unsafe: bool, diff: bool
) -> FileOutcome:
    violations = engine.check(path, text, config)
    if is_notebook(path):
        return _fix_notebook(engine, path, text, config, violations, fix, unsafe, diff)
    outcome = FileOutcome(path, violations, deps=dict(engine.last_deps))
    if (fix or diff) and any(v.fix for v in violations):
        result = fix_text(text, violations, lambda t: engine.check(path, t, config), unsafe=unsafe)
        if result.text != text:
            outcome.fixed = len(result.applied)
            outcome.violations, outcome.created = _mark_created(violations, result.remaining)
            outcome.new_text = result.text
            if diff:
                outcome.diff = "".join(
                    difflib.unified_diff(
                        text.splitlines(keepends=True),
                        result.text.splitlines(keepends=True),
                        f"a/{path}",
                        f"b/{path}",
                    )
                )
                outcome.violations = violations
                outcome.fixed = 0
    return outcome


def _fix_notebook(
    engine: Engine,
    path: str,
    text: str,
    config: Config,
    violations: list[Violation],
    fix: bool,
    unsafe: bool,
    diff: bool,
) -> FileOutcome:
    """`_check_one` for a notebook: fixes are applied cell by cell (onnxlint.source.fixes), and
    only the fixed cells' sources are written back (onnxlint.source.notebook)."""
    outcome = FileOutcome(path, violations, deps=dict(engine.last_deps))
    if not (fix or diff) or not any(v.fix for v in violations):
        return outcome
    notebook = read_notebook(text)  # it was read by engine.check: it is readable
    result = fix_cells(
        notebook.cells,
        violations,
        lambda cells: engine.check_cells(path, cells, config),
        unsafe=unsafe,
    )
    if not result.sources:
        return outcome
    try:
        new_text = replace_sources(notebook, result.sources)
    except NotebookError as exc:
        warn(f"{path}: the fixes were not written: {exc}")
        return outcome
    if diff:
        outcome.diff = _cells_diff(path, notebook, result.sources)
        return outcome
    outcome.fixed = len(result.applied)
    outcome.violations, outcome.created = _mark_created(violations, result.remaining)
    outcome.new_text = new_text
    return outcome


def _cells_diff(path: str, notebook: Notebook, sources: dict[int, str]) -> str:
    """The unified diff of a notebook's changed cells, one hunk header per cell."""
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
        for index, source in sorted(sources.items())
        for line in difflib.unified_diff(
            notebook.cells[index].source.splitlines(keepends=True),
            source.splitlines(keepends=True),
            f"a/{path}:cell {index + 1}",
            f"b/{path}:cell {index + 1}",
        )
    )


CREATED_NOTE = "this finding appeared after the fixes were applied: the fixed code has it"


def _mark_created(before: list[Violation], after: list[Violation]) -> tuple[list[Violation], int]:
    """`after` with a note on each finding the fixes brought about (one that was not there
    before: switching to the dynamo exporter makes an `opset_version=13` wrong)."""
    old = Counter((v.code, v.message) for v in before)
    out: list[Violation] = []
    created = 0
    for v in after:
        if old[(v.code, v.message)] > 0:
            old[(v.code, v.message)] -= 1
            out.append(v)
        else:
            created += 1
            out.append(replace(v, notes=(*v.notes, CREATED_NOTE)))
    return out, created


def _check_files(files: list[Path], config: Config, args: argparse.Namespace) -> list[FileOutcome]:
    fixing = args.fix or args.diff
    use_cache = not args.no_cache and not fixing
    # The project model (which exports reach which code) is built once, here, from the
    # project's export scripts; workers get the finished table.
    global _ENGINE
    if _ENGINE is None:
        _ENGINE = Engine(cache_entries=0)
    table = _ENGINE.project_model.table(config) if config.root is not None else None
    cache = None
    if use_cache:
        extra = _ENGINE.project_model.fingerprint(config) if table is not None else ""
        cache = ResultCache(config.root or Path.cwd(), config_key(config, extra))
    outcomes: list[FileOutcome] = []
    jobs: list[tuple[str, str | None, Config, bool, bool, bool]] = []
    digests: dict[str, str] = {}
    for f in files:
        path = str(f)
        if config.is_excluded(path):
            continue
        if cache is None:
            jobs.append((path, None, config, args.fix, args.unsafe_fixes, args.diff))
            continue
        try:
            text = read_text(f)
        except ReadError as exc:
            outcomes.append(FileOutcome(path, [_error_violation(path, str(exc))]))
            continue
        digest = content_key(text)
        hit = cache.get(digest, path)
        if hit is not None:
            outcomes.append(FileOutcome(path, hit))
            continue
        digests[path] = digest
        jobs.append((path, text, config, args.fix, args.unsafe_fixes, args.diff))
    njobs = args.jobs or (os.cpu_count() or 1)
    if njobs > 1 and len(jobs) > 8:
        with (
            _shared_folder() as summaries,
            ProcessPoolExecutor(
                max_workers=min(njobs, len(jobs)),
                initializer=_worker_init,
                initargs=(
                    table,
                    _ENGINE.project_model.imported if table is not None else None,
                    summaries,
                ),
            ) as pool,
        ):
            # Largest files first, in small chunks, so that both workers stay busy to
            # the end (files vary 100x in size; a big file last left one worker idle).
            order = sorted(range(len(jobs)), key=lambda i: -_job_size(jobs[i]))
            done = pool.map(_worker_check, [jobs[i] for i in order], chunksize=4)
            by_job = dict(zip(order, done, strict=True))
            results = [by_job[i] for i in range(len(jobs))]
    else:
        # The same finished table as the pool workers get: checking an export script here
        # must not add it to the model (a loose folder's scan lists its top-level files
        # only), or the findings would depend on --jobs and on the order of the files.
        model = _ENGINE.project_model
        if table is not None:
            model.use_table(table, model.imported)
        try:
            with _collection_paused():
                results = [_worker_check(j) for j in jobs]
        finally:
            if table is not None:
                model.use_table(None)
    for outcome in results:
        if outcome.new_text is not None and not args.diff:
            src = read_source(Path(outcome.path))
            write_source(src, outcome.new_text)
        if cache is not None and outcome.path in digests:
            cache.put(digests[outcome.path], outcome.path, outcome.violations, outcome.deps)
        outcomes.append(outcome)
    if cache is not None:
        cache.save()
    return outcomes


def _job_size(job: tuple[str, str | None, Config, bool, bool, bool]) -> int:
    """The size of a job's text (read from the cache check) or file; 0 when unknown."""
    path, text = job[0], job[1]
    if text is not None:
        return len(text)
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _check_stdin(args: argparse.Namespace) -> int:
    path = args.stdin_filename
    config = _effective_config(
        args, Path(path).parent if Path(path).parent.exists() else Path.cwd()
    )
    raw = sys.stdin.buffer.read()
    try:
        text = raw.decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError as exc:
        print(f"onnxlint: error: {path}: stdin is not UTF-8 ({exc.reason})", file=sys.stderr)
        return EXIT_ERROR
    outcome = _check_one(Engine(), path, text, config, args.fix, args.unsafe_fixes, args.diff)
    if args.fix and not args.diff:
        sys.stdout.write(outcome.new_text if outcome.new_text is not None else text)
        return EXIT_FINDINGS if outcome.violations and not args.exit_zero else EXIT_CLEAN
    _emit(args, outcome.violations, [outcome], config, outcome.fixed, 1)
    if args.diff:
        return EXIT_FINDINGS if outcome.diff else EXIT_CLEAN
    return EXIT_FINDINGS if outcome.violations and not args.exit_zero else EXIT_CLEAN
