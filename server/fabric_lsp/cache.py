"""The persistent cache of `fabric-lsp check`, like ruff's `.ruff_cache`.

`.fabric-lsp-cache/` in the project root (the folder of the pyproject.toml holding
`[tool.fabric-lsp]`, else the current directory) holds one JSON file per (tool, analysis
interpreter, settings):

    .fabric-lsp-cache/<version>/check-<keyed fingerprint>.json

- tool: the fabric-lsp version and its own files (any change of the package's code or data);
- interpreter: its path, its sys.path, the modification times of its site-packages folders (a
  `pip install` or uninstall changes them) and of the .pth files there; jedi's and Python's versions;
- settings: everything of the Config that changes findings (select, ignore, per-file-ignores,
  severity, hints, ...). Each configuration of a run (each settings file) has its own file.

A project's entry holds the findings of the files checked and the state of every Python file of
the project (SHA-256 of its bytes; the size and mtime are kept to skip re-reading unchanged files):
the files of a project are analysed as one program, so any change among them, a file added or a
file removed, makes the entry stale. Libraries outside the project are covered by the interpreter
fingerprint.
Unreadable or corrupted cache files are ignored (and replaced); the folder holds a `.gitignore`
so that it is never committed. `--no-cache` turns it off; `--cache-dir PATH` or FABRIC_LSP_CACHE_DIR
(never a settings file) puts every project's files in PATH instead.

Integrity (the repository may be hostile): each file is signed (HMAC-SHA256, a per-user secret,
see user_secret) and named after the secret and the project's real path, so a committed or
another user's cache is never used; fix edits are never stored (the CLI analyses again when its
output needs them); no link, FIFO, device or oversized file is followed or read (CacheFolder).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import json
import os
import stat as stat_module
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterable

from fabric_lsp.version import __version__
from fabric_lsp.settings.config import Config
from fabric_lsp.sources.files import read_bytes, unchanged_on_disk
from fabric_lsp.findings import Applicability, Finding, Fix, Position, Related, Severity, Span, TextEdit

CACHE_DIR_NAME = ".fabric-lsp-cache"
SCHEMA = 4  # 2: one entry per project; 3: with its programs and notices; 4: with what they read outside it
_PACKAGE_DIR = Path(__file__).resolve().parent  # the package folder (cache.py sits at its root)


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
    return _digest(__version__, files)


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
    # Not `extend-records`: a check never reads extension records (only explain and hover do), so
    # they change no finding, and listing their folders cost a walk of whatever they name.
    return _digest(
        sorted(config.select), sorted(config.ignore), sorted((k, str(v.value)) for k, v in config.severity.items()),
        config.python, config.hints, config.root, config.trusted,
        sorted((pattern, sorted(codes)) for pattern, codes in config.per_file_ignores),
    )


# Where the cache lives instead of `<project>/.fabric-lsp-cache` (ruff's RUFF_CACHE_DIR, `--cache-dir`):
# from the environment or the command line only, never from a settings file of the checked tree.
CACHE_DIR_ENV = "FABRIC_LSP_CACHE_DIR"


def project_folder(config: Config, cwd: str | None = None) -> Path:
    return Path(config.root or cwd or os.getcwd())


def cache_root(config: Config, cwd: str | None = None, cache_dir: str | None = None) -> Path:
    if cache_dir:
        return Path(os.path.abspath(cache_dir))
    return project_folder(config, cwd) / CACHE_DIR_NAME


# ---------------------------------------------------------------------------------------------
# Integrity: a per-user secret signs every cache file (HMAC-SHA256), so a `.fabric-lsp-cache/`
# committed to a repository or written by another user is never used.

MAX_CACHE_FILE_SIZE = 64 * 1024 * 1024
_SECRET_BYTES = 32
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class CacheUnavailable(Exception):
    """Caching is off for this run; the message is the one-line reason."""


def secret_path() -> Path:
    folder = os.environ.get("FABRIC_LSP_CACHE_SECRET_DIR")
    if folder:
        return Path(folder) / "secret"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "fabric-lsp" / "secret"


def _check_secret(data: bytes) -> bytes:
    text = data.strip()
    if len(text) != 2 * _SECRET_BYTES:
        raise OSError("malformed")
    return bytes.fromhex(text.decode("ascii"))


@functools.lru_cache(maxsize=4)
def _load_secret(path: str) -> bytes:
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "wb") as out:
            out.write(os.urandom(_SECRET_BYTES).hex().encode() + b"\n")
    for _ in range(50):  # another process may be writing it right now
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
        except OSError as error:
            raise OSError(f"cannot open: {error.strerror}") from None
        try:
            info = os.fstat(fd)
            if not stat_module.S_ISREG(info.st_mode):
                raise OSError("not a regular file")
            if hasattr(os, "getuid") and info.st_uid != os.getuid():
                raise OSError("owned by another user")
            if info.st_mode & 0o077:
                raise OSError("readable or writable by other users (want mode 0600)")
            data = os.read(fd, 4 * _SECRET_BYTES)
        finally:
            os.close(fd)
        with contextlib.suppress(OSError, ValueError):
            return _check_secret(data)
        time.sleep(0.02)
    raise OSError("malformed (expected 64 hexadecimal digits)")


def user_secret() -> bytes:
    """The per-user secret, created on first use; CacheUnavailable when it cannot be used."""
    path = secret_path()
    try:
        return _load_secret(str(path))
    except (OSError, ValueError) as error:
        reason = error.strerror.lower() if isinstance(error, OSError) and error.strerror else str(error)
        raise CacheUnavailable(f"cache secret {path}: {reason}; caching is off") from None


def sign(secret: bytes, name: str, body: bytes) -> bytes:
    """The cache file's bytes: its MAC (over its own name and body), a newline, the body."""
    mac = hmac.new(secret, name.encode() + b"\0" + body, hashlib.sha256).hexdigest()
    return mac.encode() + b"\n" + body


def verified_body(secret: bytes, name: str, data: bytes) -> bytes | None:
    mac, _, body = data.partition(b"\n")
    expected = hmac.new(secret, name.encode() + b"\0" + body, hashlib.sha256).hexdigest().encode()
    return body if hmac.compare_digest(mac, expected) else None


def _open_folder(name: str, dir_fd: int | None) -> int:
    """The folder `name` (created if missing) inside `dir_fd`, never through a symbolic link."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o777, dir_fd=dir_fd)
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=dir_fd)


def _create_new(name: str, dir_fd: int, text: str) -> None:
    """Write `name` unless something (even a dangling link) is already there."""
    with contextlib.suppress(FileExistsError):
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666, dir_fd=dir_fd)
        with os.fdopen(fd, "w") as out:
            out.write(text)


class CacheFolder:
    """`<root>/.fabric-lsp-cache/<version>/`, every access relative to an open folder, no link
    followed below the project root."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _open(self) -> int:
        base = os.open(str(self.root.parent), os.O_RDONLY | os.O_DIRECTORY)
        try:
            cache_fd = _open_folder(self.root.name, base)
        finally:
            os.close(base)
        try:
            _create_new(".gitignore", cache_fd, "# Automatically created by fabric-lsp.\n*\n")
            _create_new("CACHEDIR.TAG", cache_fd, "Signature: 8a477f597d28d172789f06886806bc55\n"
                        "# This file is a cache directory tag created by fabric-lsp.\n")
            return _open_folder(__version__, cache_fd)
        finally:
            os.close(cache_fd)

    def read(self, name: str) -> bytes:
        fd = self._open()
        try:
            return read_bytes(name, MAX_CACHE_FILE_SIZE, follow=False, dir_fd=fd)
        finally:
            os.close(fd)

    def write(self, name: str, data: bytes) -> None:
        """Atomically (a reader sees the old file or the new one, never half of one)."""
        fd = self._open()
        try:
            temporary = f".tmp-{os.getpid()}-{os.urandom(6).hex()}"
            out = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=fd)
            try:
                with os.fdopen(out, "wb") as handle:
                    handle.write(data)
                os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary, dir_fd=fd)
                raise
        finally:
            os.close(fd)


# ---------------------------------------------------------------------------------------------
# Findings as JSON


def _position(data: list[int]) -> Position:
    return Position(int(data[0]), int(data[1]))


def _span(data: dict) -> Span:
    return Span(str(data["path"]), _position(data["start"]), _position(data["end"]))


def _span_json(span: Span) -> dict:
    return {"path": span.path, "start": [span.start.line, span.start.character], "end": [span.end.line, span.end.character]}


def _fix_json(fix: Fix) -> dict:
    # No edit is ever stored: only what the text and github formats show and what confinement
    # needs (the files a fix would edit). Output that needs the edits recomputes the project.
    return {"title": fix.title, "applicability": fix.applicability.value, "paths": sorted({e.path for e in fix.edits})}


def _fix_from_json(raw: dict) -> Fix:
    # Placeholder edits: empty insertions at 1:1 of each file (a no-op if ever applied).
    start = Position(0, 0)
    return Fix(str(raw["title"]), Applicability(raw["applicability"]),
               tuple(TextEdit(str(path), start, start, "") for path in raw["paths"]))


def finding_to_json(finding: Finding) -> dict:
    return {
        "code": finding.code,
        "severity": finding.severity.value,
        "span": _span_json(finding.span),
        "message": finding.message,
        "notes": list(finding.notes),
        "record": finding.record_id,
        "related": [{"span": _span_json(r.span), "message": r.message} for r in finding.related],
        "fix": _fix_json(finding.fix) if finding.fix is not None else None,
        "alternatives": [_fix_json(alt) for alt in finding.alternatives],
        "context": dict(finding.context),
    }


def finding_from_json(data: dict) -> Finding:
    return Finding(
        code=str(data["code"]),
        severity=Severity(data["severity"]),
        span=_span(data["span"]),
        message=str(data["message"]),
        record_id=str(data["record"]),
        related=tuple(Related(_span(r["span"]), str(r["message"])) for r in data["related"]),
        fix=_fix_from_json(data["fix"]) if data.get("fix") is not None else None,
        alternatives=tuple(_fix_from_json(alt) for alt in data.get("alternatives", ())),
        context={str(k): str(v) for k, v in data.get("context", {}).items()},
        notes=tuple(str(n) for n in data.get("notes", ())),
    )


# ---------------------------------------------------------------------------------------------
# File stamps


MAX_HASHED_SIZE = 16 * 1024 * 1024


def file_sha(path: str) -> str | None:
    """SHA-256 of a regular file's bytes (never opens a FIFO or a device: that could block)."""
    try:
        return hashlib.sha256(read_bytes(path, MAX_HASHED_SIZE)).hexdigest()
    except OSError:
        return None


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

    def __init__(self, folder: CacheFolder, name: str, secret: bytes, projects: dict[str, dict] | None = None) -> None:
        self.folder = folder
        self.name = name
        self.secret = secret
        self.projects: dict[str, dict] = projects or {}
        self.dirty = False
        self.hits = 0
        self.program_hits = 0
        self._lock = threading.Lock()
        self.jedi = JediAnswers(folder, secret)  # jedi's answers, in the same folder (read when asked)

    @classmethod
    def open(cls, config: Config, python: str, cwd: str | None = None, runnable: bool = False,
             cache_dir: str | None = None) -> "FindingsCache | None":
        """The cache for this configuration, or None when it cannot be used (CacheUnavailable when
        the user's secret cannot be: the caller says so). `cache_dir`: the folder named by
        `--cache-dir` or FABRIC_LSP_CACHE_DIR, shared by every project (its files are keyed by the
        project's real path too)."""
        secret = user_secret()
        root = cache_root(config, cwd, cache_dir)
        folder = CacheFolder(root)
        try:
            if cache_dir:
                os.makedirs(root.parent, exist_ok=True)
            os.close(folder._open())  # a folder we cannot create or enter: no cache (and no probing)
        except OSError:
            return None
        # Not predictable without the secret; another project (real path) never shares a file.
        key = hmac.new(secret, json.dumps([
            os.path.realpath(project_folder(config, cwd)), tool_fingerprint(), interpreter_fingerprint(python, runnable),
            config_fingerprint(config)]).encode(), hashlib.sha256).hexdigest()[:32]
        name = f"check-{key}.json"
        projects = None
        try:
            body = verified_body(secret, name, folder.read(name))
            data = json.loads(body) if body is not None else None
        except FileNotFoundError:
            data = None
        except (OSError, ValueError, UnicodeDecodeError, RecursionError):
            data = None  # a link, a FIFO, a device, too large, corrupted: ignored (and replaced)
        if isinstance(data, dict) and data.get("schema") == SCHEMA and isinstance(data.get("projects"), dict):
            projects = data["projects"]
        return cls(folder, name, secret, projects)

    def lookup(self, root: str, interpreter: str, paths: Iterable[str], files: Iterable[str],
               need_edits: bool = False) -> dict[str, tuple[Finding, ...]] | None:
        """The findings stored for `paths` of the project at `root`, if the project's files are the
        same `files` with the same contents, analysed against the same interpreter (fingerprint).
        `need_edits`: a project with a finding that has a fix is a miss (edits are never stored)."""
        entry = self.projects.get(root)
        if not isinstance(entry, dict) or entry.get("interpreter") != interpreter:
            return None
        try:
            if need_edits and any(item.get("fix") is not None or item.get("alternatives")
                                  for found in entry["findings"].values() for item in found):
                return None
            stored = entry["files"]
            if set(stored) != set(files):
                return None  # a file appeared or went away: another program
            if not all(unchanged([path, *state]) for path, state in stored.items()):
                return None
            if not unchanged_on_disk(entry["reads"].items()):
                return None  # a module or folder outside the project that the analysis read changed
            found = {path: tuple(finding_from_json(item) for item in entry["findings"][path]) for path in paths}
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            return None  # an entry of another shape: as if absent
        self.hits += 1
        return found

    def notices(self, root: str) -> tuple[str, ...]:
        """The analysis notices stored with the project's entry (after a hit of lookup)."""
        entry = self.projects.get(root)
        notes = entry.get("notices") if isinstance(entry, dict) else None
        return tuple(n for n in notes if isinstance(n, str)) if isinstance(notes, list) else ()

    # Programs: a project's entry also keeps each program's results by program key (cli.program_key:
    # its files' texts, the project's file list, the files asked about), so that after an edit only
    # the programs holding the edited file are solved again.
    def lookup_program(self, root: str, interpreter: str, key: str,
                       need_edits: bool = False) -> tuple[dict[str, tuple[Finding, ...]], tuple[str, ...]] | None:
        stored = self.stored_program(root, key, interpreter)
        if stored is None:
            return None
        try:
            if need_edits and any(item.get("fix") is not None or item.get("alternatives")
                                  for found in stored["findings"].values() for item in found):
                return None
            if not unchanged_on_disk(stored["reads"].items()):
                return None
            findings = {path: tuple(finding_from_json(item) for item in found) for path, found in stored["findings"].items()}
            notes = tuple(n for n in stored["notices"] if isinstance(n, str))
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            return None
        self.program_hits += 1
        return findings, notes

    def stored_program(self, root: str, key: str, interpreter: str) -> dict | None:
        entry = self.projects.get(root)
        if not isinstance(entry, dict) or entry.get("interpreter") != interpreter:
            return None
        programs = entry.get("programs")
        stored = programs.get(key) if isinstance(programs, dict) else None
        return stored if isinstance(stored, dict) else None

    @staticmethod
    def program_entry(findings: dict[str, Iterable[Finding]], notices: list[str], reads: dict) -> dict:
        """A program's stored form: its findings, notices, and what it read outside the project
        (path -> disk identity, Program.outside_reads), checked by lookup_program."""
        return {"findings": {path: [finding_to_json(f) for f in found] for path, found in findings.items()},
                "notices": list(notices), "reads": {path: list(i) if i else None for path, i in reads.items()}}

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
              findings: dict[str, Iterable[Finding]], notices: list[str] = (), programs: dict | None = None) -> None:
        if states is None:
            return
        with self._lock:
            programs = programs or {}  # this run's programs only: the others are stale
            reads: dict = {}  # what any of them read outside the project (checked by lookup)
            for program in programs.values():
                reads.update(program.get("reads") or {})
            self.projects[root] = {
                "interpreter": interpreter,
                "files": states,
                "findings": {path: [finding_to_json(f) for f in found] for path, found in findings.items()},
                "notices": list(notices),
                "programs": programs,
                "reads": reads,
            }
            self.dirty = True

    def save(self) -> None:
        self.jedi.save()
        if not self.dirty:
            return
        body = json.dumps({"schema": SCHEMA, "projects": self.projects}, separators=(",", ":")).encode()
        with contextlib.suppress(OSError):
            self.folder.write(self.name, sign(self.secret, self.name, body))
            self.dirty = False


# ---------------------------------------------------------------------------------------------
# jedi's answers about installed packages

JEDI_SCHEMA = 1
MAX_JEDI_ANSWERS = 4096  # per file (project root, interpreter, tool): the oldest are dropped beyond
MAX_JEDI_READS = 4096  # files one answer may depend on; an answer that read more is not kept
MAX_JEDI_FILE_SIZE = 16 * 1024 * 1024


def _identity_json(identity) -> list | None:
    return list(identity) if identity is not None else None


class JediAnswers:
    """What jedi answered about names of installed packages (analysis.workspace.Workspace
    .module_attribute), kept in the findings cache folder so that the next `check` does not ask
    again: one signed file per (project root, analysis interpreter with its sys.path, tool),

        .fabric-lsp-cache/<version>/jedi-<keyed fingerprint>.json

    named like the findings files (HMAC of the per-user secret: a committed or another user's file is
    never used; read through CacheFolder: no link, FIFO or oversized file). The interpreter's
    fingerprint (its sys.path folders, its site-packages and .pth files: any install or uninstall)
    is part of the name. Each answer also keeps the disk identity (sources.files.disk_identity) of
    every file jedi parsed for it, of the folders holding them, of the module asked about and of the
    files of the answer, and which entries of the project root could shadow a top-level package it
    imported: it is used only while all of them are unchanged, so it is what jedi would answer.
    Answers are added, never trusted blindly: a corrupted file is ignored and replaced."""

    def __init__(self, folder: CacheFolder, secret: bytes) -> None:
        self.folder = folder
        self.secret = secret
        self._files: dict[str, dict] = {}  # file name -> key -> entry (read on first use)
        self._names: dict[int, tuple[object, str]] = {}  # id(workspace) -> (workspace, file name)
        self.fresh: dict[str, dict] = {}  # file name -> key -> entry, added by this process
        self.hits = 0
        self._lock = threading.Lock()

    def _name(self, workspace) -> str:
        known = self._names.get(id(workspace))
        if known is not None and known[0] is workspace:
            return known[1]
        interpreter = workspace.interpreter
        key = hmac.new(self.secret, json.dumps([
            "jedi", os.path.realpath(workspace.jedi_root), tool_fingerprint(),
            interpreter_fingerprint(interpreter.python, interpreter.runnable), list(workspace.jedi_sys_path),
        ]).encode(), hashlib.sha256).hexdigest()[:32]
        name = f"jedi-{key}.json"
        self._names[id(workspace)] = (workspace, name)
        return name

    def _read(self, name: str) -> dict:
        try:
            data = self.folder.read(name)
            if len(data) > MAX_JEDI_FILE_SIZE:
                return {}
            body = verified_body(self.secret, name, data)
            loaded = json.loads(body) if body is not None else None
        except (OSError, ValueError, UnicodeDecodeError, RecursionError):
            return {}  # missing, a link, a FIFO, a device, too large, corrupted: ignored (and replaced)
        if not isinstance(loaded, dict) or loaded.get("schema") != JEDI_SCHEMA:
            return {}
        answers = loaded.get("answers")
        return {key: entry for key, entry in answers.items() if isinstance(entry, dict)} if isinstance(answers, dict) else {}

    def _answers(self, name: str) -> dict:
        with self._lock:
            answers = self._files.get(name)
            if answers is None:
                answers = self._files[name] = self._read(name)
                answers.update(self.fresh.get(name, {}))
            return answers

    @staticmethod
    def _key(module_path: str, name: str) -> str:
        return f"{module_path}\0{name}"

    def lookup(self, workspace, module_path: str, name: str):
        """(definitions, notice or None) as jedi answered for `name` of `module_path`, if every file
        it depends on is unchanged; else None (jedi is asked)."""
        from fabric_lsp.analysis.workspace import Definition

        entry = self._answers(self._name(workspace)).get(self._key(module_path, name))
        if entry is None:
            return None
        try:
            reads = entry["reads"]
            if not isinstance(reads, list) or not unchanged_on_disk((str(path), identity) for path, identity in reads):
                return None
            if entry["shadows"] != workspace.root_shadows(entry["tops"]):
                return None
            found = tuple(Definition(str(path), int(line), int(column), str(kind), None if full is None else str(full))
                          for path, line, column, kind, full in entry["found"])
            note = entry["note"]
            if note is not None and not isinstance(note, str):
                return None
        except (KeyError, TypeError, ValueError, AttributeError):
            return None  # an entry of another shape: as if absent
        self.hits += 1
        return found, note

    def remember(self, workspace, module_path: str, name: str, found, note: str | None, reads, tops) -> None:
        """Keep jedi's answer with the disk identities of what it depends on (taken now, after
        jedi read the files: a file changed meanwhile only makes the answer stale next time)."""
        from fabric_lsp.sources.files import disk_identity

        paths = set(reads) | {module_path} | {definition.path for definition in found}
        paths |= {os.path.dirname(path) for path in list(paths)}
        if len(paths) > MAX_JEDI_READS:
            return
        tops = sorted(tops)
        entry = {
            "found": [[d.path, d.line, d.column, d.kind, d.full_name] for d in found],
            "note": note,
            "reads": [[path, _identity_json(disk_identity(path))] for path in sorted(paths)],
            "tops": tops,
            "shadows": workspace.root_shadows(tops),
        }
        name_of_file = self._name(workspace)
        key = self._key(module_path, name)
        self._answers(name_of_file)[key] = entry
        with self._lock:
            self.fresh.setdefault(name_of_file, {})[key] = entry

    def take_fresh(self) -> dict:
        """The answers this process added (a forked worker sends them to its parent: merge)."""
        with self._lock:
            fresh, self.fresh = self.fresh, {}
        return fresh

    def merge(self, fresh: dict) -> None:
        with self._lock:
            for name, entries in fresh.items():
                if isinstance(entries, dict):
                    self.fresh.setdefault(name, {}).update(entries)
                    if name in self._files:
                        self._files[name].update(entries)

    def save(self) -> None:
        """Write each file with new answers: what is on disk now (another run may have added some)
        with ours over it, the oldest dropped beyond MAX_JEDI_ANSWERS, replaced atomically."""
        fresh = self.take_fresh()
        for name, entries in fresh.items():
            answers = self._read(name)
            for key, entry in entries.items():
                answers.pop(key, None)
                answers[key] = entry
            while len(answers) > MAX_JEDI_ANSWERS:
                answers.pop(next(iter(answers)))
            body = json.dumps({"schema": JEDI_SCHEMA, "answers": answers}, separators=(",", ":")).encode()
            if len(body) > MAX_JEDI_FILE_SIZE:
                continue
            with contextlib.suppress(OSError):
                self.folder.write(name, sign(self.secret, name, body))


def stamps_for(paths: Iterable[str], checked: str) -> list[list]:
    """The saved stamps of the dependencies an analysis recorded (the checked file excluded)."""
    return [stamp(path) for path in sorted(set(paths)) if path != checked]
