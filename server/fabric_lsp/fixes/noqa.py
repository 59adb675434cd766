"""Suppression comments, read from the tokens of the source (a `# noqa` inside a string is text).

Line level, as ruff: `# noqa` (everything on the line), `# noqa: FAB001`, `# noqa:FAB001,FAB002`,
`# noqa: E501 FAB001` (codes separated by commas or spaces), any case of `noqa` (`# NOQA`), after
another comment (`# type: ignore # noqa: FAB001`), followed by words (`# noqa: FAB001 why`).
File level, as ruff's `# ruff: noqa`: `# fabric-lsp: noqa` (every finding of the file) and
`# fabric-lsp: noqa: FAB001` (those codes), on a line of its own.

The lexer is a port of ruff's (crates/ruff_linter/src/noqa.rs, `NoqaLexer`), so the same comments
are accepted, warned about and rejected: a malformed directive (`# noqa:` with no code,
`# noqa: fab-1`, `# noqa: FAB001: why`, `#noqaFAB001`) suppresses nothing and is reported in ruff's
words; `# noqa FAB001` (no colon) is a blanket `# noqa`, as in ruff.

One implementation for the command line and the language server: engine._configured applies it,
and `fabric-lsp check` prints the problems (`fabric-lsp: warning: path:line: ...`) of the files that
mention Fabric or a FAB code (mentions_fabric: the others' `# noqa` comments are other tools').
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from fabric_lsp.findings import Position, TextEdit

FILE_PREFIX = "fabric-lsp"
EXAMPLE = "`# noqa: FAB001, FAB002`"
_MENTIONS_NOQA = re.compile(r"noqa", re.IGNORECASE)

# ruff's words (LexicalError / LexicalWarning), with our codes in the examples.
MISSING_CODES = f"expected a comma-separated list of codes (e.g., {EXAMPLE})."
INVALID_SUFFIX = f"expected `:` followed by a comma-separated list of codes (e.g., {EXAMPLE})."
INVALID_CODE_SUFFIX = "expected code to consist of uppercase letters followed by digits only (e.g. `FAB001`)"
MISSING_ITEM = "expected rule code between commas"
MISSING_DELIMITER = "expected comma or space delimiter between codes"


class _LexicalError(Exception):
    pass


@dataclass(frozen=True)
class Directive:
    """One `# noqa` comment: `codes` None suppresses everything on the line (or in the file)."""

    line: int  # 0-based
    codes: frozenset[str] | None
    # (code, start column, end column) of each code, in the line
    code_spans: tuple[tuple[str, int, int], ...] = ()

    def suppresses(self, code: str) -> bool:
        return self.codes is None or code in self.codes


@dataclass(frozen=True)
class Problem:
    line: int  # 0-based
    message: str  # "invalid # noqa directive: expected ..."


@dataclass(frozen=True)
class Directives:
    lines: dict[int, Directive] = field(default_factory=dict)  # line -> its directive
    file: tuple[Directive, ...] = ()  # `# fabric-lsp: noqa` lines
    problems: tuple[Problem, ...] = ()

    def suppresses(self, line: int, code: str) -> bool:
        """Whether a finding `code` reported for 0-based `line` is suppressed."""
        if any(directive.suppresses(code) for directive in self.file):
            return True
        directive = self.lines.get(line)
        return directive is not None and directive.suppresses(code)


NONE = Directives()


def line_directive(line: str) -> Directive | None:
    """The `# noqa` directive of one line read as a source of its own (hover, the quick fix that
    adds a code): the same reading as the suppression's."""
    return directives(line if line.endswith("\n") else line + "\n").lines.get(0)


# A directive that can give no warning: a bare noqa, `noqa: X1, Y2` (or space-separated), and the
# file-level forms on a line of their own, ending the comment or followed by another one.
_WELL_FORMED = re.compile(
    r"(?:^[ \t]*#\s*fabric-lsp:\s*|#\s*)(?i:noqa)(?::\s*[A-Z]+[0-9]+(?:(?:\s*,\s*|\s+)[A-Z]+[0-9]+)*)?"
    r"(?=\s*(?:#|$))",
    re.MULTILINE)


# `fabric`, `Fabric`, and our codes as written or mistyped (`FAB001`, `fab-1`).
_MENTIONS_FABRIC = re.compile(r"fabric|\bfab", re.IGNORECASE)


def mentions_fabric(text: str) -> bool:
    """Whether the file is ours to warn about: in a file that never mentions Fabric or a FAB code, a
    `# noqa` that our lexer rejects is another tool's (`# noqa: docstring_linter`, a `RUF012: why`
    that ruff itself reports), and suppresses none of our findings, which need Fabric."""
    return _MENTIONS_FABRIC.search(text) is not None


def may_warn(text: str) -> bool:
    """Whether the text can hold a malformed directive: some `noqa` outside every well-formed one.
    (Tokenizing every file that says "noqa" took 9 s on torch's 2,285 files, on every run.)"""
    covered = [(m.start(), m.end()) for m in _WELL_FORMED.finditer(text)]
    at = 0
    for match in _MENTIONS_NOQA.finditer(text):
        while at < len(covered) and covered[at][1] <= match.start():
            at += 1
        if at == len(covered) or not covered[at][0] <= match.start() < covered[at][1]:
            return True
    return False


@functools.lru_cache(maxsize=8)  # the server's open documents; each entry keeps its text alive
def directives(text: str) -> Directives:
    """The suppression comments of a Python source (or of a notebook's code cells joined: their
    lines are the cells' lines, one for one)."""
    if not _MENTIONS_NOQA.search(text):
        return NONE
    lines: dict[int, Directive] = {}
    file_level: list[Directive] = []
    problems: list[Problem] = []
    for comment, row, column, line_text in _comments(text):
        if not _MENTIONS_NOQA.search(comment):
            continue
        line = row - 1
        # Both kinds are read from every comment, each on its own (as ruff does).
        try:
            found = _lex_file_exemption(comment, line, column)
        except _LexicalError as error:
            problems.append(Problem(line, f"invalid # {FILE_PREFIX}: noqa directive: {error}"))
            found = None
        if found is not None:
            directive, warnings = found
            problems.extend(Problem(line, f"missing or joined rule code(s) in # {FILE_PREFIX}: noqa directive: {w}")
                            for w in warnings)
            if line_text[:column].strip():
                problems.append(Problem(line, (
                    f"unexpected # {FILE_PREFIX}: noqa directive: file-level suppression comments must appear "
                    f"on their own line; for line-level suppression, omit the `{FILE_PREFIX}:` prefix")))
            else:
                file_level.append(directive)
        try:
            found = _lex_inline(comment, line, column)
        except _LexicalError as error:
            problems.append(Problem(line, f"invalid # noqa directive: {error}"))
            continue
        if found is None:
            continue
        directive, warnings = found
        problems.extend(Problem(line, f"missing or joined rule code(s) in # noqa directive: {w}") for w in warnings)
        lines.setdefault(line, directive)
    return Directives(lines, tuple(file_level), tuple(problems))


# Comments and the string delimiters that can hide a `#`; a backslash escapes the next character.
_SCAN = re.compile(r"#[^\r\n]*|\"\"\"|\'\'\'|\"|\'")
_STRING_END = {q: re.compile(r"\\.|" + re.escape(q) + (r"|[\r\n]" if len(q) == 1 else ""), re.S)
               for q in ('"', "'", '"""', "\'\'\'")}


def _comments(text: str):
    """(comment, 1-based row, column, the line's text) of every comment that mentions noqa: a scan
    that jumps from quote to quote with regexes (tokenize took 1.4 s for 73 of torch's files)."""
    at, size = 0, len(text)
    while at < size:
        found = _SCAN.search(text, at)
        if found is None:
            return
        token = found.group()
        if token.startswith("#"):
            if _MENTIONS_NOQA.search(token):
                start = found.start()
                line_start = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1
                line_end = len(text) if (end := text.find("\n", start)) < 0 else end
                yield token, text.count("\n", 0, start) + 1, start - line_start, text[line_start:line_end + 1]
            at = found.end()
            continue
        at = found.end()
        closing = _STRING_END[token]
        while True:  # to the end of the string (a one-line string also ends at its line's end)
            end = closing.search(text, at)
            if end is None:
                return
            at = end.end()
            if not end.group().startswith("\\"):
                break


# ---------------------------------------------------------------------------------------------
# The lexer (ruff's NoqaLexer). Positions are indexes into the comment; columns in the line are
# the comment's column plus those.


def _is_noqa(text: str, at: int) -> bool:
    word = text[at:at + 4]
    return word.isascii() and word.lower() == "noqa"


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def _lex_inline(comment: str, line: int, column: int):
    at = 0
    while at < len(comment):
        hash_at = comment.find("#", at)
        if hash_at < 0:
            return None
        at = _skip_space(comment, hash_at + 1)
        if not _is_noqa(comment, at):
            continue
        return _lex_directive(comment, at + 4, line, column)
    return None


def _lex_file_exemption(comment: str, line: int, column: int):
    at = 0
    while at < len(comment):
        hash_at = comment.find("#", at)
        if hash_at < 0:
            return None
        at = _skip_space(comment, hash_at + 1)
        if not comment.startswith(FILE_PREFIX, at):
            continue
        at = _skip_space(comment, at + len(FILE_PREFIX))
        if not comment.startswith(":", at):
            continue
        at = _skip_space(comment, at + 1)
        if not _is_noqa(comment, at):
            continue
        return _lex_directive(comment, at + 4, line, column)
    return None


def _lex_directive(comment: str, at: int, line: int, column: int):
    """After `noqa`: the directive and the lexer's warnings (ruff's lex_directive)."""
    warnings: list[str] = []
    if at >= len(comment) or comment[at] == "#":
        return Directive(line, None), warnings
    char = comment[at]
    if char == ":":
        codes = _lex_codes(comment, at + 1, warnings)
    elif char.isspace():
        at = _skip_space(comment, at)
        if at < len(comment) and comment[at] == ":":
            codes = _lex_codes(comment, at + 1, warnings)
        else:
            return Directive(line, None), warnings  # `# noqa because ...`, `# noqa FAB001`: blanket
    else:
        raise _LexicalError(INVALID_SUFFIX)  # `noqa` followed by a code or a `;` without a colon
    if not codes:
        raise _LexicalError(MISSING_CODES)
    spans = tuple((code, column + start, column + end) for code, start, end in codes)
    return Directive(line, frozenset(code for code, _, _ in codes), spans), warnings


def _lex_codes(comment: str, at: int, warnings: list[str]) -> list[tuple[str, int, int]]:
    codes: list[tuple[str, int, int]] = []
    missing_delimiter = False
    end = len(comment)
    while at < end:
        at = _skip_space(comment, at)
        if at < end and comment[at] == ",":  # `FAB001,  ,FAB002`
            warnings.append(MISSING_ITEM)
            at += 1
            continue
        if at >= end:
            break
        start = at
        char = comment[at]
        at += 1
        if not ("A" <= char <= "Z"):
            break  # not a code: the rest is a comment (`# noqa: FAB001 we need it`)
        while at < end and "A" <= comment[at] <= "Z":
            at += 1
        if not (at < end and "0" <= comment[at] <= "9"):
            if missing_delimiter:
                raise _LexicalError(INVALID_CODE_SUFFIX)  # `FAB001Fabc`
            break  # a word, not a code: the rest is a comment
        while at < end and "0" <= comment[at] <= "9":
            at += 1
        codes.append((comment[start:at], start, at))
        if at >= end:
            break
        following = comment[at]
        if following == ",":
            at += 1
            missing_delimiter = False
        elif following.isspace() or following == "#":
            missing_delimiter = False
        elif "A" <= following <= "Z":
            warnings.append(MISSING_DELIMITER)  # `FAB001FAB002`: both codes count
            missing_delimiter = True
        else:
            raise _LexicalError(INVALID_CODE_SUFFIX)  # `FAB001: why`, `FAB001;E501`
    return codes


def noqa_edit(line: str, line_number: int, code: str) -> TextEdit | None:
    """The edit that makes `# noqa` on this line name `code`: added to an existing `# noqa: ...`
    list, else a new comment at the end of the line. None where a comment cannot go (a line
    continued with a backslash). The editor's "Disable FAB001 for this line" and `check --add-noqa`."""
    directive = line_directive(line)  # read as the engine reads it
    if directive is not None:
        if directive.suppresses(code):
            return None  # a bare noqa, or one naming the code already
        at = Position(line_number, directive.code_spans[-1][2])
        return TextEdit("", at, at, f", {code}")
    stripped = line.rstrip()
    if stripped.endswith("\\"):
        return None
    return TextEdit("", Position(line_number, len(stripped)), Position(line_number, len(line)), f"  # noqa: {code}")
