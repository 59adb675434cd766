"""Sources written for a newer Python than the one running the analysis, and which Python a file targets.

A project on Python 3.11+ may use syntax that an older `ast.parse` rejects. What fabric-lsp knows, up to
NEWEST_GRAMMAR: `except*` and starred subscripts and annotations (`x[*Ts]`, `*args: *Ts`, 3.11, PEP
654/646), f-strings of PEP 701 (3.12: the string's own quote, a backslash, a comment or a line break
inside a replacement field), type parameter lists and `type` statements (`def f[T](...)`, `class C[T]:`,
`type X = ...`, 3.12 PEP 695; defaults, 3.13 PEP 696), template strings (`t"..."`, 3.14 PEP 750),
`except A, B:` without brackets (3.14, PEP 758). When the running Python cannot parse a file, the ones
it does not have are blanked with spaces, keeping every other character where it was (lines and
columns do not move), and the file is parsed again: what was blanked is said in a notice (the contents
of those f-strings, whose expressions are then not followed; type parameter lists; ...; none of them
moves a value the rules follow).

This is also how a file is judged for `invalid-syntax` (report/syntax.py): an error that remains once
the newer syntax is blanked is the file's own, at the place the parser gives (nothing moved). parso,
which jedi brings, is no help here: its grammars (0.8.x) have type parameter lists but neither
PEP 701 f-strings, `type` statements, `match`, `except*` nor bracketed context managers, so it
rejects valid code of every Python since 3.10.

The target of a file (target_version) is the lowest Python its project supports: `requires-python` of
the closest pyproject.toml that states it, else the analysis interpreter's version, else the running
one. Syntax is judged for the target *and every newer Python fabric-lsp knows*: code that runs on
one of the Pythons the project allows is never reported, and code only an older target rejects
(`match` with `requires-python = ">=3.8"`) is not reported either (ruff's version-related syntax
errors do that; telling it here would take a second pass over every file that parses). A file the
running Python cannot parse even with the newer syntax blanked is broken, unless its target is newer
than NEWEST_GRAMMAR: then nobody here can tell, and it is left out with a notice.
"""

from __future__ import annotations

import bisect
import keyword
import os
import re
import stat
import sys
import threading
from dataclasses import dataclass
from typing import Callable, Iterable

RUNNING = sys.version_info[:2]
# The newest Python whose syntax additions neutralize() knows (a newer target cannot be judged here).
NEWEST_GRAMMAR = (3, 14)

_PREFIXES = r"rb|br|fr|rf|tr|rt|[rbuft]"
_PREFIX = re.compile(rf"(?i)({_PREFIXES})?(\"\"\"|'''|\"|')")
# Where a string or a comment may start (a string's prefix letters are found from its quote): the
# scanner jumps from one to the next.
_NEXT = re.compile(r"[#\"']")
_QUOTE = re.compile(r"\"\"\"|'''|\"|'")
# The body of a string without replacement fields, and its closing quote (group 1) when it has one: an
# escaped quote or line break does not end it; an unterminated one-line string ends at its line's end,
# a triple-quoted one at the end of the text.
_PLAIN_BODY = {
    '"': re.compile(r'(?:[^"\\\n]|\\[\s\S])*(")?'),
    "'": re.compile(r"(?:[^'\\\n]|\\[\s\S])*(')?"),
    '"""': re.compile(r'(?:[^"\\]|\\[\s\S]|"(?!""))*(""")?'),
    "'''": re.compile(r"(?:[^'\\]|\\[\s\S]|'(?!''))*(''')?"),
}


_LINE_END = re.compile(r"[\r\n]")


def _plain_end(text: str, body: int, quote: str) -> tuple[int, bool]:
    """(where a string without replacement fields whose body starts at `body` ends, whether it is closed)."""
    match = _PLAIN_BODY[quote].match(text, body)
    return match.end(), match.group(1) is not None


# Each starts with its keyword (a literal: searched fast); where it stands is checked after.
_TYPE_ALIAS = re.compile(r"type([ \t]+[A-Za-z_]\w*[ \t]*)(?=[\[=])")  # at a line's start
_DEF = re.compile(r"def[ \t]+[A-Za-z_]\w*[ \t]*(?=\[)")
_CLASS = re.compile(r"class[ \t]+[A-Za-z_]\w*[ \t]*(?=\[)")
_EXCEPT = re.compile(r"except(\*)?[ \t]*")  # at a line's start
_STAR_ANNOTATION = re.compile(r"\*[ \t]*[A-Za-z_]\w*[ \t]*:[ \t]*(\*)(?=[ \t]*[A-Za-z_(])")
_SUBSCRIPT = re.compile(r"([\w\])][ \t]*)\[")


_BRACKET = re.compile(r"[()\[\]{}]")


class _Exhausted(Exception):
    """The f-string scan spent its budget (a text made to be scanned again and again)."""


@dataclass
class _Strings:
    """The strings and comments of a text, as Python 3.12+ reads them (PEP 701), and its brackets."""

    text: str
    spans: list[tuple[int, int]]  # [start, end) of every string and comment, in order
    starts: list[int]
    # (start, body start, end, prefix, quote, whether a field holds what only 3.12+ allows there)
    formatted: list[tuple[int, int, int, str, str, bool]]
    # False when the f-string scan spent its budget, or its f-strings nest deeper than the recursion
    # limit allows (about 200 levels; Python 3.12 refuses more than 150): no valid text does either,
    # and the text is then read as an older Python reads it.
    exact: bool
    _closing: dict[int, int] | None = None

    def inside(self, index: int) -> bool:
        position = bisect.bisect_right(self.starts, index) - 1
        return position >= 0 and index < self.spans[position][1]

    def closing(self, index: int) -> int:
        """The index of the bracket closing the one at `index` (len(text) when none does); brackets in
        strings and comments do not count. All of them matched in one pass, when first asked."""
        if self._closing is None:
            self._closing, opened, previous = {}, [], 0
            for start, end in [*self.spans, (len(self.text), len(self.text))]:
                for match in _BRACKET.finditer(self.text, previous, start):
                    if match.group() in "([{":
                        opened.append(match.start())
                    elif opened:
                        self._closing[opened.pop()] = match.start()
                previous = end
        return self._closing.get(index, len(self.text))


def _strings(text: str) -> _Strings:
    spans: list[tuple[int, int]] = []
    formatted = []
    index, length = 0, len(text)
    # Characters the f-string scan may visit, nested strings included: valid code visits each once
    # (every f-string ends); only unterminated ones scanned again and again can spend it.
    budget = [2 * length + 10_000]
    exact = True
    while index < length:
        found = _NEXT.search(text, index)
        if found is None:
            break
        index = found.start()
        if text[index] == "#":
            found = _LINE_END.search(text, index)
            end = length if found is None else found.start()
            spans.append((index, end))
            index = end
            continue
        quote = _QUOTE.match(text, index).group(0)
        body = index + len(quote)
        prefix = _prefix_before(text, index)
        index -= len(prefix)
        end, _ = _plain_end(text, body, quote)
        if ("f" in prefix or "t" in prefix) and exact:
            try:
                scanned = _Formatted(text, quote, budget).string(body)
            except (_Exhausted, RecursionError):
                scanned, exact = None, False
            if scanned is not None:  # a closed string, as 3.12 reads it (an older Python may end it earlier)
                newer = scanned[1] or scanned[0] != end
                end = scanned[0]
                formatted.append((index, body, end, prefix, quote, newer))
            # unterminated: left as an older Python reads it, never blanked
        spans.append((index, end))
        index = max(end, index + 1)
    return _Strings(text, spans, [start for start, _ in spans], formatted, exact)


class _Formatted:
    """One f-string (or t-string) read as Python 3.12+ does: replacement fields hold expressions,
    which may hold strings of any quote, comments and line breaks; a format spec holds text and fields.
    `newer`: something inside a field that Python 3.11 and older refuse there."""

    def __init__(self, text: str, quote: str, budget: list[int]) -> None:
        self.text, self.quote, self.newer, self.budget = text, quote, False, budget

    def _spend(self, count: int = 1) -> None:
        self.budget[0] -= count
        if self.budget[0] < 0:
            raise _Exhausted()

    def string(self, index: int) -> tuple[int, bool] | None:
        """(index past the closing quote, newer) for the body starting at `index`; None if unterminated."""
        end = self._literal(index, in_spec=False)
        return None if end is None else (end, self.newer)

    def _literal(self, index: int, in_spec: bool) -> int | None:
        """Text up to the closing quote (past it), or up to the `}` ending a format spec (at it)."""
        text, quote, length = self.text, self.quote, len(self.text)
        while index < length:
            self._spend()
            char = text[index]
            if char == "\\":  # escapes a quote, a backslash or a line break (a `{` after it opens a field)
                index += 2 if text[index + 1:index + 2] in ("\\", "'", '"', "\n", "\r") else 1
                continue
            if char == "{":
                if text.startswith("{{", index) and not in_spec:
                    index += 2
                    continue
                found = self._field(index + 1)
                if found is None:
                    return None
                index = found
                continue
            if char == "}":
                if in_spec:
                    return index
                index += 2 if text.startswith("}}", index) else 1
                continue
            if text.startswith(quote, index):
                return None if in_spec else index + len(quote)
            if char in "\r\n" and len(quote) == 1:
                return None
            index += 1
        return None

    def _field(self, index: int) -> int | None:
        """A replacement field's expression from `index`: the index past its closing `}`."""
        text, length = self.text, len(self.text)
        depth = 0  # brackets opened inside the expression
        while index < length:
            self._spend()
            char = text[index]
            if char in "\"'" or (char.isalpha() and char.lower() in "rbuft" and not _word_before(text, index)):
                match = _PREFIX.match(text, index)
                if match is not None:
                    index = self._nested(match)
                    if index < 0:
                        return None
                    continue
            if char == "\\":
                self.newer = True
                index += 2
                continue
            if char == "#":
                self.newer = True
                found = _LINE_END.search(text, index)
                index = length if found is None else found.start()
                continue
            if char in "\r\n" and len(self.quote) == 1:
                self.newer = True
            elif char in "([{":
                depth += 1
            elif char in ")]":
                depth -= 1
            elif char == "}":
                if depth <= 0:
                    return index + 1
                depth -= 1
            elif depth <= 0 and char == "!" and not text.startswith("!=", index):
                index += 1  # a conversion (`!r`), then maybe a format spec
                while index < length and (text[index].isalnum() or text[index] == "_"):
                    index += 1
                continue
            elif depth <= 0 and char == ":":
                end = self._literal(index + 1, in_spec=True)
                return None if end is None else end + 1
            index += 1
        return None

    def _nested(self, match: re.Match) -> int:
        """A string inside a replacement field: the index past it (-1: unterminated)."""
        prefix, quote = (match.group(1) or "").lower(), match.group(2)
        body = match.end()
        if "f" in prefix or "t" in prefix:
            inner = _Formatted(self.text, quote, self.budget)
            found = inner.string(body)
            if found is None:
                return -1
            end = found[0]
            self.newer = self.newer or inner.newer
        else:
            end, closed = _plain_end(self.text, body, quote)
            self._spend(end - body)
            if not closed:
                return -1
        if "\\" in self.text[body:end]:
            self.newer = True  # no backslash anywhere in a field before 3.12
        return end


def _prefix_before(text: str, quote: int) -> str:
    """The string prefix (`f`, `rb`, ...) just before the quote at `quote`, lower-cased ("" if none:
    letters that end a longer name are not a prefix)."""
    for size in (2, 1):
        start = quote - size
        if start >= 0 and _PREFIX_WORD.fullmatch(text, start, quote) and not _word_before(text, start):
            return text[start:quote].lower()
    return ""


_PREFIX_WORD = re.compile(rf"(?i:{_PREFIXES})")


def _word_before(text: str, index: int) -> bool:
    return index > 0 and (text[index - 1].isalnum() or text[index - 1] == "_")


def _blank(chars: list[str], start: int, end: int, join_lines: bool = False) -> bool:
    """Spaces for chars[start:end], line breaks kept; with `join_lines`, each line break is escaped by
    a backslash before it (a blanked one-line string or bracket list that spans lines stays one).
    False when a line break could not be escaped (an empty line: nothing before it to replace)."""
    joined = True
    for position in range(start, end):
        char = chars[position]
        if char not in "\r\n":
            chars[position] = " "
        elif join_lines and not (char == "\n" and position > start and chars[position - 1] == "\r"):
            if position > start and chars[position - 1] not in "\r\n":
                chars[position - 1] = "\\"
            else:
                joined = False
    return joined


def neutralize(text: str, running: tuple[int, int] = RUNNING) -> tuple[str, list[str]] | None:
    """The text with the syntax newer than Python `running` blanked, and what was blanked; None when
    there was none. Called only for a text that `running` does not parse."""
    found = _neutralize(text, running)
    return None if found is None else (found[0], found[1])


def _neutralize(text: str, running: tuple[int, int] = RUNNING) -> tuple[str, list[str], bool] | None:
    """neutralize(), and whether the rewriting is exact: False when a blanked region spanning lines
    had an empty line (no character to escape its line break with), so that what still does not
    parse may be the rewriting's doing. Linear in the text: brackets are matched once, the f-string
    scan is counted (_strings), each keyword is found by a search for it."""
    if running >= NEWEST_GRAMMAR:
        return None
    strings = _strings(text)
    if not strings.exact:
        return None  # not a valid text of any Python: the running one's error stands
    chars = list(text)  # what is blanked; the matches are found in `text`
    blanked: list[str] = []
    exact = True
    kinds = set()
    for start, body, end, prefix, quote, newer in strings.formatted:
        template = "t" in prefix
        if (template and running < (3, 14)) or (newer and running < (3, 12)):
            _blank(chars, start, start + len(prefix))  # the prefix: a plain string is left
            exact = _blank(chars, body, end - len(quote), join_lines=len(quote) == 1) and exact
            kinds.add("t-string contents" if template else "f-string contents")
    blanked.extend(sorted(kinds))
    if running < (3, 13):  # type parameter lists (3.12; their defaults, 3.13) and `type` statements (3.12)
        aliases = params = False
        for match in _TYPE_ALIAS.finditer(text):  # `type X[T] = ...` -> `X         = ...`
            start, end = match.start(), match.end()
            if not _statement_start(text, start, strings) or (running >= (3, 12) and text[end] != "["):
                continue
            name = match.group(1).strip()
            if text[end] == "[":
                end = min(strings.closing(end) + 1, len(text))
                params = True
            exact = _blank(chars, start, end, join_lines=True) and exact  # line breaks inside the brackets stay
            chars[start:start + len(name)] = name
            aliases = aliases or running < (3, 12)
        for pattern in (_DEF, _CLASS):
            for match in pattern.finditer(text):
                if _word_before(text, match.start()) or strings.inside(match.start()):
                    continue
                index = strings.closing(match.end())
                if index < len(text):
                    exact = _blank(chars, match.end(), index + 1, join_lines=True) and exact
                    params = True
        if params:
            blanked.append("type parameter lists")
        if aliases:
            blanked.append("`type` statements")
    if running < (3, 14):
        lists = stars = False
        for match in _EXCEPT.finditer(text):
            if _word_before(text, match.start() + 7) or not _statement_start(text, match.start(), strings):
                continue  # `exception = ...`, or not where a clause starts
            if match.group(1) and running < (3, 11):  # `except* E:` -> `except  E:`
                chars[match.start(1)] = " "
                stars = True
            if match.end() < len(text) and text[match.end()] not in "(:\r\n#":
                comma = _top_level_comma(text, match.end(), strings)  # `except A, B:` -> `except A   :`
                if comma is not None:
                    _blank(chars, comma[0], comma[1])
                    lists = True
        if lists:
            blanked.append("unbracketed exception lists")
        if stars:
            blanked.append("except*")
    if running < (3, 11):
        if _blank_unpacked_types(text, chars, strings):
            blanked.append("unpacking in subscripts and annotations")
    if not blanked:
        return None
    return "".join(chars), blanked, exact


def _statement_start(text: str, index: int, strings: _Strings) -> bool:
    """Whether `index` starts a line's first statement (only blanks before it on its line), outside
    strings and comments."""
    before = index - 1
    while before >= 0 and text[before] in " \t":
        before -= 1
    return (before < 0 or text[before] in "\r\n") and not strings.inside(index)


def _top_level_comma(text: str, start: int, strings: _Strings) -> tuple[int, int] | None:
    """In an `except` clause starting at `start`: [first comma, the colon) when its exception types
    are a list without brackets around it (`except A, B:`), else None."""
    index, comma, length = start, None, len(text)
    while index < length:
        char = text[index]
        if strings.inside(index) or char in ")]}#":
            return None  # a string or comment in the types, or a stray bracket: not this form
        if char in "([{":
            index = strings.closing(index)  # a bracketed group: jumped over
        elif char == "," and comma is None:
            comma = index
        elif char in ":\r\n":
            if char == ":" and comma is not None and not re.search(r"\bas\b", text[comma:index]):
                return comma, index
            return None
        index += 1
    return None


def _blank_unpacked_types(text: str, chars: list[str], strings: _Strings) -> bool:
    """PEP 646 (3.11): `*args: *Ts` and `x[*Ts]` / `x[int, *Ts]` lose the star."""
    changed = False
    for match in _STAR_ANNOTATION.finditer(text):
        if not strings.inside(match.start()):
            chars[match.start(1)] = " "
            changed = True
    for match in _SUBSCRIPT.finditer(text):
        opening = match.end() - 1
        if strings.inside(opening):
            continue
        word = re.search(r"[A-Za-z_]\w*$", text[max(0, opening - 40):opening].rstrip())
        if word is not None and keyword.iskeyword(word.group(0)):
            continue  # `return [*a]`, `in [*a]`: a list, not a subscript
        close = strings.closing(opening)
        index, element_start = opening + 1, True
        while index < close:
            char = text[index]
            if strings.inside(index):
                element_start = False
                index = strings.spans[bisect.bisect_right(strings.starts, index) - 1][1]
                continue
            if char in "([{":
                index = strings.closing(index)  # a bracketed group: jumped over (its own subscripts are matched)
            elif char == ",":
                element_start = True
                index += 1
                continue
            elif element_start and char == "*" and not text.startswith("**", index):
                chars[index] = " "
                changed = True
            if not char.isspace():
                element_start = False
            index += 1
    return changed


def own_syntax_error(text: str, parse: Callable[[str], object]) -> SyntaxError | None:
    """The syntax error of `text` that is its own: None when `parse` accepts it, or accepts it once
    the syntax of Pythons newer than this one is blanked (neutralize: nothing moves, so the error
    then found is at its place in `text`). `parse` (compile, ast.parse) runs once when it accepts
    the text: the rest is for a text it refuses."""
    try:
        parse(text)
        return None
    except SyntaxError as error:
        first = error
    except (ValueError, MemoryError, RecursionError, OverflowError):
        return None  # NUL bytes (never read as a file), or too deep for this interpreter: not a syntax error
    found = _neutralize(text)
    if found is None:
        return first
    try:
        parse(found[0])
    except SyntaxError as error:
        return error if found[2] else None  # not exact: the error may be the rewriting's, not reported
    except (ValueError, MemoryError, RecursionError, OverflowError):
        return None
    return None


# ---------------------------------------------------------------------------------------------
# The Python a file targets


@dataclass(frozen=True)
class Target:
    version: tuple[int, int]
    source: str  # where it comes from, for messages: "requires-python in <file>", ...

    @property
    def judged(self) -> bool:
        """Whether a file that does not parse here can be called broken: fabric-lsp knows the syntax
        of the target and of every Python after it up to the newest it knows."""
        return self.version <= max(NEWEST_GRAMMAR, RUNNING)

    def unknown_syntax(self, subject: str = "") -> str:
        """Why what does not parse here (`subject`: the file, else e.g. "cell 3") is not reported, for a
        target not `judged`."""
        return (f"{subject + ' ' if subject else ''}does not parse with Python {_dotted(RUNNING)}, which runs "
                f"fabric-lsp, and its target, Python {_dotted(self.version)} ({self.source}), is newer than any "
                f"syntax fabric-lsp knows (up to {_dotted(NEWEST_GRAMMAR)})")


def _dotted(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


_VERSION = re.compile(r"(?:^|[/\\])python(\d)\.(\d+)t?(?:$|[/\\])|python(\d)(\d\d)\.zip$", re.I)


def interpreter_version(library_path: Iterable[str]) -> tuple[int, int] | None:
    """major.minor of the interpreter whose sys.path is `library_path` (its lib/pythonX.Y folders)."""
    for entry in library_path:
        match = _VERSION.search(str(entry))
        if match is not None:
            major, minor = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
            return int(major), int(minor)
    return None


def target_version(path: str, library_path: Callable[[], Iterable[str]] | Iterable[str] | None = None) -> Target:
    """The lowest Python the file's project supports: `requires-python` of the closest pyproject.toml
    above it that states it (as ruff infers its target), else the analysis interpreter's version
    (read from its sys.path, `library_path`), else the running Python's."""
    found = requires_python(os.path.dirname(os.path.abspath(path)))
    if found is not None:
        return Target(found[0], f"requires-python in {found[1]}")
    if library_path is not None:
        version = interpreter_version(library_path() if callable(library_path) else library_path)
        if version is not None:
            return Target(version, "the analysis interpreter's version")
    return Target(RUNNING, "the Python running fabric-lsp")


_pyprojects: dict[str, tuple[tuple[int, int, int], tuple[int, int] | None]] = {}
_pyprojects_lock = threading.Lock()


def requires_python(folder: str) -> tuple[tuple[int, int], str] | None:
    """(the lowest major.minor `project.requires-python` allows, the pyproject.toml) of the closest
    pyproject.toml at or above `folder` that states one; each file read once per state."""
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        version = _pyproject_floor(candidate)
        if version is not None:
            return version, candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _pyproject_floor(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    state = (info.st_mtime_ns, info.st_size, info.st_ino)
    with _pyprojects_lock:
        known = _pyprojects.get(path)
    if known is not None and known[0] == state:
        return known[1]
    floor = None
    try:
        from fabric_lsp.sources.toml_reader import toml as _toml

        # A regular file of at most 1 MiB (a FIFO or a device in a repository would block or never end).
        if _toml is not None and stat.S_ISREG(info.st_mode) and info.st_size <= 1 << 20:
            descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            with open(descriptor, "rb") as handle:
                opened = os.fstat(handle.fileno())
                data = handle.read(1 << 20) if stat.S_ISREG(opened.st_mode) else b""
            project = _toml.loads(data.decode("utf-8")).get("project")
            spec = project.get("requires-python") if isinstance(project, dict) else None
            floor = requires_python_floor(spec) if isinstance(spec, str) else None
    except (OSError, ValueError, RecursionError, MemoryError):  # TOMLDecodeError, UnicodeDecodeError: ValueErrors
        floor = None
    with _pyprojects_lock:
        if len(_pyprojects) > 1024:
            _pyprojects.clear()
        _pyprojects[path] = (state, floor)
    return floor


_CLAUSE = re.compile(r"^\s*(~=|===|==|>=|>)\s*(\d+)\.(\d+)")


def requires_python_floor(spec: str) -> tuple[int, int] | None:
    """The lowest major.minor a `requires-python` specifier allows (`>=3.12`, `~=3.10`, `==3.11.*`,
    `>=3.9,<4`), None when it states no lower bound of that form."""
    floors = []
    for clause in spec.split(","):
        match = _CLAUSE.match(clause)
        if match is not None:
            floors.append((int(match.group(2)), int(match.group(3))))
    return max(floors) if floors else None
