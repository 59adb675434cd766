"""`exclude` globs matched in linear time.

A glob is compiled to a list of tokens and matched by simulating its NFA over a set of token
positions (Thompson's construction, no backtracking): the cost of one match is at most
len(path) * len(tokens) steps whatever the pattern, so a repository cannot make a run hang with a
glob such as `**/**/**/...` (a backtracking regex takes exponential time on it).

Syntax (gitignore-like, as the README describes):
- `*` any run of characters within one path segment, `?` one character other than '/';
- `[abc]`, `[a-z]`, `[!a-z]` one character (never '/') of / not of a set; `]` first is a member;
- `**/` zero or more whole directories, `**` elsewhere any run of characters across '/';
- a pattern without an inner '/' matches at any depth; a leading or inner '/' anchors it at the
  root; a trailing '/' matches directories only.
"""

from __future__ import annotations

from dataclasses import dataclass

# A pattern longer than this is refused: matching cost grows with its length (for every path).
MAX_GLOB_LENGTH = 1024

# Token kinds
_LITERAL = "literal"  # value: the character
_ONE = "one"  # `?`
_CLASS = "class"  # value: (negated, ((low, high), ...))
_STAR = "star"  # `*`: any characters but '/'
_ANY = "any"  # `**` not followed by '/': any characters
_DIRS = "dirs"  # `**/` (and the implicit prefix of an unanchored glob): (.*/)?


class GlobError(ValueError):
    """A glob that cannot be compiled; the message says why in a few words."""


@dataclass(frozen=True)
class Glob:
    pattern: str
    tokens: tuple[tuple[str, object], ...]
    dirs_only: bool

    def matches(self, relative: str, is_dir: bool) -> bool:
        """Whether the '/'-separated path relative to the root matches (whole path)."""
        if self.dirs_only and not is_dir:
            return False
        return _simulate(self.tokens, relative)


def compile_glob(pattern: str) -> Glob:
    """Parse a glob; raises GlobError for one that cannot mean anything (e.g. `[z-a]`)."""
    if len(pattern) > MAX_GLOB_LENGTH:
        raise GlobError(f"longer than {MAX_GLOB_LENGTH} characters")
    body = pattern.strip("/")
    if not body:
        raise GlobError("empty pattern")
    anchored = "/" in pattern.rstrip("/")
    tokens: list[tuple[str, object]] = [] if anchored else [(_DIRS, None)]
    i = 0
    while i < len(body):
        char = body[i]
        if body.startswith("**/", i):
            if not (tokens and tokens[-1][0] == _DIRS):  # `**/**/` is the same as `**/`
                tokens.append((_DIRS, None))
            i += 3
        elif body.startswith("**", i):
            if not (tokens and tokens[-1][0] == _ANY):
                tokens.append((_ANY, None))
            i += 2
        elif char == "*":
            if not (tokens and tokens[-1][0] == _STAR):  # `***` in a segment is one star
                tokens.append((_STAR, None))
            i += 1
        elif char == "?":
            tokens.append((_ONE, None))
            i += 1
        elif char == "[":
            token, i = _parse_class(body, i)
            tokens.append(token)
        else:
            tokens.append((_LITERAL, char))
            i += 1
    return Glob(pattern=pattern, tokens=tuple(tokens), dirs_only=pattern.endswith("/"))


def _parse_class(body: str, start: int) -> tuple[tuple[str, object], int]:
    i = start + 1
    negated = i < len(body) and body[i] in "!^"
    if negated:
        i += 1
    first = i
    ranges: list[tuple[str, str]] = []
    while True:
        if i >= len(body):
            raise GlobError("unterminated character class '['")
        char = body[i]
        if char == "]" and i > first:
            break
        if char == "/":
            raise GlobError("'/' inside a character class")
        if i + 2 < len(body) and body[i + 1] == "-" and body[i + 2] != "]":
            low, high = char, body[i + 2]
            if low > high:
                raise GlobError(f"invalid range {low}-{high} in a character class")
            ranges.append((low, high))
            i += 3
        else:
            ranges.append((char, char))
            i += 1
    return (_CLASS, (negated, tuple(ranges))), i + 1


def _in_class(value, char: str) -> bool:
    negated, ranges = value
    inside = any(low <= char <= high for low, high in ranges)
    return inside != negated


def _closure(tokens, states: set[tuple[int, int]]) -> set[tuple[int, int]]:
    # A state is (token index, phase); phase 1 is "inside" a `**/` (must reach a '/' to leave).
    # Epsilon moves: `*`, `**` and `**/` may match nothing.
    stack = list(states)
    while stack:
        index, phase = stack.pop()
        if index < len(tokens) and phase == 0 and tokens[index][0] in (_STAR, _ANY, _DIRS):
            after = (index + 1, 0)
            if after not in states:
                states.add(after)
                stack.append(after)
    return states


def _simulate(tokens, text: str) -> bool:
    end = len(tokens)
    states = _closure(tokens, {(0, 0)})
    for char in text:
        following: set[tuple[int, int]] = set()
        for index, phase in states:
            if index == end:
                continue
            kind, value = tokens[index]
            if kind == _LITERAL:
                if char == value:
                    following.add((index + 1, 0))
            elif kind == _ONE:
                if char != "/":
                    following.add((index + 1, 0))
            elif kind == _CLASS:
                if char != "/" and _in_class(value, char):
                    following.add((index + 1, 0))
            elif kind == _STAR:
                if char != "/":
                    following.add((index, 0))
            elif kind == _ANY:
                following.add((index, 0))
            else:  # _DIRS: (.*/)? -- any characters, leaving only after a '/'
                following.add((index, 1))
                if char == "/":
                    following.add((index + 1, 0))
        if not following:
            return False
        states = _closure(tokens, following)
    return (end, 0) in states
