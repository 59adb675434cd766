"""Ground-truth harness: run the labelled fixture cases under real Lightning and check their labels.

The label convention and the protocol are in ``fixtures/README.md``. API (keep it small; other tests use it):

``discover_cases(root) -> list[Case]``
    Every ``root/<name>.py`` and ``root/<name>/main.py`` (sorted by name). ``Case`` has ``name``,
    ``path`` (the file or the directory), ``entry`` (the file that is run), ``files`` (relative POSIX
    names of the case's ``.py`` files, e.g. ``("main.py", "models.py")``; a single-file case has
    ``("<name>.py",)``), ``labels`` (``Label(file, line, code, severity, cls, run)``, ``line`` 1-based,
    ``cls`` the ``class=`` value or None, ``run`` the ``run=`` value or None), ``skip_reason`` (from
    ``# ground-truth: skip <reason>`` in the leading comment block of the entry, else None), ``libs``
    (``# ground-truth: libs`` there: the case imports the pinned libraries and runs with their interpreter,
    ``support.libs.libs_python()``), ``label_errors`` (malformed labels and markers; they are problems) and
    ``reinitialised`` (from ``# ground-truth: reinitialised <reason>``: the program gives its meta-device
    model's weights values after setup and checks them, so ModelParallel's warning is no finding when the
    run exits 0, and the ``"ddp"`` mode does not apply), ``choice_args`` (``tuple[str, ...]``, from
    ``# ground-truth: choice ARG ...``, shell-split) and ``choice_env`` (``dict[str, str]``, from
    ``# ground-truth: choice-env NAME=VALUE ...``): the run-time choice of the ``"choice"`` mode, empty without
    the markers (``has_choice``). Markers sit in the leading comment block: the comments before the first
    statement, at the top of the file or right after the module docstring.

``applicable_modes(case) -> list[str]``
    The modes of the README table that say something about this case: ``"plain"`` when it has no
    labels or an error/hint label (or a ``run=plain`` or ``run=choice`` warning), ``"ddp"`` when it has no
    labels or a warning/hint label without ``run=`` (or a ``run=choice`` one), ``"choice"`` when it has a
    choice marker.

``run_mode(case, mode, timeout=DEFAULT_TIMEOUT_S) -> RunResult``
    ``run_case(case, mode_env(case, mode), timeout, args=mode_args(case, mode))``: ``MODE_ENV[mode]``, and in
    ``"choice"`` the case's ``choice_env`` and ``choice_args``. Use it rather than ``MODE_ENV[mode]`` alone.

``run_case(case, extra_env, timeout=DEFAULT_TIMEOUT_S, args=()) -> RunResult``
    Copies the case to a temporary directory and runs its entry there (``python <entry> *args``; ``sys.argv``
    and ``sys.orig_argv`` as that gives them, through the fork server too) with the current interpreter (a
    ``libs`` case: ``case_python(case)``, the libraries' one, with ``LIBS_RUN_ENV`` (``HF_HUB_OFFLINE=1``...)
    so nothing can be downloaded; ``LibsMissing`` when it does not exist), ``CUDA_VISIBLE_DEVICES=""``, a
    clean distributed environment (no inherited ``MASTER_PORT``, ``LT_*``, ``RANK``...; Lightning picks a
    free port per run), ``HYDRA_FULL_ERROR=1`` (a hydra app's exception is re-raised, not printed stripped by
    hydra) plus ``extra_env`` (``mode_env(case, mode)``), and a timeout. The final traceback of stderr is parsed (``[rankN]:`` prefixes removed): exception
    class, first line of the message, and the innermost frame inside the case's files -> (file, line);
    with several ranks only rank 0's lines are read.
    When a run fails with a rule's exception at a label, the fix for that label is applied to the copy
    and the case runs again, so every label of a file is proven, not only the first one reached:
    FAB001 ``w.m(...)`` -> ``getattr(w, "module", w).m(...)`` (that call site only; ``w.module.m(...)``
    when ``w`` contains a call; ``getattr(w, name)(...)`` -> ``getattr(getattr(w, "module", w), name)(...)``), FAB003
    ``mark_forward_method(w.m)`` / ``mark_forward_method(Cls.m)`` -> ``mark_forward_method("m")``,
    FAB004 ``w.mark_forward_method("x")`` -> ``None`` (the invalid mark is dropped; the call must sit on
    one line), FAB006 ``loss.backward(...)`` -> ``fabric.backward(loss, ...)`` (one line; the Fabric is named
    ``fabric`` there), FAB007 a second ``setup(model)`` -> ``model``, ``no_backward_sync(m)`` -> a null context,
    ``setup_dataloaders([a, b])`` -> ``setup_dataloaders(a, b)``, ``setup_dataloaders(ds)`` -> ``(DataLoader(ds))``. FAB002 has no automatic fix: only the first FAB002 class reached is proven, so give each
    FAB002 case one failing class (labels that name the same class count as one).
    FAB002 is raised as the record's TypeError (``_materialize_meta_tensors``) or as torch FSDP's
    ``AttributeError: 'X' object has no attribute 'reset_parameters'`` (only when the traceback passes
    through ``torch/distributed/fsdp``); under ModelParallel it is no exception but the warning
    "Parameter initialization incomplete ... : X", which ``RunStep.warned`` records (classes) in any
    run, clean or not. ``RunResult.steps`` holds one ``RunStep`` per run; the properties
    ``returncode``/``stdout``/``stderr``/``exc_class``/``exc_message``/``location`` are the last run's.

``expected_outcome_problems(case, result, mode) -> list[str]``
    ``[]`` when the runs match the protocol for ``mode``; otherwise readable sentences (with the tail
    of stderr) so a test can ``assert ... == []``. In ``"plain"`` error labels must fire, warning
    labels may, hint labels must not; in ``"ddp"`` warning and hint labels must fire, error labels
    may; in ``"choice"`` error and warning labels may fire, hint labels must not. A ``run=plain`` warning label
    must fire in ``"plain"`` and may in the others; a ``run=choice`` warning label must fire in ``"choice"`` and
    must not in ``"plain"`` nor ``"ddp"``. A run made with other arguments or choice variables than the mode's
    for this case (``run_mode``) is a problem. Any other failure, or a rule exception at an unlabelled line, is a problem; so is the
    ModelParallel warning naming a class that no FAB002 label names (even when the run exits 0). The
    warning proves the FAB002 labels of the classes it names, with the same must/may table.

``MODES``, ``MODE_ENV`` (what every case's run of a mode gets; ``mode_env(case, mode)`` and ``mode_args(case, mode)``
add the case's choice), ``RULE_EXCEPTIONS`` (code -> tuple of (exception class name, message regex)
pairs: one rule may be raised as several exceptions), ``RULE_WARNINGS`` (code -> regex of a warning that is
the rule's finding although the run exits 0: ModelParallel's "Parameter initialization incomplete" for
FAB002; group ``classes``), ``rule_of(exc_class, exc_message)`` (-> (code, match) or None),
``warned_classes(stderr)`` (the classes that warning names), ``label_class(case, label)`` (the class a
FAB002 label names) and ``parse_traceback(stderr)`` are public too.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from support import forkserver, libs

MODES = ("plain", "ddp", "choice")
# LT_STRATEGY is what `fabric run --strategy ddp` sets; without LT_CLI_USED it silently replaces
# the strategy written in the code (Lightning's _Connector._argument_from_env).
# "choice" is the default run given the case's run-time choice: its `# ground-truth: choice ARG ...` arguments
# and `# ground-truth: choice-env NAME=VALUE ...` variables, which depend on the case (mode_env, mode_args,
# run_mode); MODE_ENV holds only what every case's run of the mode gets.
MODE_ENV: dict[str, dict[str, str]] = {"plain": {}, "ddp": {"LT_STRATEGY": "ddp"}, "choice": {}}

RULE_EXCEPTIONS: dict[str, tuple[tuple[str, re.Pattern[str]], ...]] = {
    "FAB001": (
        (
            "RuntimeError",
            re.compile(r"You are calling the method `(?P<cls>[\w.]+)\.(?P<method>\w+)\(\)` from outside the model"),
        ),
    ),
    "FAB002": (
        # lightning.fabric.utilities.init._materialize_meta_tensors
        (
            "TypeError",
            re.compile(r"Materialization requires that the `(?P<cls>\w+)\.reset_parameters` method is implemented"),
        ),
        # torch FullyShardedDataParallel on a meta module (what FSDPStrategy.setup_module does); counts only
        # when the traceback passes through torch.distributed.fsdp (see _FSDP_FRAME_RE)
        ("AttributeError", re.compile(r"'(?P<cls>\w+)' object has no attribute 'reset_parameters'")),
    ),
    "FAB003": (("TypeError", re.compile(r"Expected a method or a string, but got: function")),),
    "FAB004": (
        (
            "AttributeError",
            re.compile(
                r"You marked '(?P<method>\w+)' as a forward method, but `(?P<cls>[\w.]+)\.\w+` does not exist"
                r" or is not a method"
            ),
        ),
        ("ValueError", re.compile(r"You cannot mark the forward method itself as a forward method")),
    ),
    # lightning.fabric.wrappers._backward_hook, raised from inside `loss.backward()` (the labelled line)
    "FAB007": (
        ("ValueError", re.compile(r"A model should be passed only once to the `(?P<method>setup|setup_module)` method")),
        ("TypeError", re.compile(r"You need to set up the model first before you can call `fabric\.no_backward_sync\(\)`")),
        ("TypeError", re.compile(r"Only PyTorch DataLoader are currently supported in `setup_dataloaders`")),
        ("RuntimeError", re.compile(r"requires the model and optimizer\(s\) to be set up jointly")),
    ),
    "FAB006": (
        (
            "RuntimeError",
            re.compile(r"The current strategy and precision selection requires you to call `fabric\.backward\(loss\)`"),
        ),
    ),
    # Fabric._validate_launched (setup, setup_module, init_module, barrier, ... before launch())
    "FAB005": (
        (
            "RuntimeError",
            re.compile(r"To use Fabric with more than one device, you must call `\.launch\(\)` or use the CLI"),
        ),
    ),
    # Fabric.launch's own checks of its function argument
    "FAB008": (
        ("TypeError", re.compile(r"`Fabric\.launch\(\.\.\.\)` needs to be a callable, but got")),
        ("TypeError", re.compile(r"`Fabric\.launch\(function=.*\)` needs to take at least one argument")),
        ("TypeError", re.compile(r"To spawn processes with the `\w+` strategy, `\.launch\(\)` needs to be called with a")),
        # `launch(build(fabric))` where build returns a module: launch calls `module(fabric)`, whose forward fails
        # on the Fabric (torch's own message, from inside forward; the innermost case frame is the launch line)
        ("TypeError", re.compile(r"must be Tensor, not Fabric")),
    ),
    # torch's DistributedDataParallel refuses a module without a parameter that requires a gradient
    "FAB009": (
        (
            "RuntimeError",
            re.compile(r"DistributedDataParallel is not needed when a module doesn't have any parameter that requires a"
                       r" gradient"),
        ),
    ),
}
# Findings that are a warning, not an exception: ModelParallelStrategy (_materialize_distributed_module)
# leaves modules without reset_parameters as uninitialised memory and only warns, naming their classes.
RULE_WARNINGS: dict[str, re.Pattern[str]] = {
    "FAB002": re.compile(
        r"Parameter initialization incomplete\. The following modules have parameters or buffers with"
        r" uninitialized memory because they don't define a `reset_parameters\(\)` method for re-initialization:"
        r" (?P<classes>\w+(?:, \w+)*)"
    ),
}
_FSDP_FRAME_RE = re.compile(r"[/\\]torch[/\\]distributed[/\\]fsdp[/\\]")
# "after": the checker reports nothing on that line, because an error certain on every configuration earlier
# in the same function stops the program first (its finding names this line); the runtime error fires here only
# once the labels before it are fixed.
SEVERITIES = ("error", "warning", "hint", "after")
# Which label severities must fire / may fire in each mode (fixtures/README.md table).
# (run=plain and run=choice labels: _must_fire/_may_fire.)
_MUST_FIRE = {"plain": {"error"}, "ddp": {"warning", "hint"}, "choice": set()}
_MAY_FIRE = {"plain": {"warning"}, "ddp": {"error"}, "choice": {"error", "warning"}}

DEFAULT_TIMEOUT_S = 120.0
# Runs go through the pre-importing fork server (support/forkserver.py) unless FABRIC_LSP_GROUND_TRUTH_COLD=1;
# it falls back to a fresh `python <entry>` by itself when it cannot start or must not run a case.
USE_FORK_SERVER = os.environ.get(forkserver.COLD_ENV) != "1"
# Variables that would make a case join someone else's process group or inherit a launch config.
_SCRUBBED_ENV_PREFIXES = ("LT_", "TORCHELASTIC_", "SLURM_", "PL_", "OMPI_", "PMI_")
_SCRUBBED_ENV_NAMES = {
    "MASTER_ADDR", "MASTER_PORT", "STANDALONE_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "NODE_RANK",
    "GROUP_RANK", "LOCAL_WORLD_SIZE", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME",
    "FABRIC_LSP_GROUND_TRUTH_COLD",
}
# Set in every run: hydra then re-raises an exception of the app instead of printing a stripped traceback
# (hydra._internal.utils.run_and_report), so the traceback is the interpreter's own, [rankN]: prefixes and all,
# and an error in hydra's own composition (a bad override) has one too.
_RUN_ENV = {
    "CUDA_VISIBLE_DEVICES": "",
    "PYTHONUNBUFFERED": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "OMP_NUM_THREADS": "1",  # the machine is small and shared; cases are tiny
    "HYDRA_FULL_ERROR": "1",
}

_LABEL_RE = re.compile(
    r"^#\s*expect:\s*(?P<code>FAB\d{3})\s+(?P<severity>[a-z]+)(?:\s+class=(?P<cls>[A-Za-z_]\w*))?"
    r"(?:\s+run=(?P<run>[a-z]+))?\s*$"
)
_SKIP_RE = re.compile(r"^#\s*ground-truth:\s*skip\s+(?P<reason>\S.*)$")
# The program gives its meta-device model's weights values after Fabric's setup (and checks them):
# ModelParallel's "Parameter initialization incomplete" is then no finding, and LT_STRATEGY=ddp,
# under which nothing materializes the meta-device model, does not apply.
_REINITIALISED_RE = re.compile(r"^#\s*ground-truth:\s*reinitialised\s+(?P<reason>\S.*)$")
_LIBS_RE = re.compile(r"^#\s*ground-truth:\s*libs\s*$")
# `# ground-truth: fabric-run`: the case is a script written for the `fabric run` CLI (it never calls
# launch()); it is started the way that command starts it (lightning.fabric.cli.main: LT_CLI_USED=1 and
# torchrun, one CPU process), and it must be a trap: no labels.
_FABRIC_RUN_RE = re.compile(r"^#\s*ground-truth:\s*fabric-run\s*$")
# `# ground-truth: choice ARG ...` (command-line arguments, shell-split) and `# ground-truth: choice-env NAME=VALUE
# ...` (environment variables): the run-time choice that the "choice" mode gives the program (run=choice labels).
_CHOICE_RE = re.compile(r"^#\s*ground-truth:\s*choice(?![\w-])\s*(?P<text>.*)$")
_CHOICE_ENV_RE = re.compile(r"^#\s*ground-truth:\s*choice-env(?![\w-])\s*(?P<text>.*)$")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Added to a libs case's environment: the libraries must never reach the network (models come from configs).
LIBS_RUN_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
_RANK_PREFIX_RE = re.compile(r"^\[rank\d+\]: ?")
_FRAME_RE = re.compile(r'^  File "(?P<path>.+)", line (?P<line>\d+)(?:, in .*)?$')
_EXC_LINE_RE = re.compile(r"^(?P<cls>[A-Za-z_][\w.]*)(?:: (?P<msg>.*))?$")
_ABORT_AT_EXIT_RE = re.compile(r"terminate called without an active exception")
_PORT_IN_USE_RE = re.compile(r"EADDRINUSE|address already in use", re.IGNORECASE)


@dataclass(frozen=True)
class Label:
    file: str  # relative POSIX name inside the case, e.g. "main.py"
    line: int  # 1-based
    code: str
    severity: str
    cls: str | None = None
    # "plain": a warning proven by the plain run: certain for the stated strategy but no exception
    # (ModelParallel's "Parameter initialization incomplete"), which LT_STRATEGY=ddp would replace.
    # "choice": a warning on a path taken only under the case's run-time choice: proven by the "choice" run,
    # and it must not fire in the default runs ("plain", "ddp").
    run: str | None = None

    def __str__(self) -> str:
        cls = f" class={self.cls}" if self.cls else ""
        run = f" run={self.run}" if self.run else ""
        return f"{self.file}:{self.line} {self.code} {self.severity}{cls}{run}"


@dataclass(frozen=True)
class Case:
    name: str
    path: Path
    entry: Path
    files: tuple[str, ...]
    labels: tuple[Label, ...]
    skip_reason: str | None = None
    label_errors: tuple[str, ...] = ()
    libs: bool = False  # `# ground-truth: libs`: runs with the pinned libraries' interpreter
    reinitialised: str | None = None  # `# ground-truth: reinitialised <reason>` (see _REINITIALISED_RE)
    fabric_run: bool = False  # `# ground-truth: fabric-run`: started by Lightning's `fabric run` (a trap)
    # `# ground-truth: choice ARG ...` / `# ground-truth: choice-env NAME=VALUE ...`: the arguments and variables
    # of the "choice" mode (empty without the markers)
    choice_args: tuple[str, ...] = ()
    choice_env: dict[str, str] = field(default_factory=dict, hash=False)

    @property
    def has_choice(self) -> bool:
        """Whether the case has a run-time choice marker (the "choice" mode applies)."""
        return bool(self.choice_args or self.choice_env)

    @property
    def root(self) -> Path:
        """Directory holding the case's files."""
        return self.path if self.path.is_dir() else self.path.parent

    @property
    def entry_name(self) -> str:
        return self.entry.relative_to(self.root).as_posix()

    def source(self, file: str) -> str:
        return (self.root / file).read_text(encoding="utf-8")


@dataclass(frozen=True)
class RunStep:
    returncode: int | None  # None when timed out
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    exc_class: str | None = None
    exc_message: str | None = None
    location: tuple[str, int] | None = None  # innermost frame inside the case's files
    fixed: tuple[Label, ...] = ()  # labels whose fix was applied to the copy for this run
    rule: str | None = None  # code whose exception this run raised
    hit: tuple[Label, ...] = ()  # labels that this run's exception proves
    port_retries: int = 0
    frames: tuple[tuple[str, int], ...] = ()  # every frame of the final traceback, innermost last
    warned: tuple[str, ...] = ()  # classes named by a RULE_WARNINGS["FAB002"] warning (run may exit 0)
    warned_hit: tuple[Label, ...] = ()  # FAB002 labels naming one of them
    via: str = "subprocess"  # "subprocess" (a fresh `python <entry>`) or "fork-server" (support/forkserver.py)

    def describe(self) -> str:
        if self.timed_out:
            return f"timed out after {self.seconds:.0f}s"
        if self.returncode == 0:
            if self.warned:
                return f"exited 0 but warned 'Parameter initialization incomplete' for {', '.join(self.warned)}"
            return "ran clean"
        where = f"{self.location[0]}:{self.location[1]}" if self.location else "no frame in the case's files"
        if self.exc_class is None:
            return f"exited {self.returncode} without a parsable traceback"
        return f"raised {self.exc_class}: {self.exc_message} (at {where})"


@dataclass
class RunResult:
    case: str
    extra_env: dict[str, str]
    steps: list[RunStep] = field(default_factory=list)
    stop_note: str | None = None  # why the fix-and-rerun chain stopped early, if it did
    args: tuple[str, ...] = ()  # command-line arguments after the entry (the "choice" mode's)

    @property
    def last(self) -> RunStep:
        return self.steps[-1]

    returncode = property(lambda self: self.last.returncode)
    stdout = property(lambda self: self.last.stdout)
    stderr = property(lambda self: self.last.stderr)
    exc_class = property(lambda self: self.last.exc_class)
    exc_message = property(lambda self: self.last.exc_message)
    location = property(lambda self: self.last.location)

    @property
    def seconds(self) -> float:
        return sum(step.seconds for step in self.steps)


# --------------------------------------------------------------------------- discovery


# discover_cases(fixtures/cases) parses 1,400 files (~2 s of CPU) and eight test modules ask for it while
# pytest collects, in every pytest-xdist worker: the cases (frozen) are kept per folder, for as long as no file
# under it is added, removed or changed (the key holds every file's size and modification time).
_DISCOVERED: dict[tuple, list[Case]] = {}


def _signature(root: Path) -> tuple:
    found = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            stat = os.stat(os.path.join(folder, name))
            found.append((folder, name, stat.st_mtime_ns, stat.st_size))
    return tuple(found)


def discover_cases(root: str | os.PathLike[str]) -> list[Case]:
    root = Path(root)
    key = (str(root.resolve()), _signature(root))
    if key not in _DISCOVERED:
        _DISCOVERED[key] = _discover_cases(root)
    return list(_DISCOVERED[key])


def _discover_cases(root: Path) -> list[Case]:
    cases = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith((".", "_")):
            continue
        if entry.is_file() and entry.suffix == ".py":
            cases.append(_load_case(entry.stem, entry, entry, (entry.name,)))
        elif entry.is_dir() and (entry / "main.py").is_file():
            files = tuple(
                p.relative_to(entry).as_posix()
                for p in sorted(entry.rglob("*.py"))
                if "__pycache__" not in p.parts
            )
            cases.append(_load_case(entry.name, entry, entry / "main.py", files))
    return cases


def _load_case(name: str, path: Path, entry: Path, files: tuple[str, ...]) -> Case:
    base = path if path.is_dir() else path.parent
    labels: list[Label] = []
    errors: list[str] = []
    for rel in files:
        source = (base / rel).read_text(encoding="utf-8")
        file_labels, file_errors = _parse_labels(rel, source)
        labels += file_labels
        errors += file_errors
    skip_reason = _parse_skip(entry.read_text(encoding="utf-8"))
    needs_libs = _parse_libs(entry.read_text(encoding="utf-8"))
    reinitialised = _parse_skip(entry.read_text(encoding="utf-8"), _REINITIALISED_RE)
    fabric_run = _parse_libs(entry.read_text(encoding="utf-8"), _FABRIC_RUN_RE)
    if fabric_run and labels:
        errors.append("a '# ground-truth: fabric-run' case is a trap: it must have no labels")
    choice_text = _parse_skip(entry.read_text(encoding="utf-8"), _CHOICE_RE, "text")
    choice_env_text = _parse_skip(entry.read_text(encoding="utf-8"), _CHOICE_ENV_RE, "text")
    choice_args, choice_errors = _parse_choice_args(choice_text)
    choice_env, choice_env_errors = _parse_choice_env(choice_env_text)
    errors += choice_errors + choice_env_errors
    if not (choice_args or choice_env):
        errors += [
            f"{label}: run=choice needs a run-time choice to give the program: '# ground-truth: choice ARG ...' or"
            " '# ground-truth: choice-env NAME=VALUE ...' in the leading comment block of the entry file"
            for label in labels
            if label.run == "choice"
        ]
    for marker, present in (
        ("skip", skip_reason is not None), ("libs", needs_libs), ("reinitialised", reinitialised is not None),
        ("fabric-run", fabric_run), ("choice", choice_text is not None), ("choice-env", choice_env_text is not None),
    ):
        markers = sum(
            len(re.findall(rf"^\s*#\s*ground-truth:\s*{marker}(?![\w-])", (base / rel).read_text(encoding="utf-8"),
                           re.M))
            for rel in files
        )
        if markers > present:
            errors.append(f"'# ground-truth: {marker}' must sit once in the leading comment block of the entry file")
    return Case(name, path, entry, files, tuple(labels), skip_reason, tuple(errors), needs_libs, reinitialised,
                fabric_run=fabric_run, choice_args=choice_args, choice_env=choice_env)


# Variables the harness itself sets or scrubs for every run (LT_* is the "ddp" mode's): no case's choice.
def _harness_owned(name: str) -> bool:
    return name in _RUN_ENV or name in _SCRUBBED_ENV_NAMES or name.startswith(_SCRUBBED_ENV_PREFIXES)


def _parse_choice_args(text: str | None) -> tuple[tuple[str, ...], list[str]]:
    """`# ground-truth: choice ARG ...`: the arguments, shell-split (shlex), or the marker's errors."""
    if text is None:
        return (), []
    try:
        args = tuple(shlex.split(text))
    except ValueError as exc:
        return (), [f"malformed '# ground-truth: choice {text}': {exc} (the arguments are shell-split)"]
    if not args:
        return (), ["'# ground-truth: choice' needs the command-line arguments of the choice ('choice --sample')"]
    return args, []


def _parse_choice_env(text: str | None) -> tuple[dict[str, str], list[str]]:
    """`# ground-truth: choice-env NAME=VALUE ...`: the variables (shell-split), or the marker's errors."""
    if text is None:
        return {}, []
    where = "'" + f"# ground-truth: choice-env {text}".rstrip() + "'"
    try:
        items = shlex.split(text)
    except ValueError as exc:
        return {}, [f"malformed {where}: {exc} (the assignments are shell-split)"]
    if not items:
        return {}, [f"{where} needs NAME=VALUE assignments ('choice-env EVAL=1')"]
    env: dict[str, str] = {}
    errors = []
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not _ENV_NAME_RE.match(name):
            errors.append(f"malformed {where}: {item!r} is no NAME=VALUE assignment")
        elif name in env:
            errors.append(f"malformed {where}: {name} is assigned twice")
        elif _harness_owned(name):
            errors.append(f"malformed {where}: {name} is set or scrubbed by the harness itself, not a case's choice")
        else:
            env[name] = value
    return (env, []) if not errors else ({}, errors)


def _parse_labels(rel: str, source: str) -> tuple[list[Label], list[str]]:
    labels: list[Label] = []
    errors: list[str] = []
    try:
        tree = ast.parse(source)
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (SyntaxError, tokenize.TokenError) as exc:
        return [], [f"{rel}: does not parse: {exc}"]
    class_lines = {node.lineno: node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    lines = source.splitlines()
    seen_lines: set[int] = set()
    for tok in tokens:
        if tok.type != tokenize.COMMENT or not re.match(r"#\s*expect\b", tok.string):
            continue
        line = tok.start[0]
        where = f"{rel}:{line}"
        m = _LABEL_RE.match(tok.string)
        if not m:
            errors.append(
                f"{where}: malformed label {tok.string!r} (format: '# expect: CODE SEVERITY [class=NAME] [run=plain|choice]')"
            )
            continue
        code, severity, cls, run = m["code"], m["severity"], m["cls"], m["run"]
        if code not in RULE_EXCEPTIONS:
            errors.append(f"{where}: unknown rule code {code}")
        if severity not in SEVERITIES:
            errors.append(f"{where}: unknown severity {severity!r} (one of {', '.join(SEVERITIES)})")
        if not lines[line - 1][: tok.start[1]].strip():
            errors.append(f"{where}: label on a line without code; put it at the end of the reported line")
        if line in seen_lines:
            errors.append(f"{where}: more than one label on a line")
        if code == "FAB002" and cls is None and line not in class_lines:
            errors.append(f"{where}: FAB002 label needs class=NAME unless the line is a class statement")
        if cls is not None and code != "FAB002":
            errors.append(f"{where}: class= is only meaningful for FAB002")
        if run == "choice":
            if severity != "warning":
                errors.append(
                    f"{where}: run=choice is only for a warning (a path taken only under a run-time choice is a"
                    " warning naming the choice, never an error or a hint)"
                )
        elif run is not None and run != "plain":
            errors.append(f"{where}: unknown run={run} (run=plain or run=choice)")
        elif run is not None and (severity != "warning" or code != "FAB002"):
            errors.append(f"{where}: run=plain is only for a FAB002 warning proven by ModelParallel's warning in the plain run")
        seen_lines.add(line)
        labels.append(Label(rel, line, code, severity, cls, run))
    for tok in tokens:
        if tok.type == tokenize.COMMENT and re.match(r"#\s*ground-truth\b", tok.string):
            if not (_SKIP_RE.match(tok.string) or _LIBS_RE.match(tok.string) or _REINITIALISED_RE.match(tok.string)
                    or _FABRIC_RUN_RE.match(tok.string) or _CHOICE_RE.match(tok.string)
                    or _CHOICE_ENV_RE.match(tok.string)):
                errors.append(
                    f"{rel}:{tok.start[0]}: malformed marker (format: '# ground-truth: skip <reason>',"
                    " '# ground-truth: libs', '# ground-truth: reinitialised <reason>', '# ground-truth: fabric-run',"
                    " '# ground-truth: choice ARG ...' or '# ground-truth: choice-env NAME=VALUE ...')"
                )
    return labels, errors


def _leading_comments(entry_source: str) -> list[str]:
    """The comment lines of the entry file's leading comment block: the comments before its first statement, a
    module docstring being no statement here (markers sit at the top of the file or right after the docstring)."""
    lines = entry_source.splitlines()
    docstring_end = 0
    try:
        body = ast.parse(entry_source).body
    except SyntaxError:
        body = []
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(
        body[0].value.value, str
    ):
        docstring_end = body[0].end_lineno or 0
    comments = []
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if docstring_end and body[0].lineno <= number <= docstring_end:
            continue
        if not line:
            continue
        if not line.startswith("#"):
            break  # only the leading comment block counts
        comments.append(line)
    return comments


def _parse_skip(entry_source: str, pattern: re.Pattern[str] = _SKIP_RE, group: str = "reason") -> str | None:
    for line in _leading_comments(entry_source):
        m = pattern.match(line)
        if m:
            return m[group].strip()
    return None


def _parse_libs(entry_source: str, marker: re.Pattern[str] = _LIBS_RE) -> bool:
    return any(marker.match(line) for line in _leading_comments(entry_source))


def label_class(case: Case, label: Label) -> str | None:
    """The class a FAB002 label names: its ``class=`` or the class defined on the labelled line."""
    if label.cls:
        return label.cls
    tree = ast.parse(case.source(label.file))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.lineno == label.line:
            return node.name
    return None


def applicable_modes(case: Case) -> list[str]:
    proofs = {_proof(label) for label in case.labels}
    modes = []
    # A run=choice label is proven twice: it fires with the choice and the default runs never reach it.
    if not proofs or proofs & {"error", "hint", "plain", "choice"}:
        modes.append("plain")
    if (not proofs or proofs & {"warning", "hint", "choice"}) and case.reinitialised is None:
        modes.append("ddp")
    if case.has_choice:
        modes.append("choice")
    return modes


def mode_env(case: Case, mode: str) -> dict[str, str]:
    """The extra environment of the case's run in ``mode``: ``MODE_ENV[mode]``, and in ``"choice"`` the case's
    ``choice-env`` variables."""
    return {**MODE_ENV[mode], **(case.choice_env if mode == "choice" else {})}


def mode_args(case: Case, mode: str) -> tuple[str, ...]:
    """The command-line arguments of the case's run in ``mode``: its ``choice`` arguments in ``"choice"``."""
    return case.choice_args if mode == "choice" else ()


def run_mode(case: Case, mode: str, timeout: float = DEFAULT_TIMEOUT_S) -> RunResult:
    """``run_case`` with the environment and arguments of ``mode`` for this case."""
    return run_case(case, mode_env(case, mode), timeout, args=mode_args(case, mode))


def _proof(label: Label) -> str:
    """How a label is proven: by its severity's row of the README table, or by the run it names."""
    return label.run or label.severity


def _must_fire(label: Label, mode: str) -> bool:
    if label.severity == "after":
        return mode == "plain"  # once the earlier error is fixed (a later run of the same mode)
    return mode == label.run if label.run else label.severity in _MUST_FIRE[mode]


def _may_fire(label: Label, mode: str) -> bool:
    if label.run == "choice":
        return False  # the default runs never reach it (and in "choice" it must fire)
    if label.severity == "after":
        return True  # in any mode, once the earlier error is fixed
    return mode != label.run if label.run else label.severity in _MAY_FIRE[mode]


# --------------------------------------------------------------------------- running


def parse_traceback(stderr: str) -> tuple[str | None, str | None, list[tuple[str, int]]]:
    """(exception class, first line of its message, frames as (path, line)) of the last traceback."""
    lines = stderr.splitlines()
    if any(_RANK_PREFIX_RE.match(line) for line in lines):
        # Several processes (devices=2) interleave their tracebacks; read rank 0's.
        lines = [line for line in lines if not _RANK_PREFIX_RE.match(line) or line.startswith("[rank0]:")]
    lines = [_RANK_PREFIX_RE.sub("", line) for line in lines]
    starts = [i for i, line in enumerate(lines) if line.rstrip() == "Traceback (most recent call last):"]
    if not starts:
        return None, None, []
    frames: list[tuple[str, int]] = []
    for line in lines[starts[-1] + 1 :]:
        frame = _FRAME_RE.match(line)
        if frame:
            frames.append((frame["path"], int(frame["line"])))
            continue
        if line[:1].isspace() or not line.strip():
            continue  # source line / caret line of a frame
        m = _EXC_LINE_RE.match(line.rstrip())
        if m:
            return m["cls"], (m["msg"] or ""), frames
        return None, line, frames
    return None, None, frames


def run_case(
    case: Case, extra_env: dict[str, str], timeout: float = DEFAULT_TIMEOUT_S, args: tuple[str, ...] = ()
) -> RunResult:
    args = tuple(args)
    result = RunResult(case.name, dict(extra_env), args=args)
    fixed: list[Label] = []
    patched = {rel: case.source(rel) for rel in case.files}
    while True:
        step = _run_with_port_retry(case, patched, extra_env, timeout, tuple(fixed), args)
        result.steps.append(step)
        new_hits = [label for label in step.hit if label not in fixed]
        if step.returncode == 0 or not new_hits:
            return result
        if len(result.steps) > len(case.labels):
            result.stop_note = "more reruns than labels; stopped"
            return result
        for label in new_hits:
            try:
                patched[label.file] = _apply_fix(patched[label.file], label, step)
            except _NoFix as exc:
                result.stop_note = str(exc)
                return result
            fixed.append(label)


def _run_with_port_retry(case, sources, extra_env, timeout, fixed, args=()) -> RunStep:
    # Lightning picks a free port by binding port 0 and releasing it, so two concurrent DDP runs can,
    # rarely, race for the same port; that is the machine, not the case: retry.
    # Likewise torch's gloo threads can abort the interpreter at exit ("terminate called without an
    # active exception", SIGABRT, no Python traceback) on a loaded machine: retry that too.
    for attempt in range(3):
        step = _run_once(case, sources, extra_env, timeout, fixed, args)
        if step.returncode == 0:
            break
        aborted_at_exit = step.exc_class is None and _ABORT_AT_EXIT_RE.search(step.stderr)
        if not (_PORT_IN_USE_RE.search(step.stderr) or aborted_at_exit):
            break
    return dataclasses.replace(step, port_retries=attempt)


def case_python(case: Case) -> str:
    """The interpreter a case runs with: the libraries' one for a ``libs`` case, else the current one."""
    if not case.libs:
        return sys.executable
    reason = libs.missing_reason()
    if reason is not None:
        raise LibsMissing(f"{case.name} is a '# ground-truth: libs' case, but {reason}")
    return libs.libs_python()


def _run_once(case: Case, sources: dict[str, str], extra_env, timeout, fixed, args=()) -> RunStep:
    python = case_python(case)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in _SCRUBBED_ENV_NAMES and not k.startswith(_SCRUBBED_ENV_PREFIXES)
    }
    env.update(_RUN_ENV)
    if case.libs:
        env.update(LIBS_RUN_ENV)
    env.update(extra_env)
    workdir = Path(tempfile.mkdtemp(prefix=f"gt-{case.name}-"))
    try:
        if case.path.is_dir():
            shutil.copytree(case.path, workdir, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
        for rel, text in sources.items():
            (workdir / rel).write_text(text, encoding="utf-8")
        started = time.monotonic()
        via = "fork-server"
        done = forkserver.run_python(
            case.entry_name, workdir, env, timeout, _module_names(case), python, args=args
        ) if (USE_FORK_SERVER and _fork_server_ok(case, sources) and not case.fabric_run) else None
        if done is None:
            via = "subprocess" if not case.fabric_run else "fabric-run"
            done = _run_cold(case.entry_name, workdir, env, timeout, python, case.fabric_run, args)
        stdout, stderr, timed_out = done.stdout, done.stderr, done.timed_out
        seconds = time.monotonic() - started
        exc_class, exc_message, frames = parse_traceback(stderr) if done.returncode else (None, None, [])
        location = _innermost_case_frame(frames, workdir, case.files)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    step = RunStep(
        returncode=None if timed_out else done.returncode,
        stdout=stdout,
        stderr=stderr,
        seconds=seconds,
        timed_out=timed_out,
        exc_class=exc_class,
        exc_message=exc_message,
        location=location,
        fixed=fixed,
        frames=tuple(frames),
        warned=warned_classes(stderr),
        via=via,
    )
    rule, hit = _labels_hit(case, step)
    warned_hit = tuple(l for l in case.labels if l.code == "FAB002" and label_class(case, l) in step.warned)
    return dataclasses.replace(step, rule=rule, hit=hit, warned_hit=warned_hit)


# What `fabric run --accelerator cpu --devices 1 <entry> [ARG ...]` runs, without click (not a Lightning
# dependency): the command's own function, which sets LT_CLI_USED=1 and the LT_* of its options and
# starts the script with torchrun, passing it the script's arguments (the "choice" mode's).
# `--strategy ddp` (the "ddp" mode) is LT_STRATEGY from the mode's env.
_FABRIC_RUN_BOOTSTRAP = (
    "import socket, sys\n"
    "from argparse import Namespace\n"
    "from lightning.fabric.cli import main\n"
    "with socket.socket() as s:\n"
    "    s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]\n"
    "main(Namespace(accelerator='cpu', strategy=None, devices='1', num_nodes=1, node_rank=0,\n"
    "               main_address='127.0.0.1', main_port=port, precision=None, script=sys.argv[1]), sys.argv[2:])\n"
)


def _run_cold(
    entry_name: str, workdir: Path, env: dict[str, str], timeout: float, python: str | None = None,
    fabric_run: bool = False, args: tuple[str, ...] = (),
) -> forkserver.Completed:
    """`python <entry> [ARG ...]` as a fresh interpreter: the reference the fork server is checked against; for a
    `fabric-run` case, the `fabric run` command."""
    command = [python or sys.executable, entry_name, *args]
    if fabric_run:
        command = [python or sys.executable, "-c", _FABRIC_RUN_BOOTSTRAP, entry_name, *args]
    proc = subprocess.Popen(
        command,
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # so a timeout can end the case's own children (DDP workers) too
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        timed_out = True
    return forkserver.Completed(proc.returncode, stdout, stderr, timed_out)


# Calls that change the process environment: a case doing so may mean to influence what torch/Lightning read
# while importing, which under the fork server already happened.
_ENV_WRITES = {"putenv", "unsetenv", "setdefault", "update", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _fork_server_ok(case: Case, sources: dict[str, str]) -> bool:
    """Whether a fork-server run is the same as a cold one for this case (forkserver.py's docstring): it
    imports ``lightning`` (which imports everything the server preloads) and never writes os.environ.
    Conservative: anything else runs cold."""
    imports_lightning = False
    for text in sources.values():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return False
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imports_lightning |= any(a.name.partition(".")[0] == "lightning" for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                imports_lightning |= node.level == 0 and (node.module or "").partition(".")[0] == "lightning"
            elif isinstance(node, ast.Attribute) and node.attr in ("environ", "environb", "putenv", "unsetenv"):
                if node.attr in ("putenv", "unsetenv"):
                    return False
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
                if isinstance(node.value, ast.Attribute) and node.value.attr in ("environ", "environb"):
                    return False
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _ENV_WRITES:
                target = node.func.value
                if isinstance(target, ast.Attribute) and target.attr in ("environ", "environb"):
                    return False
                if isinstance(target, ast.Name) and target.id in ("environ", "environb"):
                    return False
    return imports_lightning


def _module_names(case: Case) -> set[str]:
    """Every name a file of the case could be imported as at top level (over-approximated)."""
    names = set()
    for rel in case.files:
        parts = Path(rel).parts
        names.update(parts[:-1])
        names.add(Path(parts[-1]).stem)
    return names


def _innermost_case_frame(frames, workdir: Path, files) -> tuple[str, int] | None:
    real_workdir = Path(os.path.realpath(workdir))
    found = None
    for path, line in frames:
        try:
            rel = Path(os.path.realpath(path)).relative_to(real_workdir).as_posix()
        except ValueError:
            continue
        if rel in files:
            found = (rel, line)
    return found


def rule_of(exc_class: str | None, exc_message: str | None) -> tuple[str, re.Match[str]] | None:
    for code, forms in RULE_EXCEPTIONS.items():
        for cls, pattern in forms:
            if exc_class == cls and exc_message is not None:
                m = pattern.search(exc_message)
                if m:
                    return code, m
    return None


def warned_classes(stderr: str) -> tuple[str, ...]:
    """Classes named by ModelParallel's "Parameter initialization incomplete" warning (sorted, unique)."""
    names: set[str] = set()
    for line in stderr.splitlines():
        m = RULE_WARNINGS["FAB002"].search(_RANK_PREFIX_RE.sub("", line))
        if m:
            names.update(m["classes"].split(", "))
    return tuple(sorted(names))


def _labels_hit(case: Case, step: RunStep) -> tuple[str | None, tuple[Label, ...]]:
    if step.returncode in (0, None):
        return None, ()
    matched = rule_of(step.exc_class, step.exc_message)
    if matched is None:
        return None, ()
    code, m = matched
    if code == "FAB002" and step.exc_class == "AttributeError" and not any(
        _FSDP_FRAME_RE.search(path) for path, _ in step.frames
    ):
        return None, ()  # a missing reset_parameters outside torch FSDP's materialization is some other bug
    if code == "FAB002":
        hit = tuple(l for l in case.labels if l.code == code and label_class(case, l) == m["cls"])
    else:
        hit = tuple(l for l in case.labels if l.code == code and (l.file, l.line) == step.location)
    return code, hit


class _NoFix(Exception):
    pass


class LibsMissing(RuntimeError):
    """A libs case was asked to run but the libraries' interpreter does not exist."""


def _apply_fix(source: str, label: Label, step: RunStep) -> str:
    """Apply the label's fix without changing any line number, so later labels keep their lines."""
    tree = ast.parse(source)
    if label.code == "FAB001":
        method = rule_of(step.exc_class, step.exc_message)[1]["method"]
        # w.m(...) -> getattr(w, "module", w).m(...): the same call on the unwrapped module, this call site
        # only; a helper reached by both the wrapped model and `model.module` keeps working for the latter.
        # When w has calls in it (evaluated twice that way) or spans lines: w.module.m(...).
        lines = source.splitlines(keepends=True)
        points = []
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == method
                and node.func.end_lineno == label.line
            ):
                continue
            value = node.func.value
            effects = (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)
            pure = not any(isinstance(n, effects) for n in ast.walk(value))
            if pure and value.lineno == value.end_lineno:
                raw = lines[value.lineno - 1].encode("utf-8")  # ast columns are UTF-8 byte offsets
                text = raw[value.col_offset : value.end_col_offset].decode("utf-8")
                span = (value.col_offset, value.end_col_offset)
                points.append((value.lineno, span, f'getattr({text}, "module", {text})'))
            else:
                points.append((value.end_lineno, value.end_col_offset, ".module"))
        for node in ast.walk(tree):
            # getattr(w, name)(...) -> getattr(getattr(w, "module", w), name)(...): a name computed at run time.
            func = node.func if isinstance(node, ast.Call) else None
            if (
                isinstance(func, ast.Call)
                and isinstance(func.func, ast.Name)
                and func.func.id == "getattr"
                and len(func.args) >= 2
                and func.end_lineno == label.line
            ):
                value = func.args[0]
                if value.lineno == value.end_lineno and not any(isinstance(n, ast.Call) for n in ast.walk(value)):
                    raw = lines[value.lineno - 1].encode("utf-8")
                    text = raw[value.col_offset : value.end_col_offset].decode("utf-8")
                    points.append((value.lineno, (value.col_offset, value.end_col_offset), f'getattr({text}, "module", {text})'))
    elif label.code == "FAB003":
        points = []
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "mark_forward_method"
                and node.args
                and isinstance(node.args[0], ast.Attribute)
                and node.args[0].lineno == label.line == node.args[0].end_lineno
            ):
                arg = node.args[0]
                points.append((arg.lineno, (arg.col_offset, arg.end_col_offset), repr(arg.attr)))
    elif label.code == "FAB004":
        # w.mark_forward_method("x") -> None: the invalid mark is dropped (that call only, on one line);
        # the rest of the case must not depend on it (see fixtures/README.md).
        points = [
            (node.lineno, (node.col_offset, node.end_col_offset), "None")
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "mark_forward_method"
            and node.lineno == node.end_lineno == label.line
        ]
    elif label.code == "FAB006":
        # x.backward(args) -> fabric.backward(x, args) (the call on one line; the case names its Fabric `fabric`
        # where it calls backward, as fixtures/README.md asks).
        lines = source.splitlines(keepends=True)
        points = []
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "backward"
                and node.lineno == node.end_lineno == label.line
            ):
                raw = lines[node.lineno - 1].encode("utf-8")
                text = lambda n: raw[n.col_offset : n.end_col_offset].decode("utf-8")  # noqa: E731
                arguments = [text(node.func.value)] + [text(a) for a in node.args]
                arguments += [f"{k.arg}={text(k.value)}" for k in node.keywords]
                points.append((node.lineno, (node.col_offset, node.end_col_offset), f"fabric.backward({', '.join(arguments)})"))
    elif label.code == "FAB007":
        # The call Lightning refused, on the labelled line: a second setup -> its argument; no_backward_sync ->
        # a null context; setup_dataloaders([a, b]) -> (a, b) spread; setup_dataloaders(ds) -> DataLoader(ds).
        lines = source.splitlines(keepends=True)
        points = []
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.lineno == label.line
                    and node.end_lineno == label.line):
                continue
            raw = lines[node.lineno - 1].encode("utf-8")
            text = lambda n: raw[n.col_offset : n.end_col_offset].decode("utf-8")  # noqa: E731
            span = (node.col_offset, node.end_col_offset)
            if node.func.attr in ("setup", "setup_module") and node.args:
                points.append((node.lineno, span, text(node.args[0])))
            elif node.func.attr == "no_backward_sync":
                points.append((node.lineno, span, '__import__("contextlib").nullcontext()'))
            elif node.func.attr == "setup_dataloaders" and len(node.args) == 1:
                argument = node.args[0]
                if isinstance(argument, (ast.List, ast.Tuple)):
                    inner = ", ".join(text(e) for e in argument.elts)
                else:
                    inner = f'__import__("torch").utils.data.DataLoader({text(argument)})'
                points.append((node.lineno, (argument.col_offset, argument.end_col_offset), inner))
    elif label.code == "FAB009":
        # `fabric.setup_module(m)` / `fabric.setup(m)` -> `fabric.to_device(m)`: the frozen module is moved, not wrapped
        points = []
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.lineno == label.line
                    and node.func.attr in ("setup", "setup_module") and len(node.args) == 1):
                end = node.func.end_col_offset
                points.append((node.func.end_lineno, (end - len(node.func.attr), end), "to_device"))
    elif label.code == "FAB005":
        points = _launch_after_constructor(tree, source, label)
    elif label.code == "FAB008":
        points = _launch_argument_fix(tree, source, label)
    else:
        raise _NoFix(
            f"{label} fired; {label.code} has no automatic fix, so later labels of this case cannot be"
            " proven in the same run (give each case one failing class)"
        )
    if not points:
        raise _NoFix(f"{label} fired but the harness found no call to fix on that line")
    lines = source.splitlines(keepends=True)
    for lineno, col, text in sorted(points, key=lambda p: (p[0], p[1]), reverse=True):
        raw = lines[lineno - 1].encode("utf-8")  # ast columns are UTF-8 byte offsets
        start, end = col if isinstance(col, tuple) else (col, col)
        lines[lineno - 1] = (raw[:start] + text.encode("utf-8") + raw[end:]).decode("utf-8")
    return "".join(lines)


def _launch_after_constructor(tree: ast.AST, source: str, label: Label) -> list:
    """FAB005: the Fabric call on the labelled line is `r.setup(...)` (or `r.init_module()`, ...): the statement
    `r = ...Fabric(...)` of that file gets `; r.launch()` at its end (the same line count)."""
    receivers = {
        ast.unparse(node.func.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.lineno == label.line
    }
    points = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call):
            target = ast.unparse(node.targets[0])
            if target in receivers and ast.unparse(node.value.func).split(".")[-1].endswith("Fabric"):
                points.append((node.end_lineno, node.end_col_offset, f"; {target}.launch()"))
    return points[:1]


def _launch_argument_fix(tree: ast.AST, source: str, label: Label) -> list:
    """FAB008: `w.launch(f(w, ...))` -> `w.launch(f, ...)`; `w.launch(f)` with `def f():` -> `def f(fabric):`
    (on the def's line). A spawning strategy without a function has no fix here (one label per case)."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "launch"
                and node.lineno == label.line and node.args):
            continue
        argument = node.args[0]
        if isinstance(argument, ast.Call) and argument.lineno == argument.end_lineno:
            rest = argument.args[1:] if argument.args else []
            text = ", ".join([ast.unparse(argument.func)] + [ast.unparse(a) for a in rest])
            return [(argument.lineno, (argument.col_offset, argument.end_col_offset), text)]
        if isinstance(argument, ast.Name):
            for definition in ast.walk(tree):
                if isinstance(definition, ast.FunctionDef) and definition.name == argument.id:
                    line = source.splitlines()[definition.lineno - 1]
                    column = len(line[: line.index("(", definition.col_offset) + 1].encode("utf-8"))
                    return [(definition.lineno, column, "fabric")]
    return []


# --------------------------------------------------------------------------- checking


def expected_outcome_problems(case: Case, result: RunResult, mode: str) -> list[str]:
    problems = list(case.label_errors)
    if mode not in MODES:
        return problems + [f"unknown mode {mode!r}"]
    if mode not in applicable_modes(case):
        problems.append(f"mode {mode!r} does not apply to this case (labels: {[str(l) for l in case.labels]})")
    want_env, want_args = mode_env(case, mode), mode_args(case, mode)
    given_env = {k: result.extra_env.get(k) for k in {**want_env, **case.choice_env}}
    if given_env != {k: want_env.get(k) for k in given_env} or tuple(result.args) != want_args:
        # A "choice" run made without the case's choice proves nothing (and a default run made with it neither).
        problems.append(
            f"the {mode} run was made with arguments {list(result.args)} and extra env {result.extra_env}, but the"
            f" case's {mode} run has arguments {list(want_args)} and extra env {want_env} (use run_mode(case, {mode!r}))"
        )
    must = {l for l in case.labels if _must_fire(l, mode)}
    may = {l for l in case.labels if _may_fire(l, mode)}
    proven: set[Label] = set()
    env = " ".join(f"{k}={v}" for k, v in result.extra_env.items()) or "no extra env"
    if result.args:
        env += "; arguments " + shlex.join(result.args)
    for index, step in enumerate(result.steps):
        run = f"{mode} run {index + 1} ({env}" + (
            f"; fixed before this run: {', '.join(map(str, step.fixed))})" if step.fixed else ")"
        )
        if step.timed_out:
            problems.append(f"{run} {step.describe()}" + _tail(step))
            break
        if step.warned and not (case.reinitialised and step.returncode == 0):
            # ModelParallel's warning is a FAB002 finding even when the run exits 0 (fixtures/README.md),
            # unless the program gives the weights values after setup and its own checks pass.
            unlabelled = [c for c in step.warned if not any(label_class(case, l) == c for l in step.warned_hit)]
            if unlabelled:
                problems.append(
                    f"{run}: FAB002 fired where no FAB002 label says so: Lightning warned 'Parameter initialization"
                    f" incomplete' for {', '.join(unlabelled)}" + _tail(step)
                )
            wrong = [l for l in step.warned_hit if l not in must and l not in may]
            if wrong:
                problems.append(
                    f"{run}: {', '.join(map(str, wrong))} fired (Parameter initialization incomplete), but in the"
                    f" {mode} run {_kind(wrong[0])} must not fire (README table)"
                )
            proven.update(l for l in step.warned_hit if l in must)
        if step.returncode == 0:
            break
        if not step.hit:
            if step.rule:
                problems.append(
                    f"{run}: {step.rule} fired where no {step.rule} label says so: {step.describe()}"
                )
            else:
                problems.append(f"{run} failed with something that is no labelled finding: {step.describe()}" + _tail(step))
            break
        early = [l for l in step.hit if l.severity == "after" and not step.fixed]
        if early:
            problems.append(
                f"{run}: {', '.join(map(str, early))} fired before any earlier label was fixed: an 'after' label is a"
                f" site that an earlier certain error stops first (README): {step.describe()}"
            )
        wrong = [l for l in step.hit if l not in must and l not in may]
        if wrong:
            problems.append(
                f"{run}: {', '.join(map(str, wrong))} fired, but in the {mode} run {_kind(wrong[0])}"
                f" must not fire (README table): {step.describe()}"
            )
        proven.update(l for l in step.hit if l in must)
    for label in sorted(must - proven, key=lambda l: (l.file, l.line)):
        problems.append(
            f"{label} did not fire in the {mode} run; last run {result.last.describe()}"
            + (f"; {result.stop_note}" if result.stop_note else "")
            + (_tail(result.last) if result.last.returncode not in (0, None) else "")
        )
    return problems


def _kind(label: Label) -> str:
    if label.run == "choice":
        return "a run=choice label (a path taken only under the run-time choice, which the default runs never reach)"
    return f"a {label.severity} label"


def _tail(step: RunStep, lines: int = 25) -> str:
    tail = "\n".join(step.stderr.rstrip().splitlines()[-lines:])
    return f"\n--- stderr (last {lines} lines) ---\n{tail}\n---" if tail else ""
