"""Hover: the knowledge-base record of the finding under the cursor, rendered for that occurrence
(its class and method names filled in), or of the rule named under the cursor in a `# noqa:` list.
"""

from __future__ import annotations


from lsprotocol import types

from fabric_lsp.fixes import noqa
from fabric_lsp.findings import Finding, Position
from fabric_lsp.lsp.positions import LineIndex
from fabric_lsp.records import RecordSet, render_markdown, render_text, rule_by_code

SEPARATOR_MARKDOWN = "\n\n---\n\n"
SEPARATOR_TEXT = "\n\n" + "-" * 40 + "\n\n"


def _contains(finding: Finding, position: Position) -> bool:
    # Inclusive end: a cursor just after the name (where many editors put it) still hovers it.
    return finding.span.start <= position <= finding.span.end


def findings_at(findings: tuple[Finding, ...], path: str, position: Position) -> list[Finding]:
    return [f for f in findings if f.span.path == path and _contains(f, position)]


def noqa_code_at(line: str, character: int) -> tuple[str, int, int] | None:
    """The rule code under `character` inside a `# noqa: ...` list: (code, start, end)."""
    directive = noqa.line_directive(line)
    for code, start, end in directive.code_spans if directive is not None else ():
        if start <= character <= end:
            return code, start, end
    return None


def render(
    records: RecordSet, record_id: str | None, code: str, context: dict[str, str] | None, markdown: bool,
    docs_url: str | None = None,
) -> str | None:
    record = records.by_id(record_id) if record_id else None
    record = record or records.by_code(code)
    if record is None:
        return None
    renderer = render_markdown if markdown else render_text
    return renderer(record, context=context, code=code, docs_url=docs_url)  # ends with the rule page's link


def hover(
    findings: tuple[Finding, ...],
    path: str,
    index: LineIndex,
    position: types.Position,
    encoding: str,
    records: RecordSet,
    markdown: bool,
    docs_url: str | None = None,
) -> types.Hover | None:
    at = index.from_lsp(position, encoding)
    separator = SEPARATOR_MARKDOWN if markdown else SEPARATOR_TEXT
    kind = types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText
    hits = findings_at(findings, path, at)
    if hits:
        parts = []
        for finding in hits:
            text = render(records, finding.record_id, finding.code, dict(finding.context), markdown, docs_url)
            if text and text not in parts:
                parts.append(text)
        if parts:
            first = hits[0]
            return types.Hover(
                contents=types.MarkupContent(kind=kind, value=separator.join(parts)),
                range=index.range_to_lsp(first.span.start, first.span.end, encoding),
            )
    found = noqa_code_at(index.line(at.line), at.character)
    if found is not None:
        code, start, end = found
        if rule_by_code(code) is None:
            return None
        text = render(records, None, code, None, markdown, docs_url)
        if text:
            return types.Hover(
                contents=types.MarkupContent(kind=kind, value=text),
                range=index.range_to_lsp(Position(at.line, start), Position(at.line, end), encoding),
            )
    return None
