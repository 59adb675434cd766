"""Which files a fix may edit (issue 11: "write only inside the tree").

A fix may name files other than the finding's own (FAB002 adds `reset_parameters` to a class of
another module). Those edits are allowed only when the file's real path (symbolic links resolved)
is inside the checked paths -- a file argument allows that file only, a directory what is beneath
it -- and not inside an installed environment: no ancestor directory holding `pyvenv.cfg`, no
`site-packages` or `dist-packages` component, nothing under the analysed interpreter's library
paths (stdlib, `sys.path` entries) that lie outside the checked paths. A finding whose fix goes out
of bounds keeps only its in-file alternative, if it has one (`Finding.alternatives`), else no fix.

Works on Finding/Fix objects wherever they come from (fresh analysis or cache).
"""

from __future__ import annotations

import os
import sysconfig
from dataclasses import replace
from typing import Callable, Iterable, Sequence

from fabric_lsp.findings import Finding, Fix

_INSTALLED_DIR_NAMES = ("site-packages", "dist-packages")


def _real(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _running_interpreter_paths() -> tuple[str, ...]:
    """The library folders of the interpreter fabric-lsp runs on (read from its own configuration,
    nothing executed): an editable install's sources next to them stay editable only if checked."""
    found = []
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            found.append(sysconfig.get_path(name))
        except KeyError:
            pass
    return tuple(path for path in found if path)


class FixBounds:
    """The files fixes may edit: inside `roots` (files or directories), outside installed code."""

    def __init__(self, roots: Iterable[str], library_paths: Iterable[str] | Callable[[], Iterable[str]] = ()) -> None:
        self.roots = tuple(dict.fromkeys(_real(root) for root in roots))
        # Asked for only when a fix edits a file inside the roots (finding the interpreter's paths
        # may cost a probe).
        self._library_paths_of = library_paths
        self._library_paths: tuple[str, ...] | None = None

    @property
    def library_paths(self) -> tuple[str, ...]:
        if self._library_paths is None:
            given = self._library_paths_of() if callable(self._library_paths_of) else self._library_paths_of
            library = [_real(path) for path in (*(given or ()), *_running_interpreter_paths()) if path]
            # A sys.path entry that is (or is inside) a checked folder is the project itself, not a
            # library; one that contains a checked folder (a project inside site-packages) is a library.
            self._library_paths = tuple(
                dict.fromkeys(path for path in library if not any(_inside(path, root) for root in self.roots))
            )
        return self._library_paths

    def refusal(self, path: str) -> str | None:
        """Why a fix may not edit `path`; None when it may."""
        real = _real(path)
        if not any(_inside(real, root) for root in self.roots):
            if real != os.path.abspath(path):
                return f"it is a link to {real}, outside the checked paths"
            return "it is outside the checked paths"
        parts = real.split(os.sep)
        if any(part in _INSTALLED_DIR_NAMES for part in parts):
            return "it is inside an installed package folder"
        for folder in self.library_paths:
            if _inside(real, folder):
                return f"it is on the interpreter's library path ({folder})"
        directory = os.path.dirname(real)
        while True:
            if os.path.isfile(os.path.join(directory, "pyvenv.cfg")):
                return f"it is inside a virtual environment ({directory})"
            parent = os.path.dirname(directory)
            if parent == directory:
                return None
            directory = parent

    def allows_fix(self, fix: Fix) -> bool:
        return all(self.refusal(edit.path) is None for edit in fix.edits)

    def first_refusal(self, fix: Fix) -> tuple[str, str] | None:
        for edit in fix.edits:
            reason = self.refusal(edit.path)
            if reason is not None:
                return edit.path, reason
        return None


def confine(findings: Sequence[Finding], bounds: FixBounds) -> tuple[list[Finding], list[tuple[Finding, str, str]]]:
    """`findings` with every out-of-bounds fix replaced by the first in-bounds alternative (or
    removed), and the list of (finding as given, refused path, reason) for the notices."""
    kept: list[Finding] = []
    refused: list[tuple[Finding, str, str]] = []
    for finding in findings:
        fix = finding.fix
        refusal = bounds.first_refusal(fix) if fix is not None else None
        if refusal is None:
            kept.append(finding)
            continue
        refused.append((finding, *refusal))
        alternative = next((alt for alt in finding.alternatives if bounds.allows_fix(alt)), None)
        kept.append(replace(finding, fix=alternative))
    return kept, refused
