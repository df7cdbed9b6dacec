"""The unit of onnxlint: one rule class per module, carrying its docs and its test cases.

A rule subclasses `Rule`, sets `code`, `name`, `severity`, `since`, writes a docstring with
the sections What it does / Why is this bad? / Example / Use instead / Fix safety /
References, lists `VALID` and `INVALID` cases, and implements `visit_<Node>` /
`leave_<Node>` methods for the libcst node types it cares about. The engine walks each
block once and calls every active rule's handlers (no rule parses or walks on its own).

Inside a handler, `self.ctx` answers the semantic questions (`qualname`, `kind`,
`in_forward`, the file's export calls) and `self.report(node, message, fix=...)` reports.
`tests/rules/test_rule_cases.py` runs every rule's cases; `onnxlint rule CODE` and
`docs/rules/CODE.md` are generated from the class.
"""

from __future__ import annotations

import inspect
import os
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import libcst as cst

from onnxlint.core.violation import Edit, Fix, FixSafety, Related, Severity, Span, Violation

if TYPE_CHECKING:
    from onnxlint.analysis.chains import Link
    from onnxlint.analysis.file import FileAnalysis
    from onnxlint.core.config import Config
    from onnxlint.project import ExportSite, FileReach, ProjectIndex
    from onnxlint.semantic.calls import ExportCall
    from onnxlint.semantic.index import ClassInfo, FunctionInfo
    from onnxlint.semantic.kinds import Kind, Kinds
    from onnxlint.semantic.model import SemanticModel
    from onnxlint.source.blocks import Block


@dataclass(frozen=True)
class Valid:
    """Code on which the rule must report nothing."""

    code: str
    config: dict[str, Any] = field(default_factory=dict)  # [tool.onnxlint] overrides


@dataclass(frozen=True)
class Invalid:
    """Code on which the rule must report, where, what, and (optionally) how it is fixed.

    `fixed` is the whole text after applying this rule's fixes (unsafe ones included);
    leave it None for a rule without a fix.
    """

    code: str
    line: int  # 1-based line of the first finding
    message: str  # a part of the first finding's message
    fixed: str | None = None
    severity: Severity | None = None  # expected severity when it differs by context
    count: int | None = None  # expected number of findings, when it matters
    config: dict[str, Any] = field(default_factory=dict)


def dedent(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


class Rule:
    """Base class of every rule (see the module docstring)."""

    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, reads as what is wrong: `missing-eval-before-export`
    severity: ClassVar[Severity] = Severity.WARNING
    fix_safety: ClassVar[FixSafety | None] = None  # None: the rule offers no fix
    since: ClassVar[str] = "0.1.0"
    default_enabled: ClassVar[bool] = True
    from_deep_analysis: ClassVar[bool] = False  # reported by the deep analysis, never the walk
    deprecated_api: ClassVar[bool] = False  # findings get the LSP `Deprecated` tag
    # Words the block must contain for the rule to run on it (empty: always run).
    requires: ClassVar[tuple[str, ...]] = ()
    # True when findings depend on other blocks of the file (never cached per block).
    file_scope: ClassVar[bool] = False
    # True when the rule only reports in code reachable from an nn.Module's forward: the
    # engine then does not walk other functions for it.
    forward_only: ClassVar[bool] = False
    # True when the problem is one of capturing Python (loops unrolled, values frozen,
    # data-dependent branches) that `torch.jit.script` does not have: scripting compiles
    # the loop, the branch and `.item()` into the TorchScript program. A finding in code
    # that only scripting exports reach is not reported.
    scripting_keeps_python: ClassVar[bool] = False

    VALID: ClassVar[list[Valid]] = []
    INVALID: ClassVar[list[Invalid]] = []

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.failed: BaseException | None = None

    @classmethod
    def applies_to(cls, ctx: Context) -> bool:
        """A cheap file-level precondition (e.g. "the file exports something"): a rule
        that does not apply is not run on any block of the file."""
        return True

    def block_key(self, block: Block) -> object:
        """For a `file_scope` rule: what its findings in `block` depend on outside the
        block, beyond what the engine's cache key holds (the file model's fingerprint,
        the project's reach, the configuration), as a hashable value; the engine keeps
        the findings with the block under it and walks the block again for this rule
        only when it changes. None (the default): anything in the file may change them,
        so the rule runs on the block at every check."""
        return None

    # -- reporting

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        fix: Fix | None = None,
        severity: Severity | None = None,
        notes: tuple[str, ...] = (),
        code: str | None = None,
        related: tuple[Related, ...] = (),
    ) -> None:
        self.ctx.add(
            self,
            node,
            message,
            fix=fix,
            severity=severity or self.severity,
            notes=notes,
            code=code or self.code,
            related=related,
        )

    # -- metadata helpers for docs, CLI and server

    @classmethod
    def summary(cls) -> str:
        """The first line of the docstring's "What it does" section."""
        doc = cls.doc_sections().get("What it does", "")
        return doc.strip().split("\n\n")[0].replace("\n", " ") if doc else cls.name

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        doc = inspect.cleandoc(cls.__doc__ or "")
        sections: dict[str, str] = {}
        current = None
        lines: list[str] = []
        for line in doc.splitlines():
            m = re.match(r"^## (.+)$", line)
            if m:
                if current is not None:
                    sections[current] = "\n".join(lines).strip()
                current, lines = m.group(1).strip(), []
            else:
                lines.append(line)
        if current is not None:
            sections[current] = "\n".join(lines).strip()
        return sections

    @classmethod
    def family(cls) -> str:
        return cls.code[:4] + "xx"


HANDLER_RE = re.compile(r"^(visit|leave)_([A-Z][A-Za-z]+)$")


def rule_handlers(rule_cls: type[Rule]) -> list[tuple[str, type[cst.CSTNode], str]]:
    """(`visit`|`leave`, node type, method name) for each handler a rule defines."""
    out = []
    for attr in dir(rule_cls):
        m = HANDLER_RE.match(attr)
        if m:
            node_type: Any = getattr(cst, m.group(2), None)
            if not (isinstance(node_type, type) and issubclass(node_type, cst.CSTNode)):
                raise TypeError(f"{rule_cls.__name__}.{attr}: libcst has no node {m.group(2)}")
            out.append((m.group(1), node_type, attr))
    return out


class Context:
    """What a rule sees while the engine walks one file: the file's facts (`analysis`, a
    `FileAnalysis`, built once) and the walk (the block and node being visited, their
    ancestors, the function and class around them, the findings). One per check; the engine
    gives it everything at construction and moves only the walk's cursor afterwards."""

    def __init__(
        self,
        analysis: FileAnalysis,
        *,
        project: ProjectIndex | None = None,
        reach: FileReach | None = None,
        param_kinds: dict[tuple[str | None, str], dict[str, Kind]] | None = None,
        required_words: frozenset[str] = frozenset(),
    ) -> None:
        self.analysis = analysis
        # The project's other modules, for what the file imports.
        self.project = project
        # What the project's exports reach in this file, and the kinds callers pass to
        # `forward` parameters (from the project model).
        self.reach = reach
        self.param_kinds = param_kinds if param_kinds is not None else {}
        # The rules' `requires` words present in the file.
        self.required_words = required_words
        self._functions = analysis.functions
        self._lines: list[str] | None = None
        self.block: Block | None = None
        self.ancestors: list[cst.CSTNode] = []
        self.function_stack: list[FunctionInfo] = []
        self.class_stack: list[ClassInfo | None] = []
        self._kinds: dict[int, Kinds] = {}
        self._nested_parent: dict[int, FunctionInfo] = {}
        self.found: list[tuple[Rule, Violation]] = []

    # -- the file's facts

    @property
    def path(self) -> str:
        return self.analysis.path

    @property
    def text(self) -> str:
        return self.analysis.text

    @property
    def config(self) -> Config:
        return self.analysis.config

    @property
    def semantic(self) -> SemanticModel:
        return self.analysis.semantic

    # -- scope, maintained by the engine's own handlers

    def enter_function(self, node: cst.FunctionDef) -> None:
        from onnxlint.semantic.index import FunctionInfo

        info = self._functions.get(id(node))
        if info is None:  # a nested def: it belongs to its enclosing function
            parent = self.function_stack[-1] if self.function_stack else None
            info = FunctionInfo(node.name.value, node, parent.class_name if parent else None)
            if parent is not None:
                self._functions[id(node)] = info
                self._nested_parent[id(node)] = parent
        self.function_stack.append(info)

    def leave_function(self, node: cst.FunctionDef) -> None:
        self.function_stack.pop()

    def enter_class(self, node: cst.ClassDef) -> None:
        info = self.semantic.classes.get(node.name.value)
        self.class_stack.append(info if info is not None and info.node is node else None)

    def leave_class(self, node: cst.ClassDef) -> None:
        self.class_stack.pop()

    @property
    def parent(self) -> cst.CSTNode | None:
        return self.ancestors[-1] if self.ancestors else None

    @property
    def function(self) -> FunctionInfo | None:
        """The innermost top-level function or method being walked."""
        for f in reversed(self.function_stack):
            if id(f.node) not in self._nested_parent:
                return f
        return None

    @property
    def class_info(self) -> ClassInfo | None:
        return self.class_stack[-1] if self.class_stack else None

    @property
    def in_forward(self) -> bool:
        """True inside code that can run when an exported model's forward runs: reached by
        an export of the project, or reachable from a module's `forward` (a model that
        may be exported elsewhere) unless it can never be part of an exported model's
        inference (a loss, a runtime wrapper, a training-only branch, code after an
        early return taken in export/deploy mode)."""
        from onnxlint.analysis.never_exported import in_dead_branch, never_exported

        func = self.function
        if func is None:
            return False
        if not self.reaching_exports() and (
            not self.semantic.is_reachable(func) or never_exported(self, func)
        ):
            return False
        return not in_dead_branch(self)

    def reaching_exports(self) -> frozenset[ExportSite]:
        """The project's export sites whose model runs the current function."""
        func = self.function
        if func is None or self.reach is None:
            return frozenset()
        return self.reach.functions.get(func.key, frozenset())

    @property
    def uses_torchscript(self) -> bool:
        return self.semantic.uses_torchscript

    # -- semantic queries

    def qualname(self, expr: cst.BaseExpression) -> str | None:
        return self.semantic.qualname(expr)

    def kinds(self) -> Kinds:
        from onnxlint.semantic.kinds import Kinds

        func = self.function
        key = id(func.node) if func is not None else 0
        k = self._kinds.get(key)
        if k is None:
            k = Kinds(self.semantic, func, self.param_kinds.get(func.key) if func else None)
            self._kinds[key] = k
        return k

    def kind(self, expr: cst.BaseExpression) -> Kind:
        """The kind of `expr` here: a name narrowed by an enclosing `isinstance` test
        (`if isinstance(x, list):`, the `else` of `isinstance(x, torch.Tensor)`) takes
        the narrowed kind, else the function's flow-insensitive kind."""
        if type(expr) is cst.Name and self.ancestors:
            from onnxlint.semantic.kinds import narrowed_kind

            narrowed = narrowed_kind(self.semantic, self.ancestors, expr)
            if narrowed is not None:
                return narrowed
        return self.kinds().of(expr)

    def export_call(self, call: cst.Call) -> ExportCall | None:
        return self.semantic.export_call_for(call)

    def enclosing(self, *types: type) -> cst.CSTNode | None:
        for node in reversed(self.ancestors):
            if isinstance(node, types):
                return node
        return None

    def statement(self) -> cst.CSTNode | None:
        """The innermost statement containing the current node."""
        return self.enclosing(cst.SimpleStatementLine, cst.BaseCompoundStatement)

    def chain(self, links: Sequence[Link]) -> tuple[str, tuple[Related, ...]]:
        """A chain of links across calls and files (`onnxlint.analysis.chains`) in words,
        for the message, and as related locations, one per link."""
        from onnxlint.analysis.chains import describe, steps

        located = steps(self, links)
        related = tuple(
            Related(s.path, s.line, s.column, " ".join(s.text.replace("{at}", "").split()))
            for s in located
        )
        return describe(self, links), related

    def taint_chain(self, taint: object) -> tuple[str, tuple[Related, ...]]:
        """How a value with a dynamic dim reached the function being walked, from the
        project model (`FileReach.taints`): the calls that passed it on, in words and as
        related locations (empty when it comes from this very function's inputs)."""
        from onnxlint.analysis.chains import where_path

        func = self.function
        if func is None or self.reach is None:
            return "", ()
        entries = self.reach.taints.get(func.key, {})
        steps = next((chain for found, _, chain in entries.values() if found == taint), ())
        if not steps:
            steps = next((chain for _, _, chain in entries.values() if chain), ())
        parts = []
        related = []
        for path, line, column, text in steps:
            place = where_path(self, path, line)
            at = f"at {place}" if place.startswith("line ") else f"in {place}"
            head, _, rest = text.partition(" passes ")
            parts.append(f"{head} {at} passes {rest}" if rest else f"{text} {at}")
            related.append(Related(path, line, column, text))
        return ", then ".join(parts), tuple(related)

    # -- text and positions

    def code_of(self, node: cst.CSTNode) -> str:
        return cst.Module([]).code_for_node(node)

    def span(self, node: cst.CSTNode) -> Span:
        from onnxlint.source.positions import node_span

        assert self.block is not None
        span = node_span(self.block, node)
        if span is None:
            raise LookupError("node is not in the block being checked")
        return span

    def line_text(self, line: int) -> str:
        if self._lines is None:
            self._lines = self.text.splitlines()
        return self._lines[line - 1] if 0 < line <= len(self._lines) else ""

    # -- edits for fixes

    def replace(self, node: cst.CSTNode, text: str) -> Edit:
        return Edit(self.span(node), text)

    def insert_before_statement(self, stmt: cst.CSTNode, line_text: str) -> Edit:
        """Insert `line_text` as a new line before `stmt`, with the same indentation."""
        span = self.span(stmt)
        current = self.line_text(span.line)
        indent = current[: len(current) - len(current.lstrip())]
        return Edit(Span(span.line, 1, span.line, 1), f"{indent}{line_text}\n")

    def remove_arg(self, call: cst.Call, arg: cst.Arg) -> Edit:
        """Delete one argument of a call with its separator, leaving valid code."""
        return self.remove_args(call, [arg])[0]

    def remove_args(self, call: cst.Call, remove: Sequence[cst.Arg]) -> list[Edit]:
        """Delete several arguments of one call as non-overlapping edits."""
        args = list(call.args)
        gone = [any(a is r for r in remove) for a in args]
        edits: list[Edit] = []
        i = 0
        while i < len(args):
            if not gone[i]:
                i += 1
                continue
            j = i
            while j + 1 < len(args) and gone[j + 1]:
                j += 1
            first, last = self.span(args[i]), self.span(args[j])
            if j + 1 < len(args):  # up to the next kept argument
                nxt = self.span(args[j + 1])
                edits.append(Edit(Span(first.line, first.column, nxt.line, nxt.column), ""))
            elif i > 0:  # a tail: from the end of the last kept argument
                prev = self.span(args[i - 1])
                edits.append(
                    Edit(Span(prev.end_line, prev.end_column, last.end_line, last.end_column), "")
                )
            else:  # every argument: up to the closing parenthesis
                end = self.span(call)
                edits.append(
                    Edit(Span(first.line, first.column, end.end_line, end.end_column - 1), "")
                )
            i = j + 1
        return edits

    # -- collection

    def add(
        self,
        rule: Rule,
        node: cst.CSTNode,
        message: str,
        *,
        fix: Fix | None,
        severity: Severity,
        notes: tuple[str, ...],
        code: str,
        related: tuple[Related, ...] = (),
    ) -> None:
        severity = self.config.severity_for(code, severity)
        if self._in_dead_version_branch(node):
            return  # code for another torch than `target-torch`: never runs there
        if rule.forward_only and self.reach is not None:
            if rule.scripting_keeps_python and self._only_scripted():
                return
            placed = self._export_reach(message, severity)
            if placed is None:
                return
            message, severity, also = placed
            related = (*related, *also)
        v = Violation(
            path=self.path,
            span=self.span(node),
            code=code,
            message=message,
            severity=severity,
            fix=fix,
            deprecated=rule.deprecated_api,
            notes=notes,
            related=related,
        )
        self.found.append((rule, v))

    def _in_dead_version_branch(self, node: cst.CSTNode) -> bool:
        if "version" not in self.text and "torch_" not in self.text:
            return False
        from onnxlint.semantic.versions import dead_branch

        return dead_branch(self.ancestors, node, self.config.torch_version)

    def _only_scripted(self) -> bool:
        """Whether every export that reaches the current function is `torch.jit.script`."""
        from onnxlint.semantic.calls import ExportKind

        sites = self.reaching_exports()
        return bool(sites) and all(s.kind is ExportKind.JIT_SCRIPT for s in sites)

    def _export_reach(
        self, message: str, severity: Severity
    ) -> tuple[str, Severity, tuple[Related, ...]] | None:
        """Name the export that makes a finding in forward code a problem, or say that no
        export of the project reaches it (and apply the `unreached` setting). A message
        that already names a reaching export (OLX104's reason) gets no second one: the
        other exports go into its related information."""
        sites = self.reaching_exports()
        root = str(self.config.root) if self.config.root is not None else None
        if sites:
            ordered = sorted(  # the current dynamo exporter first, a removed API last
                sites,
                key=lambda s: (s.traced, s.kind.value == "onnx-dynamo-export", s.path, s.line),
            )
            first = ordered[0]

            def named(site: ExportSite) -> bool:
                return re.search(re.escape(site.where(root)) + r"(?![\d:])", message) is not None

            if any(named(s) for s in sites):
                related = tuple(
                    Related(s.path, s.line, 1, f"also exported by {s.where(root)} ({s.exporter})")
                    for s in ordered
                    if not named(s)
                )
                return message, severity, related[:5]
            if first.path != os.path.abspath(self.path):
                more = f" and {len(sites) - 1} more" if len(sites) > 1 else ""
                message = f"{message} (exported by {first.where(root)}{more}, {first.exporter})"
            return message, severity, ()
        mode = self.config.unreached
        if mode == "ignore":
            return None
        if mode == "lower":
            severity = Severity.WARNING if severity is Severity.ERROR else Severity.INFO
        return f"{message}; no export in this project reaches it", severity, ()


def make_fix(title: str, *edits: Edit, safety: FixSafety = FixSafety.SAFE) -> Fix:
    return Fix(title, tuple(edits), safety)


Handler = Callable[[Any], None]
