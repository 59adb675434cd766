"""Findings -> LSP diagnostics, in the negotiated position encoding.

Each diagnostic's `data` carries everything its code actions need -- the fix's edits and the
"disable for this line" edit, already in LSP form -- so a code action request needs no re-analysis
(as in ruff's server). Positions inside `data` are plain JSON, in the same encoding. `data` holds
no document version: equal diagnostics of two versions stay equal, so a pull client is told
"unchanged" (the result id is a hash of the diagnostics, data included).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from lsprotocol import types
from pygls.uris import from_fs_path

from fabric_lsp.fixes import noqa
from fabric_lsp.findings import Finding, Position, Severity, TextEdit
from fabric_lsp.fixes.noqa import noqa_edit
from fabric_lsp.lsp.positions import UTF16, LineIndex
from fabric_lsp.sources.walk import read_source

SOURCE = "fabric-lsp"
DATA_SCHEMA = 1
MAX_OTHER_FILE_SIZE = 4 * 1024 * 1024

SEVERITIES = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFORMATION: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}



@dataclass(frozen=True)
class ClientFeatures:
    """What the client declared, reduced to the decisions the server makes."""

    encoding: str = UTF16
    related_information: bool = False
    code_description: bool = False
    pull_diagnostics: bool = False
    diagnostic_refresh: bool = False
    document_changes: bool = False
    code_action_literals: bool = False
    code_action_data: bool = False
    resolve_edit: bool = False
    markdown_hover: bool = False
    configuration: bool = False
    did_change_configuration_dynamic: bool = False
    watched_files_dynamic: bool = False


class TextSource:
    """Text and URI of the files a finding mentions: the analysed snapshot, open documents
    (by path), else the file on disk. A notebook's findings name its cells by their URIs
    (cells.py): `cells` holds their texts (URI -> text) and `labels` how a message names them."""

    def __init__(
        self,
        path: str,
        uri: str,
        text: str,
        open_texts: Mapping[str, str],
        open_uris: Mapping[str, str],
        cells: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
    ):
        self.path = path
        self.uri_of_path = dict(open_uris)
        self._texts: dict[str, str | None] = {}
        for cell_uri, cell_text in (cells or {}).items():
            self.uri_of_path[cell_uri] = cell_uri
            self._texts[cell_uri] = cell_text
        self.uri_of_path[path] = uri
        self._texts[path] = text
        self._labels = labels or {}
        self._open_texts = open_texts
        self._indexes: dict[str, LineIndex | None] = {}

    def label(self, path: str) -> str:
        return self._labels.get(path) or os.path.basename(path)

    def text(self, path: str) -> str | None:
        if path not in self._texts:
            text = self._open_texts.get(path)
            if text is None:
                decoded, _ = read_source(path, MAX_OTHER_FILE_SIZE)
                text = decoded.text if decoded is not None else None
            self._texts[path] = text
        return self._texts[path]

    def index(self, path: str) -> LineIndex | None:
        if path not in self._indexes:
            text = self.text(path)
            self._indexes[path] = LineIndex(text) if text is not None else None
        return self._indexes[path]

    def uri(self, path: str) -> str:
        return self.uri_of_path.get(path) or from_fs_path(path) or path


def range_json(value: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": value.start.line, "character": value.start.character},
        "end": {"line": value.end.line, "character": value.end.character},
    }


def range_from_json(value: Any) -> types.Range:
    return types.Range(
        start=types.Position(line=int(value["start"]["line"]), character=int(value["start"]["character"])),
        end=types.Position(line=int(value["end"]["line"]), character=int(value["end"]["character"])),
    )


def _edit_json(edit: TextEdit, texts: TextSource, encoding: str) -> dict[str, Any] | None:
    index = texts.index(edit.path)
    if index is None:
        return None
    return {
        "uri": texts.uri(edit.path),
        "range": range_json(index.range_to_lsp(edit.start, edit.end, encoding)),
        "newText": edit.new_text,
    }


def fix_payload(finding: Finding, texts: TextSource, encoding: str) -> dict[str, Any] | None:
    if finding.fix is None:
        return None
    edits = []
    for edit in finding.fix.edits:
        converted = _edit_json(edit, texts, encoding)
        if converted is None:
            return None  # a file the fix needs cannot be read: offer no half fix
        edits.append(converted)
    return {"title": finding.fix.title, "applicability": finding.fix.applicability.value, "edits": edits}


def noqa_payload(finding: Finding, texts: TextSource, encoding: str) -> dict[str, Any] | None:
    if finding.span.path != texts.path:
        return None
    index = texts.index(texts.path)
    assert index is not None
    line_number = finding.noqa_line
    edit = noqa_edit(index.line(line_number), line_number, finding.code)
    if edit is None:
        return None
    edit = TextEdit(texts.path, edit.start, edit.end, edit.new_text)
    return {"title": f"Disable {finding.code} for this line", "edit": _edit_json(edit, texts, encoding)}


def diagnostic_message(finding: Finding) -> str:
    """The headline on the first line (what an editor shows inline or in its problem list), each
    reason on a line of its own below it (shown on hover): the JSON output's message."""
    return finding.full_message


def _folded_message(finding: Finding, texts: TextSource) -> str:
    lines = [diagnostic_message(finding)]
    for related in finding.related:
        where = texts.label(related.span.path)
        start = related.span.start
        lines.append(f"{where}:{start.line + 1}:{start.character + 1}: {related.message}")
    return "\n".join(lines)


def to_diagnostic(
    finding: Finding,
    texts: TextSource,
    features: ClientFeatures,
    record_url: Callable[[str], str | None],
) -> types.Diagnostic:
    encoding = features.encoding
    index = texts.index(texts.path)
    assert index is not None
    related_information = None
    if features.related_information and finding.related:
        related_information = []
        for related in finding.related:
            related_index = texts.index(related.span.path)
            if related_index is None:
                continue
            location = types.Location(
                uri=texts.uri(related.span.path),
                range=related_index.range_to_lsp(related.span.start, related.span.end, encoding),
            )
            related_information.append(types.DiagnosticRelatedInformation(location=location, message=related.message))
    message = diagnostic_message(finding) if features.related_information else _folded_message(finding, texts)
    url = record_url(finding.code)
    data = {
        "source": SOURCE,
        "schema": DATA_SCHEMA,
        "uri": texts.uri(texts.path),
        "code": finding.code,
        "record": finding.record_id,
        "context": dict(finding.context),
        "fix": fix_payload(finding, texts, encoding),
        "noqa": noqa_payload(finding, texts, encoding),
    }
    return types.Diagnostic(
        range=index.range_to_lsp(finding.span.start, finding.span.end, encoding),
        message=message,
        severity=SEVERITIES[finding.severity],
        code=finding.code,
        # Sent to every client (one that does not show it ignores it): the rule page's link.
        code_description=types.CodeDescription(href=url) if url else None,
        source=SOURCE,
        related_information=related_information or None,
        data=data,
    )


def result_id(uri: str, diagnostics: list[types.Diagnostic], converter: Any) -> str:
    """Equal for equal diagnostics: a client holding this id has exactly these diagnostics."""
    payload = json.dumps([uri, converter.unstructure(diagnostics)], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:20]


def our_data(diagnostic: types.Diagnostic) -> dict[str, Any] | None:
    data = diagnostic.data
    if isinstance(data, Mapping) and data.get("source") == SOURCE and data.get("schema") == DATA_SCHEMA:
        return dict(data)
    return None
