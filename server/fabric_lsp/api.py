"""The public Python API: `check_paths` and `check_source`, findings as plain data.

    >>> import fabric_lsp
    >>> findings = fabric_lsp.check_paths(["train.py"])
    >>> [(f["code"], f["location"]["row"]) for f in findings]
    [('FAB001', 41)]

Each finding is a dict in the shape of `fabric-lsp check --output-format json` (DESIGN.md "Command
line": ruff's keys, `Finding` below), because it *is* that output: the call runs the command line's
own `check` in this process (`--output-format json --no-cache --jobs 1`), so the findings, their
order, configuration (each file's closest `[tool.fabric-lsp]`, the user config), `# noqa`,
invalid-syntax entries and notebooks are exactly the command's. What the command would print on
stderr (notices about files it could not read, bad settings) is logged on the `fabric_lsp.api`
logger at WARNING level.

What the API does not do: it writes no cache (`--no-cache`) and nothing else, starts no worker
process, and runs nothing from the checked workspace (the repository's `[tool.fabric-lsp] python`
and its `.venv` are read as files, never run: README "Trust model"); an interpreter passed as
`python=` is run once, isolated (`python -I -S`), to read its `sys.path`.

The call holds a lock and points `sys.stdout`/`sys.stderr` (and, for `check_source`, `sys.stdin`)
at buffers while the command runs: output written by other threads meanwhile is captured with it.
"""

from __future__ import annotations

import gc
import io
import json
import logging
import os
import sys
import threading
from collections.abc import Iterable
from typing import Literal, Optional, TypedDict, Union

__all__ = [
    "CheckError",
    "Edit",
    "Finding",
    "Fix",
    "Location",
    "Related",
    "check_paths",
    "check_source",
]

log = logging.getLogger("fabric_lsp.api")
_LOCK = threading.Lock()

PathLike = Union[str, "os.PathLike[str]"]
Codes = Union[str, Iterable[str], None]


class Location(TypedDict):
    row: int  # 1-based (in a notebook: in the cell)
    column: int  # 1-based, in characters


class _EditRequired(TypedDict):
    content: str
    location: Location
    end_location: Location


class Edit(_EditRequired, total=False):
    filename: str  # only when the edit is in another file than the finding's (absolute)
    cell: int  # only in a notebook


class Fix(TypedDict):
    applicability: Literal["safe", "unsafe"]
    message: str  # the fix's title
    edits: list[Edit]


class _RelatedRequired(TypedDict):
    filename: str
    location: Location
    end_location: Location
    message: str


class Related(_RelatedRequired, total=False):
    cell: int  # only in a notebook


class Finding(TypedDict):
    code: str  # "FAB001" (or "invalid-syntax" for a file that does not parse)
    message: str
    severity: Literal["error", "warning", "information", "hint"]
    filename: str  # absolute
    cell: Optional[int]  # the notebook cell (1-based, every kind of cell counted); None in a .py file
    location: Location
    end_location: Location
    url: Optional[str]  # the knowledge-base record's source link
    noqa_row: int
    fix: Optional[Fix]
    related: list[Related]


class CheckError(RuntimeError):
    """`check` could not do its work (exit status 2): an internal error, or settings it refused.
    `findings` holds what it reported for the other files; `stderr` what it said."""

    def __init__(self, message: str, stderr: str, findings: list[Finding]) -> None:
        super().__init__(message)
        self.stderr = stderr
        self.findings = findings


def _codes(option: str, codes: Codes) -> list[str]:
    if codes is None:
        return []
    items = [codes] if isinstance(codes, str) else list(codes)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"{option}: expected rule codes as strings, got {item!r}")
    joined = ",".join(part.strip() for item in items for part in item.split(",") if part.strip())
    return [f"--{option}", joined] if joined else []


def _options(select: Codes, ignore: Codes, python: PathLike | None, hints: bool, config: PathLike | None) -> list[str]:
    argv = ["--output-format", "json", "--no-cache", "--jobs", "1", "--exit-zero"]
    argv += _codes("select", select) + _codes("ignore", ignore)
    if python is not None:
        argv += ["--python", os.fspath(python)]
    if hints:
        argv.append("--hints")
    if config is not None:
        argv += ["--config", os.fspath(config)]
    return argv


def _run(argv: list[str], stdin: bytes | None = None) -> list[Finding]:
    from fabric_lsp import cli

    with _LOCK:
        saved = sys.stdin, sys.stdout, sys.stderr
        threshold = gc.get_threshold()
        out, err = io.StringIO(), io.StringIO()
        try:
            sys.stdout, sys.stderr = out, err
            if stdin is not None:
                sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
            status = cli.main(["check", *argv])
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved
            gc.set_threshold(*threshold)  # the command tunes the collector for its own run
    said = err.getvalue()
    text = out.getvalue()
    try:
        findings = json.loads(text) if text.strip() else []
    except ValueError:
        findings = []
    if status not in (0, 1):
        problem = next((line for line in said.splitlines() if "error" in line), said.strip() or f"exit status {status}")
        if any(f"error: --{option}" in problem for option in ("select", "ignore", "python", "config")):
            raise ValueError(problem.removeprefix("fabric-lsp: error: "))
        raise CheckError(problem, said, findings)
    for line in said.splitlines():
        if line.strip():
            log.warning("%s", line)
    return findings


def check_paths(
    paths: Iterable[PathLike],
    *,
    select: Codes = None,
    ignore: Codes = None,
    python: PathLike | None = None,
    hints: bool = False,
    config: PathLike | None = None,
) -> list[Finding]:
    """The findings of `fabric-lsp check PATHS...` (files and directories, relative to the current
    directory), in its order.

    `select`/`ignore`: rule codes (a list, or a comma-separated string) as `--select`/`--ignore`
    (`select` replaces the configured selection, `ignore` adds to the configured ignore list).
    `python`: the interpreter whose packages the analysis reads (`--python`). `hints`: also
    hint-level findings. `config`: a settings file for every checked file instead of each file's
    closest `pyproject.toml`. Raises FileNotFoundError for a path that does not exist, TypeError
    for codes that are not strings, ValueError for an unknown code, an interpreter or settings file
    that does not exist, CheckError when the command fails otherwise (exit status 2)."""
    if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__"):
        raise TypeError("paths: expected a list of paths, not one path")
    names = [os.fspath(path) for path in paths]
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"paths: expected str paths, got {name!r}")
        if not os.path.lexists(name):
            raise FileNotFoundError(2, "No such file or directory", name)
    if not names:
        return []
    # `--` ends the options: a file named like an option is still a file.
    return _run([*_options(select, ignore, python, hints, config), "--", *names])


def check_source(
    source: Union[str, bytes],
    path: PathLike = "untitled.py",
    *,
    select: Codes = None,
    ignore: Codes = None,
    python: PathLike | None = None,
    hints: bool = False,
    config: PathLike | None = None,
) -> list[Finding]:
    """The findings of `source` checked as the file `path` would be (relative to the current
    directory; it need not exist, and if it does its content on disk is not read): its settings,
    and the other files of its project for imports, as `fabric-lsp check --stdin-filename PATH`.
    A path ending in `.ipynb` takes the notebook's JSON. Same options and errors as check_paths."""
    if isinstance(source, str):
        data = source.encode("utf-8", "surrogatepass")
    elif isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    else:
        raise TypeError(f"source: expected str or bytes, got {type(source).__name__}")
    name = os.fspath(path)
    if not isinstance(name, str) or not name:
        raise TypeError("path: expected a file name")
    return _run([*_options(select, ignore, python, hints, config), "--stdin-filename", name], stdin=data)
