"""Terminal-safe text: control characters and bidirectional-text controls from sources, messages and
file names are shown as escapes (`\\x1b`, `\\u202e`), never written raw. A raw ESC can recolour, move
the cursor or set the window title (and worse, on some terminals); a U+202E makes a line read
differently from what it contains. JSON and SARIF keep the data as it is (JSON escapes it).

A line break inside a file name is escaped as well wherever a line-based output shows the name
(stderr notices, diff headers, the text, github and junit reports): a name such as
`x\\n::error file=evil.py::pwned.py` must not start a line of its own, which GitHub Actions would
read as a workflow command (`::error`, `::add-mask::`, `::stop-commands::`)."""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls; bidi marks, embeddings, overrides and isolates; line/paragraph separators.
_UNSAFE = "\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_PATTERNS: dict[str, re.Pattern[str]] = {}


def _pattern(keep: str) -> re.Pattern[str]:
    pattern = _PATTERNS.get(keep)
    if pattern is None:
        crlf = "\n" in keep and "\r" not in keep  # a CR that ends a CRLF line is a line end, not a control
        unsafe = "".join(c for c in _expanded() if c not in keep and not (crlf and c == "\r"))
        body = "[" + re.escape(unsafe) + "]"
        if crlf:
            body = r"\r(?!\n)|" + body
        pattern = _PATTERNS[keep] = re.compile(body)
    return pattern


def _expanded() -> str:
    return re.sub(r"(.)-(.)", lambda m: "".join(chr(c) for c in range(ord(m[1]), ord(m[2]) + 1)), _UNSAFE)


def _escape_one(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str, keep: str = "") -> str:
    """`text` with every control character not in `keep` as a backslash escape (one line: keep="")."""
    return _pattern(keep).sub(_escape_one, text)


def escape_line(text: str) -> str:
    """One line of a line-based output (a notice, a diff header): every control escaped, line
    breaks and tabs included."""
    return escape_controls(text)


# What XML 1.0 cannot hold besides the C0 controls: lone surrogates (a file name that is not UTF-8,
# decoded by the file system's surrogateescape) and the noncharacters U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")


def escape_xml(text: str) -> str:
    """`text` as XML 1.0 can hold it (before XML's own escaping of `<`, `&`, quotes): every control
    and every character XML forbids as a backslash escape, so the document stays well-formed."""
    return _NOT_XML.sub(_escape_one, escape_controls(text))


def escape_lines(text: str) -> str:
    """Multi-line text (a diff, an explanation): line breaks and tabs kept, every other control escaped."""
    return escape_controls(text, keep="\n\t")
