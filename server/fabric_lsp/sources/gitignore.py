"""git's ignore rules, read from the files (git is never run: nothing from the workspace executes).

As git (gitignore(5)) and ruff (through the `ignore` crate, which also needs a repository): inside
a git repository (a folder holding `.git`), a path is ignored by the last pattern that matches it,
taken in this order: the global excludes file (`$XDG_CONFIG_HOME/git/ignore`, else
`~/.config/git/ignore`), `.git/info/exclude`, then the `.gitignore` of each folder from the
repository's root down to the path's folder, each relative to its own folder. A `!` pattern
re-includes; a trailing `/` matches folders only; a pattern with a `/` other than a trailing one is
anchored to its file's folder, one without matches at any depth; `**` as in globs.py (linear-time
matching). A path below an ignored folder is ignored (the walk never enters the folder), as in git,
where a file cannot be re-included when a parent folder is excluded.

Most patterns are a name (`__pycache__/`, `.env`), a suffix (`*.pyc`) or a path (`/dist`): those
are matched by dictionary lookups; the rest by globs.py, the globs of one file together (GlobSet).
The ignore files that apply to one folder hold at most globs.MAX_GLOBS_PER_FILE globs of
globs.MAX_GLOB_CHARACTERS_PER_FILE characters together (names, suffixes and paths are looked up,
not counted): globs past that are ignored, with one notice per file (`take_notices`). Each path's
verdict is kept.

A `.git` owned by another user (not root) does not make a repository (git refuses such a
repository too, "dubious ownership"): a `/tmp/.git` and `/tmp/.gitignore` planted in a shared
folder do not hide the files of a checkout below it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from fabric_lsp.sources.files import read_text
from fabric_lsp.sources.globs import (MAX_GLOB_CHARACTERS_PER_FILE, MAX_GLOBS_PER_FILE, GlobBudget, GlobError, GlobSet,
                              compile_glob)
from fabric_lsp.sources.upward import owned_by_user

MAX_IGNORE_FILE_BYTES = 256 * 1024  # more than any real .gitignore; a larger one is read this far
_SPECIAL = "*?["


@dataclass
class _Layer:
    """The patterns of one ignore file, relative to `base` (a folder, absolute)."""

    base: str
    source: str = ""  # the file, for notices
    names: dict[str, list[tuple[int, bool, bool]]] = field(default_factory=dict)  # name -> (index, negated, dirs only)
    suffixes: dict[str, list[tuple[int, bool, bool]]] = field(default_factory=dict)  # `*.pyc` -> ".pyc" -> ...
    paths: dict[str, list[tuple[int, bool, bool]]] = field(default_factory=dict)
    # (glob text, index, negated, literal tail, matched against the name alone), in the file's order
    patterns: list[tuple[str, int, bool, str, bool]] = field(default_factory=list)
    left_out: int = 0  # globs past the volume bound

    def __post_init__(self) -> None:
        self._compiled = False
        self._suffix_lengths: tuple[int, ...] = ()
        self._name_set: tuple[GlobSet, list[tuple[int, bool, str]]] | None = None
        self._path_set: tuple[GlobSet, list[tuple[int, bool, str]]] | None = None

    def __bool__(self) -> bool:
        return bool(self.names or self.suffixes or self.paths or self.patterns)

    def compile(self, budget: GlobBudget | None = None) -> "_Layer":
        """The globs compiled together (those `budget` takes; the others counted in left_out)."""
        kept = {True: ([], []), False: ([], [])}
        for text, index, negated, tail, by_name in self.patterns:
            if budget is not None and not budget.take(text):
                self.left_out += 1
                continue
            try:
                glob = compile_glob(text)
            except GlobError:
                continue  # git would ignore a pattern it cannot read too
            kept[by_name][0].append(glob)
            kept[by_name][1].append((index, negated, tail))
        self._name_set = (GlobSet(kept[True][0]), kept[True][1]) if kept[True][0] else None
        self._path_set = (GlobSet(kept[False][0]), kept[False][1]) if kept[False][0] else None
        self._suffix_lengths = tuple(sorted({len(suffix) for suffix in self.suffixes}))
        self._compiled = True
        return self

    def verdict(self, relative: str, name: str, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included (`!`), None: no pattern of this file matches."""
        if not self._compiled:
            self.compile()  # parsed on its own, outside GitIgnore: no volume bound
        best = -1
        verdict = None
        for index, negated, dirs_only in self.names.get(name, ()):
            if index > best and (is_dir or not dirs_only):
                best, verdict = index, not negated
        for length in self._suffix_lengths:
            if length > len(name):
                break
            for index, negated, dirs_only in self.suffixes.get(name[len(name) - length:], ()):
                if index > best and (is_dir or not dirs_only):
                    best, verdict = index, not negated
        for index, negated, dirs_only in self.paths.get(relative, ()):
            if index > best and (is_dir or not dirs_only):
                best, verdict = index, not negated
        for compiled, text in ((self._name_set, name), (self._path_set, relative)):
            if compiled is None:
                continue
            globs, meta = compiled
            # Only the globs that could still win and whose literal end fits are run.
            which = [number for number, (index, _, tail) in enumerate(meta) if index > best and text.endswith(tail)]
            if not which:
                continue
            for number in globs.indices(globs.matching(text, is_dir, globs.start(which))):
                index, negated, _ = meta[number]
                if index > best:
                    best, verdict = index, not negated
        return verdict


def _unescape(pattern: str) -> str:
    """Backslash escapes -> glob text: an escaped `*`, `?`, `[` or `\\` becomes a one-character
    class (globs.py has no escapes), any other escaped character itself."""
    out = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            following = pattern[index + 1]
            out.append(f"[{following}]" if following in _SPECIAL + "\\" else following)
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


def _literal_tail(pattern: str) -> str:
    """The characters every match ends with (the pattern's end after its last wildcard): a cheap
    test before the glob's."""
    body = pattern.rstrip("/")
    tail = []
    for char in reversed(body):
        if char in _SPECIAL or char == "]":
            break
        tail.append(char)
    return "".join(reversed(tail))


def parse(text: str, base: str, source: str = "") -> _Layer:
    """The patterns of an ignore file whose folder is `base` (not compiled yet: see _Layer.compile)."""
    layer = _Layer(base, source)
    for index, line in enumerate(text.splitlines()):
        # Trailing spaces are dropped unless escaped with a backslash.
        while line.endswith(" ") and not line.endswith("\\ "):
            line = line[:-1]
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        raw_body = line.strip("/")
        if not raw_body:
            continue
        dirs_only = line.endswith("/") and not line.endswith("\\/")
        anchored = "/" in line.rstrip("/")
        if "\\" not in line and not any(c in raw_body for c in _SPECIAL):
            target = layer.paths if anchored else layer.names
            target.setdefault(raw_body, []).append((index, negated, dirs_only))
            continue
        if (not anchored and "\\" not in line and raw_body.startswith("*")
                and not any(c in raw_body[1:] for c in _SPECIAL)):
            layer.suffixes.setdefault(raw_body[1:], []).append((index, negated, dirs_only))
            continue
        pattern = _unescape(line)
        # A pattern without a `/` (but a trailing one) matches a name at any depth: it is matched
        # against the name alone (anchored), which is the same and cheaper.
        layer.patterns.append((pattern if anchored else "/" + pattern, index, negated, _literal_tail(pattern),
                               not anchored))
    return layer


def _read_ignore_file(path: str) -> str | None:
    """The text of a regular file (never a link, a FIFO or a device), at most MAX_IGNORE_FILE_BYTES."""
    try:
        return read_text(path, MAX_IGNORE_FILE_BYTES, follow=False, prefix=True)
    except OSError:
        return None


def global_excludes_file() -> str:
    """git's default `core.excludesFile`."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "git", "ignore")


class GitIgnore:
    """The ignore rules of the repositories a walk goes through; each file is read once."""

    def __init__(self) -> None:
        self._repo: dict[str, str | None] = {}
        self._layers: dict[str, tuple[_Layer, ...]] = {}
        self._spent: dict[str, tuple[int, int, bool]] = {}  # folder -> (globs, characters, full) of its layers
        self._verdicts: dict[tuple[str, bool], bool] = {}
        self._notices: dict[str, str] = {}  # ignore file -> its problem (the global file: once for every repository)

    def repo_root(self, directory: str) -> str | None:
        """The closest folder at or above `directory` that holds `.git` (a folder, or a file as in
        a worktree or a submodule); None when there is none, or when that `.git` belongs to
        another user (not root)."""
        known = self._repo.get(directory, False)
        if known is not False:
            return known
        git = os.path.join(directory, ".git")
        if os.path.lexists(git):
            found = directory if owned_by_user(git) else None
        else:
            parent = os.path.dirname(directory)
            found = self.repo_root(parent) if parent != directory else None
        self._repo[directory] = found
        return found

    def _own(self, directory: str) -> list[_Layer]:
        path = os.path.join(directory, ".gitignore")
        text = _read_ignore_file(path)
        layer = parse(text, directory, path) if text else None
        return [layer] if layer else []

    def _repository_layers(self, root: str) -> list[_Layer]:
        layers = []
        excludes = global_excludes_file()
        text = _read_ignore_file(excludes)
        if text:
            layers.append(parse(text, root, excludes))
        git = os.path.join(root, ".git")
        git_dir = git
        if os.path.isfile(git):  # `gitdir: <path>`
            pointer = _read_ignore_file(git) or ""
            first = pointer.splitlines()[0] if pointer.strip() else ""
            if first.startswith("gitdir:"):
                git_dir = os.path.join(root, first[len("gitdir:"):].strip())
        exclude = os.path.join(git_dir, "info", "exclude")
        text = _read_ignore_file(exclude)
        if text:
            layers.append(parse(text, root, exclude))
        return [layer for layer in layers if layer]

    def _compiled(self, layers: list[_Layer], spent: tuple[int, int, bool]) -> tuple[list[_Layer], tuple[int, int, bool]]:
        """`layers` compiled with what the folders above them left of the volume bound."""
        budget = GlobBudget(*spent)
        for layer in layers:
            layer.compile(budget)
            if layer.left_out:
                self._notices.setdefault(layer.source, f"more globs than the ignore files of a folder may hold "
                                                       f"({MAX_GLOBS_PER_FILE} globs, {MAX_GLOB_CHARACTERS_PER_FILE} "
                                                       f"characters together); the last {layer.left_out} are ignored")
        return layers, (budget.count, budget.characters, budget.full)

    def layers(self, directory: str) -> tuple[_Layer, ...]:
        """The patterns that apply to the entries of `directory` (absolute), lowest precedence first."""
        known = self._layers.get(directory)
        if known is not None:
            return known
        root = self.repo_root(directory)
        if root is None:
            found: tuple[_Layer, ...] = ()
            spent = (0, 0, False)
        elif directory == root:
            own, spent = self._compiled(self._repository_layers(root) + self._own(directory), (0, 0, False))
            found = tuple(own)
        else:
            parent = os.path.dirname(directory)
            above = self.layers(parent)
            own, spent = self._compiled(self._own(directory), self._spent.get(parent, (0, 0, False)))
            found = above + tuple(own)
        self._layers[directory] = found
        self._spent[directory] = spent
        return found

    def take_notices(self) -> list[tuple[str, str]]:
        """(ignore file, problem) for each file whose globs went past the volume bound, once."""
        taken = [item for item in self._notices.items() if item[1]]
        self._notices = dict.fromkeys(self._notices, "")  # said: never again
        return taken

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether git ignores the entry `path` (absolute) of a folder the walk is in."""
        key = (path, is_dir)
        known = self._verdicts.get(key)
        if known is not None:
            return known
        directory, name = os.path.split(path)
        found = False
        for layer in reversed(self.layers(directory)):
            base = layer.base
            relative = path[len(base) + 1:] if path.startswith(base + os.sep) else os.path.relpath(path, base)
            verdict = layer.verdict(relative.replace(os.sep, "/"), name, is_dir)
            if verdict is not None:
                found = verdict
                break
        if len(self._verdicts) >= 65536:
            self._verdicts.clear()
        self._verdicts[key] = found
        return found

    def ignored_with_parents(self, path: str, is_dir: bool) -> bool:
        """Whether `path` or one of its folders below the repository's root is ignored (a path
        named on the command line, under --force-exclude)."""
        path = os.path.abspath(path)
        root = self.repo_root(os.path.dirname(path))
        if root is None or os.path.lexists(os.path.join(path, ".git")):
            return False  # outside a repository, or a repository's own root
        relative = os.path.relpath(path, root)
        parts = relative.split(os.sep)
        current = root
        for part in parts[:-1]:
            current = os.path.join(current, part)
            if self.ignored(current, True):
                return True
        return self.ignored(path, is_dir)
