"""One reader for the files a repository or a virtual environment hands us: settings files
(`pyproject.toml`, `.fabric-lsp.toml`, the user config), `setup.cfg`, `.gitignore` and
`.git/info/exclude`, a venv's `pyvenv.cfg`, `.pth` files and editable finders, record files, and
our own cache files.

A repository can commit a link to `/dev/zero` or `/dev/urandom` (endless bytes) and a checkout can
hold a FIFO (an open that waits for a writer forever). So a file is opened with O_NONBLOCK (a FIFO
never blocks), read only if `fstat` of the open file says it is a regular file, and never past its
size limit (one more byte is read to see a file that grew, or a special file that reports size 0).
Links are followed unless `follow=False` (links inside a repository are legitimate: a pyproject
linked to a shared one is read; a link to a device is refused by the regular-file test, whatever
its path). Checked source files are read by walk.read_source in the same way, with `max-file-size`.

`disk_identity` is what tells that a file or folder read outside the project is unchanged (the
findings cache checks it: cache.py).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import stat

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CHUNK = 1 << 20

MAX_SETTINGS_BYTES = 1024 * 1024  # a settings file (pyproject.toml, .fabric-lsp.toml, setup.cfg, the user config)
MAX_PTH_BYTES = 1024 * 1024  # a .pth file; larger ones are skipped
MAX_PTH_LINES = 10_000  # lines of a .pth file read; the rest are ignored


class FileRefused(OSError):
    """Not read: not a regular file, or larger than the limit. `str()` is the one-line reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


def reason(error: OSError) -> str:
    """A one-line reason for a failed read (`not a regular file`, `No such file or directory`)."""
    if isinstance(error, FileRefused):
        return error.reason
    return error.strerror or str(error)


def read_bytes(path: str | os.PathLike[str], limit: int, *, follow: bool = True, dir_fd: int | None = None,
               prefix: bool = False) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (`prefix`: its first `limit` bytes,
    whatever its size). OSError when it cannot be read; FileRefused when it is not a regular file
    or is larger than `limit`."""
    flags = os.O_RDONLY | _NONBLOCK | (0 if follow else _NOFOLLOW)
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused("not a regular file")
        if info.st_size > limit and not prefix:
            raise FileRefused(f"larger than {limit} bytes ({info.st_size} bytes)")
        chunks, total = [], 0
        wanted = limit if prefix else limit + 1
        while total < wanted:
            chunk = os.read(fd, min(_CHUNK, wanted - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:  # it grew since fstat
            raise FileRefused(f"larger than {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike[str], limit: int, *, follow: bool = True, prefix: bool = False,
              errors: str = "replace") -> str:
    """read_bytes decoded as UTF-8 (undecodable bytes replaced, unless `errors="strict"`)."""
    return read_bytes(path, limit, follow=follow, prefix=prefix).decode("utf-8", errors)


def read_pth_lines(path: str | os.PathLike[str]) -> list[str]:
    """The lines of a `.pth` file (at most MAX_PTH_LINES; the file at most MAX_PTH_BYTES)."""
    return read_text(path, MAX_PTH_BYTES).splitlines()[:MAX_PTH_LINES]


def resolves_inside(path: str, real_root: str) -> bool:
    """Whether `path`, links and `..` resolved, is `real_root` (itself resolved) or below it."""
    real = os.path.realpath(path)
    try:
        return os.path.commonpath([real, real_root]) == real_root
    except ValueError:  # another drive (Windows)
        return False


def disk_identity(path: str) -> tuple[int, int, int, int] | None:
    """What tells a file's or a folder's state: modification and change times, size, inode (None:
    missing). A rewrite keeping the size and the modification time (`cp -p`, `rsync -t`) still
    changes the change time."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino)


# Entries of a folder that no listing reader here uses, and that tools create all the time in a
# project's folder: other tools' caches (.ruff_cache, .mypy_cache, .pytest_cache, .fabric-lsp-cache),
# editors' and VCS's folders, and Python's bytecode. A folder's mtime changes with each of them.
_UNUSED_ENTRY = "__pycache__"
NAMES = "names"
MAX_NAMED_ENTRIES = 10_000  # a folder with more entries is told by its disk_identity (bounded cost)


def names_identity(folder: str) -> list | None:
    """What tells a listed folder's state when only its visible entries matter: ["names", digest of
    the sorted names, each with its kind (folder, link, other)], hidden entries (a leading dot, but
    `.git`, which says another repository starts there) and `__pycache__` left out; None: missing.
    A reader that needs every entry, or reads a listing cut short by a bound, keeps disk_identity."""
    try:
        with os.scandir(folder) as listing:
            entries = list(itertools.islice(listing, MAX_NAMED_ENTRIES + 1))
        if len(entries) > MAX_NAMED_ENTRIES:
            return [NAMES, "too many entries"]  # never equal to a digest: the reader's answer is not kept
        return names_identity_of(entries)
    except OSError:
        return None


def names_identity_of(entries) -> list:
    """names_identity from a folder's whole listing (os.DirEntry objects) that its reader already made."""
    names = sorted(
        f"{entry.name}/{'l' if entry.is_symlink() else 'd' if entry.is_dir(follow_symlinks=False) else 'f'}"
        for entry in entries
        if (not entry.name.startswith(".") or entry.name == ".git") and entry.name != _UNUSED_ENTRY
    )
    return [NAMES, hashlib.sha256("\0".join(names).encode("utf-8", "surrogateescape")).hexdigest()[:32]]


EXISTS = "exists"


def existence_identity(path: str) -> list | None:
    """["exists"] while something (a link included) is at `path`, None when nothing is: for a reader
    that only asks whether it is there (a `.git` saying another repository starts at its folder)."""
    return [EXISTS] if os.path.lexists(path) else None


def identity_of(path: str, saved) -> list | None:
    """The current identity of `path` in the form `saved` was taken (names_identity, existence_identity
    or disk_identity). A missing path was saved as None, whatever form its reader would have used:
    then the reader is asked about nothing more than whether it is still missing."""
    if saved is not None and len(saved) == 2 and saved[0] == NAMES:
        return names_identity(path)
    if saved is not None and len(saved) == 1 and saved[0] == EXISTS:
        return existence_identity(path)
    now = disk_identity(path)
    return None if now is None else list(now)


def unchanged_on_disk(stamps) -> bool:
    """Whether every (path, identity) pair still holds (stamps from JSON: lists or None; each identity
    a disk_identity or a names_identity)."""
    for path, identity in stamps:
        if identity_of(path, identity) != (None if identity is None else list(identity)):
            return False
    return True
