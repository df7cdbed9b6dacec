"""The server's side of the deep analysis: targets, the worker handle, progress, results.

The analysis itself is `onnxlint.deep.analyzer.DeepAnalyzer` (a long-lived worker process under
the user's interpreter). This module decides *whether* it may run (trusted workspace, on an
explicit request), finds the target for a file, reports progress (`$/progress`, and the
custom `onnxlint/analysisState` notification), honours cancellation, and files the findings
into every file they are in: the deep bucket of an open document, and for a file that is not
open (the model file, when the lens was in the export script) a push of its deep findings
alone, kept with a digest of the file's text so that opening it later (unchanged) puts them
into its bucket, and closing it shows them again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import hashlib
import importlib.util
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from onnxlint.server import deep_fixes, documents
from onnxlint.server.checks import Checks
from onnxlint.server.progress import Progress
from onnxlint.server.protocol import ANALYSIS_STATE, ANALYZE_EXPORT, SHOW_RESULT
from onnxlint.server.targets import LensGone, lens_now, lenses_of
from onnxlint.source.notebook import is_notebook

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnxlint.source.cells import CellModule

log = logging.getLogger("onnxlint.server")

TARGETS_TTL_S = 10.0
UNTRUSTED_MESSAGE = (
    "onnxlint: deep analysis imports and runs your model code, so it only runs in a trusted "
    "workspace. Trust this workspace to use it (the static checks keep running)."
)
NO_TARGET_HELP = (
    "declare one in pyproject.toml ([[tool.onnxlint.targets]] with name and factory = "
    '"module:function") or mark a zero-argument function that returns (model, args) '
    "with `# onnxlint: target`"
)


def summary(result: Any) -> dict[str, Any]:
    """The counts and one sentence for the end of an analysis."""
    from onnxlint.deep.report import script_notes
    from onnxlint.deep.result import outcome_of

    counts = {"error": 0, "warning": 0, "info": 0}
    for v in result.violations:
        counts[v.severity.value] = counts.get(v.severity.value, 0) + 1
    n = len(result.violations)
    name = result.target.name
    if result.status == "cancelled":
        message = f"onnxlint: {name}: cancelled"
    else:
        found = f"{n} finding{'s' if n != 1 else ''}" if n else "no findings"
        parts = [f"{c} {k}{'s' if c != 1 and k != 'info' else ''}" for k, c in counts.items() if c]
        found += f" ({', '.join(parts)})" if parts else ""
        message = f"onnxlint: {name}: {outcome_of(result)}, {found}"
        filled = (result.data or {}).get("script_filled") or []
        if filled:  # an assumption the user should know of (the report lists the rest)
            message += f"; the script ran with placeholders for {', '.join(filled)}"
        for said in script_notes(result):  # a direct call, a loop's several models
            message += f"; {said}"
    return {
        "status": result.status,
        "findings": n,
        "errors": counts["error"],
        "warnings": counts["warning"],
        "infos": counts["info"],
        "message": message,
    }


class DeepUnavailable(Exception):
    """The deep analysis cannot run here; the message says why and what to do."""


@dataclass
class Analysis:
    target: str
    cancel: threading.Event = field(default_factory=threading.Event)
    started: float = field(default_factory=time.monotonic)


class DeepService:
    def __init__(self, server: Checks) -> None:
        self.server = server
        self.analyzers: dict[tuple[str, str], Any] = {}  # (root, python) -> DeepAnalyzer
        self.executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="onnxlint-deep"
        )
        self._targets: dict[str, tuple[float, list[Any], list[Any]]] = {}
        self.running: Analysis | None = None
        self.results: list[Any] = []  # DeepResult of the latest analysis of each target
        self.report_dir: Path | None = None
        self._tasks: set[asyncio.Future[Any]] = set()
        # real path -> target -> (its deep findings there, digest of the text they are about)
        self.files: dict[str, dict[str, tuple[list[Any], str]]] = {}
        self.pushed: set[str] = set()  # URIs of closed files whose deep findings were pushed
        self.warming: asyncio.Future[Any] | None = None  # the worker's start in the background
        # real path of a script -> its last run's stop for its command line (script_args.py)
        self.stops: dict[str, dict[str, Any]] = {}

    # ------------------------------------------------------------------ availability

    @staticmethod
    def module() -> Any:
        try:
            from onnxlint.deep import analyzer
        except ImportError as exc:  # pragma: no cover - ships with the package
            raise DeepUnavailable(f"onnxlint: the deep analysis is not available: {exc}") from exc
        return analyzer

    def python_for(self, uri: str) -> str:
        settings = self.server.settings_for(uri)
        cfg, _, _ = self.server.config_for(uri)
        return settings.deep.interpreter or cfg.deep_python() or sys.executable

    def check_allowed(self, uri: str) -> str:
        """The interpreter to use, or DeepUnavailable with the reason."""
        if not self.server.init.trusted:
            raise DeepUnavailable(UNTRUSTED_MESSAGE)
        python = self.python_for(uri)
        # Paths, not their targets: a venv's `python` links to the same binary as its base's.
        same = os.path.abspath(python) == os.path.abspath(sys.executable)
        if same and importlib.util.find_spec("torch") is None:
            raise DeepUnavailable(
                f"onnxlint: the deep analysis needs torch, which is not installed in "
                f"{python}. Install the extra (`pip install 'onnxlint[deep]'`) or set "
                "`onnxlint.deep.interpreter` to a Python that has torch."
            )
        return python

    # ------------------------------------------------------------------ targets

    def _root(self, uri: str) -> Path:
        cfg, _, _ = self.server.config_for(uri)
        return Path(cfg.root) if cfg.root else Path.cwd()

    def targets(self, uri: str) -> tuple[list[Any], list[Any]]:
        """(targets, problems) of the project holding `uri`, cached briefly (no imports)."""
        from onnxlint.deep.run import collect_targets

        cfg, _, _ = self.server.config_for(uri)
        root = Path(cfg.root) if cfg.root else Path.cwd()
        key = str(root)
        hit = self._targets.get(key)
        if hit is not None and time.monotonic() - hit[0] < TARGETS_TTL_S:
            return hit[1], hit[2]
        raw = [dict(t) for t in cfg.targets]
        paths = [root] if cfg.source is not None else []
        path = self.server.path_of(uri)
        if os.path.isfile(path):
            paths.append(Path(path))
        targets, problems = collect_targets(raw, root, paths)
        self._targets[key] = (time.monotonic(), targets, problems)
        return targets, problems

    def forget_targets(self) -> None:
        """The next `targets` reads them again (a file declaring one was saved or written)."""
        self._targets.clear()

    def analyzer(self, uri: str, python: str) -> Any:
        mod = self.module()
        root = self._root(uri)
        key = (str(root), python)
        a = self.analyzers.get(key)
        if a is None:
            a = self.analyzers[key] = mod.DeepAnalyzer(
                python, cache_dir=cache_folder(root), background=True
            )
        targets, _ = self.targets(uri)
        a.set_targets(targets)
        return a

    def resolve_target(self, uri: str, spec: dict[str, Any]) -> Any:
        """The target a code lens / command argument names, or DeepUnavailable."""
        try:  # a lens clicked before the editor redrew it after an edit: the lens as it is now
            spec = lens_now(self.server, uri, spec, self._targets_of)
        except LensGone as exc:
            raise DeepUnavailable(f"onnxlint: {exc}") from None
        script = spec.get("script")
        if isinstance(script, str) and isinstance(spec.get("line"), int):
            function = spec.get("function")
            if isinstance(function, str) and function.isidentifier():
                return self._function_target(uri, Path(script), spec["line"], function)
            return self._script_target(uri, Path(script), spec["line"])
        targets, problems = self.targets(uri)
        by_name = {t.name: t for t in targets}
        name = spec.get("target")
        if isinstance(name, str):
            if name in by_name:
                return self._with_call(uri, by_name[name], spec)
            raise DeepUnavailable(f"onnxlint: no analysis target named {name!r}")
        # No target named (a bare "Analyze export" from a client without code lenses): the
        # target of the file's lens at `line`, else its first one; the lenses choose what
        # each export call runs (see targets.py).
        lenses = [
            x for x in lenses_of(self.server, uri, self._targets_of) if x.command == ANALYZE_EXPORT
        ]
        line = spec.get("line")
        at_line = [x for x in lenses if x.line == line]
        for lens in at_line or lenses:
            if "script" in lens.argument or lens.argument.get("target") in by_name:
                return self.resolve_target(uri, lens.argument)
        if not targets:
            extra = f" ({problems[0].message})" if problems else ""
            raise DeepUnavailable(f"onnxlint: no analysis target found{extra}: {NO_TARGET_HELP}")
        raise DeepUnavailable(
            f"onnxlint: no analysis target builds a model of this file; {NO_TARGET_HELP}"
        )

    def _targets_of(self, uri: str) -> list[Any]:
        """The targets of the project holding `uri` (`lenses_for`'s `targets_of`)."""
        return list(self.targets(uri)[0])

    def _with_call(self, uri: str, target: Any, spec: dict[str, Any]) -> Any:
        """A declared target run for one export call: with the call's opset and dynamic
        shapes (what the call states literally), named after the call when they differ."""
        call = spec.get("call")
        line = spec.get("line")
        if not isinstance(call, dict) or not isinstance(line, int):
            return target
        changes: dict[str, Any] = {}
        opset = call.get("opset")
        if isinstance(opset, int) and opset != target.opset:
            changes["opset"] = opset
        shapes = call.get("dynamic_shapes")
        if isinstance(shapes, dict) and shapes != target.dynamic_shapes:
            changes["dynamic_shapes"] = {
                str(k): {int(i): n for i, n in v.items()} for k, v in shapes.items()
            }
        if not changes:
            return target
        where = Path(self.server.path_of(uri)).name
        return dataclasses.replace(target, name=f"{target.name} ({where}:{line})", **changes)

    def _script_target(self, uri: str, script: Path, line: int) -> Any:
        """The target that runs an export script up to its call at `line` (no set-up)."""
        from onnxlint.deep.scripts import script_argv, script_target

        cfg, _, _ = self.server.config_for(uri)
        root = self._root(uri)
        if not script.is_file():
            raise DeepUnavailable(f"onnxlint: {script} is not a file on disk; save it first")
        if is_notebook(str(script)) and self.notebook_unsaved(str(script)):
            # the lens's line is in the cells as the editor has them; the run reads the file
            raise DeepUnavailable(
                f"onnxlint: save {script.name} first: the analysis runs the notebook's cells "
                "as they are on disk"
            )
        return script_target(script, line, root, script_argv(script, root, cfg.scripts))

    def notebook_unsaved(self, path: str) -> bool:
        """Whether the notebook at `path` is open with code cells other than on disk (its
        cells as one module differ: an unsaved edit, or a file changed since)."""
        from onnxlint.deep.notebooks import module_text

        real = os.path.realpath(path)
        for nb_uri in list(documents.notebooks_of(self.server)):
            p = self.server.path_of(nb_uri)
            if os.path.isabs(p) and os.path.realpath(p) == real:
                module = documents.cell_module_of(self.server, nb_uri)
                return module is None or module.text != module_text(real)
        return False

    def _function_target(self, uri: str, script: Path, line: int, function: str) -> Any:
        """The target that imports `script` (its `__main__` block does not run) and calls
        its no-argument `function`, up to the export call at `line` in it. The worker runs
        scripts: a small one, written to the project's cache folder, does this. A notebook
        has no `__main__` block: its cells run, then the function (`Target.then_call`)."""
        from onnxlint.deep.scripts import script_target
        from onnxlint.deep.targets import module_name_for

        if is_notebook(str(script)):  # its cells run as one script, then the function
            target = self._script_target(uri, script, line)
            return dataclasses.replace(
                target, then_call=function, extra={"function": function, "script": str(script)}
            )
        root = self._root(uri)
        if not script.is_file():
            raise DeepUnavailable(f"onnxlint: {script} is not a file on disk; save it first")
        script = script.resolve()
        module = module_name_for(script, root) or "__onnxlint_lens__"
        folder = cache_folder(root) / "lens"
        folder.mkdir(parents=True, exist_ok=True)
        stem = module.replace(".", "_")
        driver = folder / f"{stem}__{function}.py"
        text = (
            f"# Written by onnxlint for the code lens over {script.name}:{line}: imports\n"
            f"# {script} (its __main__ block does not run) and calls {function}(), whose\n"
            "# export call the deep analysis captures.\n"
            "import importlib.util\n"
            "import sys\n\n"
            f"sys.path[:0] = [{str(script.parent)!r}, {str(root)!r}]\n"
            f"spec = importlib.util.spec_from_file_location({module!r}, {str(script)!r})\n"
            "module = importlib.util.module_from_spec(spec)\n"
            f"sys.modules[{module!r}] = module\n"
            "spec.loader.exec_module(module)\n"
            f"module.{function}()\n"
        )
        if _read(str(driver)) != text:
            driver.write_text(text, encoding="utf-8")
        rel = os.path.relpath(script, root) if str(script).startswith(str(root)) else str(script)
        target = script_target(driver, None, root)
        return dataclasses.replace(
            target,
            name=f"{rel}:{line}",
            decl_path=script,
            decl_line=line,
            extra={"function": function, "script": str(script)},
        )

    # ------------------------------------------------------------------ running

    async def analyze(self, uri: str, spec: dict[str, Any], token: Any = None) -> dict[str, Any]:
        """Run one target's analysis with progress and cancellation; file its findings."""
        ls = self.server
        try:
            python = self.check_allowed(uri)
            target = await ls.run_check(lambda: self.resolve_target(uri, spec))
        except DeepUnavailable as exc:
            ls.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=str(exc))
            )
            return {"status": "unavailable", "message": str(exc)}
        await deep_fixes.stop(self)  # proofs of the last analysis's fixes give way
        if self.running is not None:
            msg = f"onnxlint: an analysis of {self.running.target!r} is already running"
            ls.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Info, message=msg)
            )
            return {"status": "busy", "message": msg}
        target = self._with_editor_timeout(uri, target)
        job = Analysis(target.name)
        self.running = job
        if token is not None:
            token.add_done_callback(lambda f: job.cancel.set() if f.cancelled() else None)
        progress = await Progress.start(ls, f"onnxlint: analyzing {target.name}", job.cancel)
        ls.protocol.notify(ANALYSIS_STATE, {"state": "started", "target": target.name})
        versions = {u: d.version for u, d in ls.workspace.text_documents.items()}
        versions.update({u: nb.version for u, nb in documents.notebooks_of(ls).items()})
        loop = ls.get_loop()

        def on_progress(phase: str, percent: int | None) -> None:
            loop.call_soon_threadsafe(progress.report, phase, percent)

        result = None
        finished: dict[str, Any] = {"state": "finished", "target": target.name}
        try:
            analyzer = self.analyzer(uri, python)
            result = await loop.run_in_executor(
                self.executor, lambda: analyzer.analyze(target, on_progress, job.cancel)
            )
        except asyncio.CancelledError:
            job.cancel.set()
            finished.update(status="cancelled", message=f"onnxlint: {target.name}: cancelled")
            raise
        except Exception as exc:
            log.exception("deep analysis of %s failed", target.name)
            error = f"onnxlint: the analysis of {target.name!r} failed: {exc}"
            finished.update(status="error", message=error)
            ls.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Error, message=error)
            )
        finally:
            self.running = None
            if result is not None:
                finished.update(summary(result))
                stop = self._stop(result)
                if stop is not None:  # "Set arguments..." in the end notification
                    finished["setArguments"] = {"uri": uri, **stop}
            done = "cancelled" if job.cancel.is_set() else "done"
            progress.end(str(finished.get("message", done)))
            ls.protocol.notify(ANALYSIS_STATE, finished)
        if result is None:
            return {"status": "error", "target": target.name}
        if SHOW_RESULT not in ls.init.client_commands:  # the client does not show it itself
            kind = types.MessageType.Warning if finished["errors"] else types.MessageType.Info
            ls.window_show_message(types.ShowMessageParams(type=kind, message=finished["message"]))
        self._file(result, versions)
        self.results = [r for r in self.results if r.target.name != target.name] + [result]
        # the proofs run in the background; the next analysis stops them
        if deep_fixes.wanted(spec, result, ls.settings_for(uri).deep.prove_fixes):
            deep_fixes.start(self, analyzer, target, result, lambda: self._file(result, versions))
        if result.status == "ok" and self._can_refresh_lenses():  # tooltips: memory figures
            ls.workspace_code_lens_refresh(None)
        return {
            "status": result.status,
            "target": target.name,
            "findings": len(result.violations),
            "cached": bool(getattr(result, "cached", False)),
            "detail": result.detail,
        }

    def _stop(self, result: Any) -> dict[str, Any] | None:
        """Remember (or forget) that a script's run stopped for its command line."""
        from onnxlint.server.script_args import stop_of

        if result.target.script is None:
            return None
        stop = stop_of(result)
        script = str((result.target.extra or {}).get("script") or result.target.script)
        if stop is None:
            self.stops.pop(os.path.realpath(script), None)
        else:
            self.stops[os.path.realpath(script)] = stop
        return stop

    def _can_refresh_lenses(self) -> bool:
        return self.server.supports.code_lens_refresh

    def _with_editor_timeout(self, uri: str, target: Any) -> Any:
        """`deep.timeout` applies to targets that do not set their own `timeout`."""
        from onnxlint.deep.targets import DEFAULT_TIMEOUT_S

        timeout = self.server.settings_for(uri).deep.timeout
        if target.timeout == DEFAULT_TIMEOUT_S and timeout != DEFAULT_TIMEOUT_S:
            return dataclasses.replace(target, timeout=timeout)
        return target

    def _file(self, result: Any, versions: dict[str, int | None]) -> None:
        """File a result's findings into every file they are in: the deep bucket of an open
        document (unless it was edited during the analysis), a push for a closed file."""
        ls = self.server
        name = result.target.name
        by_file = editor_placements(result)
        open_paths: dict[str, str] = {}
        for uri, doc in list(ls.workspace.text_documents.items()):
            path = ls.path_of(uri)
            if not os.path.isabs(path) or not ls.is_file(uri):
                continue
            real = os.path.realpath(path)
            open_paths[real] = uri
            found = by_file.get(real, [])
            st = ls.docs.get(uri)
            if st is None or (not found and name not in st.deep):
                continue
            if doc.version != versions.get(uri):
                continue  # the buffer changed during the analysis: its lines may not match
            ls.set_deep(uri, doc.version, name, found)
            self._keep(real, name, found, digest(doc.source))
        for nb_uri, real in self._file_notebooks(name, by_file, versions):
            open_paths[real] = nb_uri
        had = {p for p, by_target in self.files.items() if name in by_target}
        for real in sorted(had | set(by_file)):
            if real in open_paths or is_notebook(real):
                continue  # (a notebook that is not open has no cells to show them in)
            text = _read(real)
            if text is None:
                continue
            self._keep(real, name, by_file.get(real, []), digest(text))
            self.publish_closed(real, text)

    def _file_notebooks(
        self, name: str, by_file: dict[str, list[Any]], versions: dict[str, int | None]
    ) -> list[tuple[str, str]]:
        """File a result's findings in each open notebook: in the cells they are in (the
        worker reports them at the lines of the cells as one module), for the notebook's
        version, unless it changed during the analysis or its cells are not the ones on disk
        (the analysis ran those). Returns (URI, real path) of the open notebooks."""
        from onnxlint.deep.notebooks import in_cells, module_text

        ls = self.server
        out = []
        for nb_uri, nb in list(documents.notebooks_of(ls).items()):
            path = ls.path_of(nb_uri)
            if not os.path.isabs(path):
                continue
            real = os.path.realpath(path)
            out.append((nb_uri, real))
            found = by_file.get(real, [])
            st = ls.docs.get(nb_uri)
            if st is None or (not found and name not in st.deep):
                continue
            module = documents.cell_module_of(ls, nb_uri)
            if nb.version != versions.get(nb_uri) or module is None:
                continue
            if found and module.text != module_text(real):
                continue  # unsaved cells: the findings' lines may not be theirs
            placed = in_cells(found, _the(module))
            deep_fixes.placed(found, placed)
            ls.set_deep(nb_uri, nb.version, name, placed)
        return out

    def _keep(self, real: str, target: str, found: list[Any], text_digest: str) -> None:
        by_target = self.files.setdefault(real, {})
        if found:
            by_target[target] = (found, text_digest)
        else:
            by_target.pop(target, None)
            if not by_target:
                del self.files[real]

    def stored(self, path: str, text: str) -> dict[str, list[Any]]:
        """The deep findings kept for a file, by target, that are about `text` (a file
        opened unchanged since the analysis); findings about another text are dropped."""
        real = os.path.realpath(path)
        by_target = self.files.get(real, {})
        d = digest(text)
        kept = {t: vs for t, (vs, dd) in by_target.items() if dd == d}
        if len(kept) != len(by_target):
            for t in [t for t, (_vs, dd) in by_target.items() if dd != d]:
                del by_target[t]
            if not by_target:
                self.files.pop(real, None)
        return kept

    def publish_closed(self, real: str, text: str | None = None) -> None:
        """Push the deep findings of a file that is not open (an empty list when it has
        none left but had some pushed)."""
        from pygls.uris import from_fs_path

        from onnxlint.core.confirmed import merge_confirmed
        from onnxlint.core.suppression import apply_suppressions
        from onnxlint.server.convert import diagnostic, sort_key

        ls = self.server
        uri = from_fs_path(real)
        if uri is None:
            return
        text = _read(real) if text is None else text
        found = self.stored(real, text) if text is not None else {}
        violations = [v for vs in found.values() for v in vs]
        if not violations and uri not in self.pushed:
            return
        diags: list[types.Diagnostic] = []
        settings = ls.settings_for(uri)
        if violations and text is not None and settings.enable:
            lines = ls.lines(text)
            kept = merge_confirmed([], apply_suppressions(text, violations))
            diags = sorted(
                (diagnostic(v, lines, settings.severity_for(v.code)) for v in kept), key=sort_key
            )
        if diags:
            self.pushed.add(uri)
        else:
            self.pushed.discard(uri)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diags)
        )

    def opened(self, uri: str, text: str, version: int | None) -> None:
        """A document was opened: the deep findings kept for its file (if it is unchanged)
        go into its bucket, and a push made while it was closed is taken back (a pull client
        gets them with the rest; a push client with its first check)."""
        ls = self.server
        if not ls.is_file(uri):
            return
        found = self.stored(ls.path_of(uri), text)
        st = ls.state(uri)
        if found:
            st.deep = dict(found)
            st.deep_version = version
        if uri in self.pushed:
            self.pushed.discard(uri)
            if ls.pull_diagnostics:
                ls.clear(uri)

    def closed(self, uri: str) -> bool:
        """A document was closed: push the deep findings kept for its file, if any (True)."""
        ls = self.server
        if not ls.is_file(uri):
            return False
        real = os.path.realpath(ls.path_of(uri))
        if real not in self.files:
            return False
        self.publish_closed(real)
        return uri in self.pushed

    def warm_soon(self, uri: str) -> None:
        """Start the worker in the background (it imports torch: seconds) once the first
        Python file with an export call is open in a trusted workspace, after its first
        diagnostics, so that the first "Analyze export" does not wait for it."""
        if self.warming is not None or not self.server.init.trusted:
            return
        if not self.server.is_file(uri) or not uri.endswith(".py"):
            return
        if not self.server.settings_for(uri).deep.prestart:
            return
        self.warming = asyncio.ensure_future(self._warm(uri))

    async def _warm(self, uri: str) -> None:
        ls = self.server
        try:
            result = await ls.current(uri)  # the first diagnostics come first
            if not await ls.run_check(lambda: self._exports(uri, result.text)):
                self.warming = None  # not this file: the next one opened may be
                return
            python = self.check_allowed(uri)
            analyzer = await ls.run_check(lambda: self.analyzer(uri, python))
            started = time.monotonic()
            self._worker_state("starting", python=python)
            await ls.get_loop().run_in_executor(self.executor, analyzer.start)
            took = round(time.monotonic() - started, 2)
            log.info("deep worker warmed in the background in %.1f s", took)
            self._worker_state("ready", python=python, seconds=took, pid=analyzer.worker_pid)
        except DeepUnavailable as exc:
            log.info("deep worker not warmed: %s", exc)
            self._worker_state("unavailable", message=str(exc))
        except Exception as exc:  # the first analysis starts it again, and says why it fails
            log.exception("warming the deep worker failed")
            self._worker_state("failed", message=str(exc))

    def _worker_state(self, status: str, **data: Any) -> None:
        """`onnxlint/analysisState` with state "worker": the background worker's start."""
        self.server.protocol.notify(ANALYSIS_STATE, {"state": "worker", "status": status, **data})

    def _exports(self, uri: str, text: str) -> bool:
        """On the engine thread: whether the file makes an export call (any exporter)."""
        from onnxlint.deep.scripts import export_call_lines

        path = Path(self.server.path_of(uri))
        return bool(export_call_lines(path, text, self.server.engine.project))

    def on_save(self, uri: str) -> None:
        """`deep.onSave`: analyse the first target of this file in the background."""
        if not self.server.init.trusted or self.running is not None:
            return
        task = asyncio.ensure_future(self._on_save(uri))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _on_save(self, uri: str) -> None:
        try:
            target = await self.server.run_check(lambda: self.resolve_target(uri, {}))
        except DeepUnavailable:
            return  # no target builds a model of this file: nothing to analyse on save
        await self.analyze(uri, {"target": target.name})

    def report(self) -> dict[str, Any]:
        """Write the latest results as Markdown and HTML reports; their paths."""
        if not self.results:
            raise DeepUnavailable("onnxlint: no analysis has run yet: run `Analyze export` first")
        from onnxlint.deep.report import write_report

        folder = self.report_dir or Path(os.environ.get("TMPDIR", "/tmp")) / (
            f"onnxlint-report-{os.getpid()}"
        )
        md, html = folder / "report.md", folder / "report.html"
        from onnxlint.deep.notebooks import in_cells

        # a notebook's findings at their cells (the results keep the worker's lines)
        results = [dataclasses.replace(r, violations=in_cells(r.violations)) for r in self.results]
        write_report(results, md)
        write_report(results, html)
        return {"markdown": str(md), "html": str(html)}

    def restart(self) -> None:
        self.shutdown()
        self._targets.clear()
        self.warming = None

    def shutdown(self) -> None:
        if self.running is not None:
            self.running.cancel.set()
        proving = getattr(self, "proving", None)
        if proving is not None:
            proving[0].set()
        for a in list(self.analyzers.values()):
            try:
                a.shutdown()
            except Exception:
                log.exception("stopping the deep worker failed")
        self.analyzers.clear()


def _the(module: CellModule) -> Callable[[str], CellModule | None]:
    """The notebook module `in_cells` places findings with (the open notebook's cells)."""
    return lambda _path: module


def cache_folder(root: Path) -> Path:
    """`<root>/.onnxlint_cache/deep`, made with the `.gitignore` and `CACHEDIR.TAG` the
    CLI's cache folder has (so it is never committed, nor backed up)."""
    from onnxlint.deep.run import CACHE_SUBDIR

    folder = root / CACHE_SUBDIR
    top = root / CACHE_SUBDIR.parts[0]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not (top / ".gitignore").exists():
            (top / ".gitignore").write_text("# created by onnxlint\n*\n", encoding="utf-8")
        if not (top / "CACHEDIR.TAG").exists():
            (top / "CACHEDIR.TAG").write_text(
                "Signature: 8a477f597d28d172789f06886806bc55\n# onnxlint results cache\n",
                encoding="utf-8",
            )
    except OSError as exc:
        log.warning("cannot make the cache folder %s: %s", folder, exc)
    return folder


def digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def editor_placements(result: Any) -> dict[str, list[Any]]:
    """A result's findings by real path. A finding in a library file (outside the target's
    project) is also shown at its innermost project link of the chain (the factory, or the
    project line that calls into the library), with the library line as related
    information: the editor may not have the library file open."""
    from onnxlint.core.violation import Related
    from onnxlint.deep.result import line_span

    root = os.path.realpath(result.target.root) + os.sep
    by_file: dict[str, list[Any]] = {}
    for v in result.violations:
        real = os.path.realpath(v.path)
        by_file.setdefault(real, []).append(v)
        if real.startswith(root):
            continue
        link = next(
            (
                r
                for r in reversed(v.related)
                if os.path.realpath(r.path).startswith(root) and not r.path.endswith(".toml")
            ),
            None,
        )
        if link is None:
            continue
        here = Related(v.path, v.line, v.column, "the line that causes it")
        by_file.setdefault(os.path.realpath(link.path), []).append(
            dataclasses.replace(
                v,
                path=link.path,
                span=line_span(link.path, link.line),
                message=f"{v.message} (in {Path(v.path).name}:{v.line})",
                related=(here, *v.related),
            )
        )
    return by_file
