"""`check --fix`/`--diff`/`--add-noqa`: the findings' fixes applied to the files they were computed
from (a file changed since it was checked is not written), notebooks cell by cell, `# noqa` added."""

from __future__ import annotations

import ast
import hashlib
import os
import stat
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from fabric_lsp.fixes.edits import apply_fixes
from fabric_lsp.sources.files import read_bytes
from fabric_lsp.findings import Finding, Position, TextEdit
from fabric_lsp.report import (fixable)
from fabric_lsp.report.syntax import is_syntax_finding
from fabric_lsp.sources.walk import DecodedFile, byte_limit, display_path, read_source
from fabric_lsp.cli.arguments import PROG
from fabric_lsp.cli.output import say, say_error, where_of

try:
    import fcntl
except ImportError:  # Windows: no advisory lock; the digest check still applies
    fcntl = None  # type: ignore[assignment]


class ChangedSinceChecked(Exception):
    """The file's bytes are no longer those the fix was computed from."""


def file_digest(path: str, max_size: int) -> str | None:
    """SHA-256 of a regular file's bytes (None: unreadable, special or over `max_size`)."""
    try:
        return hashlib.sha256(read_bytes(path, byte_limit(path, max_size))).hexdigest()
    except OSError:
        return None


def _write(path: str, text: str, encoding: str, expected_digest: str) -> None:
    """Rewrite the file in place (same inode: owner, mode and hard links kept; through a link, its
    target), under an exclusive lock, only if its bytes still hash to `expected_digest`."""
    data = text.encode(encoding)
    target = os.path.realpath(path)
    # O_NOFOLLOW: the target must not have become a link since it was resolved (and confined).
    fd = os.open(target, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "r+b") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{target} is not a regular file")
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)  # against a writer that locks too; released on close
        if hashlib.sha256(handle.read()).hexdigest() != expected_digest:
            raise ChangedSinceChecked(path)
        handle.seek(0)
        handle.write(data)
        handle.truncate()
        handle.flush()
        os.fsync(fd)


def _parses(text: str, path: str) -> bool:
    try:
        compile(text, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


@dataclass
class FixOutcome:
    originals: dict[str, DecodedFile] = field(default_factory=dict)  # files the fixes touch, as read
    texts: dict[str, str] = field(default_factory=dict)  # new text of each file that changes
    written: list[str] = field(default_factory=list)  # files actually written
    fixed: int = 0  # findings whose fix was applied
    fixed_findings: list[Finding] = field(default_factory=list)
    skipped: int = 0  # fixes left out because they overlap an earlier one
    messages: list[str] = field(default_factory=list)  # notices and errors for stderr
    failed: bool = False  # a file could not be written
    stale: list[str] = field(default_factory=list)  # files changed since they were checked: not fixed
    # Notebooks: the JSON text to write, and each changed cell's text before and after (for --diff).
    notebook_json: dict[str, str] = field(default_factory=dict)
    cell_changes: dict[str, dict[int, tuple[str, str]]] = field(default_factory=dict)


def fix_findings(
    findings: Sequence[Finding], *, unsafe_fixes: bool, write: bool, max_file_size: int, cwd: str,
    checked_digests: Mapping[str, str] | None = None, sources: Mapping[str, DecodedFile] | None = None,
) -> FixOutcome:
    """Apply the fixes of `findings` that are fixable (safe ones; unsafe ones too with
    `unsafe_fixes`), in the findings' order, skipping fixes that overlap an earlier one. With
    `write`, the changed files are written (keeping their encoding, BOM and line endings).

    `checked_digests` (absolute path -> SHA-256 of the bytes read before the analysis): a file whose
    bytes differ now is not fixed ("changed since it was checked"), nor is one missing from it;
    None trusts the current bytes (callers that analysed them just now). A result that does not
    parse is never written. `sources`: files given as read (standard input), not read from disk."""
    outcome = FixOutcome()
    selected = [f for f in findings if fixable(f, unsafe_fixes)]
    unwritable: set[str] = set()  # notebooks read but not written (said once each)
    for path in sorted({edit.path for f in selected for edit in f.fix.edits}):
        given = sources.get(path) if sources is not None else None
        source, notice = (given, None) if given is not None else read_source(path, max_file_size)
        if source is None:
            outcome.messages.append(notice.format(cwd))
        elif checked_digests is not None and checked_digests.get(os.path.abspath(path)) != source.digest:
            outcome.stale.append(path)
            outcome.messages.append(f"{display_path(path, cwd)}: changed since it was checked; not fixed")
        elif source.notebook is not None and not source.notebook.writable:
            unwritable.add(path)
            outcome.messages.append(f"{PROG}: notice: {display_path(path, cwd)}: not fixed: {source.notebook.warning}")
        else:
            outcome.originals[path] = source
    selected = _without_cell_spanning(selected, outcome, cwd)
    texts = {edit.path: None for f in selected for edit in f.fix.edits}
    texts.update({path: source.text for path, source in outcome.originals.items()})
    result = apply_fixes([f.fix for f in selected], texts)
    for index, reason in sorted(result.unavailable.items()):
        finding = selected[index]
        if any(edit.path in outcome.stale or edit.path in unwritable for edit in finding.fix.edits):
            continue  # said once per file above
        outcome.messages.append(
            f"{PROG}: notice: {where_of(finding, cwd)}: "
            f"{finding.code} fix not applied: {reason}"
        )
    outcome.skipped = len(result.skipped)
    if outcome.skipped:
        count = outcome.skipped
        outcome.messages.append(
            f"{PROG}: notice: {count} fix{'es' if count != 1 else ''} skipped because "
            f"{'they overlap' if count != 1 else 'it overlaps'} another fix; run again to apply"
        )
    outcome.texts = {}
    for path, text in result.texts.items():
        if _parses(text, path):
            outcome.texts[path] = text
        else:
            outcome.failed = True
            outcome.messages.append(f"{PROG}: error: {display_path(path, cwd)}: the fixed text would not parse; not fixed")
    for path in outcome.texts:
        if outcome.originals[path].notebook is not None:
            _notebook_result(path, [selected[i] for i in result.applied], outcome)
    applied = [selected[i] for i in result.applied
               if all(e.path in outcome.texts or e.path not in result.texts for e in selected[i].fix.edits)]
    if not write:
        outcome.fixed_findings = applied
        outcome.fixed = len(applied)
        return outcome
    for path in sorted(outcome.texts):
        original = outcome.originals[path]
        try:
            _write(path, outcome.notebook_json.get(path, outcome.texts[path]), original.encoding, original.digest)
            outcome.written.append(path)
        except ChangedSinceChecked:
            outcome.stale.append(path)
            outcome.messages.append(f"{display_path(path, cwd)}: changed since it was checked; not fixed")
        except (OSError, UnicodeError) as error:
            outcome.messages.append(f"{PROG}: error: {display_path(path, cwd)}: cannot write the fix: {error}")
            outcome.failed = True
    written = set(outcome.written)
    outcome.fixed_findings = [
        f for f in applied if all(e.path in written or e.path not in outcome.texts for e in f.fix.edits)
    ]
    outcome.fixed = len(outcome.fixed_findings)
    return outcome


def _without_cell_spanning(selected: list[Finding], outcome: FixOutcome, cwd: str) -> list[Finding]:
    """The fixes that edit notebooks cell by cell: an edit across a cell boundary has no place in
    the notebook's JSON, so its fix is left out (said once)."""
    from fabric_lsp.sources.notebook import SpansCells, cell_edit

    kept = []
    for finding in selected:
        try:
            for edit in finding.fix.edits:
                source = outcome.originals.get(edit.path)
                if source is not None and source.notebook is not None:
                    cell_edit(source.notebook.joined(), edit.start, edit.end, edit.new_text)
        except SpansCells as error:
            outcome.messages.append(
                f"{PROG}: notice: {where_of(finding, cwd)}: "
                f"{finding.code} fix not applied: {error}")
            continue
        kept.append(finding)
    return kept


def _notebook_result(path: str, applied: list[Finding], outcome: FixOutcome) -> None:
    """The notebook's JSON with the applied fixes' edits made in its cells (every other byte kept)."""
    from fabric_lsp.sources.notebook import apply_cell_edits, cell_edit

    notebook = outcome.originals[path].notebook
    joined = notebook.joined()
    edits: dict[int, list] = {}
    seen = set()
    for finding in applied:
        for edit in finding.fix.edits:
            key = (edit.start, edit.end, edit.new_text)
            if edit.path != path or key in seen:
                continue  # the same edit from two fixes is made once (as edits.apply_fixes does)
            seen.add(key)
            mapped = cell_edit(joined, edit.start, edit.end, edit.new_text)
            edits.setdefault(mapped.number, []).append(mapped)
    sources = {}
    for number, cell_edits in edits.items():
        before = joined.cell(number).text
        sources[number] = apply_cell_edits(before, cell_edits)
        outcome.cell_changes.setdefault(path, {})[number] = (before, sources[number])
    outcome.notebook_json[path] = notebook.updated(sources)


def add_noqa(findings: Sequence[Finding], checked_digests: Mapping[str, str], cwd: str,
             max_file_size: int) -> tuple[int, bool]:
    """`check --add-noqa` (ruff's): a `# noqa: CODE` on the line of each finding, added to a `# noqa:`
    list already there (noqa.noqa_edit, the editor's "Disable for this line"). Written only over the
    bytes that were analysed; notebooks and invalid-syntax entries are left as they are.
    Returns (directives added, whether a file could not be written)."""
    from fabric_lsp.fixes import noqa
    from fabric_lsp.fixes.edits import apply_text_edits

    by_file: dict[str, list[Finding]] = {}
    for finding in findings:
        if not is_syntax_finding(finding):
            by_file.setdefault(os.path.abspath(finding.span.path), []).append(finding)
    added, failed = 0, False
    for path, found in sorted(by_file.items()):
        digest = checked_digests.get(path)
        source, _ = read_source(path, max_file_size)
        if source is None or digest is None or source.digest != digest:
            say(f"{PROG}: notice: {display_path(path, cwd)}: changed since it was checked; no noqa added")
            continue
        if source.notebook is not None:
            say(f"{PROG}: notice: {display_path(path, cwd)}: a notebook; --add-noqa adds nothing to notebooks")
            continue
        lines = source.text.splitlines(keepends=True)
        edits = []
        in_file = 0
        for line in sorted({f.noqa_line for f in found}):
            text = lines[line] if line < len(lines) else ""
            content = text.rstrip("\r\n")
            for code in sorted({f.code for f in found if f.noqa_line == line}):
                edit = noqa.noqa_edit(content, line, code)
                if edit is None:
                    continue
                start, end = edit.start.character, edit.end.character
                content = content[:start] + edit.new_text + content[end:]
                in_file += 1
            edits.append(TextEdit(path, Position(line, 0), Position(line, len(text.rstrip("\r\n"))), content))
        if not in_file:
            continue
        text = apply_text_edits(source.text, edits)
        if _parses(source.text, path) and not _parses(text, path):  # a comment that would land inside a string
            say(f"{PROG}: notice: {display_path(path, cwd)}: a noqa comment would break the file; none added")
            continue
        try:
            _write(path, text, source.encoding, digest)
        except (OSError, ChangedSinceChecked) as error:
            say_error(display_path(path, cwd), f"not written: {error}")
            failed = True
            continue
        added += in_file
    return added, failed

