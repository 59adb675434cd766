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
are matched by dictionary lookups and string comparisons; the rest by globs.py.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from fabric_lsp.files import read_text
from fabric_lsp.globs import Glob, GlobError, compile_glob

MAX_IGNORE_FILE_BYTES = 256 * 1024  # more than any real .gitignore; a larger one is read this far
_SPECIAL = "*?["


@dataclass
class _Layer:
    """The patterns of one ignore file, relative to `base` (a folder, absolute)."""

    base: str
    names: dict[str, list[tuple[int, bool, bool]]] = field(default_factory=dict)  # name -> (index, negated, dirs only)
    suffixes: list[tuple[str, int, bool, bool]] = field(default_factory=list)
    paths: dict[str, list[tuple[int, bool, bool]]] = field(default_factory=dict)
    globs: list[tuple[Glob, int, bool, str]] = field(default_factory=list)  # (glob, index, negated, literal tail)
    name_globs: list[tuple[Glob, int, bool, str]] = field(default_factory=list)  # matched against the name

    def __bool__(self) -> bool:
        return bool(self.names or self.suffixes or self.paths or self.globs or self.name_globs)

    def verdict(self, relative: str, name: str, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included (`!`), None: no pattern of this file matches."""
        best = -1
        verdict = None
        for index, negated, dirs_only in self.names.get(name, ()):
            if index > best and (is_dir or not dirs_only):
                best, verdict = index, not negated
        for suffix, index, negated, dirs_only in self.suffixes:
            if index > best and name.endswith(suffix) and (is_dir or not dirs_only):
                best, verdict = index, not negated
        for index, negated, dirs_only in self.paths.get(relative, ()):
            if index > best and (is_dir or not dirs_only):
                best, verdict = index, not negated
        for glob, index, negated, tail in self.name_globs:
            if index > best and name.endswith(tail) and glob.matches(name, is_dir):
                best, verdict = index, not negated
        for glob, index, negated, tail in self.globs:
            if index > best and relative.endswith(tail) and glob.matches(relative, is_dir):
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


def parse(text: str, base: str) -> _Layer:
    """The patterns of an ignore file whose folder is `base`."""
    layer = _Layer(base)
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
            layer.suffixes.append((raw_body[1:], index, negated, dirs_only))
            continue
        pattern = _unescape(line)
        try:
            # A pattern without a `/` (but a trailing one) matches a name at any depth: it is matched
            # against the name alone (anchored), which is the same and cheaper.
            glob = compile_glob(pattern if anchored else "/" + pattern)
        except GlobError:
            continue  # git would ignore a pattern it cannot read too
        (layer.globs if anchored else layer.name_globs).append((glob, index, negated, _literal_tail(pattern)))
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

    def repo_root(self, directory: str) -> str | None:
        """The closest folder at or above `directory` that holds `.git` (a folder, or a file as in
        a worktree or a submodule)."""
        known = self._repo.get(directory, False)
        if known is not False:
            return known
        if os.path.lexists(os.path.join(directory, ".git")):
            found = directory
        else:
            parent = os.path.dirname(directory)
            found = self.repo_root(parent) if parent != directory else None
        self._repo[directory] = found
        return found

    def _own(self, directory: str) -> list[_Layer]:
        text = _read_ignore_file(os.path.join(directory, ".gitignore"))
        layer = parse(text, directory) if text else None
        return [layer] if layer else []

    def _repository_layers(self, root: str) -> list[_Layer]:
        layers = []
        text = _read_ignore_file(global_excludes_file())
        if text:
            layers.append(parse(text, root))
        git = os.path.join(root, ".git")
        git_dir = git
        if os.path.isfile(git):  # `gitdir: <path>`
            pointer = _read_ignore_file(git) or ""
            first = pointer.splitlines()[0] if pointer.strip() else ""
            if first.startswith("gitdir:"):
                git_dir = os.path.join(root, first[len("gitdir:"):].strip())
        text = _read_ignore_file(os.path.join(git_dir, "info", "exclude"))
        if text:
            layers.append(parse(text, root))
        return [layer for layer in layers if layer]

    def layers(self, directory: str) -> tuple[_Layer, ...]:
        """The patterns that apply to the entries of `directory` (absolute), lowest precedence first."""
        known = self._layers.get(directory)
        if known is not None:
            return known
        root = self.repo_root(directory)
        if root is None:
            found: tuple[_Layer, ...] = ()
        elif directory == root:
            found = tuple(self._repository_layers(root) + self._own(directory))
        else:
            found = self.layers(os.path.dirname(directory)) + tuple(self._own(directory))
        self._layers[directory] = found
        return found

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether git ignores the entry `path` (absolute) of a folder the walk is in."""
        directory, name = os.path.split(path)
        for layer in reversed(self.layers(directory)):
            base = layer.base
            relative = path[len(base) + 1:] if path.startswith(base + os.sep) else os.path.relpath(path, base)
            verdict = layer.verdict(relative.replace(os.sep, "/"), name, is_dir)
            if verdict is not None:
                return verdict
        return False

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
