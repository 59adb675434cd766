"""A pre-importing fork server for running Python programs (the ground-truth cases) cheaply.

Starting ``python main.py`` for a case spends 5-8 s importing torch and Lightning before the case's first
line of its own. This module keeps one helper process per (pytest worker process, import-time environment)
that has imported the heavy packages once; every run is then a ``fork()`` of that helper which turns itself
into what ``python <entry>`` would have been at the point where the case imports Lightning.

Client side (used by ``support.cases``)::

    completed = run_python(entry, cwd, env, timeout, names=case_module_names, python=interpreter, args=("--x",))
    # -> Completed(returncode, stdout, stderr, timed_out) or None (then run the program cold)

``args`` are the program's command-line arguments (``python <entry> ARG ...``).

``python`` (default: the client's own interpreter) is the interpreter the server runs in, so its children are
what ``<python> <entry>`` would have been; each interpreter gets servers of its own.

``None`` means the fork server must not or cannot run this program: forced off with
``FABRIC_LSP_GROUND_TRUTH_COLD=1``, no ``fork`` on this platform, the server failed to start (its
reason is in ``unavailable_reasons()`` and a warning), or one of ``names`` (the case's own module names)
is a module the server already imported or looked for, which a cold run would have taken from the case
directory instead.

The child (see ``_become_program``), before the program's first line: its own session (so a timeout can
kill its process group: ``os.killpg``), stdout/stderr on the caller's pipes, stdin inherited from the
caller (as ``subprocess.Popen`` does), ``os.chdir(cwd)``, module globals that hold the server's cwd as a path
rebased onto ``cwd`` (``rich._IMPORT_CWD``, transformers' ``PATH_TO_TRANSFORMERS``: with the libraries installed,
importing Lightning imports them), ``os.environ`` replaced by ``env`` (Lightning
reads it only later, in ``Fabric(...)``), ``sys.argv == [entry, *args]`` (the entry relative: Lightning's
``_SubprocessScriptLauncher`` re-runs ``sys.executable`` + ``abspath(sys.argv[0])`` + ``sys.argv[1:]``, and hydra's
``@hydra.main`` parses ``sys.argv[1:]``), ``sys.orig_argv == [sys.executable, entry, *args]``,
``sys.path[0]`` the script's directory, a fresh ``__main__`` module (``__file__`` absolute, the attributes
``python main.py`` sets), multiprocessing's ``ORIGINAL_DIR`` and authkey, torch's CPU generator and numpy's
global random state re-seeded from the OS (``random`` re-seeds itself at fork), and whatever the imports
wrote to ``os.environ`` (``lightning.fabric`` sets ``PYTORCH_NVML_BASED_CUDA_CHECK=1``) applied again. The program is compiled with its absolute path
as file name, so frames point at the case copy; an uncaught exception goes to ``sys.excepthook`` (torch
distributed's ``[rankN]:`` hook included) without the server's frame, then exit status 1; ``SystemExit``
gives its code; the interpreter then finalizes normally (atexit, thread joins, C++ destructors).

The server: started with the caller's environment minus the variables that are read only at run time
(``RUNTIME_ONLY_ENV_PREFIXES``: Lightning reads ``LT_*`` in ``_Connector``), so everything read while
importing (``OMP_NUM_THREADS``, ``CUDA_VISIBLE_DEVICES``, ``PYTHONUNBUFFERED``...) has its run value; a
request with another import-time environment gets its own server. It imports ``PRELOAD`` and nothing
else of its own (its stdlib modules are ones torch imports anyway), never runs a torch op, and refuses to
serve when importing started a thread (a forked child would inherit a dead thread pool). Its stdout and
stderr are pipes like a case's, so ``sys.stdout``'s seekability etc. match. Import-time output (none with
these versions) is replayed at the start of each child's stdout/stderr.

Remaining differences from a cold ``python main.py`` (documented in fixtures/README.md too):

* ``PRELOAD`` is imported before the program's first line rather than at its ``import`` statement; so the
  harness uses the server only for cases that import ``lightning`` (which imports all of ``PRELOAD``)
  and do not write ``os.environ`` (``support.cases._fork_server_ok``).
* The string hash seed (``PYTHONHASHSEED``) is the server's, shared by its children, not a fresh one per run.
* One frame of this file sits under the program's module frame (seen by ``inspect.stack()``,
  ``traceback.print_stack()`` or a ``warnings.warn`` stacklevel that reaches past the script), and
  ``os.getppid()`` is the server.
* The uncaught-``KeyboardInterrupt`` exit (death by SIGINT after finalization) is not reproduced.
* The objects the imports of ``PRELOAD`` made are frozen (``gc.freeze()``, in the server): the cyclic garbage
  collector neither scans nor frees them in a child, at exit either, where a cold run's last collection frees
  the import-time cycles that are garbage by then. What the program itself makes is collected as in a cold run.
"""

from __future__ import annotations

import sys

_STARTUP_MODULES = frozenset(sys.modules)  # what `python <script>` has before the script's first line

import json  # noqa: E402  (torch imports all of these itself)
import os  # noqa: E402
import select  # noqa: E402
import socket  # noqa: E402

COLD_ENV = "FABRIC_LSP_GROUND_TRUTH_COLD"
PRELOAD = ("torch", "lightning", "lightning.fabric", "torchmetrics")
# Read only at run time: Lightning reads LT_* in _Connector; pytest sets PYTEST_CURRENT_TEST per test.
RUNTIME_ONLY_ENV_PREFIXES = ("LT_", "PYTEST_CURRENT_TEST")
MAX_SERVERS = 2  # per client process: each holds torch and Lightning in memory (~250 MB)
READY_TIMEOUT_S = 300.0  # importing torch on a loaded 2-core machine
_MSG_MAX = 1 << 20


# =========================================================================== server (runs as a script)


class _ProbeRecorder:
    """A meta path finder that only records which top-level names were looked up while importing."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def find_spec(self, name, path=None, target=None):
        if path is None:
            self.names.add(name.partition(".")[0])
        return None


def _send(sock: socket.socket, message: dict) -> None:
    sock.send(json.dumps(message).encode("utf-8"))


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        return threading.active_count()


def _leaks(server_main, marks: tuple[str, ...]) -> list[str]:
    """Module globals that captured the server's cwd or script path, or the server's __main__ module."""
    found = []
    for modname, module in list(sys.modules.items()):
        if module is server_main:
            if modname != "__main__":
                found.append(f"sys.modules[{modname!r}]")
            continue
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        for attr, value in items:
            if value is server_main:
                found.append(f"{modname}.{attr}")
            else:
                values = value if isinstance(value, (list, tuple)) and len(value) < 100 else (value,)
                for item in values:
                    if isinstance(item, os.PathLike):
                        item = os.fspath(item)
                    if isinstance(item, str) and any(mark in item for mark in marks):
                        found.append(f"{modname}.{attr}")
                        break
    return sorted(found)


def _cwd_globals(server_cwd: str) -> list[tuple[str, str]]:
    """(module, attribute) of module globals that are a path at or under the server's cwd, a str or a pathlib
    path, as `os.path.abspath(os.getcwd())` or `Path("src").resolve()` at import time give (rich, transformers):
    each child rebases them onto its own cwd, which is what a cold run's imports would have computed."""
    found = []
    for modname, module in list(sys.modules.items()):
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        for attr, value in items:
            if isinstance(value, str) or (isinstance(value, os.PathLike) and type(value).__module__ == "pathlib"):
                text = os.fspath(value)
                if isinstance(text, str) and (text == server_cwd or text.startswith(server_cwd + os.sep)):
                    found.append((modname, attr))
    return sorted(found)


def _rebase_cwd_globals(values: list[tuple[str, str]], server_cwd: str) -> None:
    cwd = os.getcwd()
    for modname, attr in values:
        module = sys.modules.get(modname)
        value = getattr(module, attr, None)
        if module is None or value is None:
            continue
        text = cwd + os.fspath(value)[len(server_cwd):]
        setattr(module, attr, text if isinstance(value, str) else type(value)(text))


def _serve(sock_fd: int):
    """Import PRELOAD, then fork one child per request. Returns only in a child: (request, code_path)."""
    sock = socket.socket(fileno=sock_fd)
    server_cwd = os.getcwd()
    script = os.path.abspath(sys.argv[0])
    sys.path[0] = server_cwd  # import as a script sitting in an empty directory would
    server_main = sys.modules["__main__"]

    recorder = _ProbeRecorder()
    sys.meta_path.insert(0, recorder)
    # Whatever the imports print is captured and replayed at the start of each child's stderr.
    capture = os.open(os.path.join(server_cwd, "..", "import-output"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    saved = os.dup(1), os.dup(2)
    error = None
    env_before = dict(os.environ)
    try:
        os.dup2(capture, 1)
        os.dup2(capture, 2)
        for index, name in enumerate(PRELOAD):
            try:
                __import__(name)
            except ImportError as exc:
                if index < 3 or getattr(exc, "name", None) != name:  # only torchmetrics may be missing
                    raise
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001
        import traceback

        error = traceback.format_exc()
    finally:
        sys.meta_path.remove(recorder)
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
    if error is not None:
        _send(sock, {"error": f"importing {', '.join(PRELOAD)} failed:\n{error}"})
        return None
    os.lseek(capture, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(capture, 65536):
        chunks.append(chunk)
    os.close(capture)
    captured = b"".join(chunks)

    # Imports may write os.environ (lightning.fabric sets PYTORCH_NVML_BASED_CUDA_CHECK=1): a cold run has those
    # values after its imports, so each child applies them over the run's environment.
    env_set = {k: v for k, v in os.environ.items() if env_before.get(k) != v}
    env_unset = sorted(set(env_before) - set(os.environ))

    threads = _thread_count()
    if threads != 1:
        _send(sock, {"error": f"importing {', '.join(PRELOAD)} started {threads - 1} thread(s); forking is unsafe"})
        return None
    looked_up = (recorder.names | {n.partition(".")[0] for n in sys.modules}) - {
        n.partition(".")[0] for n in _STARTUP_MODULES
    }
    rebased = _cwd_globals(server_cwd)
    _send(
        sock,
        {
            "ready": True,
            "pid": os.getpid(),
            "import_output": captured.decode("utf-8", "replace"),
            "leaks": _leaks(server_main, (server_cwd, script)),
            "rebased": [f"{modname}.{attr}" for modname, attr in rebased],
            "import_env": {"set": env_set, "unset": env_unset},
        },
    )

    # Every object of the imports goes to the garbage collector's permanent generation, which it never scans: a
    # child would otherwise touch all of them (the collections of the program's run and the one at exit), and
    # each page touched is copied from the server's (copy-on-write). Measured: a forked child's exit took 1.8-2.1 s
    # of CPU without this, 0.5 s with it, and every ground-truth run is such a child.
    import gc

    gc.collect()
    gc.freeze()

    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, _MSG_MAX, 2)
        except (ConnectionError, OSError):
            return None
        if not data:
            return None  # the client went away
        request = json.loads(data)
        collisions = sorted(set(request.get("names", ())) & looked_up)
        args = request.get("args", [])
        bad = not (isinstance(args, list) and all(isinstance(a, str) for a in args))
        if request.get("op") != "run" or len(fds) != 2 or collisions or bad:
            for fd in fds:
                os.close(fd)
            reason = f"the case's modules {collisions} shadow modules the server imported" if collisions else "bad request"
            _send(sock, {"cold": reason})
            continue
        sys.stdout.flush(), sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            return _become_program(
                request, fds, sock, server_main, captured, (env_set, env_unset), (rebased, server_cwd)
            )
        for fd in fds:
            os.close(fd)
        _send(sock, {"pid": pid})
        status = _wait_child(sock, pid)
        if status is None:
            return None
        _send(sock, {"status": status})


def _wait_child(sock: socket.socket, pid: int) -> int | None:
    """waitpid(pid), killing its process group when the client asks; None when the client went away."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status
            waitables = [sock] if pidfd is None else [sock, pidfd]
            ready, _, _ = select.select(waitables, [], [], 0.02 if pidfd is None else None)
            if sock in ready:
                data = sock.recv(_MSG_MAX)
                # The child is not reaped yet, so its pid (= its process group id) cannot have been reused.
                try:
                    os.killpg(pid, 9)
                except (ProcessLookupError, PermissionError):
                    pass
                if not data:
                    os.waitpid(pid, 0)
                    return None
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _become_program(
    request: dict, fds: list[int], sock: socket.socket, server_main, captured: bytes, import_env, cwd_globals
):
    """In the forked child: turn into `python <entry>` at its first line. Returns the program's path."""
    os.setsid()
    sock.close()
    os.dup2(fds[0], 1)
    os.dup2(fds[1], 2)
    for fd in fds:
        os.close(fd)
    if captured:
        os.write(2, captured)
    cwd = request["cwd"]
    os.chdir(cwd)
    _rebase_cwd_globals(*cwd_globals)
    os.environ.clear()  # os.environ's methods call putenv/unsetenv: the C environment follows
    os.environ.update(request["env"])
    env_set, env_unset = import_env  # what the imports did to the environment, as they would have done here
    os.environ.update(env_set)
    for name in env_unset:
        os.environ.pop(name, None)
    argv0 = request["argv0"]
    args = list(request.get("args", []))
    path = os.path.join(os.getcwd(), argv0)
    sys.argv[:] = [argv0, *args]
    sys.orig_argv[:] = [sys.executable, argv0, *args]
    sys.path[0] = os.path.dirname(path)

    import builtins
    import types
    from importlib.machinery import SourceFileLoader

    main = types.ModuleType("__main__")
    main.__annotations__ = {}
    main.__builtins__ = builtins
    main.__file__ = path
    main.__cached__ = None
    main.__loader__ = SourceFileLoader("__main__", path)
    for name, module in list(sys.modules.items()):
        if module is server_main:  # "__main__", and "__mp_main__" (multiprocessing/__init__.py aliases it)
            sys.modules[name] = main

    mp_process = sys.modules.get("multiprocessing.process")
    if mp_process is not None:
        mp_process.ORIGINAL_DIR = os.path.abspath(os.getcwd())  # computed at import, from the server's cwd
        mp_process.current_process().authkey = os.urandom(32)  # drawn at import: would be shared
    # Random state drawn from the OS at startup/import would be shared by all children; draw it again (Python's
    # `random` does so itself at fork). Neither is a torch op that could start a thread pool.
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        np_random.seed()  # the legacy global RandomState
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.default_generator.seed()  # torch seeds its CPU generator non-deterministically at startup
    return main, path


def _exit_like_python(exc: BaseException | None, tb) -> None:
    """What the interpreter does when `python main.py` ends: raises SystemExit for the server script's
    top level to finalize with (Py_FinalizeEx, then exit)."""
    if exc is None:
        raise SystemExit(0)
    if isinstance(exc, SystemExit):
        raise exc  # the code is handled as for a script: None -> 0, int -> it, else printed and 1
    exc.__traceback__ = tb
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
    try:
        sys.excepthook(type(exc), exc, tb)
    except BaseException as hook_exc:  # PyErr_PrintEx: "Error in sys.excepthook:"
        sys.stderr.write("Error in sys.excepthook:\n")
        sys.__excepthook__(type(hook_exc), hook_exc, hook_exc.__traceback__)
        sys.stderr.write("\nOriginal exception was:\n")
        sys.__excepthook__(type(exc), exc, tb)
    sys.stderr.flush()
    raise SystemExit(1)


# =========================================================================== client (imported by the tests)


class Completed:
    """What Popen.communicate gives: returncode (-N for a signal; set even when timed_out), text output."""

    __slots__ = ("returncode", "stdout", "stderr", "timed_out")

    def __init__(self, returncode, stdout, stderr, timed_out):
        self.returncode, self.stdout, self.stderr, self.timed_out = returncode, stdout, stderr, timed_out


class ServerError(Exception):
    pass


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, 9)
    except (ProcessLookupError, PermissionError):
        pass


def _client_imports():
    import atexit
    import locale
    import selectors
    import subprocess
    import tempfile
    import threading
    import time
    import warnings

    return atexit, locale, selectors, subprocess, tempfile, threading, time, warnings


class _Server:
    def __init__(self, env: dict[str, str], python: str | None = None):
        atexit, _, _, subprocess, tempfile, _, _, _ = _client_imports()
        self.workdir = tempfile.mkdtemp(prefix="gt-forkserver-")
        cwd = os.path.join(self.workdir, "cwd")
        os.mkdir(cwd)
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [python or sys.executable, os.path.abspath(__file__), str(theirs.fileno())],
                cwd=cwd,
                env=env,
                stdout=subprocess.PIPE,  # pipes, as a case's are; the server itself writes nothing
                stderr=subprocess.PIPE,
                pass_fds=[theirs.fileno()],
                start_new_session=True,
            )
        finally:
            theirs.close()
        atexit.register(self.close)
        try:
            reply = self._recv(READY_TIMEOUT_S)
        except ServerError:
            self.close()
            raise
        if not reply or not reply.get("ready"):
            err = (reply or {}).get("error") or self._server_stderr()
            self.close()
            raise ServerError(err or "the fork server exited before it was ready")
        self.pid = reply["pid"]
        self.import_output = reply["import_output"]
        self.leaks = reply["leaks"]
        self.rebased = reply["rebased"]
        self.import_env_changes = reply["import_env"]

    def _server_stderr(self) -> str:
        self.proc.kill()
        try:
            return self.proc.communicate(timeout=10)[1].decode("utf-8", "replace")
        except Exception:  # noqa: BLE001
            return ""

    def _recv(self, timeout: float | None) -> dict | None:
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            raise ServerError(f"no answer from the fork server in {timeout:.0f}s")
        data = self.sock.recv(_MSG_MAX)
        return json.loads(data) if data else None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, argv0: str, cwd: str, env: dict[str, str], timeout: float, names, args=()) -> Completed | None:
        _, locale, selectors, _, _, _, time, _ = _client_imports()
        started = time.monotonic()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        request = {
            "op": "run", "argv0": argv0, "args": [str(a) for a in args], "cwd": os.fspath(cwd), "env": env,
            "names": sorted(names),
        }
        try:
            socket.send_fds(self.sock, [json.dumps(request).encode("utf-8")], [out_w, err_w])
        except OSError as exc:
            os.close(out_r), os.close(err_r)
            raise ServerError(f"cannot reach the fork server: {exc}") from exc
        finally:
            os.close(out_w), os.close(err_w)
        try:
            reply = self._recv(60)
        except ServerError:
            os.close(out_r), os.close(err_r)
            raise
        if not reply or "pid" not in reply:
            os.close(out_r), os.close(err_r)
            if reply and "cold" in reply:
                return None
            raise ServerError("the fork server went away")
        pid = reply["pid"]
        # What Popen.communicate(timeout) does: read both pipes to EOF and wait for the exit status; past the
        # deadline kill the process group, then read and wait without a deadline.
        chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
        sel = selectors.DefaultSelector()
        sel.register(out_r, selectors.EVENT_READ)
        sel.register(err_r, selectors.EVENT_READ)
        sel.register(self.sock, selectors.EVENT_READ)
        open_pipes = {out_r, err_r}
        status = None
        timed_out = False
        deadline = started + timeout
        try:
            while status is None or open_pipes:
                remaining = None if timed_out else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    timed_out = True
                    if status is None:  # the server kills the group: the child is not reaped, its pid is safe
                        self.sock.send(json.dumps({"op": "kill"}).encode("utf-8"))
                    else:  # the child is reaped but something of its group still holds the pipes
                        _killpg(pid)
                    continue
                for key, _ in sel.select(remaining):
                    if key.fileobj is self.sock:
                        data = self.sock.recv(_MSG_MAX)
                        if not data:
                            _killpg(pid)
                            raise ServerError("the fork server died during a run")
                        status = json.loads(data)["status"]
                        sel.unregister(self.sock)
                    else:
                        data = os.read(key.fd, 65536)
                        if data:
                            chunks[key.fd].append(data)
                        else:
                            sel.unregister(key.fd)
                            open_pipes.discard(key.fd)
        finally:
            sel.close()
            os.close(out_r), os.close(err_r)
        # Popen(text=True): the locale's encoding, strict errors, universal newlines.
        encoding = locale.getpreferredencoding(False)

        def text(fd):
            return b"".join(chunks[fd]).decode(encoding).replace("\r\n", "\n").replace("\r", "\n")

        return Completed(os.waitstatus_to_exitcode(status), text(out_r), text(err_r), timed_out)

    def close(self) -> None:
        try:
            self.sock.close()  # the server sees EOF and exits (killing a running child's group first)
        except OSError:
            pass
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=10)
            except Exception:  # noqa: BLE001
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()
        import shutil

        shutil.rmtree(self.workdir, ignore_errors=True)


_servers: dict[tuple, _Server] = {}
_unavailable: dict[tuple, str] = {}
_owner_pid = os.getpid()
_lock = None


def disabled_reason() -> str | None:
    if os.environ.get(COLD_ENV) == "1":
        return f"{COLD_ENV}=1"
    if not hasattr(os, "fork") or not hasattr(socket, "send_fds") or not hasattr(socket, "SOCK_SEQPACKET"):
        return "this platform has no fork / SCM_RIGHTS"
    return None


def import_env(env: dict[str, str]) -> dict[str, str]:
    """The part of a run's environment that the server's imports see."""
    return {k: v for k, v in env.items() if not k.startswith(RUNTIME_ONLY_ENV_PREFIXES)}


def _key(env: dict[str, str], python: str | None) -> tuple:
    return (python or sys.executable, *sorted(import_env(env).items()))


def server_for(env: dict[str, str], python: str | None = None) -> _Server | None:
    """The (lazily started) server for this interpreter and import-time environment, or None when none can run."""
    global _lock, _owner_pid
    _, _, _, _, _, threading, _, warnings = _client_imports()
    if _lock is None:
        _lock = threading.Lock()
    if os.getpid() != _owner_pid:  # a forked copy of the client: its servers belong to the parent
        _servers.clear()
        _owner_pid = os.getpid()
    key = _key(env, python)
    with _lock:
        server = _servers.get(key)
        if server is not None:
            if server.alive():
                return server
            _drop(key, "the fork server exited")
        if key in _unavailable:
            return None
        while len(_servers) >= MAX_SERVERS:  # the least recently started one goes
            _servers.pop(next(iter(_servers))).close()
        try:
            server = _servers[key] = _Server(import_env(env), python)
        except (ServerError, OSError) as exc:
            _servers.pop(key, None)
            _unavailable[key] = str(exc)
            warnings.warn(f"ground truth: fork server unavailable, running cases cold: {exc}", stacklevel=2)
            return None
        return server


_restarts: dict[tuple, int] = {}


def _drop(key: tuple, why: str) -> None:
    """Forget a broken server; after two, run that environment cold for the rest of the session."""
    server = _servers.pop(key, None)
    if server is not None:
        server.close()
    _restarts[key] = _restarts.get(key, 0) + 1
    if _restarts[key] >= 2:
        _unavailable[key] = why


def unavailable_reasons() -> list[str]:
    return list(_unavailable.values())


def run_python(
    argv0: str, cwd, env: dict[str, str], timeout: float, names=(), python: str | None = None, args=()
) -> Completed | None:
    """Run `<python> argv0 [ARG ...]` (default: this interpreter) in cwd with exactly env, through a fork server.
    None: run it cold instead."""
    if disabled_reason():
        return None
    server = server_for(env, python)
    if server is None:
        return None
    try:
        return server.run(argv0, cwd, env, timeout, names, args)
    except ServerError as exc:
        _drop(_key(env, python), str(exc))
        _client_imports()[-1].warn(f"ground truth: fork server failed ({exc}); this run goes cold", stacklevel=2)
        return None


# =========================================================================== script entry

if __name__ == "__main__":
    _child = _serve(int(sys.argv[1]))
    if _child is None:
        raise SystemExit(0)
    # Now the forked child, at what is the first line of `python <entry>`; only this frame sits under it.
    _main_module, _path = _child
    del _child
    try:
        with open(_path, "rb") as _file:
            _code = compile(_file.read(), _path, "exec", dont_inherit=True)
    except BaseException as _exc:  # SyntaxError: reported as the interpreter does, without a traceback
        _exit_like_python(_exc, None)
    try:
        exec(_code, _main_module.__dict__)
    except BaseException as _exc:
        _exit_like_python(_exc, _exc.__traceback__.tb_next)
    _exit_like_python(None, None)
