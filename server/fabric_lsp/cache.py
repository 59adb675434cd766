"""The persistent cache of `fabric-lsp check`, like ruff's `.ruff_cache`.

`.fabric-lsp-cache/` in the project root (the folder of the pyproject.toml holding
`[tool.fabric-lsp]`, else the current directory) holds one JSON file per (tool, analysis
interpreter, settings):

    .fabric-lsp-cache/<version>/check-<fingerprint>.json

- tool: the fabric-lsp version and its own files (any change of the package's code or data);
- interpreter: its path, its sys.path, the modification times of its site-packages folders (a
  `pip install` or uninstall changes them) and of the .pth files there; jedi's and Python's versions;
- settings: everything of the Config that changes findings (select, ignore, severity, hints, ...).

A project's entry holds the findings of the files checked and the state of every Python file of
the project (SHA-256 of its bytes; the size and mtime are kept to skip re-reading unchanged files):
the files of a project are analysed as one program, so any change among them, a file added or a
file removed, makes the entry stale. Libraries outside the project are covered by the interpreter
fingerprint.
Unreadable or corrupted cache files are ignored (and replaced); the folder holds a `.gitignore`
so that it is never committed. `--no-cache` turns it off.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import stat as stat_module
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Iterable

import fabric_lsp
from fabric_lsp.config import Config
from fabric_lsp.findings import Applicability, Finding, Fix, Position, Related, Severity, Span, TextEdit

CACHE_DIR_NAME = ".fabric-lsp-cache"
SCHEMA = 2  # 2: one entry per project
_PACKAGE_DIR = Path(fabric_lsp.__file__).resolve().parent


# ---------------------------------------------------------------------------------------------
# Fingerprints


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:24]


@functools.lru_cache(maxsize=1)
def tool_fingerprint() -> str:
    """The version and the package's own files: a changed rule or table means other findings."""
    files = []
    for path in sorted(_PACKAGE_DIR.rglob("*")):
        if path.suffix in (".py", ".json") and "__pycache__" not in path.parts:
            info = path.stat()
            files.append((str(path.relative_to(_PACKAGE_DIR)), info.st_size, info.st_mtime_ns))
    return _digest(fabric_lsp.__version__, files)


@functools.lru_cache(maxsize=16)
def interpreter_fingerprint(python: str, runnable: bool = False) -> str:
    """The analysis interpreter and the state of its installed packages. A virtual environment is
    read as files (venv_sys_path), never run; another interpreter only when the user chose it
    (`runnable`), through the same cached sys.path read the analysis makes."""
    from fabric_lsp.analysis.workspace import Interpreter

    sys_path = Interpreter(python, runnable).sys_path() or ()
    stamps = []
    for entry in sys_path:
        with contextlib.suppress(OSError):
            stamps.append((entry, os.stat(entry).st_mtime_ns))
            if entry.endswith(("site-packages", "dist-packages")):
                for name in sorted(os.listdir(entry)):
                    if name.endswith(".pth"):
                        stamps.append((name, os.stat(os.path.join(entry, name)).st_mtime_ns))
    try:
        import jedi

        jedi_version = jedi.__version__
    except ImportError:
        jedi_version = None
    return _digest(os.path.abspath(python), stamps, jedi_version, sys.version)


def config_fingerprint(config: Config) -> str:
    records = []  # extra knowledge-base records: their files, as they are now
    for folder in config.extend_records:
        for path in sorted(Path(folder).rglob("*")):
            with contextlib.suppress(OSError):
                info = path.stat()
                records.append((str(path), info.st_size, info.st_mtime_ns))
    return _digest(
        sorted(config.select), sorted(config.ignore), sorted((k, str(v.value)) for k, v in config.severity.items()),
        config.python, list(config.extend_records), records, config.hints, config.root, config.trusted,
    )


def cache_root(config: Config, cwd: str | None = None) -> Path:
    return Path(config.root or cwd or os.getcwd()) / CACHE_DIR_NAME


def prepare_dir(root: Path) -> Path:
    """The versioned folder, created with a .gitignore and a CACHEDIR.TAG (like ruff's)."""
    folder = root / fabric_lsp.__version__
    folder.mkdir(parents=True, exist_ok=True)
    ignore = root / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# Automatically created by fabric-lsp.\n*\n")
    tag = root / "CACHEDIR.TAG"
    if not tag.exists():
        tag.write_text("Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by fabric-lsp.\n")
    return folder


def read_json(path: Path) -> Any:
    """The JSON in `path`, or None when it is missing, unreadable or not JSON."""
    try:
        with open(path, "rb") as handle:
            return json.loads(handle.read())
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None


def write_json(path: Path, data: Any) -> None:
    """Atomically (a reader sees the old file or the new one, never half of one)."""
    handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, separators=(",", ":"))
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it private; a cache file need not be
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@functools.lru_cache(maxsize=1)
def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# ---------------------------------------------------------------------------------------------
# Findings as JSON


def _position(data: list[int]) -> Position:
    return Position(int(data[0]), int(data[1]))


def _span(data: dict) -> Span:
    return Span(str(data["path"]), _position(data["start"]), _position(data["end"]))


def _span_json(span: Span) -> dict:
    return {"path": span.path, "start": [span.start.line, span.start.character], "end": [span.end.line, span.end.character]}


def finding_to_json(finding: Finding) -> dict:
    fix = None
    if finding.fix is not None:
        fix = {
            "title": finding.fix.title,
            "applicability": finding.fix.applicability.value,
            "edits": [
                {"path": e.path, "start": [e.start.line, e.start.character], "end": [e.end.line, e.end.character], "text": e.new_text}
                for e in finding.fix.edits
            ],
        }
    return {
        "code": finding.code,
        "severity": finding.severity.value,
        "span": _span_json(finding.span),
        "message": finding.message,
        "record": finding.record_id,
        "related": [{"span": _span_json(r.span), "message": r.message} for r in finding.related],
        "fix": fix,
        "context": dict(finding.context),
    }


def finding_from_json(data: dict) -> Finding:
    fix = None
    if data.get("fix") is not None:
        raw = data["fix"]
        fix = Fix(
            str(raw["title"]),
            Applicability(raw["applicability"]),
            tuple(TextEdit(str(e["path"]), _position(e["start"]), _position(e["end"]), str(e["text"])) for e in raw["edits"]),
        )
    return Finding(
        code=str(data["code"]),
        severity=Severity(data["severity"]),
        span=_span(data["span"]),
        message=str(data["message"]),
        record_id=str(data["record"]),
        related=tuple(Related(_span(r["span"]), str(r["message"])) for r in data["related"]),
        fix=fix,
        context={str(k): str(v) for k, v in data.get("context", {}).items()},
    )


# ---------------------------------------------------------------------------------------------
# File stamps


MAX_HASHED_SIZE = 16 * 1024 * 1024


def file_sha(path: str) -> str | None:
    """SHA-256 of a regular file's bytes (never opens a FIFO or a device: that could block)."""
    try:
        with open(path, "rb", opener=_nonblocking) as handle:
            info = os.fstat(handle.fileno())
            if not stat_module.S_ISREG(info.st_mode) or info.st_size > MAX_HASHED_SIZE:
                return None
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def _nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | getattr(os, "O_NONBLOCK", 0))


def stamp(path: str) -> list:
    """[path, mtime_ns, size, sha256 or None]: folders and missing paths have no digest; other
    files that are not regular files have none either (and are never cached as content)."""
    try:
        info = os.stat(path)
    except OSError:
        return [path, None, None, None]
    if stat_module.S_ISDIR(info.st_mode):
        return [path, info.st_mtime_ns, None, None]
    if not stat_module.S_ISREG(info.st_mode):
        return [path, info.st_mtime_ns, -1, None]
    return [path, info.st_mtime_ns, info.st_size, file_sha(path)]


def unchanged(saved: list) -> bool:
    path, mtime, size, sha = saved
    try:
        info = os.stat(path)
    except OSError:
        return mtime is None
    if mtime is None:
        return False
    if sha is None:  # a folder: its entries changed if its mtime did (a special file: never valid)
        return size is None and info.st_mtime_ns == mtime and stat_module.S_ISDIR(info.st_mode)
    if info.st_mtime_ns == mtime and info.st_size == size:
        return True
    return info.st_size == size and file_sha(path) == sha  # touched, not changed


# ---------------------------------------------------------------------------------------------
# The findings cache


class FindingsCache:
    """Findings per project (a project's files are analysed together, as one program): valid while
    the project's Python files (which files there are, and each one's content), the analysis
    interpreter with its packages, the tool and the settings are unchanged."""

    def __init__(self, path: Path, projects: dict[str, dict] | None = None) -> None:
        self.path = path
        self.projects: dict[str, dict] = projects or {}
        self.dirty = False
        self.hits = 0
        self._lock = threading.Lock()

    @classmethod
    def open(cls, config: Config, python: str, cwd: str | None = None, runnable: bool = False) -> "FindingsCache | None":
        """The cache for this configuration, or None when its folder cannot be created."""
        try:
            folder = prepare_dir(cache_root(config, cwd))
        except OSError:
            return None
        name = f"check-{_digest(tool_fingerprint(), interpreter_fingerprint(python, runnable), config_fingerprint(config))}.json"
        data = read_json(folder / name)
        projects = None
        if isinstance(data, dict) and data.get("schema") == SCHEMA and isinstance(data.get("projects"), dict):
            projects = data["projects"]
        return cls(folder / name, projects)

    def lookup(self, root: str, interpreter: str, paths: Iterable[str], files: Iterable[str]) -> dict[str, tuple[Finding, ...]] | None:
        """The findings stored for `paths` of the project at `root`, if the project's files are the
        same `files` with the same contents, analysed against the same interpreter (fingerprint)."""
        entry = self.projects.get(root)
        if not isinstance(entry, dict) or entry.get("interpreter") != interpreter:
            return None
        try:
            stored = entry["files"]
            if set(stored) != set(files):
                return None  # a file appeared or went away: another program
            if not all(unchanged([path, *state]) for path, state in stored.items()):
                return None
            found = {path: tuple(finding_from_json(item) for item in entry["findings"][path]) for path in paths}
        except (KeyError, TypeError, ValueError, IndexError):
            return None  # an entry of another shape: as if absent
        self.hits += 1
        return found

    def file_states(self, files: Iterable[str]) -> dict[str, list] | None:
        """[mtime_ns, size, sha256] of every file of a project about to be checked (taken before the
        check, so that a change made during it makes the entry stale rather than wrong); None when
        one of them is not a regular file we can hash."""
        states = {}
        for path in files:
            saved = stamp(path)
            if saved[3] is None:
                return None
            states[path] = saved[1:]
        return states

    def store(self, root: str, interpreter: str, states: dict[str, list] | None,
              findings: dict[str, Iterable[Finding]]) -> None:
        if states is None:
            return
        with self._lock:
            self.projects[root] = {
                "interpreter": interpreter,
                "files": states,
                "findings": {path: [finding_to_json(f) for f in found] for path, found in findings.items()},
            }
            self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        with contextlib.suppress(OSError):
            write_json(self.path, {"schema": SCHEMA, "projects": self.projects})
            self.dirty = False


def stamps_for(paths: Iterable[str], checked: str) -> list[list]:
    """The saved stamps of the dependencies an analysis recorded (the checked file excluded)."""
    return [stamp(path) for path in sorted(set(paths)) if path != checked]
