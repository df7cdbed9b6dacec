"""Publishing: a document's static and deep findings merged into one list, pushed or pulled.

Static and deep findings are two buckets, published together (publishDiagnostics replaces
everything for a URI); a deep finding that confirms a static one at the same place is folded
into it (`merge_confirmed`). A notebook's findings are published per cell, only where they
changed (`publish_cells`).
"""

from __future__ import annotations

import dataclasses
from urllib.parse import unquote

from lsprotocol import types

from onnxlint.core.confirmed import merge_confirmed
from onnxlint.core.suppression import apply_suppressions
from onnxlint.core.violation import Violation
from onnxlint.server import documents
from onnxlint.server.convert import diagnostic, sort_key
from onnxlint.server.session import DocState, Result, Session


class Diagnostics(Session):
    """The session, and what it publishes for each document."""

    def merged(self, uri: str) -> tuple[int | None, list[types.Diagnostic]]:
        """Static and deep findings of `uri` as LSP diagnostics, for the stored version."""
        notebook = documents.notebook_of(self, uri)
        if notebook is not None:  # a cell: its findings in its notebook's stored result
            nb = self.docs.get(notebook)
            if nb is None or nb.result is None:
                return None, []
            res = cell_result(self, uri, notebook, with_deep(self, notebook, nb))
            lines = self.lines(res.text)
            settings = self.settings_for(uri)
            out = [diagnostic(v, lines, settings.severity_for(v.code)) for v in res.violations]
            return res.version, sorted(out, key=sort_key)
        st = self.docs.get(uri)
        if st is None or st.result is None:
            return None, []
        res = st.result
        settings = self.settings_for(uri)
        lines = self.lines(res.text)
        violations = self.violations(uri)
        out = [diagnostic(v, lines, settings.severity_for(v.code)) for v in violations]
        out.sort(key=sort_key)
        return res.version, out

    def violations(self, uri: str) -> list[Violation]:
        notebook = documents.notebook_of(self, uri)
        if notebook is not None:
            nb = self.docs.get(notebook)
            if nb is None or nb.result is None:
                return []
            return cell_result(self, uri, notebook, with_deep(self, notebook, nb)).violations
        st = self.docs.get(uri)
        if st is None or st.result is None:
            return []
        out = list(st.result.violations)
        if st.deep and st.deep_version == st.result.version:  # one cause, one diagnostic
            deep = [v for vs in st.deep.values() for v in vs]
            out = merge_confirmed(out, apply_suppressions(st.result.text, deep))
        return out

    def publish(self, uri: str) -> None:
        st = self.docs.get(uri)
        if st is None or st.result is None:
            return
        if documents.is_notebook(self, uri):
            st.published = (st.result.version, st.revision)
            publish_cells(self, uri, with_deep(self, uri, st), self.settings_for(uri).enable)
            return
        diags: list[types.Diagnostic]
        if not self.settings_for(uri).enable:
            version, diags = st.result.version, []
        else:
            version, diags = self.merged(uri)
        st.published = (version, st.revision)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=version)
        )

    def clear(self, uri: str) -> None:
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    def refresh(self, uri: str | None = None) -> None:
        """Tell the client that diagnostics changed outside an edit (settings, deep results)."""
        if self.pull_diagnostics:
            if self.supports.diagnostic_refresh:
                self.workspace_diagnostic_refresh(None)
            return
        for u in [uri] if uri else list(self.docs):
            if self.docs.get(u) and self.docs[u].result is not None:
                self.publish(u)

    def set_deep(
        self, uri: str, version: int | None, target: str, violations: list[Violation]
    ) -> None:
        """Store one target's deep findings for `uri` (for the version they were computed on)."""
        st = self.docs.get(uri)
        if st is None:
            return
        if st.deep_version != version:
            st.deep = {}
        st.deep[target] = violations
        st.deep_version = version
        st.revision += 1
        st.fix_cache.clear()
        self.refresh(uri)


def with_deep(ls: Session, nb_uri: str, st: DocState) -> Result:
    """The notebook's stored result with its deep findings (the deep analysis ran it as one
    script; they are in their cells: `onnxlint.deep.notebooks`) for the version they were
    computed on, each cell's merged with its static findings as a file's are."""
    res = st.result
    assert res is not None
    if not st.deep or st.deep_version != res.version:
        return res
    deep = [v for vs in st.deep.values() for v in vs]
    nb = documents.notebooks_of(ls).get(unquote(nb_uri))
    texts: dict[int, str] = {}
    for index, nb_cell in enumerate(nb.cells if nb is not None else []):
        doc = documents.cell_document(ls, nb_cell.document)
        texts[index + 1] = doc.source if doc is not None else ""
    static: dict[int | None, list[Violation]] = {}
    for v in res.violations:
        static.setdefault(v.cell, []).append(v)
    out = list(static.pop(None, []))
    cells = {v.cell for v in deep if v.cell is not None} | {c for c in static if c is not None}
    for cell in sorted(cells):
        mine = [dataclasses.replace(v, cell=None) for v in deep if v.cell == cell]
        kept = apply_suppressions(texts.get(cell, ""), mine) if mine else []
        merged = merge_confirmed(static.get(cell, []), kept)
        out += [v if v.cell == cell else dataclasses.replace(v, cell=cell) for v in merged]
    return dataclasses.replace(res, violations=out)


def cell_result(ls: Session, cell_uri: str, nb_uri: str, res: Result) -> Result:
    """The notebook's result `res` seen from one cell: its findings, text and version."""
    doc = documents.cell_document(ls, cell_uri)
    index = documents.cell_index(ls, cell_uri)
    if doc is None or index is None:
        return dataclasses.replace(res, version=None, text="", violations=[], stale=False)
    found = documents.cell_violations(res.violations, index, documents.first_code(ls, nb_uri))
    return dataclasses.replace(
        res, version=doc.version, text=doc.source, violations=found, stale=False
    )


def publish_cells(ls: Session, nb_uri: str, res: Result | None, enabled: bool) -> None:
    """Push each cell's diagnostics whose findings or version changed since the last push
    (an empty list for a cell whose findings went away)."""
    nb = documents.notebooks_of(ls).get(unquote(nb_uri))
    st = ls.docs.get(nb_uri)
    if nb is None or st is None:
        return
    settings = ls.settings_for(nb_uri)
    first = documents.first_code(ls, nb_uri)
    by_cell: dict[int, list[Violation]] = {}
    if res is not None and enabled:
        for v in res.violations:
            index = v.cell - 1 if v.cell is not None else first
            by_cell.setdefault(index, []).append(dataclasses.replace(v, cell=None))
    published = st.cells_published
    for index, cell in enumerate(nb.cells):
        doc = documents.cell_document(ls, cell.document)
        version = doc.version if doc is not None else None
        found = by_cell.get(index, [])
        if published.get(cell.document) == (version, found):
            continue
        diags: list[types.Diagnostic] = []
        if found and doc is not None:
            lines = ls.lines(doc.source)
            diags = sorted(
                (diagnostic(v, lines, settings.severity_for(v.code)) for v in found), key=sort_key
            )
        published[cell.document] = (version, found)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=cell.document, diagnostics=diags, version=version)
        )
