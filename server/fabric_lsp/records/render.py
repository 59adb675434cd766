"""A record rendered for one occurrence, as Markdown (hover, docs) and as plain text (CLI `explain`).

When the occurrence's context selects one of the record's other runtime paths (records/paths.json, e.g.
`{"path": "fsdp"}` for FAB002), the message shown is the one that path really produces, followed by
what happens on that path; the record's own sections follow, and the remaining paths are listed.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping

from fabric_lsp.records.loader import Record, RecordPath
from fabric_lsp.records.messages import fill_message
from fabric_lsp.records.pages import page_lines
from fabric_lsp.records.rules_table import rule_by_code, rule_for_record

_TEXT_WIDTH = 88


def rule_page(record: Record, code: str | None = None) -> str | None:
    """The rule's code, for a rule's record (its page: records/pages.py)."""
    rule = rule_by_code(code) if code else rule_for_record(record.id)
    return rule.code if rule else None


def title(record: Record, code: str | None = None) -> str:
    """The heading: "FAB001 unmarked-forward-method" for a rule's record, else what the record names."""
    rule = rule_by_code(code) if code else rule_for_record(record.id)
    if rule:
        return f"{rule.code} {rule.name}"
    if code:
        return code
    return f"{record.error_class}: {record['slug']}"


NO_EXCEPTION = "(a warning, not an exception: the run goes on)"


def _path_line(path: RecordPath, context: Mapping[str, str] | None) -> str:
    return f"{path.error_class}: {fill_message(path.error_message, context)}"


def runtime_message(record: Record, context: Mapping[str, str] | None = None) -> str:
    """The error line as Python would print it, names filled in from the occurrence: the record's own,
    or that of the runtime path the context selects (with a note when that path only warns)."""
    path = record.path_for(context)
    if path is None:
        return f"{record.error_class}: {fill_message(record.error_message, context)}"
    return _path_line(path, context) + ("" if path.raises else "\n" + NO_EXCEPTION)


def other_paths(record: Record, context: Mapping[str, str] | None = None) -> list[tuple[str, str, bool]]:
    """(label, message line, raises) of the record's runtime paths other than the selected one."""
    if not record.paths:
        return []
    selected = record.path_for(context)
    rows = []
    if selected is not None:
        own = f"{record.error_class}: {fill_message(record.error_message, context)}"
        rows.append((selected.record_label, own, True))
    for path in record.paths:
        if path is not selected:
            rows.append((path.label, _path_line(path, context), path.raises))
    return rows


def example_fix(record: Record) -> str:
    """exampleFix as Python source: the seeds mark "before"/"after" with `//` lines, never valid Python."""
    lines = []
    for line in record["exampleFix"].splitlines():
        stripped = line.lstrip()
        if stripped.startswith("//"):
            line = line[: len(line) - len(stripped)] + "#" + stripped[2:]
        lines.append(line)
    return "\n".join(lines)


def _source_label(record: Record) -> str:
    return f"{record['filePath']} line {record['lineNumber']}"


def _fence(content: str) -> str:
    """A backtick fence longer than any backtick run in the content, so the block cannot end early."""
    longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
    return "`" * max(3, longest + 1)


def _code_block(content: str, language: str) -> str:
    fence = _fence(content)
    return f"{fence}{language}\n{content}\n{fence}"


def _bullets(items: list[str]) -> str:
    return "\n".join("- " + item.replace("\n", "\n  ") for item in items)


def _inline_code(content: str) -> str:
    """Inline code that may itself contain backticks (CommonMark: a longer delimiter, padded)."""
    longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
    if not longest:
        return f"`{content}`"
    ticks = "`" * (longest + 1)
    return f"{ticks} {content} {ticks}"


def _path_source(path: RecordPath) -> str:
    return f"{path.file_path} line {path.line_number} ({path.version})"


def render_markdown(record: Record, context: Mapping[str, str] | None = None, code: str | None = None,
                    note: str | None = None, docs_url: str | None = None) -> str:
    """The record as Markdown; `note` (why `explain` chose it) goes before the rule page, which ends it."""
    parts = [f"### {title(record, code)}", _code_block(runtime_message(record, context), "text")]
    path = record.path_for(context)
    if path is not None:
        parts.append(f"**{path.label}.** {fill_message(path.summary, context)}")
        if path.documentation.strip():
            parts.append(path.documentation.strip())
    if record["documentation"].strip():
        parts.append(record["documentation"].strip())
    if record["triggerScenarios"].strip():
        parts.append(f"**When it is raised.** {record['triggerScenarios'].strip()}")
    if record["commonSituations"].strip():
        parts.append(f"**Common situations.** {record['commonSituations'].strip()}")
    if record["solutions"]:
        parts.append("**How to fix**\n\n" + _bullets(record["solutions"]))
    if record["exampleFix"].strip():
        parts.append("**Example fix**\n\n" + _code_block(example_fix(record), "python"))
    if record["preventionTips"]:
        parts.append("**Prevention**\n\n" + _bullets(record["preventionTips"]))
    others = other_paths(record, context)
    if others:
        parts.append(
            "**The same root cause on other paths**\n\n"
            + _bullets([f"{label}: {_inline_code(line)}" + ("" if raises else " (a warning only)")
                        for label, line, raises in others])
        )
    if path is not None:
        parts.append(f"This path: `{path.file_path}` line {path.line_number} ({path.version})")
    parts.append(f"Source: [{_source_label(record)}]({record.github_url}) · record `{record.id}`")
    if note:
        parts.append(note)
    page = rule_page(record, code)
    if page:  # links: the team's page (docs-url) and the installed copy
        parts.append("  \n".join(f"{label}: [{page}]({url})" for label, _, url in
                                 (line.partition(": ") for line in page_lines(page, docs_url))))
    return "\n\n".join(parts) + "\n"


def _paragraph(text: str, indent: str = "") -> str:
    return "\n".join(
        textwrap.fill(line, _TEXT_WIDTH, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False)
        if line.strip()
        else ""
        for line in text.strip().splitlines()
    )


def _text_bullets(items: list[str]) -> str:
    return "\n".join(
        textwrap.fill(item, _TEXT_WIDTH, initial_indent="  - ", subsequent_indent="    ", break_on_hyphens=False)
        for item in items
    )


def render_text(record: Record, context: Mapping[str, str] | None = None, code: str | None = None,
                note: str | None = None, docs_url: str | None = None) -> str:
    """The record as plain text; `note` (why `explain` chose it) goes before the rule page, which ends it."""
    heading = title(record, code)
    parts = [f"{heading}\n{'=' * len(heading)}", runtime_message(record, context)]
    path = record.path_for(context)
    if path is not None:
        parts.append(_paragraph(f"{path.label}: {fill_message(path.summary, context)}"))
        if path.documentation.strip():
            parts.append(_paragraph(path.documentation))
    if record["documentation"].strip():
        parts.append(_paragraph(record["documentation"]))
    if record["triggerScenarios"].strip():
        parts.append("When it is raised:\n" + _paragraph(record["triggerScenarios"], "    "))
    if record["commonSituations"].strip():
        parts.append("Common situations:\n" + _paragraph(record["commonSituations"], "    "))
    if record["solutions"]:
        parts.append("How to fix:\n" + _text_bullets(record["solutions"]))
    if record["exampleFix"].strip():
        parts.append("Example fix:\n" + textwrap.indent(example_fix(record), "    "))
    if record["preventionTips"]:
        parts.append("Prevention:\n" + _text_bullets(record["preventionTips"]))
    others = other_paths(record, context)
    if others:
        parts.append(
            "The same root cause on other paths:\n"
            + _text_bullets(
                [f"{label}: {line}" + ("" if raises else " (a warning only)") for label, line, raises in others]
            )
        )
    if path is not None:
        parts.append(f"This path: {_path_source(path)}")
    parts.append(f"Source: {_source_label(record)}\n    {record.github_url}\nRecord: {record.id}")
    if note:
        parts.append(_paragraph(note))
    page = rule_page(record, code)
    if page and page_lines(page, docs_url):
        parts.append("\n".join(page_lines(page, docs_url)))
    return "\n\n".join(parts) + "\n"
