"""One analysis workspace: a root folder, the interpreter whose packages are analysed, and jedi.

This is the only module that imports jedi. jedi parses; it never imports user code here:
a workspace's .venv is read as files (venv_sys_path) unless the user trusts it; an interpreter the
user chose has its sys.path read with `-I -S` (no site hooks, no .pth code),
jedi's helper process is our own interpreter, and unsafe extensions stay off. jedi answers only
for names inside libraries that their binding statements do not answer (analysis/program.py), and
each answer is bounded by counting jedi's inference steps, never by time.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass

from fabric_lsp import timing
from fabric_lsp.sources.files import read_pth_lines, read_text
from fabric_lsp.sources.files import reason as file_reason

log = logging.getLogger("fabric_lsp.analysis")

MAX_FINDER_BYTES = 1024 * 1024  # a setuptools editable finder module (its MAPPING literal is read)
MAX_PYVENV_CFG_BYTES = 64 * 1024

# Runs under `-I -S`: no site hooks. Without `site`, sys.prefix is the *base* interpreter's, so a
# virtual environment is recognised here from its pyvenv.cfg (what site.venv() does, minus the .pth
# processing it would run) and its own site-packages are listed instead of the base ones. The venv's
# lib/pythonX.Y/site-packages is named outright: Debian's site.getsitepackages() gives a prefix its
# dist-packages folders, where a venv of Debian's python has none. The list is printed with ascii()
# (a literal read back by ast.literal_eval, every path exact, surrogates included): importing json
# there (re, enum, collections) was half of the probe's 40 ms, the fixed cost of `--python`.
_SYS_PATH_PROBE = (
    "import os, site, sys\n"
    "exe_dir = os.path.dirname(os.path.abspath(sys.executable))\n"
    "prefixes, user, own = list(site.PREFIXES), True, []\n"
    "for conf in (os.path.join(exe_dir, 'pyvenv.cfg'), os.path.join(os.path.dirname(exe_dir), 'pyvenv.cfg')):\n"
    "    if os.path.isfile(conf):\n"
    "        system = False\n"
    "        with open(conf, encoding='utf-8', errors='replace') as handle:\n"
    "            for line in handle:\n"
    "                key, sep, value = line.partition('=')\n"
    "                if sep and key.strip().lower() == 'include-system-site-packages':\n"
    "                    system = value.strip().lower() == 'true'\n"
    "        prefixes, user = [os.path.dirname(exe_dir)] + (prefixes if system else []), system\n"
    "        venv = os.path.dirname(exe_dir)\n"
    "        own = [os.path.join(venv, 'lib', 'python%d.%d' % sys.version_info[:2], 'site-packages'),\n"
    "               os.path.join(venv, 'Lib', 'site-packages')]\n"
    "        break\n"
    "paths = [p for p in sys.path if p]\n"
    "for p in [p for p in own if os.path.isdir(p)] + site.getsitepackages(prefixes) + ([site.getusersitepackages()] if user else []):\n"
    "    if p not in paths: paths.append(p)\n"
    "print(ascii(paths))\n"
)


@dataclass(frozen=True)
class Definition:
    path: str
    line: int  # 1-based
    column: int  # characters
    kind: str  # jedi's type: class, function, module, instance, statement, param
    full_name: str | None


def interpreter_sys_path(python: str) -> tuple[str, ...] | None:
    """sys.path of another interpreter without running its site hooks; None when it cannot run."""
    paths, problem = _probed(python)
    if problem is not None:
        log.warning("cannot read sys.path of %s: %s", python, problem)
    return paths


def interpreter_problem(python: str) -> str | None:
    """What failed when the interpreter `python` was asked for its sys.path (one line), or None when
    it answered. The answer is kept: asking again costs nothing."""
    return _probed(python)[1]


_probe_locks: dict[str, threading.Lock] = {}
_probe_locks_lock = threading.Lock()


def _probed(python: str) -> tuple[tuple[str, ...] | None, str | None]:
    """_probe_interpreter once per interpreter: a caller that comes while the probe runs (the
    server's early start, probe_soon) waits for its answer instead of starting another."""
    with _probe_locks_lock:
        lock = _probe_locks.setdefault(python, threading.Lock())
    with lock, timing.phase("interpreter"):
        return _probe_interpreter(python)


def probe_soon(python: str) -> None:
    """Start asking `python` for its sys.path in the background: the answer (a new process, 20-50 ms
    of waiting that holds no lock of ours) is then usually ready when the analysis first looks a
    library name up, instead of being waited for there. Only for an interpreter the analysis may
    run anyway (Interpreter.runnable)."""
    threading.Thread(target=_probed, args=(python,), name="fabric-lsp-interpreter-probe", daemon=True).start()


@functools.lru_cache(maxsize=16)
def _probe_interpreter(python: str) -> tuple[tuple[str, ...] | None, str | None]:
    try:
        completed = subprocess.run(
            [python, "-I", "-S", "-c", _SYS_PATH_PROBE],
            capture_output=True,
            text=True,
            timeout=15,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return None, "it did not answer within 15 s"
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"cannot run it: {getattr(exc, 'strerror', None) or exc}"
    try:
        paths = _literal_paths(completed.stdout)
    except ValueError:
        last = next((line.strip() for line in reversed(completed.stderr.splitlines()) if line.strip()), "")
        said = f": {last[:200]}" if last else ""
        if completed.returncode != 0:
            return None, f"it exited with status {completed.returncode}{said}"
        return None, f"it is not a Python interpreter (it printed no sys.path){said}"
    expanded: list[str] = []
    for path in paths:
        expanded.append(path)
        if path.endswith("site-packages") and os.path.isdir(path):
            expanded.extend(_pth_paths(path))
    return tuple(dict.fromkeys(expanded)), None


def _literal_paths(printed: str) -> list[str]:
    """The probe's answer: one line, a list literal of strings (ValueError when it is not one)."""
    import ast

    text = printed.strip()
    if not text.startswith("[") or len(text) > 4 * 1024 * 1024:
        raise ValueError("not a list of folders")
    try:
        paths = ast.literal_eval(text)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        raise ValueError("not a list of folders") from None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise ValueError("not a list of folders")
    return paths


interpreter_sys_path.cache_clear = _probe_interpreter.cache_clear  # type: ignore[attr-defined]


def _pth_paths(site_dir: str) -> list[str]:
    """Directories named in .pth files (editable installs); lines with code are ignored, never run."""
    found: list[str] = []
    try:
        names = sorted(os.listdir(site_dir))
    except OSError:
        return found
    for name in names:
        if not name.endswith(".pth"):
            continue
        try:
            # Regular files only, bounded in bytes and lines: a .pth linked to /dev/zero or
            # /dev/urandom, or a FIFO, is skipped (fabric_lsp.sources.files).
            lines = read_pth_lines(os.path.join(site_dir, name))
        except OSError as error:
            log.info("%s: skipped: %s", os.path.join(site_dir, name), file_reason(error))
            continue
        for line in lines:
            line = line.strip()
            if line.startswith(("import ", "import\t")):
                found.extend(_editable_finder_paths(site_dir, line))
                continue
            if not line or line.startswith("#"):
                continue
            candidate = os.path.join(site_dir, line) if not os.path.isabs(line) else line
            if os.path.isdir(candidate):
                found.append(os.path.normpath(candidate))
    return found


def _editable_finder_paths(site_dir: str, line: str) -> list[str]:
    """setuptools' editable installs (`import __editable___pkg_1_0_finder; ...install()`): the
    finder module's `MAPPING = {"pkg": "/path/src/pkg"}`, read as a literal (the module is never
    imported): the folders holding those packages."""
    import ast

    match = re.match(r"import\s+(__editable___[\w]+_finder)\b", line)
    if match is None:
        return []
    path = os.path.join(site_dir, match.group(1) + ".py")
    try:
        tree = ast.parse(read_text(path, MAX_FINDER_BYTES))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found = []
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(getattr(t, "id", None) == "MAPPING" for t in statement.targets):
            try:
                mapping = ast.literal_eval(statement.value)
            except (ValueError, SyntaxError, RecursionError):
                return []
            if isinstance(mapping, dict):
                for target in mapping.values():
                    if isinstance(target, str) and os.path.isdir(target):
                        found.append(os.path.normpath(os.path.dirname(target)))
    return found


def _read_pyvenv_cfg(venv_dir: str) -> dict[str, str] | None:
    try:
        text = read_text(os.path.join(venv_dir, "pyvenv.cfg"), MAX_PYVENV_CFG_BYTES)
    except OSError:
        return None
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip().lower()] = value.strip()
    return values


def _venv_version(venv_dir: str, cfg: dict[str, str]) -> str | None:
    """major.minor from pyvenv.cfg (`version` or `version_info`), else from lib/pythonX.Y."""
    for key in ("version", "version_info"):
        match = re.match(r"(\d+)\.(\d+)", cfg.get(key, ""))
        if match:
            return f"{match.group(1)}.{match.group(2)}"
    try:
        names = sorted(os.listdir(os.path.join(venv_dir, "lib")))
    except OSError:
        return None
    for name in names:
        match = re.fullmatch(r"python(\d+\.\d+)", name)
        if match:
            return match.group(1)
    return None


def venv_sys_path(venv_dir: str) -> tuple[str, ...] | None:
    """The sys.path the virtual environment at `venv_dir` has when its python starts, computed from
    files only (pyvenv.cfg, folder listings, .pth path lines): nothing in the venv is run, so a
    repository's `.venv/bin/python` can be anything. None when `venv_dir` has no pyvenv.cfg."""
    cfg = _read_pyvenv_cfg(venv_dir)
    if cfg is None:
        return None
    version = _venv_version(venv_dir, cfg)
    home = cfg.get("home", "")
    base_prefix = os.path.dirname(os.path.normpath(home)) if home else None
    system = cfg.get("include-system-site-packages", "false").lower() == "true"
    paths: list[str] = []
    if version is None:
        return None
    nodot = version.replace(".", "")
    if os.path.isdir(os.path.join(venv_dir, "Lib", "site-packages")):  # Windows layout
        if base_prefix is not None:
            paths += [os.path.join(home, f"python{nodot}.zip"), os.path.join(home, "DLLs"), os.path.join(home, "Lib")]
        site_dirs = [os.path.join(venv_dir, "Lib", "site-packages")]
        system_dirs = [os.path.join(home, "Lib", "site-packages")] if base_prefix else []
    else:
        if base_prefix is not None:
            lib = os.path.join(base_prefix, "lib")
            paths += [os.path.join(lib, f"python{nodot}.zip"), os.path.join(lib, f"python{version}"),
                      os.path.join(lib, f"python{version}", "lib-dynload")]
        site_dirs = [os.path.join(venv_dir, "lib", f"python{version}", "site-packages")]
        system_dirs = []
        if base_prefix is not None:
            if os.path.isdir(os.path.join(base_prefix, "lib", "python3", "dist-packages")):
                # Debian's site.py: /usr/local first, then the distribution's folders
                system_dirs = [os.path.join("/usr/local/lib", f"python{version}", "dist-packages"),
                               os.path.join(base_prefix, "lib", "python3", "dist-packages"),
                               os.path.join(base_prefix, "lib", f"python{version}", "dist-packages")]
            else:
                system_dirs = [os.path.join(base_prefix, "lib", f"python{version}", "site-packages")]
    ordered = []
    if system:  # site.py adds the user folder (when it exists) before the site-packages folders
        ordered.append(os.path.join(os.path.expanduser("~"), ".local", "lib", f"python{version}", "site-packages"))
    ordered += site_dirs + (system_dirs if system else [])
    for folder in ordered:
        if os.path.isdir(folder):
            paths.append(folder)
            paths.extend(_pth_paths(folder))
    return tuple(dict.fromkeys(paths))


def _venv_of(python: str) -> str | None:
    """The virtual environment folder holding the interpreter `python` (bin/ or Scripts/)."""
    folder = os.path.dirname(os.path.dirname(os.path.abspath(python)))
    return folder if os.path.isfile(os.path.join(folder, "pyvenv.cfg")) else None


@dataclass(frozen=True)
class Interpreter:
    """The interpreter whose packages are analysed, and whether we may run it to ask its sys.path.
    Only a user-level choice (--python, the user config, the editor's settings, a trusted
    workspace) may be run; a workspace's own .venv is otherwise read as files (venv_sys_path)."""

    python: str
    runnable: bool

    def sys_path(self) -> tuple[str, ...] | None:
        if self.runnable:
            return interpreter_sys_path(self.python)
        venv = _venv_of(self.python)
        return venv_sys_path(venv) if venv else None


def is_own_environment(venv: str) -> bool:
    """Whether `venv` is the environment fabric-lsp itself runs in. pre-commit (and pipx, uv tool)
    run the hook in an environment of its own and set $VIRTUAL_ENV to it: that environment holds
    fabric-lsp, never the project's packages, so it is passed over for the project's own discovery
    (its .venv, else our interpreter), and the hook answers as `check` run in the project does."""
    try:
        return os.path.samefile(venv, sys.prefix)
    except OSError:
        return os.path.realpath(venv) == os.path.realpath(sys.prefix)


def choose_interpreter(root: str | None, configured: str | None, trusted: bool = False) -> Interpreter:
    """`configured` (already filtered to user-level choices by config.load_config) is run; else
    $VIRTUAL_ENV (unless it is our own environment: is_own_environment), else the root's .venv, read statically unless the workspace is trusted; else our
    own interpreter."""
    if configured:
        return Interpreter(configured, True)
    candidates = []
    venv = os.environ.get("VIRTUAL_ENV")
    if venv and not is_own_environment(venv):
        candidates.append(os.path.join(venv, "bin", "python"))
    if root:
        candidates.append(os.path.join(root, ".venv", "bin", "python"))
    for candidate in candidates:
        if os.path.lexists(candidate) or _venv_of(candidate):
            return Interpreter(candidate, trusted)
    return Interpreter(sys.executable, True)


def find_interpreter(root: str | None, configured: str | None, trusted: bool = False) -> str:
    return choose_interpreter(root, configured, trusted).python


class JediBudgetSpent(BaseException):
    """Raised inside jedi when one question took more inference steps than allowed (counted, so
    the same question stops at the same point on every run, whatever the machine's load). A
    BaseException, so that jedi's own `except Exception` blocks let it through."""


# Inference steps (jedi's infer_node calls) one question may take, and questions one workspace may
# ask while building one program: both counted, never timed.
JEDI_STEPS_PER_QUESTION = 20000
JEDI_QUESTIONS_PER_PROGRAM = 64

_counting = threading.local()
_hook_lock = threading.Lock()
_hooked = False

# jedi.Script objects made (one per question actually put to jedi), in this process: what the tests
# of the persistent answers (cache.JediAnswers) count.
_scripts_made = 0


def jedi_questions_asked() -> int:
    """How many questions this process has put to jedi itself (answers kept in memory or read from
    the findings cache folder are not counted)."""
    return _scripts_made


def _install_step_counter() -> bool:
    """Count jedi's steps (node inferences through jedi.inference.syntax_tree.infer_node, import
    resolutions through imports.Importer.follow and imports.import_module: all looked up on their
    module or class at each call) and stop a question past its budget. False when this jedi has
    none of them: then jedi is not asked at all (what it would answer stays unknown)."""
    global _hooked
    with _hook_lock:
        if _hooked:
            return True
        try:
            from jedi.inference import imports, syntax_tree
        except ImportError:
            return False
        try:
            from jedi.inference import InferenceState
        except ImportError:
            return False
        targets = [(syntax_tree, "infer_node"), (imports, "import_module"), (imports.Importer, "follow")]
        if any(getattr(owner, name, None) is None for owner, name in targets):
            return False
        if getattr(InferenceState, "parse_and_get_code", None) is None:
            return False
        for owner, name in targets:
            setattr(owner, name, _counted(getattr(owner, name)))
        imports.import_module = _recording_imports(imports.import_module)
        InferenceState.parse_and_get_code = _recording_parses(InferenceState.parse_and_get_code)
        _hooked = True
        return True


def _recording_parses(function):
    """Record each file jedi parses while a question is asked in this thread (what the answer was
    read from: the persistent answers are checked against these files' disk identities)."""
    def parse_and_get_code(self, code=None, path=None, *args, **kwargs):
        reads = getattr(_counting, "reads", None)
        if reads is not None:
            file_io = kwargs.get("file_io")
            for where in (path, getattr(file_io, "path", None), getattr(file_io, "_zip_path", None)):
                if where is not None:
                    reads.add(os.path.abspath(os.fspath(where)))
        return function(self, code, path, *args, **kwargs)

    return parse_and_get_code


def _recording_imports(function):
    """Record the top-level names jedi imports during a question: a project folder or module of
    such a name (the project root is first on jedi's sys.path) would change the answer."""
    def import_module(inference_state, import_names, parent_module_value, *args, **kwargs):
        tops = getattr(_counting, "tops", None)
        if tops is not None and parent_module_value is None and import_names:
            tops.add(str(import_names[0]))
        return function(inference_state, import_names, parent_module_value, *args, **kwargs)

    return import_module


def _counted(function):
    def counted(*args, **kwargs):
        left = getattr(_counting, "left", None)
        if left is not None:
            if left <= 0:
                raise JediBudgetSpent()
            _counting.left = left - 1
        return function(*args, **kwargs)

    return counted


class Workspace:
    """A project root, the interpreter whose packages are analysed, the editor's unsaved buffers,
    and jedi for names in libraries that the binding statements alone do not answer."""

    def __init__(self, root: str | None = None, python: str | None = None, trusted: bool = False) -> None:
        self.root = os.path.abspath(root) if root else None
        self.interpreter = choose_interpreter(self.root, python, trusted)
        self.python = self.interpreter.python
        self.problems: list[str] = []
        self.overlays: dict[str, str] = {}  # unsaved editor buffers, by absolute path
        self._project = None
        self._lock = threading.RLock()
        self._answers: dict[tuple[str, str], tuple[Definition, ...]] = {}
        self._probe_started = False
        # Answers kept between runs (cache.JediAnswers), set by `check` while the findings cache is
        # on; None: jedi is asked (and its answers kept in memory only).
        self.answers = None

    def probe_interpreter_soon(self) -> None:
        """The server, before the workspace's first analysis: its interpreter's sys.path is asked for
        meanwhile (probe_soon). Asked once; the answers are those the analysis would get anyway."""
        if not self._probe_started:
            self._probe_started = True
            if self.interpreter.runnable:
                probe_soon(self.python)

    @property
    def library_path(self) -> tuple[str, ...]:
        return self.interpreter.sys_path() or interpreter_sys_path(sys.executable) or ()

    @property
    def project(self):
        with self._lock:
            if self._project is None:
                import jedi

                sys_path = self.interpreter.sys_path()
                if sys_path is None:
                    self.problems.append(
                        f"interpreter {self.python!r}: no sys.path (cannot be run or read); analysing against {sys.executable}"
                    )
                root = self.jedi_root
                self._project = jedi.Project(
                    root,
                    environment_path=sys.executable,
                    sys_path=list(self.jedi_sys_path),
                    smart_sys_path=True,
                    load_unsafe_extensions=False,
                )
            return self._project

    @property
    def jedi_root(self) -> str:
        """The folder jedi's project is made for (first on jedi's sys.path)."""
        return self.root or os.getcwd()

    @property
    def jedi_sys_path(self) -> tuple[str, ...]:
        """The sys.path jedi is given: the interpreter's, else ours."""
        return tuple(self.library_path)

    def root_shadows(self, tops) -> list[str]:
        """The entries of jedi's project root that could be imported as one of the top-level names
        `tops` (`name`, `name.py`, `name.cpython-311-....so`): the root is first on jedi's sys.path."""
        tops = set(tops)
        try:
            names = os.listdir(self.jedi_root)
        except OSError:
            return ["?"]  # unreadable: never the same as a stored listing
        return sorted(entry for entry in names if entry.partition(".")[0] in tops)

    def module_attribute(self, module_path: str, name: str, notes: list[str] | None = None) -> tuple[Definition, ...]:
        """Where `name`, read from the library module at `module_path`, is defined, as jedi finds it
        (following re-exports, lazy loaders with TYPE_CHECKING imports, stubs). Each question gets a
        fresh jedi Script (its own inference state), so the answer and the steps it takes are the
        same on every run. Asked for library files only; answers are kept for the workspace's life
        (a program counts its questions itself: analysis.program.Program.ask_jedi), and between runs
        when `self.answers` is set (cache.JediAnswers: `check` with its findings cache): an answer
        stored there is used while every file jedi read for it, and the folders holding them, are
        unchanged on disk, so it is the answer jedi would give."""
        key = (module_path, name)
        if key in self._answers:
            return self._answers[key]
        dotted = self._dotted(module_path)
        if dotted is None or not name.isidentifier():
            return ()
        answers = self.answers
        if answers is not None:
            with timing.phase("cache"):
                stored = answers.lookup(self, module_path, name)
            if stored is not None:  # what jedi answered last time, its files unchanged since
                found, message = stored
                if message is not None and notes is not None:
                    notes.append(message)
                self._answers[key] = found
                return found
        if not _install_step_counter():
            return ()
        found: tuple[Definition, ...] = ()
        message = None
        kept = True  # a jedi failure is not kept between runs (it may not happen again)
        reads: set[str] = set()
        tops: set[str] = set()
        try:
            import jedi

            global _scripts_made
            code = f"import {dotted}\n{dotted}.{name}\n"
            with self._lock, timing.phase("jedi"):
                _scripts_made += 1
                script = jedi.Script(code=code, project=self.project)
                _counting.left = JEDI_STEPS_PER_QUESTION
                _counting.reads, _counting.tops = reads, tops
                try:
                    names = script.goto(2, len(dotted) + 1, follow_imports=True)
                finally:
                    _counting.left = _counting.reads = _counting.tops = None
            found = tuple(
                Definition(str(item.module_path), item.line, item.column, item.type, item.full_name)
                for item in names
                if item.module_path is not None and item.line is not None
            )
        except JediBudgetSpent:
            message = (f"jedi stopped after {JEDI_STEPS_PER_QUESTION} inference steps (counted, not timed) "
                       f"looking up {dotted}.{name}; it stays unknown")
            log.info("%s", message)
            if notes is not None:
                notes.append(message)
        except Exception as exc:  # jedi failure degrades to "unknown", never a crash
            log.info("jedi could not look up %s.%s: %s", dotted, name, exc)
            kept = False
        self._answers[key] = found
        if answers is not None and kept:
            with timing.phase("cache"):
                answers.remember(self, module_path, name, found, message, reads, tops)
        return found

    def _dotted(self, module_path: str) -> str | None:
        """The name `module_path` is imported by, from the interpreter's sys.path (None: not on it)."""
        best = None
        for folder in self.library_path:
            folder = os.path.abspath(folder)
            if (module_path + os.sep).startswith(folder + os.sep) and (best is None or len(folder) > len(best)):
                best = folder
        if best is None:
            return None
        relative = os.path.relpath(module_path, best)
        if relative.endswith(os.sep + "__init__.py"):
            relative = relative[: -len(os.sep + "__init__.py")]
        elif relative.endswith(".py"):
            relative = relative[:-3]
        parts = relative.split(os.sep)
        if not all(part.isidentifier() for part in parts):
            return None
        return ".".join(parts)
