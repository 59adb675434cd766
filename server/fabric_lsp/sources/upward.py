"""How far up from a file its settings file and its project root are looked for, and whose files count.

A folder above a checkout may be shared (`/tmp`, a build folder, a CI workspace): a settings file
or a project marker planted there must not configure the checkout (hide its findings) nor make the
shared folder the project (walked, cached into). So the search upwards, for settings files
(config.find_config_file, config.ConfigResolver) and for project markers
(engine.project_root_for), stops at the first boundary (`is_boundary`), the boundary folder itself
included:

- the repository root: the closest folder holding `.git` (a folder, or a file as in a worktree);
- else the user's home folder, when the file is inside it;
- else `/`, where only the ownership rule below protects the search.

And a settings file or a marker counts only when the user running fabric-lsp owns it, or root does
(`owned_by_user`; files a Dockerfile's `COPY` made belong to root): one another user planted in a
shared folder is passed over, as if it were not there. ruff stops at the first settings file it
finds; it has neither rule.
"""

from __future__ import annotations

import os

_getuid = getattr(os, "getuid", None)  # None on Windows: there is no ownership rule there


def home_folder() -> str | None:
    home = os.path.expanduser("~")
    return os.path.abspath(home) if home and home != "~" else None


def is_boundary(folder: str, home: str | None = None) -> bool:
    """Whether the search upwards ends at `folder` (absolute) after looking into it: it is a
    repository root or the home folder (`home`: home_folder(), passed by callers asking often)."""
    if os.path.lexists(os.path.join(folder, ".git")):
        return True
    return folder == (home if home is not None else home_folder())


def owned_by_user(path: str) -> bool:
    """Whether the user running fabric-lsp, or root, owns `path`, and the file a link there names."""
    if _getuid is None:
        return True
    trusted = (_getuid(), 0)
    try:
        return os.lstat(path).st_uid in trusted and os.stat(path).st_uid in trusted
    except OSError:
        return False


def owner_of(path: str) -> int | None:
    try:
        return os.lstat(path).st_uid
    except OSError:
        return None
