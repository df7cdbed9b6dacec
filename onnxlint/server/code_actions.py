"""Code actions: a quick fix per finding, "suppress on this line", and fix-all (safe fixes).

Every offered edit is computed for the document's current version, sent as a versioned
`TextDocumentEdit` when the client supports it (so a client whose buffer moved on rejects
it), and checked before it is offered: the edited text is re-checked with the engine (only
the edited top-level block is parsed again) and the edit is offered only if the finding is
gone and no syntax error (OLX000) appeared. Fix-all runs `onnxlint.source.fixes.fix_text`, which may
take several passes, so it is built in `codeAction/resolve` when the client supports it.
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types

from onnxlint.core.codes import SYNTAX_ERROR_CODE
from onnxlint.core.violation import Edit, FileEdit, FixSafety, Span, Violation
from onnxlint.server import deep_fixes, documents
from onnxlint.server.app import OnnxlintServer
from onnxlint.server.checks import check_cell_text
from onnxlint.server.convert import (
    Lines,
    diagnostic,
    fix_is_offered,
    overlaps,
    text_edits,
    whole_text_edit,
)
from onnxlint.server.protocol import SHOW_DOCUMENTATION
from onnxlint.server.session import Result

log = logging.getLogger("onnxlint.server")

FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.onnxlint"
QUICKFIX = types.CodeActionKind.QuickFix.value
UNCHECKABLE = ("OLX000", "OLX001")  # syntax / internal errors: no suppression, no fix

_IGNORE_RE = re.compile(r"#\s*onnxlint:\s*ignore\[(?P<codes>[^\]]*)\]", re.I)


def wants(only: Sequence[str] | None, kind: str, default: bool = True) -> bool:
    if not only:
        return default
    return any(kind == str(k) or kind.startswith(str(k) + ".") for k in only)


def workspace_edit(
    server: OnnxlintServer, uri: str, version: int | None, edits: list[types.TextEdit]
) -> types.WorkspaceEdit:
    if server.supports.document_changes:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=version
                    ),
                    edits=list(edits),
                )
            ]
        )
    return types.WorkspaceEdit(changes={uri: edits})


def _with_files(
    server: OnnxlintServer,
    own: types.WorkspaceEdit | None,
    files: Sequence[FileEdit],
) -> types.WorkspaceEdit | None:
    """`own` (the finding's file's edit) and the fix's other files: a file it adds is a
    `CreateFile` (never over an existing one) and its text; another file's edits a
    `TextDocumentEdit` at its open buffer's version. None when the client cannot apply it
    (no `documentChanges`, or no `create` resource operation for a file to add)."""
    if not server.supports.document_changes:
        return None
    if any(f.create for f in files) and not server.supports.create_files:
        return None
    changes: list[Any] = list((own.document_changes or []) if own is not None else [])
    for f in files:
        other = Path(f.path).resolve().as_uri()
        if f.create:
            if os.path.exists(f.path):
                return None
            start = types.Position(0, 0)
            changes.append(
                types.CreateFile(
                    uri=other,
                    options=types.CreateFileOptions(overwrite=False, ignore_if_exists=False),
                )
            )
            changes.append(
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=other),
                    edits=[types.TextEdit(types.Range(start, start), f.text)],
                )
            )
            continue
        doc = _open_document(server, f.path)
        if doc is not None:
            text, version = doc.source, doc.version
        else:
            try:
                text, version = Path(f.path).read_text(encoding="utf-8"), None
            except (OSError, UnicodeDecodeError):
                return None
        changes.append(
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=doc.uri if doc is not None else other, version=version
                ),
                edits=list(text_edits(f.edits, server.lines(text))),
            )
        )
    return types.WorkspaceEdit(document_changes=changes)


def _open_document(server: OnnxlintServer, path: str) -> Any:
    """The editor's open document of `path`, if it is open."""
    real = os.path.realpath(path)
    for uri, doc in list(server.workspace.text_documents.items()):
        p = server.path_of(uri)
        if os.path.isabs(p) and os.path.realpath(p) == real:
            return doc
    return None


# ---------------------------------------------------------------------- validation


def _recheck(server: OnnxlintServer, uri: str, text: str) -> list[Violation]:
    if documents.notebook_of(server, uri) is not None:  # a cell: checked in its notebook
        return check_cell_text(server, uri, text)
    config, _, _ = server.config_for(uri)
    return server.engine.check(server.path_of(uri), text, config)


def _holds(before: list[Violation], after: list[Violation], v: Violation) -> bool:
    """The fix removed (one) `v` and introduced no syntax error."""
    b, a = Counter(x.code for x in before), Counter(x.code for x in after)
    if a[SYNTAX_ERROR_CODE] > b[SYNTAX_ERROR_CODE]:
        return False
    if v.source == "deep" or deep_fixes.is_proven(v.fix):
        # deep findings are not re-checked statically (the parse check is it); a static
        # finding the deep analysis confirmed carries the deep finding's proven rewrite
        return True
    return a[v.code] < b[v.code]


def _checked_edits(
    server: OnnxlintServer, uri: str, res: Result, v: Violation, edits: list[Edit]
) -> bool:
    """On the engine thread: whether applying `edits` to the result's text removes `v`."""
    from onnxlint.source.fixes import apply_edits

    try:
        new_text = apply_edits(res.text, edits)
    except ValueError:
        return False
    if new_text == res.text:
        return False
    try:
        after = _recheck(server, uri, new_text)
    except Exception:
        log.exception("re-check of a fix failed")
        return False
    return _holds(res.violations, after, v)


def suppression_edit(line_text: str, line: int, code: str) -> Edit:
    """Add `code` to the line's `# onnxlint: ignore[...]`, or append one."""
    m = _IGNORE_RE.search(line_text)
    if m:
        codes = [c.strip() for c in re.split(r"[\s,]+", m.group("codes")) if c.strip()]
        if code not in codes:
            codes.append(code)
        start, end = m.span("codes")
        return Edit(Span(line, start + 1, line, end + 1), ", ".join(codes))
    stripped = line_text.rstrip()
    return Edit(
        Span(line, len(stripped) + 1, line, len(line_text) + 1),
        f"  # onnxlint: ignore[{code}]",
    )


def _suppression(server: OnnxlintServer, uri: str, res: Result, v: Violation) -> Edit | None:
    """The first suppression comment (start line, then end line) that silences `v`."""
    lines = res.text.splitlines()
    for line in dict.fromkeys((v.span.line, v.span.end_line)):
        if not 0 < line <= len(lines):
            continue
        edit = suppression_edit(lines[line - 1], line, v.code)
        if _checked_edits(server, uri, res, v, [edit]):
            return edit
    return None


def _cached(server: OnnxlintServer, uri: str, key: Any, compute: Any) -> Any:
    st = server.state(uri)
    if key not in st.fix_cache:
        if len(st.fix_cache) > 256:
            st.fix_cache.clear()
        st.fix_cache[key] = compute()
    return st.fix_cache[key]


# ---------------------------------------------------------------------- building actions


def _title(v: Violation) -> str:
    assert v.fix is not None
    title = f"onnxlint ({v.code}): {v.fix.title}"
    if v.fix.safety is FixSafety.UNSAFE:
        title += " (unsafe: may change behaviour)"
    return title


def _client_diagnostic(
    context: Sequence[types.Diagnostic], ours: types.Diagnostic
) -> types.Diagnostic:
    for d in context:
        if d.code == ours.code and d.range == ours.range and d.source == ours.source:
            return d
    return ours


async def code_action(
    ls: OnnxlintServer, params: types.CodeActionParams
) -> list[types.CodeAction | types.Command] | None:
    uri = params.text_document.uri
    res = await ls.current(uri)
    if not ls.settings_for(uri).enable:
        return []
    lines = ls.lines(res.text)
    settings = ls.settings_for(uri)
    only = params.context.only
    actions: list[types.CodeAction | types.Command] = []
    violations = ls.violations(uri)
    safe_fixes = sum(v.fix is not None and v.fix.safety is FixSafety.SAFE for v in res.violations)
    if wants(only, QUICKFIX):
        documented: list[types.CodeAction] = []
        for v in violations:
            if v.code in UNCHECKABLE:
                continue
            diag = diagnostic(v, lines, settings.severity_for(v.code))
            if not overlaps(diag.range, params.range):
                continue
            diag = _client_diagnostic(params.context.diagnostics, diag)
            actions.extend(await _actions_for(ls, uri, res, v, diag, lines))
            if all(v.code not in a.title for a in documented):
                documented.append(_documentation_action(v, diag))
        actions.extend(documented)
        if documented and safe_fixes > 0:  # the menu's last entry, as ruff's
            actions.append(await _fix_all_action(ls, uri, res, types.CodeActionKind.QuickFix))
    if wants(only, FIX_ALL_KIND, default=True) and safe_fixes > 0:
        actions.append(await _fix_all_action(ls, uri, res))
    return actions


def _documentation_action(v: Violation, diag: types.Diagnostic) -> types.CodeAction:
    """ "Show documentation for OLXnnn": the rule's page on the documentation site."""
    return types.CodeAction(
        title=f"onnxlint ({v.code}): Show documentation for {v.code}",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diag],
        command=types.Command(
            title=f"Show documentation for {v.code}",
            command=SHOW_DOCUMENTATION,
            arguments=[v.url],
        ),
    )


async def _actions_for(
    ls: OnnxlintServer,
    uri: str,
    res: Result,
    v: Violation,
    diag: types.Diagnostic,
    lines: Lines,
) -> list[types.CodeAction]:
    out: list[types.CodeAction] = []
    fix = v.fix
    if fix is not None and fix_is_offered(fix):
        edits = list(fix.edits)
        ok = not edits or await ls.run_check(
            lambda: _cached(
                ls, uri, ("fix", res.version, v), lambda: _checked_edits(ls, uri, res, v, edits)
            )
        )
        change: types.WorkspaceEdit | None = workspace_edit(
            ls, uri, res.version, text_edits(edits, lines) if edits else []
        )
        if ok and fix.files:
            change = _with_files(ls, change if edits else None, fix.files)
        if ok and change is not None:
            out.append(
                types.CodeAction(
                    title=_title(v),
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diag],
                    is_preferred=fix.safety is FixSafety.SAFE,
                    edit=change,
                )
            )
    out.extend(_deep_actions(ls, uri, v, diag))
    edit = await ls.run_check(
        lambda: _cached(
            ls, uri, ("suppress", res.version, v), lambda: _suppression(ls, uri, res, v)
        )
    )
    if edit is not None:
        out.append(
            types.CodeAction(
                title=f"onnxlint ({v.code}): Suppress {v.code} on this line",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diag],
                edit=workspace_edit(ls, uri, res.version, text_edits([edit], lines)),
            )
        )
    return out


def _deep_actions(
    ls: OnnxlintServer, uri: str, v: Violation, diag: types.Diagnostic
) -> list[types.CodeAction]:
    """A script run that stopped for its command line: "Set arguments..." (script_args.py)."""
    from onnxlint.server import script_args

    stops = ls.deep.stops if ls.deep is not None else {}
    stop = stops.get(os.path.realpath(v.path)) if script_args.asks_for_arguments(v) else None
    if stop is None or script_args.SET_ARGUMENTS not in ls.init.client_commands:
        return []
    return [script_args.code_action(uri, v, diag, stop)]


FIX_ALL_TITLE = "onnxlint: Fix all auto-fixable problems (safe fixes)"
FIX_ALL_PROGRESS_TITLE = "onnxlint: fixing all problems"


async def _fix_all_action(
    ls: OnnxlintServer, uri: str, res: Result, kind: str = FIX_ALL_KIND
) -> types.CodeAction:
    action = types.CodeAction(
        title=FIX_ALL_TITLE,
        kind=kind,
        data={"uri": uri, "version": res.version, "kind": "fixAll"},
    )
    if not ls.supports.resolve_code_action_edit:
        action.edit = await fix_all_edit(ls, uri)
    return action


async def fix_all_edit_with_progress(
    ls: OnnxlintServer, uri: str, options: dict[str, Any]
) -> types.WorkspaceEdit | None:
    """`fix_all_edit`, with work-done progress when it takes over a second (the command's
    options or the code action's data may set `progressAfterS`)."""
    from onnxlint.server.progress import with_progress

    after = options.get("progressAfterS")
    return await with_progress(
        ls,
        FIX_ALL_PROGRESS_TITLE,
        fix_all_edit(ls, uri),
        message=uri.rsplit("/", 1)[-1],
        after_s=float(after) if isinstance(after, (int, float)) else None,
    )


async def fix_all_edit(ls: OnnxlintServer, uri: str) -> types.WorkspaceEdit | None:
    """The edit applying every safe fix to the current version (None: nothing to fix)."""
    res = await ls.current(uri)
    new_text = await ls.run_check(
        lambda: _cached(ls, uri, ("fixAll", res.version), lambda: _fix_all_text(ls, uri, res))
    )
    if new_text is None or new_text == res.text:
        return None
    edits = whole_text_edit(res.text, new_text, ls.lines(res.text))
    return workspace_edit(ls, uri, res.version, edits)


def _fix_all_text(ls: OnnxlintServer, uri: str, res: Result) -> str | None:
    from onnxlint.source.fixes import cell_parses, fix_text

    result = fix_text(
        res.text,
        list(res.violations),
        lambda text: _recheck(ls, uri, text),
        unsafe=False,
        valid=cell_parses if documents.notebook_of(ls, uri) is not None else None,
    )
    ls.state(uri).fix_cache[("fixAllCount", res.version)] = len(result.applied)  # for messages
    return result.text if result.applied else None


async def resolve(ls: OnnxlintServer, action: types.CodeAction) -> types.CodeAction:
    """Build the fix-all edit (with progress when it takes over a second)."""
    data = action.data if isinstance(action.data, dict) else {}
    if data.get("kind") == "fixAll" and action.edit is None:
        uri = data.get("uri")
        if isinstance(uri, str) and (
            uri in ls.workspace.text_documents or documents.cell_document(ls, uri) is not None
        ):
            action.edit = await fix_all_edit_with_progress(ls, uri, data)
    return action


def register(server: OnnxlintServer) -> None:
    server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND],
            resolve_provider=True,
        ),
    )(code_action)
    server.feature(types.CODE_ACTION_RESOLVE)(resolve)
