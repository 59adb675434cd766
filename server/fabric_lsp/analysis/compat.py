"""Sources written for a newer Python than the one running the analysis.

A project on Python 3.12+ may use syntax that an older `ast.parse` rejects: f-strings with nested
quotes of the same kind (PEP 701), type parameter lists (`def f[T](...)`, `class C[T]: ...`,
`type X = ...`, PEP 695), template strings (`t"..."`, PEP 750), `except*` (3.11, on 3.10). When the
running Python cannot parse a file, these are blanked with spaces, keeping every other character
where it was (lines and columns do not move), and the file is parsed again. What was blanked is
said in a notice: the contents of f-strings (expressions inside them are not followed) and type
parameter lists (they never move a value the rules follow).
"""

from __future__ import annotations

import re
import sys

_PREFIX = re.compile(r"(?i)(rb|br|fr|rf|tr|rt|[rbuft])?(\"\"\"|'''|\"|')")
# Where a string or a comment may start: the scanner jumps from one to the next.
_NEXT = re.compile(r"#|(?<![\w])(?i:rb|br|fr|rf|tr|rt|[rbuft])?(?:\"\"\"|'''|\"|')")
# Signs of syntax newer than 3.11: only then is the slower rewrite tried (half-typed code is not).
_NEWER = re.compile(
    r"^[ \t]*type[ \t]+[A-Za-z_]\w*[ \t]*[\[=]"
    r"|\b(?:def|class)[ \t]+[A-Za-z_]\w*[ \t]*\["
    r"|(?<![\w])(?i:[ft]|fr|rf|tr|rt)(?:\"[^\"\n]*\{[^}\n]*\"|'[^'\n]*\{[^}\n]*')"
    r"|^[ \t]*except\*",
    re.M,
)
_TYPE_ALIAS = re.compile(r"^([ \t]*)type([ \t]+[A-Za-z_]\w*[ \t]*)(?=[\[=])", re.M)
_DEF_OR_CLASS = re.compile(r"\b(?:def|class)[ \t]+[A-Za-z_]\w*[ \t]*(?=\[)")
_EXCEPT_STAR = re.compile(r"^([ \t]*)except\*", re.M)


def neutralize(text: str, error_line: int | None = None) -> tuple[str, list[str]] | None:
    """The text with newer syntax blanked, and what was blanked; None when nothing was. With the
    line of the parser's error, only tried when that line (or the one before) shows newer syntax:
    half-typed code, which fails on every keystroke, costs nothing here."""
    if error_line is not None:
        lines = text.splitlines()[max(0, error_line - 2):error_line]
        if not _NEWER.search("\n".join(lines)):
            return None
    elif not _NEWER.search(text):
        return None
    chars = list(text)
    blanked: list[str] = []
    if _blank_formatted_strings(text, chars):
        blanked.append("f-string contents")
    current = "".join(chars)
    changed = False
    for match in _TYPE_ALIAS.finditer(current):  # `type X[T] = ...` -> `X         = ...`
        start = match.start() + len(match.group(1))
        name = match.group(2).strip()
        end = match.end()
        if current[end] == "[":
            end = _closing_bracket(current, end) + 1
        chars[start:end] = name + " " * (end - start - len(name))
        changed = True
    current = "".join(chars)
    changed = _blank_type_parameters(current, chars) or changed
    if changed:
        blanked.append("type parameter lists")
    if sys.version_info < (3, 11):
        current = "".join(chars)
        for match in _EXCEPT_STAR.finditer(current):
            star = match.end() - 1
            chars[star] = " "
            blanked.append("except*")
    if not blanked:
        return None
    return "".join(chars), blanked


def _blank_formatted_strings(text: str, chars: list[str]) -> bool:
    """Blank every f-string and t-string (prefix letter and contents; the quotes stay, so it is
    still a string literal). Other strings and comments are skipped over."""
    index, length, changed = 0, len(text), False
    while index < length:
        found = _NEXT.search(text, index)
        if found is None:
            break
        index = found.start()
        if text[index] == "#":
            end = text.find("\n", index)
            index = length if end < 0 else end
            continue
        match = _PREFIX.match(text, index)
        prefix = (match.group(1) or "").lower()
        quote = match.group(2)
        body_start = match.end()
        end = _string_end(text, body_start, quote, "f" in prefix or "t" in prefix, "r" in prefix)
        if "f" in prefix or "t" in prefix:
            for position in range(index, index + len(prefix)):
                chars[position] = " "
            for position in range(body_start, end - len(quote)):
                if chars[position] not in "\r\n":
                    chars[position] = " "
            changed = True
        index = max(end, index + 1)
    return changed


def _string_end(text: str, start: int, quote: str, formatted: bool, raw: bool) -> int:
    """The index just past the closing quote of a string whose body starts at `start`."""
    index, length, depth = start, len(text), 0
    while index < length:
        char = text[index]
        if char == "\\" and not raw:
            index += 2
            continue
        if formatted and char == "{":
            if text.startswith("{{", index) and depth == 0:
                index += 2
                continue
            depth += 1
            index += 1
            continue
        if formatted and char == "}" and depth > 0:
            depth -= 1
            index += 1
            continue
        if formatted and depth > 0 and char in "\"'":
            match = _PREFIX.match(text, index)  # a string inside a replacement field (PEP 701)
            inner_prefix = (match.group(1) or "").lower() if match else ""
            inner_quote = match.group(2) if match else char
            index = _string_end(text, match.end() if match else index + 1, inner_quote,
                                "f" in inner_prefix or "t" in inner_prefix, "r" in inner_prefix)
            continue
        if depth == 0 and text.startswith(quote, index):
            return index + len(quote)
        if len(quote) == 1 and char == "\n" and depth == 0:
            return index  # unterminated: the line ends it
        index += 1
    return length


def _closing_bracket(text: str, start: int) -> int:
    """The index of the `]` closing the `[` at `start` (len(text) when there is none)."""
    depth, index = 0, start
    while index < len(text):
        if text[index] == "[":
            depth += 1
        elif text[index] == "]":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return len(text)


def _blank_type_parameters(text: str, chars: list[str]) -> bool:
    changed = False
    for match in _DEF_OR_CLASS.finditer(text):
        start = match.end()
        index = _closing_bracket(text, start)
        if index >= len(text):
            continue
        for position in range(start, index + 1):
            if chars[position] not in "\r\n":
                chars[position] = " "
        changed = True
    return changed
