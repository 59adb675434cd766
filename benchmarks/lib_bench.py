"""Library rows of `make bench` (issue 25): fabric-lsp with transformers, peft, timm, open_clip,
torchvision, diffusers and sentence-transformers installed in the analysis interpreter
(`.venv-libs`, made by `make libs` / `make test`).

- CLI: `fabric-lsp check --no-cache --python .venv-libs/bin/python FILE` on each script of
  library_scripts.py, and the same without `--python` (the bench's own interpreter: torch and
  lightning, none of these libraries), in alternation; wall time (median) and peak RSS of each
  process, and the findings of both, which must be equal.
- Server: a new `fabric-lsp serve`, initialized with `{"python": ".venv-libs/bin/python"}`, opens
  the all-libraries file: time to its first diagnostics, and the server's peak RSS.
- jedi: what jedi is asked (Workspace.module_attribute, the engine's only way to jedi) and the
  inference steps it takes (the counter workspace.py puts on jedi), in a CLI run per file.

Before the tables, the issue's e01 took 51-57 s and 2.4 GB with transformers installed: one jedi goto
followed transformers' star imports through 4,504 module imports.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from check_bench import _env
from library_scripts import ALL_LABEL, SCRIPTS
from lsp_bench import make_workspace
from lsp_client import ServerProcess
from real_bench import _vm_hwm

REPO = Path(__file__).resolve().parents[1]
LIBS_PYTHON = REPO / ".venv-libs" / "bin" / "python"
LIBRARIES = ("transformers", "peft", "timm", "open_clip", "torchvision", "diffusers", "sentence_transformers")
MB = 1024 * 1024

# Starts the CLI and reads its rusage with os.wait4. A small parent, because Linux gives an exec'd
# child the peak memory of the process it was forked from (run.py holds hundreds of MB by now);
# the launcher's own ~10 MB is the floor of what is measured.
_LAUNCHER = """
import json, os, subprocess, sys, time
started = time.perf_counter()
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
wall = time.perf_counter() - started
with open(sys.argv[1], "w") as out:
    json.dump([os.waitstatus_to_exitcode(status), wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024], out)
"""

# A CLI run with jedi's work counted: every question to jedi (Workspace.module_attribute, with
# whether it was answered from the workspace's memory), every inference step jedi takes (the
# step counter workspace.py installs on jedi's infer_node, import_module and Importer.follow, on
# the first question), and the library files read as text (Program.external_source).
_JEDI_PROBE = """
import json, sys
from fabric_lsp import cli
from fabric_lsp.analysis import program, workspace

counts = {"questions": [], "steps": 0, "read": []}
ask = workspace.Workspace.module_attribute

def counted_question(self, module_path, name, notes=None):
    fresh = (module_path, name) not in self._answers
    counts["questions"].append([self._dotted(module_path) or module_path, name, fresh])
    return ask(self, module_path, name, notes)

step_counter = workspace._counted

def counted_steps(function):
    inner = step_counter(function)
    def counted(*args, **kwargs):
        counts["steps"] += 1
        return inner(*args, **kwargs)
    return counted

parse = program.parse_file

def counted_read(path):
    counts["read"].append(path)
    return parse(path)

workspace.Workspace.module_attribute = counted_question
workspace._counted = counted_steps
program.parse_file = counted_read
try:
    cli.main(sys.argv[2:])
except SystemExit:
    pass
counts["jedi_imported"] = "jedi" in sys.modules
with open(sys.argv[1], "w") as out:
    json.dump(counts, out)
"""


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def missing_libraries() -> str | None:
    """Why the library rows cannot run (None: they can): .venv-libs absent, or a library not in it."""
    if not LIBS_PYTHON.exists():
        return "skipped: run make libs (no .venv-libs)"
    probe = ("import importlib.util, sys; "
             "print(' '.join(n for n in sys.argv[1:] if importlib.util.find_spec(n) is None))")
    try:
        completed = subprocess.run([str(LIBS_PYTHON), "-c", probe, *LIBRARIES], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"skipped: run make libs ({LIBS_PYTHON} does not run: {exc})"
    absent = completed.stdout.split()
    if completed.returncode != 0 or absent:
        return f"skipped: run make libs (.venv-libs lacks {', '.join(absent) or 'a working interpreter'})"
    return None


def write_scripts(base: Path) -> dict[str, Path]:
    """The scripts in a new project folder (and `floor.py`, one line: the CLI's own start-up)."""
    root = make_workspace(base, "libs")
    paths = {}
    for label, (name, text) in SCRIPTS.items():
        paths[label] = root / name
        paths[label].write_text(text)
    (root / FLOOR).write_text("x = 1\n")
    return paths


FLOOR = "floor.py"


def bench_floor(root: Path, runs: int) -> dict:
    """The reference: uncached `check --python .venv-libs/bin/python` of a one-line file."""
    return _summary([run_cli(root / FLOOR, LIBS_PYTHON) for _ in range(runs)])


def check_command(path: Path, python: Path | None) -> list[str]:
    options = ["--python", str(python)] if python is not None else []
    return [sys.executable, "-m", "fabric_lsp", "check", "--no-cache", "--exit-zero", "--format", "json",
            *options, str(path)]


def run_cli(path: Path, python: Path | None) -> dict:
    """One uncached `check` of `path`: wall and CPU seconds, peak RSS (bytes), findings."""
    with tempfile.NamedTemporaryFile("r", suffix=".json") as usage:
        completed = subprocess.run([sys.executable, "-c", _LAUNCHER, usage.name, *check_command(path, python)],
                                   cwd=path.parent, env=_env(), capture_output=True, text=True, timeout=900)
        returncode, wall, cpu, peak = json.loads(Path(usage.name).read_text())
    if returncode != 0:
        raise RuntimeError(f"fabric-lsp check {path.name} failed ({returncode}): {completed.stderr[-2000:]}")
    findings = sorted((f["location"]["row"], f["location"]["column"], f["code"], f["message"])
                      for f in json.loads(completed.stdout))
    return {"wall": wall, "cpu": cpu, "peak": peak, "findings": findings}


def bench_cli(paths: dict[str, Path], runs: int) -> dict[str, dict]:
    """Per script: `runs` pairs of uncached runs, with and without --python, alternated."""
    results = {}
    for label, path in paths.items():
        libs, plain = [], []
        for _ in range(runs):
            libs.append(run_cli(path, LIBS_PYTHON))
            plain.append(run_cli(path, None))
        result = results[label] = {
            "lines": len(path.read_text().splitlines()),
            "libs": _summary(libs), "plain": _summary(plain),
            # every run of either kind gives the same findings
            "equal": all(run["findings"] == libs[0]["findings"] for run in libs + plain),
        }
        say(f"   {path.name}: with libs {result['libs']}, without {result['plain']}, equal={result['equal']}")
    return results


def _summary(runs: list[dict]) -> dict:
    return {"wall": statistics.median(r["wall"] for r in runs), "cpu": statistics.median(r["cpu"] for r in runs),
            "peak": max(r["peak"] for r in runs), "findings": len(runs[0]["findings"])}


def bench_server(path: Path, starts: int) -> dict:
    """`starts` new servers (empty XDG_CACHE_HOME each), initialized with the libraries'
    interpreter, each opening `path`: time from didOpen to its first diagnostics (median), from
    the spawn, and the server's peak RSS (largest VmHWM)."""
    runs = []
    for _ in range(starts):
        empty = tempfile.mkdtemp(prefix="fabric-lsp-bench-xdg-")
        env = {**_env(), "XDG_CACHE_HOME": empty}
        started = time.perf_counter()
        server = ServerProcess([sys.executable, "-m", "fabric_lsp", "serve"], str(path.parent), env)
        try:
            server.initialize(str(path.parent), {"python": str(LIBS_PYTHON)})
            initialized = time.perf_counter()
            uri = server.did_open(str(path), path.read_text(encoding="utf-8"))
            arrived, params = server.wait_for_diagnostics(uri, 1, timeout=600)
            peak = _vm_hwm(server.pid)
        finally:
            server.shutdown()
            shutil.rmtree(empty, ignore_errors=True)
        diagnostics = sorted((d["range"]["start"]["line"] + 1, d.get("code")) for d in params["diagnostics"]
                             if d.get("severity", 1) <= 2)
        runs.append({"first": arrived - initialized, "spawn": arrived - started, "initialize": initialized - started,
                     "peak": peak, "diagnostics": diagnostics})
        say(f"   server: didOpen -> diagnostics {runs[-1]['first']:.2f} s, spawn -> diagnostics "
            f"{runs[-1]['spawn']:.2f} s, VmHWM {peak / MB:.0f} MB, {len(diagnostics)} diagnostics")
    return {"first": statistics.median(r["first"] for r in runs), "spawn": statistics.median(r["spawn"] for r in runs),
            "initialize": statistics.median(r["initialize"] for r in runs), "peak": max(r["peak"] for r in runs),
            "starts": starts, "diagnostics": runs[0]["diagnostics"],
            "same": all(r["diagnostics"] == runs[0]["diagnostics"] for r in runs)}


def jedi_counts(path: Path) -> dict:
    """What jedi did in one uncached CLI run on `path` with the libraries' interpreter."""
    with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
        command = [sys.executable, "-c", _JEDI_PROBE, out.name, *check_command(path, LIBS_PYTHON)[3:]]
        completed = subprocess.run(command, cwd=path.parent, env=_env(), capture_output=True, text=True, timeout=900)
        try:
            counts = json.loads(Path(out.name).read_text())
        except ValueError:
            raise RuntimeError(f"jedi probe on {path.name} failed: {completed.stderr[-2000:]}") from None
    questions = counts["questions"]
    library_read: dict[str, int] = {}
    for read in counts["read"]:
        library = _library_of_path(read)
        if library is not None:
            library_read[library] = library_read.get(library, 0) + 1
    return {
        "questions": sum(1 for _, _, fresh in questions if fresh),
        "library_questions": sum(1 for dotted, _, fresh in questions if fresh and dotted.split(".")[0] in LIBRARIES),
        "asked": [f"{dotted}.{name}" for dotted, name, fresh in questions if fresh],
        "steps": counts["steps"], "jedi_imported": counts["jedi_imported"],
        "read": len(counts["read"]), "library_read": library_read,
    }


def _library_of_path(path: str) -> str | None:
    parts = Path(path).parts
    for index, part in enumerate(parts):
        if part in ("site-packages", "dist-packages") and index + 1 < len(parts):
            top = parts[index + 1].removesuffix(".py")
            return top if top in LIBRARIES else None
    return None


def bench_jedi(paths: dict[str, Path]) -> dict[str, dict]:
    results = {}
    for label, path in paths.items():
        results[label] = jedi_counts(path)
        say(f"   {path.name}: {results[label]}")
    return results
