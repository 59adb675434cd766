"""`check --output-file PATH`: the report is written where the user asked, never through a symbolic
link a repository planted.

docs/ci.md names report files inside the checkout (`fabric-lsp.sarif`, `gl-code-quality-report.json`);
a repository can commit a symbolic link at such a path (to `~/.bashrc`, to a CI credentials file) and a
plain open() would replace the link's target. So, inside the repository (the nearest folder at or
above the current one holding `.git`, else the current folder; report.common.repository_root), whose
files the repository decides:

- the target may not be a symbolic link, nor may any folder between the repository's root and the
  target: refused in one line (OutputRefused);
- missing folders are created, each opened without following a link (O_NOFOLLOW, relative to its
  parent's descriptor), and the report is written into a new file in the target's folder (O_EXCL,
  O_NOFOLLOW) that is then renamed over the target: a link planted after the check is replaced by
  the report, never followed, and a reader never sees half a report.

A path outside the repository is the user's own (`/dev/stdout`, a folder reached through the user's
own links): it is written as before, links followed. The folders above the repository are not the
repository's either: a link among them (a home folder that is a link) is followed to find where the
repository's part of the path starts.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass

from fabric_lsp.report.common import repository_root

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
# Writing relative to open folders (openat, mkdirat, renameat): everywhere but Windows. (os.replace
# takes src_dir_fd/dst_dir_fd where os.open takes dir_fd; supports_dir_fd does not list it.)
_AT_CALLS = all(call in os.supports_dir_fd for call in (os.open, os.mkdir, os.stat, os.unlink))


class OutputRefused(Exception):
    """The one-line reason the report is not written."""


@dataclass(frozen=True)
class Target:
    base: str  # a real folder: where the repository's part of the path starts (outside: the parent)
    parts: tuple[str, ...]  # the names below `base`, the file's last
    root: str | None  # the repository's root when the path is inside it (no link followed below `base`)


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def plan(path: str, cwd: str) -> Target:
    """Where `path` leads, its part inside the repository checked: OutputRefused when the target or
    a folder on its path below the repository's root is a symbolic link."""
    root = os.path.realpath(repository_root(cwd))
    names = [name for name in os.path.abspath(os.path.join(cwd, path)).split(os.sep) if name]
    current = os.sep
    for index, name in enumerate(names):
        if _within(current, root):
            target = Target(current, tuple(names[index:]), root)
            _refuse_links(target, cwd)
            return target
        current = os.path.realpath(os.path.join(current, name))  # above the repository: the user's own
    if _within(current, root):  # the user's own link to a file of the repository: its real path
        target = Target(os.path.dirname(current), (os.path.basename(current),), root)
        _refuse_links(target, cwd)
        return target
    return Target(os.path.dirname(current), (os.path.basename(current),), None)


def _refuse_links(target: Target, cwd: str) -> None:
    folder = target.base
    for count, name in enumerate(target.parts, 1):
        folder = os.path.join(folder, name)
        try:
            info = os.lstat(folder)
        except OSError:
            return  # missing: created without following a link (or the error is said when writing)
        if stat.S_ISLNK(info.st_mode):
            raise OutputRefused(_refusal(folder, count == len(target.parts), target.root, cwd))


def _refusal(link: str, is_target: bool, root: str | None, cwd: str) -> str:
    shown = os.path.relpath(link, cwd) if _within(link, cwd) else link
    what = "is a symbolic link" if is_target else "is a symbolic link (a folder of the report's path)"
    return (f"--output-file: refused: {shown} {what} inside the repository at {root}, which may have planted it "
            "to make the report overwrite another file; remove the link or name another path")


def write_report_file(path: str, text: str, cwd: str) -> None:
    """Write `text` (UTF-8) to `path` as the module's docstring says. OutputRefused for a link
    below the repository's root; OSError when the file cannot be written."""
    data = text.encode("utf-8", "backslashreplace")
    target = plan(path, cwd)
    if target.root is None:
        os.makedirs(target.base, exist_ok=True)
        with open(os.path.join(target.base, *target.parts), "wb") as handle:
            handle.write(data)
        return
    if not _AT_CALLS:  # no openat (Windows): the same rules by path, checked just before (plan)
        _write_by_path(os.path.join(target.base, *target.parts), data)
        return
    folder = os.open(target.base, os.O_RDONLY | _DIRECTORY)
    try:
        for count, name in enumerate(target.parts[:-1], 1):
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=folder)
            try:
                inner = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=folder)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(name, folder):
                    link = os.path.join(target.base, *target.parts[:count])
                    raise OutputRefused(_refusal(link, False, target.root, cwd)) from None
                raise
            os.close(folder)
            folder = inner
        name = target.parts[-1]
        if _is_link(name, folder):
            raise OutputRefused(_refusal(os.path.join(target.base, *target.parts), True, target.root, cwd))
        _replace_in(folder, name, data)
    finally:
        os.close(folder)


def _is_link(name: str, folder: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _replace_in(folder: int, name: str, data: bytes) -> None:
    """`name` in the open `folder` replaced by a new file holding `data`: written with O_EXCL and
    O_NOFOLLOW under a fresh name, then renamed (a link at `name` is replaced, not followed)."""
    try:
        if stat.S_ISDIR(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory")
    except FileNotFoundError:
        pass
    temporary = f".{name[:200]}.{os.getpid()}-{os.urandom(6).hex()}.tmp"
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666, dir_fd=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=folder)
        raise


def _write_by_path(path: str, data: bytes) -> None:
    folder, name = os.path.split(path)
    os.makedirs(folder, exist_ok=True)
    temporary = os.path.join(folder, f".{name[:200]}.{os.getpid()}-{os.urandom(6).hex()}.tmp")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
