"""The engine: `check_source(path, text, config)`, the one entry point. Imports rules and below.

One check: split the file into top-level blocks (parsed once per distinct text and kept),
index each block, build the file's semantic model, then walk each block once with every
active rule's handlers. Results of rules that only look at their own block are kept with
the block, keyed by the model's fingerprint, so re-checking after an edit only walks the
edited block (plus the few blocks holding export calls, whose rules read the whole file).
A file-scope rule that can say what its findings in a block depend on elsewhere
(`Rule.block_key`: OLX105's tainted parameters of the block's functions) is kept with the
block under that as well. The file's facts (`FileFacts`) are shared with the project model,
which keeps its reach table across edits that cannot change it (`ProjectModel.changed`).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import libcst as cst

from onnxlint.core.codes import SYNTAX_ERROR_CODE
from onnxlint.core.config import Config
from onnxlint.core.suppression import apply_suppressions
from onnxlint.core.violation import Edit, Fix, Severity, Span, Violation
from onnxlint.project import FileReach, ProjectIndex, ProjectModel, Reader, read_disk
from onnxlint.project.facts import FileFacts, file_analysis
from onnxlint.project.reach import local_param_kinds
from onnxlint.rules import all_rules
from onnxlint.rules.base import Context, Rule, rule_handlers
from onnxlint.semantic.kinds import RETURN_KINDS_USED, still_returns
from onnxlint.semantic.model import SemanticModel
from onnxlint.source.blocks import Block, ParseCache, split_blocks
from onnxlint.source.cells import CellModule, cell_module
from onnxlint.source.files import content_key
from onnxlint.source.notebook import Cell, NotebookError, is_notebook, read_notebook
from onnxlint.source.walker import walk

log = logging.getLogger("onnxlint")

# A file none of whose text mentions these cannot hold anything the rules look for.
PREFILTER_WORDS = ("torch", "forward", "onnx", "jit", "nn.", "Module")


@dataclass
class CheckStats:
    """Counters for benchmarks and the server's log."""

    blocks: int = 0
    blocks_walked: int = 0
    blocks_from_cache: int = 0
    skipped_by_prefilter: bool = False
    rule_errors: list[str] = field(default_factory=list)


class Engine:
    """Holds the parse cache; one per process (CLI) or per server."""

    def __init__(self, cache_entries: int = 4096, read: Reader = read_disk) -> None:
        self.parse_cache = ParseCache(cache_entries)
        # Other modules of the project, read through `read` (the server reads open buffers).
        self.project = ProjectIndex(self.parse_cache, read)
        # Which exports of the project reach which functions (see onnxlint.project).
        self.project_model = ProjectModel(self.project)
        self.last_stats = CheckStats()
        self.last_block_texts: list[str] = []  # the blocks of the last check (the server pins them)
        self.last_module: CellModule | None = None  # the last notebook's cells as one module

    def check(self, path: str, text: str, config: Config | None = None) -> list[Violation]:
        """Check a file's text: Python source, or a notebook's JSON for `*.ipynb`."""
        if is_notebook(path):
            try:
                notebook = read_notebook(text)
            except NotebookError as exc:
                return [_file_error(path, str(exc), exc.line, exc.column)]
            if not notebook.is_python:
                return []
            return self.check_cells(path, notebook.cells, config)
        return self.check_module(path, text, config)

    def check_cells(
        self, path: str, cells: Sequence[Cell], config: Config | None = None
    ) -> list[Violation]:
        """Check a notebook's cells as one module (see onnxlint.source.cells); each finding names
        its cell and has positions in it."""
        module = cell_module(cells)
        self.last_module = module
        found = self.check_module(path, module.text, config)
        return sorted((module.to_cell(v) for v in found), key=Violation.sort_key)

    def check_module(self, path: str, text: str, config: Config | None = None) -> list[Violation]:
        """Check one module's Python text."""
        config = config or Config()
        stats = CheckStats()
        self.last_stats = stats
        self.project.begin_check(config)
        if "\x00" in text:
            return [_file_error(path, "the file contains NUL bytes: is it a binary file?")]
        reach: FileReach | None = None
        if not any(word in text for word in PREFILTER_WORDS):
            # A helper module an export reaches need not mention torch.
            if config.root is not None:
                reach = self.project_model.for_file(path, text, config)
            if reach is None or not reach.functions:
                stats.skipped_by_prefilter = True
                return []
        blocks = split_blocks(text, self.parse_cache)
        seen = sum(1 for b in blocks if b.memo)  # before this check indexes them
        stats.blocks = len(blocks)
        self.last_block_texts = [b.text for b in blocks]
        rules = active_rules(config)
        violations: list[Violation] = []
        for b in blocks:
            if b.error is not None:
                violations.append(
                    Violation(
                        path,
                        Span(b.error.line, b.error.column, b.error.line, b.error.column + 1),
                        SYNTAX_ERROR_CODE,
                        f"cannot parse: {b.error.message}",
                        Severity.ERROR,
                    )
                )
        parsed = [b for b in blocks if b.module is not None]
        # One context per file and check, shared with the project model: the export
        # sites it finds here and the rules' export data-flow are computed once.
        apath, digest = os.path.abspath(path), content_key(text)
        facts = self.project.take(apath, digest, config, parsed)
        if facts is None:
            built = file_analysis(path, text, config, parsed, self.project.base_resolver(path))
            facts = FileFacts(apath, digest, parsed, built, fresh=False)
        # The check's own: the path as the check spells it, the project it asks.
        analysis = dataclasses.replace(facts.analysis, path=path, project=self.project)
        if reach is None:
            reach = self.project_model.for_file(path, text, config, facts)
        model = analysis.semantic
        called = self.project_model.forward_callers(path, model)
        if called:  # helpers other files' forward code calls: forward code here too
            model.reachable |= model.reachable_from(model.functions[n] for n in called)
        inherited = self.project_model.inherited_callers(path, model)
        if inherited:  # methods a base's or a subclass's forward in another file runs
            model.reachable |= model.reachable_from(
                model.classes[c].methods[n] for c, n in inherited if c is not None
            )
        model.imported_return_kind = partial(self.project.return_kind, path)
        ctx = Context(
            analysis,
            project=self.project,
            reach=reach,
            param_kinds=local_param_kinds(self.project, model, None),
            required_words=_file_words(text, blocks, seen),
        )
        instances = [r(ctx) for r in rules if r.applies_to(ctx)]
        cache_key = (
            _fingerprint(model),
            _config_key(config),
            reach.key(),
            tuple(
                sorted(
                    (k[0] or "", k[1], tuple(sorted(v.items()))) for k, v in ctx.param_kinds.items()
                )
            ),
        )
        # The rules each set of `requires` words picks, and their results' memo key: many
        # blocks share a set (a notebook's 200 model cells), so this is a lookup per block.
        selections: dict[frozenset[str], _Selection] = {}
        for block in parsed:
            present = _words_in(block, ctx.required_words)
            selection = selections.get(present)
            if selection is None:
                selection = selections[present] = _select(instances, present, cache_key)
            violations.extend(self._check_block(block, ctx, selection, cache_key, stats))
        failed = {r.code for r in instances if r.failed is not None}
        for r in instances:
            if r.failed is not None:
                stats.rule_errors.append(f"{r.code}: {r.failed!r}")
                log.error("rule %s failed on %s: %r", r.code, path, r.failed)
        violations = [v for v in violations if v.code not in failed]
        ignored = config.ignored_for_path(path)
        if ignored:
            violations = [v for v in violations if not any(v.code.startswith(c) for c in ignored)]
        violations = apply_suppressions(text, violations)
        return sorted(set(violations), key=Violation.sort_key)

    @property
    def last_deps(self) -> dict[str, str | None]:
        """The other files the last check read (content hash) or looked for (None),
        including those of the project model it used."""
        return {**self.project_model.deps(), **self.project.deps}

    def _check_block(
        self,
        block: Block,
        ctx: Context,
        selection: _Selection,
        cache_key: tuple[Any, ...],
        stats: CheckStats,
    ) -> list[Violation]:
        assert block.module is not None
        wanted, local, file_rules, memo_key = selection
        if not wanted:
            return []
        entry: tuple[list[Violation], frozenset[Any]] | None = block.memo.get(memo_key)
        cached = entry[0] if entry is not None and still_returns(ctx.semantic, entry[1]) else None
        out: list[Violation] = []
        if cached is not None:
            stats.blocks_from_cache += 1
            out.extend(_place(v, ctx.path, block.start_line - 1) for v in cached)
        # File-scope rules that say what their findings here depend on outside the block
        # (`Rule.block_key`) are kept with the block under that too.
        file_keys: dict[Rule, tuple[Any, ...]] = {}
        to_run = list(file_rules) if cached is not None else list(wanted)
        for r in file_rules:
            key = _block_key(r, block)
            if key is None:
                continue
            file_key = ("file results", cache_key, r.code, key)
            found: tuple[list[Violation], frozenset[Any]] | None = block.memo.get(file_key)
            if found is not None and still_returns(ctx.semantic, found[1]):
                out.extend(_place(v, ctx.path, block.start_line - 1) for v in found[0])
                to_run.remove(r)
            else:
                file_keys[r] = file_key
        if not to_run:
            return out
        stats.blocks_walked += 1
        ctx.block = block
        ctx.ancestors = []
        ctx.function_stack = []
        ctx.class_stack = []
        ctx.found = []
        enter, leave, on_error = _dispatch(ctx, to_run)
        prune = None
        if all(r.forward_only for r in to_run):
            # Only code reachable from forward matters: skip other functions' bodies.
            def prune(node: cst.CSTNode) -> bool:
                return type(node) is cst.FunctionDef and not ctx.in_forward

        used: set[Any] = set()
        ctx.semantic.memo[RETURN_KINDS_USED] = used
        walk(block.module, enter, leave, ctx.ancestors, prune, on_error)
        del ctx.semantic.memo[RETURN_KINDS_USED]
        found_local: list[Violation] = []
        found_keyed: dict[Rule, list[Violation]] = {r: [] for r in file_keys}
        for rule, v in ctx.found:
            out.append(v)
            if not rule.file_scope:
                found_local.append(_place(v, "", -(block.start_line - 1)))
            elif rule in found_keyed:
                found_keyed[rule].append(_place(v, "", -(block.start_line - 1)))
        if cached is None and not any(r.failed for r in local):
            # Kept with the return kinds of other blocks' functions it relied on.
            block.memo[memo_key] = (found_local, frozenset(used))
        for rule, kept in found_keyed.items():
            if rule.failed is None:
                block.memo[file_keys[rule]] = (kept, frozenset(used))
        return out


# (the rules to run on a block, those of them that are block-local, the file-scope ones,
# the memo key of the block-local rules' results)
_Selection = tuple[list[Rule], list[Rule], list[Rule], tuple[Any, ...]]


def _select(
    instances: list[Rule], present: frozenset[str], cache_key: tuple[Any, ...]
) -> _Selection:
    """The rules a block whose text has the `requires` words `present` runs."""
    wanted = [r for r in instances if not r.requires or not present.isdisjoint(r.requires)]
    local = [r for r in wanted if not r.file_scope]
    file_rules = [r for r in wanted if r.file_scope]
    return wanted, local, file_rules, ("results", cache_key, tuple(r.code for r in local))


def _block_key(rule: Rule, block: Block) -> object:
    """`rule.block_key(block)`; None when it fails (which disables the rule for the file,
    as a failing handler does)."""
    if rule.failed is not None:
        return None
    try:
        return rule.block_key(block)
    except Exception as exc:
        rule.failed = exc
        return None


def _words_in(block: Block, candidates: frozenset[str]) -> frozenset[str]:
    """Which of `candidates` (the `requires` words the file contains) the block's text
    contains, memoised with the block."""
    key = ("words", candidates)
    words: frozenset[str] | None = block.memo.get(key)
    if words is None:
        text = block.text
        words = block.memo[key] = frozenset(w for w in candidates if w in text)
    return words


# The rules' `requires` words, shortest first, each with the shorter ones it contains.
_REQUIRED_WORDS: list[tuple[str, tuple[str, ...]]] | None = None


def _all_required_words() -> list[tuple[str, tuple[str, ...]]]:
    global _REQUIRED_WORDS
    if _REQUIRED_WORDS is None:
        words = sorted({w for r in all_rules() for w in r.requires}, key=lambda w: (len(w), w))
        _REQUIRED_WORDS = [(w, tuple(u for u in words[:i] if u in w)) for i, w in enumerate(words)]
    return _REQUIRED_WORDS


_BLOCK_WORDS = "required words"  # a block's memo: words_in_text of its text


def _file_words(text: str, blocks: list[Block], seen: int) -> frozenset[str]:
    """`words_in_text(text)`, from the blocks' memo when earlier checks saw nearly all of
    them (`seen`: the blocks with a memo before this check indexed them; an edit re-checks
    a file whose blocks are known: 0.1 ms instead of a scan of the whole text per word,
    1.8 ms on 4,000 lines); a cold check scans the text once, which is cheaper than
    scanning each block. The same set: blocks split the text at line starts, and no
    required word holds a line break."""
    if not blocks or seen * 10 < len(blocks) * 9:
        return words_in_text(text)
    per_block = []
    for b in blocks:
        words = b.memo.get(_BLOCK_WORDS)
        if words is None:
            words = b.memo[_BLOCK_WORDS] = words_in_text(b.text)
        per_block.append(words)
    return frozenset().union(*per_block)


def words_in_text(text: str) -> frozenset[str]:
    """The rules' `requires` words that occur in `text`. A word that contains a shorter
    word absent from the text is absent too (`dynamo_export` without `export`): most
    files lack `onnx` and `export`, and the search skips the words built on them."""
    absent: set[str] = set()
    present: set[str] = set()
    for word, parts in _all_required_words():
        if absent.isdisjoint(parts) and word in text:
            present.add(word)
        else:
            absent.add(word)
    return frozenset(present)


_Handlers = dict[type, list[Any]]


def _dispatch(
    ctx: Context, rules: Sequence[Rule]
) -> tuple[_Handlers, _Handlers, Callable[[Any, Exception], bool]]:
    """The walk's handler tables for `rules` (those that have not failed on this file), and
    what the walk does when one raises: the rule is disabled for this file, not the run."""
    enter: _Handlers = {
        cst.FunctionDef: [ctx.enter_function],
        cst.ClassDef: [ctx.enter_class],
    }
    leave: _Handlers = {}
    owners: dict[Any, Rule] = {}
    for rule in rules:
        if rule.failed is not None:
            continue
        for when, node_type, attr in _handlers(type(rule)):
            table = enter if when == "visit" else leave
            handler = getattr(rule, attr)
            owners[handler] = rule
            table.setdefault(node_type, []).append(handler)
    leave.setdefault(cst.FunctionDef, []).append(ctx.leave_function)
    leave.setdefault(cst.ClassDef, []).append(ctx.leave_class)

    def on_error(handler: Any, exc: Exception) -> bool:
        rule = owners.get(handler)
        if rule is None:  # the engine's own scope handlers: a bug to see
            return False
        rule.failed = exc
        for table in (enter, leave):
            for node_type in list(table):
                table[node_type] = [h for h in table[node_type] if owners.get(h) is not rule]
        return True

    return enter, leave, on_error


_HANDLERS: dict[type, list[tuple[str, type[cst.CSTNode], str]]] = {}


def _handlers(rule_cls: type[Rule]) -> list[tuple[str, type[cst.CSTNode], str]]:
    h = _HANDLERS.get(rule_cls)
    if h is None:
        h = _HANDLERS[rule_cls] = rule_handlers(rule_cls)
    return h


def active_rules(config: Config) -> list[type[Rule]]:
    return [
        r
        for r in all_rules()
        if not r.from_deep_analysis and config.is_enabled(r.code, r.default_enabled)
    ]


def _fingerprint(model: SemanticModel) -> int:
    """What block-local rules may depend on outside their block."""
    return hash(
        (
            tuple(sorted(model.imports.items())),
            tuple(
                sorted(
                    (c.name, c.is_module, c.bases, tuple(sorted(c.methods)))
                    for c in model.classes.values()
                )
            ),
            tuple(sorted(model.functions)),
            tuple(sorted(model.reachable, key=lambda k: (k[0] or "", k[1]))),
            model.uses_torchscript,
            model.declares_dynamic_dims,
            tuple(sorted(e.kind.value for e in model.export_calls)),
            tuple(sorted(model.assigned_names)),
        )
    )


def _config_key(config: Config) -> tuple[Any, ...]:
    return (
        config.target_torch,
        config.exporter,
        config.severity,
        config.large_model_parameters,
        config.unreached,
        str(config.root),
    )


def _place(v: Violation, path: str, lines: int) -> Violation:
    fix = v.fix
    if fix is not None and lines:
        fix = Fix(
            fix.title,
            tuple(Edit(e.span.shifted(lines), e.text) for e in fix.edits),
            fix.safety,
        )
    span = v.span.shifted(lines) if lines else v.span
    return dataclasses.replace(v, path=path, span=span, fix=fix)


def _file_error(path: str, message: str, line: int = 1, column: int = 1) -> Violation:
    return Violation(
        path, Span(line, column, line, column), SYNTAX_ERROR_CODE, message, Severity.ERROR
    )


_DEFAULT = Engine()


def check_source(path: str, text: str, config: Config | None = None) -> list[Violation]:
    """Check one file's text; never imports or runs it. See the module docstring."""
    return _DEFAULT.check(path, text, config)


def default_engine() -> Engine:
    return _DEFAULT
