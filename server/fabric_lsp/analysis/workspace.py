"""One analysis workspace: a root folder, the interpreter whose packages are analysed, and jedi.

This is the only module that imports jedi. jedi parses; it never imports user code here:
the analysed interpreter's sys.path is read with `-I -S` (no site hooks, no .pth code),
jedi's helper process is our own interpreter, and unsafe extensions stay off.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import json
import logging
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from fabric_lsp.analysis import import_paths, interrupt, jedi_cache
from fabric_lsp.analysis.incremental import checked_source, parse_text
from fabric_lsp.analysis.source import SourceFile, parse_file

log = logging.getLogger("fabric_lsp.analysis")

# Runs under `-I -S`: no site hooks. Without `site`, sys.prefix is the *base* interpreter's, so a
# virtual environment is recognised here from its pyvenv.cfg (what site.venv() does, minus the .pth
# processing it would run) and its own site-packages are listed instead of the base ones.
_SYS_PATH_PROBE = (
    "import json, os, site, sys\n"
    "exe_dir = os.path.dirname(os.path.abspath(sys.executable))\n"
    "prefixes, user = list(site.PREFIXES), True\n"
    "for conf in (os.path.join(exe_dir, 'pyvenv.cfg'), os.path.join(os.path.dirname(exe_dir), 'pyvenv.cfg')):\n"
    "    if os.path.isfile(conf):\n"
    "        system = False\n"
    "        with open(conf, encoding='utf-8', errors='replace') as handle:\n"
    "            for line in handle:\n"
    "                key, sep, value = line.partition('=')\n"
    "                if sep and key.strip().lower() == 'include-system-site-packages':\n"
    "                    system = value.strip().lower() == 'true'\n"
    "        prefixes, user = [os.path.dirname(exe_dir)] + (prefixes if system else []), system\n"
    "        break\n"
    "paths = [p for p in sys.path if p]\n"
    "for p in site.getsitepackages(prefixes) + ([site.getusersitepackages()] if user else []):\n"
    "    if p not in paths: paths.append(p)\n"
    "print(json.dumps(paths))\n"
)


@dataclass(frozen=True)
class Definition:
    path: str
    line: int  # 1-based
    column: int  # characters
    kind: str  # jedi's type: class, function, module, instance, statement, param
    full_name: str | None


@functools.lru_cache(maxsize=16)
def interpreter_sys_path(python: str) -> tuple[str, ...] | None:
    """sys.path of another interpreter without running its site hooks; None when it cannot run."""
    try:
        completed = subprocess.run(
            [python, "-I", "-S", "-c", _SYS_PATH_PROBE],
            capture_output=True,
            text=True,
            timeout=15,
            stdin=subprocess.DEVNULL,
        )
        paths = json.loads(completed.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        log.warning("cannot read sys.path of %s: %s", python, exc)
        return None
    expanded: list[str] = []
    for path in paths:
        expanded.append(path)
        if path.endswith("site-packages") and os.path.isdir(path):
            expanded.extend(_pth_paths(path))
    return tuple(dict.fromkeys(expanded))


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
            with open(os.path.join(site_dir, name), encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    line = line.strip()
                    if not line or line.startswith(("#", "import ", "import\t")):
                        continue
                    candidate = os.path.join(site_dir, line) if not os.path.isabs(line) else line
                    if os.path.isdir(candidate):
                        found.append(os.path.normpath(candidate))
        except OSError:
            continue
    return found


def find_interpreter(root: str | None, configured: str | None) -> str:
    """Setting/--python, else VIRTUAL_ENV, else a .venv in the root, else our own interpreter."""
    if configured:
        return configured
    venv = os.environ.get("VIRTUAL_ENV")
    candidates = []
    if venv:
        candidates.append(os.path.join(venv, "bin", "python"))
    if root:
        candidates.append(os.path.join(root, ".venv", "bin", "python"))
    for candidate in candidates:
        if os.path.exists(candidate):
            return candidate
    return sys.executable


_budget = threading.local()
# One jedi call may not take longer (nor past the file's budget): interrupt.py stops it.
JEDI_SECONDS_PER_CALL = 5.0


@contextlib.contextmanager
def jedi_budget(seconds: float):
    """Bound the jedi time one analysis may spend (per thread): past it, names resolve to "unknown"."""
    previous = getattr(_budget, "deadline", None), getattr(_budget, "reported", False), getattr(_budget, "scripts", None)
    # scripts: one jedi.Script per text for the length of one analysis (a new Script re-parses the
    # text: ~10 ms for 100 kB, seconds for 1 MB); dropped afterwards so no answer outlives its files.
    _budget.deadline, _budget.reported, _budget.scripts = time.monotonic() + seconds, False, {}
    try:
        yield
    finally:
        _budget.deadline, _budget.reported, _budget.scripts = previous


class Workspace:
    """Answers "where is this name defined" for files under one root."""

    def __init__(self, root: str | None = None, python: str | None = None) -> None:
        self.root = os.path.abspath(root) if root else None
        self.python = find_interpreter(self.root, python)
        self.problems: list[str] = []
        self.overlays: dict[str, str] = {}  # unsaved editor buffers, by absolute path
        self._project = None
        self._lock = threading.RLock()
        self._goto_cache: dict[tuple, tuple[Definition, ...]] = {}
        self._goto_texts: dict[tuple[str, str], tuple[int, list[tuple]]] = {}  # (question, path) -> (text hash, keys)
        # Answers reused across edits of a file, while what they depend on is unchanged.
        self._answers = jedi_cache.Answers(self.root, lambda: self.overlays, self._library_dirs)
        self._library_dirs_found: tuple[str, ...] | None = None

    # -- sources -------------------------------------------------------------------------------
    def source(self, path: str) -> SourceFile | None:
        path = os.path.abspath(path)
        checked = checked_source(path)
        if checked is not None:
            return checked  # the file being analysed: the very text and tree the engine checks
        jedi_cache.note((path,))  # the analysis depends on this file (for the `check` cache)
        text = self.overlays.get(path)
        if text is not None:
            return parse_text(path, text)  # shared with other analyses, parsed incrementally
        return parse_file(path)

    # -- jedi ----------------------------------------------------------------------------------
    @property
    def project(self):
        with self._lock:
            if self._project is None:
                import jedi

                sys_path = interpreter_sys_path(self.python)
                if sys_path is None:
                    self.problems.append(
                        f"interpreter {self.python!r} cannot be run; analysing against {sys.executable}"
                    )
                    sys_path = interpreter_sys_path(sys.executable)
                root = self.root or os.getcwd()
                self._project = jedi.Project(
                    root,
                    environment_path=sys.executable,
                    sys_path=list(sys_path or ()),
                    smart_sys_path=True,
                    load_unsafe_extensions=False,
                )
            return self._project

    def _library_dirs(self) -> tuple[str, ...]:
        if self._library_dirs_found is None:
            sys_path = interpreter_sys_path(self.python) or interpreter_sys_path(sys.executable) or ()
            self._library_dirs_found = jedi_cache.library_dirs_of(sys_path, self.root)
        return self._library_dirs_found

    def _imported_directly(self, source: SourceFile, node: ast.AST):
        sys_path = interpreter_sys_path(self.python) or interpreter_sys_path(sys.executable) or ()
        try:
            return import_paths.resolve(source, node, self.root or os.getcwd(), sys_path, self._library_dirs(),
                                        self.source, Definition)
        except (OSError, ValueError, RecursionError):
            return None

    def _keep_answer(self, key: tuple, definitions: tuple[Definition, ...]) -> None:
        """Answers for the current text of each file only: an edit makes the older ones useless
        (answers that outlive edits are kept by jedi_cache), so memory does not grow while typing."""
        question, path, text_hash = key[0], key[1], key[2]
        known = self._goto_texts.get((question, path))
        if known is None or known[0] != text_hash:
            if known is not None:
                for old in known[1]:
                    self._goto_cache.pop(old, None)
            known = self._goto_texts[(question, path)] = (text_hash, [])
        if len(self._goto_cache) > 20000:
            self._goto_cache.clear()
            self._goto_texts.clear()
            known = self._goto_texts[(question, path)] = (text_hash, [])
        self._goto_cache[key] = definitions
        known[1].append(key)

    def goto(self, source: SourceFile, node: ast.AST) -> tuple[Definition, ...]:
        """Definitions of the name at node (a Name, or an Attribute's last part), following imports."""
        return self._ask_jedi("goto", source, node)

    def infer(self, source: SourceFile, node: ast.AST) -> tuple[Definition, ...]:
        """What the name at node evaluates to (e.g. the class of `model = AutoModel.from_pretrained(...)`)."""
        return self._ask_jedi("infer", source, node)

    def _ask_jedi(self, question: str, source: SourceFile, node: ast.AST) -> tuple[Definition, ...]:
        if isinstance(node, ast.Attribute):
            line = node.end_lineno or node.lineno
            column = source.char_col(line, node.end_col_offset or 0) - len(node.attr)
        elif isinstance(node, ast.Name):
            line = node.lineno
            column = source.char_col(line, node.col_offset)
        else:
            return ()
        key = (question, source.path, hash(source.text), line, column)
        cached = self._goto_cache.get(key)
        if cached is not None:
            self._answers.reused(key)
            return cached
        stable = jedi_cache.stable_key(question, source, node, line, column, jedi_cache.import_names(source))
        if stable is not None:
            reused = self._answers.get(stable, source, Definition, key)
            if reused is not None:
                self._keep_answer(key, reused)
                return reused
        deadline = getattr(_budget, "deadline", None)
        if deadline is not None and time.monotonic() > deadline:
            if not getattr(_budget, "reported", False):
                _budget.reported = True
                log.warning("%s: jedi time budget spent; the rest of this file is analysed without it", source.path)
            jedi_cache.note((jedi_cache.UNKNOWN,))  # a result that depends on time: never cached
            return ()
        if question == "goto":
            direct = self._imported_directly(source, node)
            if direct is not None:  # an unambiguous `from module import Name`: no jedi needed
                definitions, depends_on = direct
                jedi_cache.note(depends_on)
                self._answers.remember_dependencies(key, depends_on)
                self._keep_answer(key, definitions)
                return definitions
        definitions: tuple[Definition, ...] = ()
        limit = JEDI_SECONDS_PER_CALL if deadline is None else min(JEDI_SECONDS_PER_CALL, deadline - time.monotonic())
        started = time.monotonic()
        try:
            try:
                with interrupt.bounded(limit):
                    script, names = self._jedi_names(question, source, line, column)
                    definitions = tuple(
                        Definition(str(name.module_path), name.line, name.column, name.type, name.full_name)
                        for name in names
                        if name.module_path is not None and name.line is not None
                    )
            except interrupt.CallTimedOut:
                log.warning("jedi %s at %s:%s:%s stopped after %.1f s (time bound); that name stays unknown",
                            question, source.path, line, column, time.monotonic() - started)
                self._drop_interrupted_jedi_state()
                jedi_cache.note((jedi_cache.UNKNOWN,))
                definitions = ()
            else:
                self._answers.computed(key, stable, definitions, source, script)
        except Exception as exc:  # jedi failure degrades to "unknown", never a crash
            log.warning("jedi %s failed at %s:%s:%s: %s", question, source.path, line, column, exc)
            jedi_cache.note((jedi_cache.UNKNOWN,))
        # Kept for this very text (asking again would take as long); never persisted (UNKNOWN noted).
        self._keep_answer(key, definitions)
        return definitions

    def _jedi_names(self, question: str, source: SourceFile, line: int, column: int):
        import jedi

        scripts = getattr(_budget, "scripts", None)
        script = scripts.get((source.path, source.text)) if scripts is not None else None
        if script is None:
            script = jedi.Script(code=source.text, path=source.path, project=self.project)
            if scripts is not None:
                scripts[(source.path, source.text)] = script
        if question == "goto":
            return script, script.goto(line, column, follow_imports=True)
        return script, script.infer(line, column)

    def _drop_interrupted_jedi_state(self) -> None:
        """After an interrupted call: jedi's inference state may be half-updated, and its compiled-object
        subprocess may hold an unread answer (the next call would read it). Both are replaced."""
        scripts = getattr(_budget, "scripts", None)
        if scripts:
            scripts.clear()
        try:
            environment = self._project._environment if self._project is not None else None
            helper = getattr(environment, "_subprocess", None)
            if helper is not None:
                helper._kill()  # jedi starts a new one on the next use (Environment._get_subprocess)
        except Exception as exc:
            log.warning("could not restart jedi's subprocess: %s; starting a new jedi project", exc)
            with self._lock:
                self._project = None
