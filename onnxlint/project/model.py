"""The project model: across the project's files, which exports exist and what they reach.

Built without importing or running anything: a scan lists the project's `.py` files and
keeps those whose text can hold an export call (`can_export`); their export sites
(`exports.export_sites`) give the model classes; `reach.compute_reach` walks from each
class's `forward` through methods, submodules and helpers in any file. The result (a
`ReachTable`) is kept until a file it read, or a file that could export, changes
(`changed`); the server tells it, the CLI builds it once per run.
"""

from __future__ import annotations

import hashlib
import logging
import os
from typing import Any

import libcst as cst

from onnxlint.core.config import Config
from onnxlint.project.callers import ImportedNames, forward_callers, inherited_callers
from onnxlint.project.exports import ExportSite, export_sites, target_sites
from onnxlint.project.facts import FileFacts
from onnxlint.project.index import MAX_HOPS, ProjectIndex
from onnxlint.project.reach import FileReach, ReachTable, compute_reach
from onnxlint.project.resolve import can_export, project_files
from onnxlint.semantic.index import block_index
from onnxlint.semantic.model import SemanticModel
from onnxlint.source.blocks import Block
from onnxlint.source.files import content_key

log = logging.getLogger("onnxlint.project")

# A folder holding one of these is a project: the scan walks it recursively.
_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git", "requirements.txt")


class ProjectModel:
    """One per engine: the project's export sites and their reach, per project root."""

    def __init__(self, index: ProjectIndex) -> None:
        self.index = index
        self._root: str | None = None
        self._exporters: dict[str, str] | None = None  # path -> content hash, files that export
        self._table: ReachTable | None = None
        self._fixed: ReachTable | None = None  # a table computed elsewhere (CLI workers)
        self.builds = 0  # how many times the table was computed (tests, benchmarks)
        # Bumped when a file starts or stops exporting: files that no export reached may
        # be reached now, though their checks read nothing that changed (the server).
        self.export_files_changes = 0
        self._settings = ""
        # The server: do not build the table inside a check; use the file's own exports
        # until `build_pending` has run on the engine thread (after the first diagnostics).
        self.deferred = False
        self.pending: Config | None = None
        # Files changed since the table was built or last checked: path -> the facts the
        # table read for it (None: unknown). See `changed` and `_revalidate`.
        self._suspect: dict[str, FileFacts | None] = {}
        self._single_key: tuple[str, str] | None = None
        self._single_table: ReachTable | None = None
        # Who imports what (`from x import name`), from the scan's texts: for helpers
        # that other files' forward code calls (`callers`).
        self.imported = ImportedNames()
        self._imported_ready = False

    # -- inputs

    def use_table(self, table: ReachTable | None, imported: ImportedNames | None = None) -> None:
        """Use a table (and import index) computed in another process (the CLI's pool
        workers)."""
        self._fixed = table
        if imported is not None:
            self.imported, self._imported_ready = imported, True

    def changed(
        self,
        path: str,
        text: str | None,
        facts: FileFacts | None = None,
        can: bool | None = None,
    ) -> None:
        """A file changed (or was created/deleted: `text` None when gone); `facts`: the
        engine's facts of this text, when it is checking the file; `can`: `can_export(text)`
        when the caller knows it.

        Its facts are dropped unless they are of this very text; the other files' facts
        are kept unless its classes or their bases changed (another file's classes may
        resolve their bases through it). The reach table is rebuilt when the text differs
        from the one it was built from (the facts cache is no reference for that: the
        reader may already have served the new text to it), unless the edit provably
        leaves it as it was (`_after_edit`: only classes the exports do not reach
        changed, and the file's export sites are the same): then only the lines of the
        file's export sites move. That is decided when the table is next used, from the
        facts it was built with and the file's text then (a storm of keystrokes costs
        one decision, not one per keystroke)."""
        path = os.path.abspath(path)
        if self._imported_ready:
            self.imported.record(path, text)
        digest = content_key(text) if text is not None else None
        old = self.index.cached(path)
        if old is None or old.digest != digest:
            interface = _interface(old) if old is not None else None
            self.index.forget(path)
            if interface is not None and text is not None:
                if facts is not None and facts.digest == digest:
                    self.index.adopt(facts, self.index.config)
                    new = self.index.cached(path)
                else:
                    new = self.index.facts(path, text)
                if new is None or _interface(new) != interface:
                    self.index.forget()
            elif interface is not None:
                self.index.forget()
        if self._exporters is None:
            return
        exports = text is not None and (can_export(text) if can is None else can)
        before = self._exporters.get(path)
        if exports and digest is not None:
            self._exporters[path] = digest
        else:
            self._exporters.pop(path, None)
        if (before is None) != (path not in self._exporters):
            self.export_files_changes += 1
        table = self._table
        if table is None:
            return
        stale = before != (digest if exports else None)
        if path in table.deps and table.deps[path] != digest:
            stale = True
        if stale:
            if path not in self._suspect:
                # The facts the table read for the file (None: unknown, it is rebuilt).
                built = old if old is not None and old.digest == table.deps.get(path) else None
                self._suspect[path] = built
            log.debug("project model: %s changed, the reach table is checked at its next use", path)
        else:
            log.debug("project model: %s unchanged for the reach table", path)

    # -- the table

    def table(self, config: Config) -> ReachTable:
        if self._fixed is not None:
            return self._fixed
        self.index.use_config(config)
        root = str(config.root) if config.root is not None else os.getcwd()
        root = os.path.abspath(root)
        settings = repr((config.targets, config.exporter, config.target_torch))
        if settings != self._settings:  # targets, exporter and torch decide the sites
            self._settings, self._table = settings, None
        if root != self._root:
            self._root, self._exporters, self._table = root, None, None
        if self._exporters is None:
            self._exporters = self._scan(root, config)
            self._table = None
        if self._table is not None and self._suspect:
            self._table = self._revalidate(self._table)
        if self._table is None:
            self._suspect.clear()
            self._table = self._build(config)
        return self._table

    def _revalidate(self, table: ReachTable) -> ReachTable | None:
        """The table after the edits of the files `changed` was told of (`_after_edit`
        for each, from the facts the table read to those of the file's text now), or
        None when one of them may change what it found."""
        suspects, self._suspect = self._suspect, {}
        saved = self.index.deps
        self.index.deps = {}
        try:
            for path, old in suspects.items():
                new = self.index.facts(path) if old is not None else None
                if old is None or new is None:
                    log.debug("project model: %s changed, the reach table is rebuilt", path)
                    return None
                if new.digest == old.digest:
                    continue
                kept = self._after_edit(table, path, old, new)
                if kept is None:
                    log.debug("project model: %s changed, the reach table is rebuilt", path)
                    return None
                log.debug("project model: %s changed, not what the reach table read", path)
                table = kept
        finally:
            self.index.deps = saved
        return table

    def for_file(
        self, path: str, text: str, config: Config, facts: FileFacts | None = None
    ) -> FileReach:
        """The reach of the project's exports in one file, whose current text is `text`
        (`facts`: the engine's facts of it, shared with the table's walk).

        Without a project root (a file checked on its own, a test) only the file's own
        exports count."""
        path = os.path.abspath(path)
        if facts is not None and (facts.path != path or facts.digest != content_key(text)):
            facts = None
        if self._fixed is not None:
            return self._fixed.for_file(path)
        if config.root is None:
            return self._single(path, text, config, facts).for_file(path)
        root = os.path.abspath(str(config.root))
        if self.deferred and (self._table is None or root != self._root):
            self.pending = config
            return self._single(path, text, config, facts).for_file(path)
        if self._exporters is not None:
            can = can_export(text)
            exports = can and "torch" in text
            digest = content_key(text)
            known = self._table.deps.get(path) if self._table is not None else None
            if (self._exporters.get(path) if exports else None) != (
                digest if exports else None
            ) or (known is not None and known != digest):
                self.index.use_config(config)
                self.changed(path, text, facts, can)
        self.index.use_config(config)
        if facts is not None:
            self.index.adopt(facts, config)
        return self.table(config).for_file(path)

    def forward_callers(self, path: str, model: SemanticModel) -> set[str]:
        """The file's top-level functions that other files' forward code calls (empty
        until the project has been scanned: never delays a deferred first check)."""
        if not self._imported_ready:
            return set()
        return forward_callers(self.index, self.imported, os.path.abspath(path), model)

    def inherited_callers(self, path: str, model: SemanticModel) -> set[tuple[str | None, str]]:
        """Methods of the file's module classes that forward code of another project
        module runs through inheritance (a base's `forward` calling `self.step()`, a
        subclass's `forward` calling a helper defined here)."""
        names = self.imported if self._imported_ready else None
        return inherited_callers(self.index, names, os.path.abspath(path), model)

    def build_pending(self) -> bool:
        """Build the table a deferred check asked for; True when one was built."""
        config, self.pending = self.pending, None
        if config is None:
            return False
        self.table(config)
        return True

    def deps(self) -> dict[str, str | None]:
        """The files the last table read, and the project's export scripts: a check that
        used the table depends on them (an edited export script changes what it reaches)."""
        out: dict[str, str | None] = dict(self._exporters or {})
        table = self._fixed or self._table or self._single_table
        if table is not None:
            out.update(table.deps)
        return out

    def _single(self, path: str, text: str, config: Config, given: FileFacts | None) -> ReachTable:
        key = (path, content_key(text))
        if self._single_key == key and self._single_table is not None:
            return self._single_table
        saved = self.index.deps
        self.index.deps = {}
        try:
            if given is not None and config == self.index.config:
                self.index.adopt(given, config)
            facts = self.index.facts(path, text)
            sites = export_sites(self.index, facts) if facts is not None else []
            table = compute_reach(self.index, sites)
            table.deps = dict(self.index.deps)
        finally:
            saved.update(self.index.deps)
            self.index.deps = saved
        self._single_key, self._single_table = key, table
        return table

    def fingerprint(self, config: Config) -> str:
        """Changes whenever an export script or a file the reach read changes: part of
        the CLI results cache's key."""
        table = self.table(config)
        h = hashlib.sha256()
        for path, digest in sorted((self._exporters or {}).items()):
            h.update(f"{path}\0{digest}\n".encode())
        for path, dep in sorted(table.deps.items()):
            h.update(f"{path}\0{dep}\n".encode())
        h.update(self.imported.digest().encode())
        return h.hexdigest()[:16]

    def _scan(self, root: str, config: Config) -> dict[str, str]:
        found: dict[str, str] = {}
        excluded = config.is_excluded if config.root is not None else None
        if config.source is not None or any(
            os.path.exists(os.path.join(root, m)) for m in _PROJECT_MARKERS
        ):
            paths = project_files(root, excluded)
        else:  # a loose folder (a file opened in ~): its own files only, never a deep walk
            paths = sorted(
                os.path.join(root, n)
                for n in os.listdir(root)
                if n.endswith((".py", ".ipynb")) and os.path.isfile(os.path.join(root, n))
            )
        self.imported = ImportedNames()
        for path in paths:
            text = self.index.read(path)
            if text is not None:
                self.imported.record(path, text)
            if text is not None and "torch" in text and can_export(text):
                found[path] = content_key(text)
        self._imported_ready = True
        return found

    def _build(self, config: Config) -> ReachTable:
        self.builds += 1
        log.debug(
            "project model: building the reach table (%d export files)", len(self._exporters or {})
        )
        saved = self.index.deps
        self.index.deps = {}
        try:
            sites = []
            marked = []
            for path in sorted(self._exporters or {}):
                facts = self.index.facts(path)
                if facts is not None:
                    sites += export_sites(self.index, facts)
                    if "onnxlint" in facts.analysis.text:
                        marked.append(path)
            sites += target_sites(self.index, config, marked)
            table = compute_reach(self.index, sites)
            table.deps = dict(self.index.deps)
        finally:
            self.index.deps = saved
        return table

    def _after_edit(
        self, table: ReachTable, path: str, old: FileFacts, new: FileFacts
    ) -> ReachTable | None:
        """`table` after `path` changed from `old` to `new`, when the change cannot alter
        what the walk found: None (rebuild) unless every changed top-level block is a
        class definition, before and after, of the same classes with the same bases and
        method names, none of which the walk entered (the exported classes, the classes
        built into them, their bases, the methods reached), and the file's export sites
        (found again from `new`: the export data-flow reads every statement) are the
        same but for their lines. An edit inside a method of a class no export reaches
        (a notebook cell's model, most of a model file) is such a change."""
        if (
            self.index.config.targets
            or "onnxlint" in old.analysis.text
            or "onnxlint" in new.analysis.text
        ):
            return None  # declared targets: rebuilt (rare in files being typed in)
        olds, news = old.blocks, new.blocks
        n = min(len(olds), len(news))
        i = 0
        while i < n and olds[i].module is news[i].module:
            i += 1
        j = 0
        while j < n - i and olds[-1 - j].module is news[-1 - j].module:
            j += 1
        before, after = olds[i : len(olds) - j], news[i : len(news) - j]
        shapes_before = _class_shapes(before)
        shapes_after = _class_shapes(after)
        if shapes_before is None or shapes_before != shapes_after:
            return None
        if any(can_export(b.text) for b in (*before, *after)):
            return None
        read = self._classes_read(table, path, old)
        if read is None or any(name in read for name, *_ in shapes_before):
            return None
        saved = self.index.deps
        self.index.deps = {}
        try:
            fresh = export_sites(self.index, new)
        finally:
            self.index.deps = saved
        mine = [s for s in table.sites if s.path == path]
        if len(mine) != len(fresh):
            return None
        moved: dict[ExportSite, ExportSite] = {}
        for site, (now, classes) in zip(mine, fresh, strict=True):
            same = (site.kind, site.dynamic, site.dims, site.model) == (
                now.kind,
                now.dynamic,
                now.dims,
                now.model,
            )
            if not same or any(
                site not in table.roots.get(f.path, {}).get(c.name, ()) for f, c in classes
            ):
                return None
            moved[site] = now

        def m(s: ExportSite) -> ExportSite:
            return moved.get(s, s)

        def sets(d: dict[str, dict[Any, set[ExportSite]]]) -> dict[str, dict[Any, set[ExportSite]]]:
            return {p: {k: {m(s) for s in v} for k, v in inner.items()} for p, inner in d.items()}

        kept = ReachTable(
            sites=[m(s) for s in table.sites],
            reach=sets(table.reach),
            classes=sets(table.classes),
            roots=sets(table.roots),
            symbolic={m(s): set(v) for s, v in table.symbolic.items()},
            deps={**table.deps, path: new.digest},
            aliases={
                p: {a: (c, calls, tuple(m(s) for s in sites)) for a, (c, calls, sites) in v.items()}
                for p, v in table.aliases.items()
            },
            taints={
                p: {k: {n: (tt, m(s), c) for n, (tt, s, c) in v.items()} for k, v in inner.items()}
                for p, inner in table.taints.items()
            },
            via={p: dict(v) for p, v in table.via.items()},
        )
        return kept

    def _classes_read(self, table: ReachTable, path: str, facts: FileFacts) -> set[str] | None:
        """The classes of `path` whose definitions the reach walk read: those it entered
        or reached methods of, their bases in the file and the file's classes that other
        files' entered classes derive from (methods and submodules are looked up through
        bases); None when that cannot be told."""
        names = set(table.classes.get(path, {})) | set(table.roots.get(path, {}))
        names |= {cls for cls, _ in table.reach.get(path, {}) if cls is not None}
        saved = self.index.deps
        self.index.deps = {}
        try:
            for other in {*table.classes, *table.roots} - {path}:
                facts_o = self.index.cached(other)
                if facts_o is None:
                    return None
                for name in {*table.classes.get(other, {}), *table.roots.get(other, {})}:
                    found = facts_o.semantic.classes.get(name)
                    current = (facts_o, found) if found is not None else None
                    for _ in range(MAX_HOPS):
                        if current is None:
                            break
                        current = self.index.base_class(*current)
                        if current is not None and current[0].path == path:
                            names.add(current[1].name)
        finally:
            self.index.deps = saved
        return _with_local_bases(names, facts)


def _class_shapes(
    blocks: list[Block],
) -> list[tuple[str, tuple[str, ...], bool, tuple[str, ...]]] | None:
    """(name, bases, is a module, method names) of the classes the blocks define, in order;
    None when a block holds anything but class definitions."""
    out = []
    for b in blocks:
        if b.module is None or not all(isinstance(s, cst.ClassDef) for s in b.module.body):
            return None
        for c in block_index(b).classes:
            out.append((c.name, c.bases, c.is_module, tuple(sorted(c.methods))))
    return out


def _with_local_bases(names: set[str], facts: FileFacts) -> set[str]:
    """`names` and the bases, in the same file, of the classes they name."""
    model = facts.semantic
    todo = list(names)
    while todo:
        info = model.classes.get(todo.pop())
        if info is None:
            continue
        for base in info.bases:
            head = base.split(".", 1)[0]
            if head in model.classes and head not in names:
                names.add(head)
                todo.append(head)
    return names


def _interface(facts: FileFacts) -> tuple[tuple[str, tuple[str, ...], bool], ...]:
    """What other files' facts may depend on: the classes, their bases, module or not."""
    return tuple(sorted((c.name, c.bases, c.is_module) for c in facts.semantic.classes.values()))
