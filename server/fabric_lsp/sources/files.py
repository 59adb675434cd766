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


def unchanged_on_disk(stamps) -> bool:
    """Whether every (path, disk_identity) pair still holds (stamps from JSON: lists or None)."""
    for path, identity in stamps:
        now = disk_identity(path)
        if (None if now is None else list(now)) != (None if identity is None else list(identity)):
            return False
    return True
