"""Code actions: each diagnostic's fix (`quickfix`, preferred when safe), "Disable FABnnn for this
line" (`# noqa`), and `source.fixAll.fabric-lsp` (every safe fix of the document, with
`fabric_lsp.fixes.edits.apply_fixes` semantics: identical edits once, fixes overlapping an earlier one
skipped).

The quick fixes come from the diagnostics' `data` (no re-analysis). When the client can resolve
code actions (`resolveSupport` for `edit`), the actions go out without their edit and carry what
`codeAction/resolve` needs; fix-all then computes its edit only when resolved.

On a notebook cell the same actions work on the notebook (the analysis unit): a quick fix may edit
another cell, and fix-all fixes the whole notebook, from the lightbulb menu or asked for as VS Code
does for `notebook.codeActionsOnSave`, `notebook.source.fixAll` (kind
`notebook.source.fixAll.fabric-lsp`, as ruff names its own); `source.fixAll` asked for on a cell (the
per-cell save action) edits that cell only. Edits carry the versions of the cells the analysis read.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from lsprotocol import types

from fabric_lsp.fixes.edits import apply_fixes
from fabric_lsp.findings import Applicability, Finding
from fabric_lsp.lsp.convert import SOURCE, ClientFeatures, TextSource, fix_payload, our_data, range_from_json
from fabric_lsp.lsp.documents import AnalysisResult, Document, NotebookDocument

FIX_ALL_KIND = "source.fixAll.fabric-lsp"
NOTEBOOK_FIX_ALL_KIND = "notebook.source.fixAll.fabric-lsp"
FIX_ALL_TITLE = "fabric-lsp: Fix all auto-fixable problems"
KINDS = [types.CodeActionKind.QuickFix, FIX_ALL_KIND, NOTEBOOK_FIX_ALL_KIND]


def kind_wanted(kind: str, only: Sequence[str] | None) -> bool:
    if only is None:
        return True
    return any(kind == wanted or kind.startswith(f"{wanted}.") for wanted in only)


def fix_all_kind(doc: Document, only: Sequence[str] | None) -> str | None:
    """The fix-all kind to answer with: `source.fixAll` first (ruff's order), the notebook kind only
    for a notebook and only when asked for by name."""
    if kind_wanted(FIX_ALL_KIND, only):
        return FIX_ALL_KIND
    if isinstance(doc, NotebookDocument) and only is not None and kind_wanted(NOTEBOOK_FIX_ALL_KIND, only):
        return NOTEBOOK_FIX_ALL_KIND
    return None


def analysed_versions(doc: Document) -> dict[str, int | None]:
    """URI -> the version its last analysis read: the document's own, or each analysed cell's."""
    result = doc.result
    if result is None:
        return {}
    if isinstance(doc, NotebookDocument):
        return {uri: part.version for uri, part in result.cells.items()}
    return {doc.uri: result.version}


def _known_diagnostics(doc: Document, uri: str) -> tuple[list[types.Diagnostic], int | None] | None:
    """The diagnostics the last analysis gave `uri` (the document, or a cell of the notebook) and
    the version they are for."""
    result = doc.result
    if result is None:
        return None
    if isinstance(doc, NotebookDocument):
        part = result.cells.get(uri)
        return (part.diagnostics, part.version) if part is not None else None
    return result.diagnostics, result.version


def workspace_edit(
    edits: Iterable[Mapping[str, Any]], versions: Mapping[str, int | None], features: ClientFeatures
) -> types.WorkspaceEdit:
    """Edits in JSON form ({uri, range, newText}) -> a WorkspaceEdit; with documentChanges when the
    client supports them, versioned for open documents so that a stale edit is refused."""
    by_uri: dict[str, list[types.TextEdit]] = {}
    for edit in edits:
        by_uri.setdefault(edit["uri"], []).append(
            types.TextEdit(range=range_from_json(edit["range"]), new_text=edit["newText"])
        )
    if features.document_changes:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=versions.get(uri)),
                    edits=list(text_edits),
                )
                for uri, text_edits in by_uri.items()
            ]
        )
    return types.WorkspaceEdit(changes=by_uri)


def _same_range(a: types.Range, b: types.Range) -> bool:
    return (a.start.line, a.start.character, a.end.line, a.end.character) == (
        b.start.line,
        b.start.character,
        b.end.line,
        b.end.character,
    )


def diagnostic_data(
    diagnostic: types.Diagnostic, doc: Document, uri: str | None = None
) -> tuple[dict[str, Any], int | None] | None:
    """The diagnostic's data and the document version its edits are for: the version of the last
    analysis, which must have produced this same diagnostic (else it is stale and gets no action).
    For a client that drops `data`, the data of the equal diagnostic (code and range) is used.
    `uri`: the cell the diagnostic is in, for a notebook."""
    found = _known_diagnostics(doc, uri or doc.uri)
    if found is None or diagnostic.source != SOURCE:
        return None
    diagnostics, version = found
    data = our_data(diagnostic)
    for known in diagnostics:
        known_data = our_data(known)
        if known_data is None or known.code != diagnostic.code or not _same_range(known.range, diagnostic.range):
            continue
        if data is None or data == known_data:
            return known_data, version
    return None


def code_actions(
    params: types.CodeActionParams,
    doc: Document,
    features: ClientFeatures,
    versions: Callable[[str], int | None],
) -> list[types.CodeAction]:
    only = params.context.only
    actions: list[types.CodeAction] = []
    if kind_wanted(types.CodeActionKind.QuickFix, only):
        seen: set[tuple[str, str]] = set()
        for diagnostic in params.context.diagnostics:
            found = diagnostic_data(diagnostic, doc, params.text_document.uri)
            if found is None:
                continue
            data, _ = found
            fix = data.get("fix")
            if fix and ("fix", repr(fix)) not in seen:
                seen.add(("fix", repr(fix)))
                actions.append(
                    _action(
                        fix["title"],
                        diagnostic,
                        fix["edits"],
                        preferred=fix["applicability"] == Applicability.SAFE.value,
                        features=features,
                        versions=versions,
                        doc=doc,
                    )
                )
            noqa = data.get("noqa")
            if noqa and ("noqa", repr(noqa)) not in seen:
                seen.add(("noqa", repr(noqa)))
                actions.append(
                    _action(
                        noqa["title"],
                        diagnostic,
                        [noqa["edit"]],
                        preferred=False,
                        features=features,
                        versions=versions,
                        doc=doc,
                    )
                )
    kind = fix_all_kind(doc, only)
    # `source.fixAll` asked for on a cell (codeActionsOnSave): that cell's edits only. VS Code asks
    # every cell at once on save and would apply a notebook-wide answer once per cell (the mark
    # inserted three times). In the lightbulb menu (nothing asked for by kind) it fixes the notebook.
    cell = (params.text_document.uri if isinstance(doc, NotebookDocument) and kind == FIX_ALL_KIND and only
            else None)
    fixes = _safe_fixes(doc.result) if kind is not None and doc.result is not None else []
    if cell is not None:  # (a notebook's findings are in cell coordinates: edit paths are cell URIs)
        fixes = [f for f in fixes if all(edit.path == cell for edit in f.fix.edits)]
    if fixes:
        action = types.CodeAction(title=FIX_ALL_TITLE, kind=kind)
        fix_all_data = {"source": SOURCE, "action": "fixAll", "uri": doc.uri, "version": doc.result.version,
                        "cell": cell}
        if features.resolve_edit:
            action.data = fix_all_data
        else:
            action.edit = fix_all_edit(doc, features, versions, cell=cell)
        actions.append(action)
    return actions


def _action(
    title: str,
    diagnostic: types.Diagnostic,
    edits: list[Mapping[str, Any]],
    *,
    preferred: bool,
    features: ClientFeatures,
    versions: Callable[[str], int | None],
    doc: Document,
) -> types.CodeAction:
    action = types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        is_preferred=preferred or None,
    )
    # The versions the edits were computed for: the client refuses them if its text moved on.
    version_of = analysed_versions(doc)
    edit_versions = {edit["uri"]: version_of.get(edit["uri"], versions(edit["uri"])) for edit in edits}
    if features.resolve_edit:
        action.data = {"source": SOURCE, "action": "edits", "edits": list(edits), "versions": edit_versions}
    else:
        action.edit = workspace_edit(edits, edit_versions, features)
    return action


def _safe_fixes(result: AnalysisResult) -> list[Finding]:
    return [f for f in result.findings if f.fix is not None and f.fix.applicability == Applicability.SAFE]


def fix_all_edit(
    doc: Document,
    features: ClientFeatures,
    versions: Callable[[str], int | None],
    open_texts: Mapping[str, str] | None = None,
    open_uris: Mapping[str, str] | None = None,
    cell: str | None = None,
) -> types.WorkspaceEdit | None:
    """Every safe fix of the document's last analysis that does not overlap an earlier one (with
    `cell`, of a notebook: the fixes whose edits all lie in that cell)."""
    result = doc.result
    if result is None:
        return None
    findings = _safe_fixes(result)
    cells = {uri: part.text for uri, part in result.cells.items()}
    texts = TextSource(doc.analysis_path, doc.uri, result.text, open_texts or {}, open_uris or {}, cells=cells)
    paths = {edit.path for f in findings for edit in f.fix.edits}
    applied = apply_fixes([f.fix for f in findings], {path: texts.text(path) for path in paths})
    edits: list[dict[str, Any]] = []
    seen: set[tuple[str, Any, Any, str]] = set()
    for index in applied.applied:
        payload = fix_payload(findings[index], texts, features.encoding)
        if payload is None or (cell is not None and any(edit["uri"] != cell for edit in payload["edits"])):
            continue
        for edit in payload["edits"]:
            key = (edit["uri"], repr(edit["range"]), edit["newText"])
            if key not in seen:  # identical edits from two findings apply once
                seen.add(key)
                edits.append(edit)
    if not edits:
        return None
    version_of = analysed_versions(doc)
    edit_versions = {edit["uri"]: version_of.get(edit["uri"], versions(edit["uri"])) for edit in edits}
    return workspace_edit(edits, edit_versions, features)


def resolve(
    action: types.CodeAction,
    docs: Mapping[str, Document],
    features: ClientFeatures,
    versions: Callable[[str], int | None],
    open_texts: Mapping[str, str],
    open_uris: Mapping[str, str],
) -> types.CodeAction:
    data = action.data if isinstance(action.data, Mapping) else None
    if data is None or data.get("source") != SOURCE:
        return action
    if data.get("action") == "edits":
        action.edit = workspace_edit(data.get("edits") or [], data.get("versions") or {}, features)
    elif data.get("action") == "fixAll":
        doc = docs.get(data.get("uri"))
        if doc is not None and doc.result is not None and doc.result.version == data.get("version"):
            action.edit = fix_all_edit(doc, features, versions, open_texts, open_uris, data.get("cell"))
    return action
