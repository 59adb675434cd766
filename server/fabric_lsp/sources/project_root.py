"""The project a file belongs to: the folder its imports resolve from (used by settings, the engine,
the CLI and the server alike, so it sits with what is read, below them all)."""

from __future__ import annotations

import os
import threading

from fabric_lsp.sources.upward import home_folder, is_boundary, owned_by_user

_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def project_root_for(path: str, configured: str | None, fallback: str | None = None) -> str:
    """The folder imports are resolved from: the configured root when it holds the file, else the
    nearest folder with a project marker (up to the repository root or the home folder, a marker
    another user owns passed over: fabric_lsp.sources.upward), else `fallback` when it holds the file (the
    command line's working directory, as ruff takes it), else the file's own folder (what
    `python file.py` uses)."""
    folder = os.path.dirname(os.path.abspath(path))
    if configured and (folder + os.sep).startswith(os.path.abspath(configured) + os.sep):
        return os.path.abspath(configured)
    marked = _marked_folder(folder, home_folder())
    if marked is not None:
        return marked
    if fallback and (folder + os.sep).startswith(os.path.abspath(fallback) + os.sep):
        return os.path.abspath(fallback)
    return folder


def _marked_folder(folder: str, home: str | None) -> str | None:
    """The nearest folder at or above `folder` holding a project marker of the user's (or root's),
    within the search boundary; asked once per folder in a run (the 2,285 files of torch walked up
    the tree 104,565 times: half of a cached check)."""
    with _marked_lock:
        if folder in _marked:
            return _marked[folder]
    if any(os.path.exists(marker) and owned_by_user(marker)
           for marker in (os.path.join(folder, name) for name in _ROOT_MARKERS)):
        found: str | None = folder
    else:
        parent = os.path.dirname(folder)
        found = None if parent == folder or is_boundary(folder, home) else _marked_folder(parent, home)
    with _marked_lock:
        if len(_marked) > 4096:
            _marked.clear()
        _marked[folder] = found
    return found


def forget_project_roots() -> None:
    """Markers may have been added or removed (the server, on a watched-file change)."""
    with _marked_lock:
        _marked.clear()


_marked: dict[str, str | None] = {}
_marked_lock = threading.Lock()
