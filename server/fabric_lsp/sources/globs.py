"""Globs (`exclude`, `include`, `per-file-ignores`, .gitignore) matched in linear time, in bounded volume.

A glob is compiled to a list of tokens and matched by simulating its NFA (Thompson's construction,
no backtracking), so a repository cannot make a run hang with a glob such as `**/**/**/...` (a
backtracking regex takes exponential time on it). The globs of one file are simulated together,
bit-parallel (GlobSet): a path costs len(path) steps of a few operations on an integer of one bit per
token, and a file may hold at most MAX_GLOBS_PER_FILE globs of MAX_GLOB_CHARACTERS_PER_FILE
characters in all (GlobBudget), so the volume of globs is bounded as well as each glob.

Syntax (gitignore-like, as docs/configuration.md describes):
- `*` any run of characters within one path segment, `?` one character other than '/';
- `[abc]`, `[a-z]`, `[!a-z]` one character (never '/') of / not of a set; `]` first is a member;
- `**/` zero or more whole directories, `**` elsewhere any run of characters across '/';
- a pattern without an inner '/' matches at any depth; a leading or inner '/' anchors it at the
  root; a trailing '/' matches directories only.
"""

from __future__ import annotations

import functools
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
        return _single(self).matches_any(relative, is_dir)


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


# ---------------------------------------------------------------------------------------------
# Matching: the globs' NFAs side by side in the bits of one integer (bit-parallel simulation).
#
# Position i of a glob means "its first i tokens are matched"; the glob's last position accepts.
# Each glob takes len(tokens) + 1 bits, one after the other, so one shift moves every glob's
# states at once: a path costs len(path) steps of a few integer operations, however many globs
# there are (the set-based simulation this replaces cost len(path) * live states per glob, and
# 400 globs made every keystroke in the server take seconds). A `**/` position has a second state
# ("inside the folders it skips", left only through a '/'), kept in the integer `inside`.


class GlobSet:
    """Globs matched together: which of them match a path, in one pass over it."""

    def __init__(self, globs) -> None:
        self.globs = tuple(globs)
        literal: dict[str, int] = {}
        one = star = anything = dirs = 0
        classes: list[tuple[int, object]] = []
        starts: list[int] = []
        accepts: list[int] = []
        position = 0
        for glob in self.globs:
            starts.append(1 << position)
            for kind, value in glob.tokens:
                bit = 1 << position
                if kind == _LITERAL:
                    literal[value] = literal.get(value, 0) | bit
                elif kind == _ONE:
                    one |= bit
                elif kind == _CLASS:
                    classes.append((bit, value))
                elif kind == _STAR:
                    star |= bit
                elif kind == _ANY:
                    anything |= bit
                else:
                    dirs |= bit
                position += 1
            accepts.append(1 << position)
            position += 1
        self._literal = literal
        self._one, self._star, self._any, self._dirs = one, star, anything, dirs
        self._empty = star | anything | dirs  # positions that may match nothing
        self._classes = classes
        self._starts = starts
        self._accepts = accepts
        self._all_accepts = 0
        self._file_accepts = 0  # globs that match files too (not only folders: no trailing '/')
        for glob, accept in zip(self.globs, accepts):
            self._all_accepts |= accept
            if not glob.dirs_only:
                self._file_accepts |= accept
        self._every_start = self._closure(sum(starts))
        self._moves: dict[str, tuple[int, int]] = {}

    def __len__(self) -> int:
        return len(self.globs)

    def _closure(self, states: int) -> int:
        empty = self._empty
        while True:
            more = states | ((states & empty) << 1)
            if more == states:
                return states
            states = more

    def _move(self, char: str) -> tuple[int, int]:
        """(positions that consume `char` and step on, positions that consume it and stay)."""
        known = self._moves.get(char)
        if known is None:
            step = self._literal.get(char, 0)
            if char != "/":
                step |= self._one
                for bit, value in self._classes:
                    if _in_class(value, char):
                        step |= bit
            stay = self._any | (self._star if char != "/" else 0)
            known = self._moves[char] = (step, stay)
        return known

    def start(self, which=None) -> int:
        """The initial states of every glob, or of the globs numbered in `which`."""
        if which is None:
            return self._every_start
        return self._closure(sum(self._starts[index] for index in which))

    def _run(self, text: str, states: int, folders: list[int] | None = None) -> int:
        inside = 0
        dirs = self._dirs
        for char in text:
            if folders is not None and char == "/":
                folders.append(states)  # the states at the end of a folder's path
            step, stay = self._move(char)
            following = ((states & step) << 1) | (states & stay)
            if char == "/":
                following |= ((states | inside) & dirs) << 1
            inside = (states | inside) & dirs
            if not following and not inside:
                return 0
            states = self._closure(following)
        return states

    def _accepted(self, states: int, is_dir: bool) -> int:
        return states & (self._all_accepts if is_dir else self._file_accepts)

    def indices(self, accepted: int) -> list[int]:
        """The numbers of the globs whose accepting bits are in `accepted`, in order."""
        if not accepted:
            return []
        return [index for index, bit in enumerate(self._accepts) if accepted & bit]

    def matching(self, relative: str, is_dir: bool, start: int | None = None) -> int:
        """The accepting bits of the globs that match the whole '/'-separated path (indices() names them)."""
        return self._accepted(self._run(relative, self._every_start if start is None else start), is_dir)

    def matches_any(self, relative: str, is_dir: bool, start: int | None = None) -> bool:
        return bool(self.matching(relative, is_dir, start))

    def matching_path_or_folders(self, relative: str, start: int | None = None) -> int:
        """The accepting bits of the globs that match the file `relative` or one of its folders
        (`a`, `a/b` for `a/b/c.py`), in the same pass."""
        folders: list[int] = []
        states = self._run(relative, self._every_start if start is None else start, folders)
        accepted = self._accepted(states, False)
        for at_folder in folders:
            accepted |= self._accepted(at_folder, True)
        return accepted


@functools.lru_cache(maxsize=1024)
def _single(glob: Glob) -> GlobSet:
    return GlobSet((glob,))


# ---------------------------------------------------------------------------------------------
# Volume: how many globs one file may bring


# A file of settings (or the ignore files that apply to one folder, together) holds at most this
# many globs and characters of globs; the rest are ignored and said so in one notice. Matching
# costs about len(path) * characters / 64 word operations per path: at these bounds about 1 ms for
# a 250-character path, while real files stay far below them (ruff's default exclude list has 25
# entries; GitHub's largest .gitignore templates have a few hundred lines, most of them names).
MAX_GLOBS_PER_FILE = 1000
MAX_GLOB_CHARACTERS_PER_FILE = 32 * 1024


class GlobBudget:
    """The globs of one file, counted in its order: the first ones up to the bounds are kept, every
    one after the first that does not fit is left out."""

    def __init__(self, count: int = 0, characters: int = 0, full: bool = False) -> None:
        self.count = count
        self.characters = characters
        self.left_out = 1 if full else 0  # a budget that left globs out takes no more

    @property
    def full(self) -> bool:
        return bool(self.left_out)

    def take(self, pattern: str) -> bool:
        if self.left_out or self.count + 1 > MAX_GLOBS_PER_FILE or (
                self.characters + len(pattern) > MAX_GLOB_CHARACTERS_PER_FILE):
            self.left_out += 1
            return False
        self.count += 1
        self.characters += len(pattern)
        return True
