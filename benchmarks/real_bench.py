"""Real-code rows of `make bench` (issue 12): `fabric-lsp check` and the language server on the
installed sources of lightning 2.6.6 + litgpt 0.5.13 and of torch (benchmarks/corpus.py), with
`ruff check --select ALL` on the same tree in the same run as the reference.

Each comparison alternates the two commands (A B A B ...) and takes the median of the per-pair
ratios, so a change of the shared machine's speed during the run hits both sides. Wall time of
whole processes; peak memory from the kernel's accounting of each process (wait4's ru_maxrss for
`check`, VmHWM for the server).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from check_bench import _env, ruff_executable
from lsp_client import ServerProcess

CACHE_DIR = ".fabric-lsp-cache"
RUFF_CACHE_DIR = ".ruff_cache"
# The model module "edited" between cached runs, per tree.
MODEL_MODULES = {"lightning-litgpt": Path("litgpt") / "model.py", "torch": Path("torch") / "nn" / "modules" / "linear.py"}
OPENED_FIRST = Path("litgpt") / "finetune" / "lora.py"  # a file of the tree's largest program


def run_process(command: list[str], cwd: Path, env: dict | None = None) -> tuple[float, str]:
    """(wall seconds, stdout) of one command."""
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    elapsed = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        raise RuntimeError(f"{command[:4]} failed ({completed.returncode}): {completed.stderr[-2000:]}")
    return elapsed, completed.stdout


def check_command(*options: str) -> list[str]:
    return [sys.executable, "-m", "fabric_lsp", "check", "--exit-zero", "--format", "json", *options, "."]


def ruff_command(*options: str) -> list[str]:
    return [ruff_executable(), "check", "--select", "ALL", "--exit-zero", "--quiet", *options, "."]


def peak_of(command: list[str], cwd: Path, env: dict | None = None) -> tuple[float, int, str]:
    """Like run_process, with the peak RSS of the process and of the children it waited for
    (`check`'s forked workers): measured by a small parent that reads its own children's usage."""
    probe = (
        "import resource, subprocess, sys, json\n"
        "p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)\n"
        "sys.stderr.write(json.dumps(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) + '\\n')\n"
        "sys.stdout.write(p.stdout.decode())\n"
    )
    started = time.perf_counter()
    completed = subprocess.run([sys.executable, "-c", probe, *command], cwd=cwd, env=env, capture_output=True,
                               text=True, timeout=1800, check=True)
    elapsed = time.perf_counter() - started
    return elapsed, int(completed.stderr.strip().splitlines()[-1]) * 1024, completed.stdout


def paired(a, b, runs: int, before=None) -> dict:
    """Alternate a() and b() (each returns seconds), `before()` ahead of each; medians and the
    median of the pair ratios a/b."""
    a_times, b_times, ratios = [], [], []
    for _ in range(runs):
        if before:
            before()
        a_seconds = a()
        if before:
            before()
        b_seconds = b()
        a_times.append(a_seconds)
        b_times.append(b_seconds)
        ratios.append(a_seconds / b_seconds)
    return {"a": statistics.median(a_times), "b": statistics.median(b_times), "ratio": statistics.median(ratios)}


def clear_caches(tree: Path) -> None:
    shutil.rmtree(tree / CACHE_DIR, ignore_errors=True)
    shutil.rmtree(tree / RUFF_CACHE_DIR, ignore_errors=True)


def findings_of(stdout: str) -> list[tuple]:
    return sorted((f["filename"], f["location"]["row"], f["location"]["column"], f["code"], f["message"])
                  for f in json.loads(stdout))


def bench_tree(tree: Path, runs: int) -> dict:
    """Uncached and cached `check` vs ruff on one tree, and (edit) a cached run after editing one
    model module; the findings of every way of running `check` compared."""
    env = _env()
    files = len(list(tree.rglob("*.py")))
    clear_caches(tree)

    def ours(*options):
        return lambda: run_process(check_command(*options), tree, env)[0]

    def theirs(*options):
        return lambda: run_process(ruff_command(*options), tree)[0]

    result = {"tree": tree.name, "files": files}
    result["uncached"] = paired(ours("--no-cache"), theirs("--no-cache"), runs)
    # ruff's default output draws a code frame for each of its diagnostics (--select ALL: ~30,000 on
    # lightning+litgpt, ~290,000 on torch), which is most of its time; its concise output shows
    # what its linting alone costs. A reference row, next to the comparison.
    result["uncached_concise"] = paired(ours("--no-cache"), theirs("--no-cache", "--output-format", "concise"), runs)
    outputs = {
        "uncached": run_process(check_command("--no-cache"), tree, env)[1],
        "--jobs 1": run_process(check_command("--no-cache", "--jobs", "1"), tree, env)[1],
        f"--jobs {os.cpu_count() or 1}": run_process(check_command("--no-cache", "--jobs", str(os.cpu_count() or 1)), tree, env)[1],
    }
    run_process(check_command(), tree, env)  # fills .fabric-lsp-cache
    run_process(ruff_command(), tree)  # fills .ruff_cache
    outputs["cached"] = run_process(check_command(), tree, env)[1]
    result["cached"] = paired(ours(), theirs(), runs)
    if tree.name in MODEL_MODULES:
        module = tree / MODEL_MODULES[tree.name]
        result["edited_module"] = str(MODEL_MODULES[tree.name])
        original = module.read_text()
        counter = iter(range(10_000))

        def touch():
            module.write_text(original + f"\n# edited by the benchmark: {next(counter)}\n")

        try:
            result["edited"] = paired(ours(), theirs(), runs, before=touch)
            touch()
            outputs["cached, after the edit"] = run_process(check_command(), tree, env)[1]
            outputs["uncached, after the edit"] = run_process(check_command("--no-cache"), tree, env)[1]
        finally:
            module.write_text(original)
    found = {name: findings_of(out) for name, out in outputs.items()}
    reference = found["uncached"]
    result["findings"] = len(reference)
    result["identical"] = all(found[name] == reference for name in found if "after the edit" not in name) and (
        found.get("cached, after the edit") == found.get("uncached, after the edit"))
    result["compared"] = sorted(found)
    _, peak, _ = peak_of(check_command("--no-cache"), tree, env)
    result["peak_rss"] = peak
    return result


def fabric_files(tree: Path) -> list[Path]:
    return [path for path in sorted(tree.rglob("*.py")) if "Fabric" in path.read_text(encoding="utf-8", errors="replace")]


FIRST_OPENS = 5  # new servers whose first diagnostics are timed (the median is reported: one sample swings ±20% on this VM)


@contextlib.contextmanager
def opened_first(tree: Path):
    """A new server (empty caches) with the tree's largest program's file opened: yields (server,
    seconds from didOpen to its first diagnostics, those diagnostics' params); shut down after."""
    empty = tempfile.mkdtemp(prefix="fabric-lsp-bench-xdg-")
    env = _env()
    env["XDG_CACHE_HOME"] = empty
    server = ServerProcess([sys.executable, "-m", "fabric_lsp", "serve"], str(tree), env)
    try:
        server.initialize(str(tree))
        first = tree / OPENED_FIRST
        opened_at = time.perf_counter()
        uri = server.did_open(str(first), first.read_text(encoding="utf-8"))
        arrived, params = server.wait_for_diagnostics(uri, 1, timeout=600)
        yield server, arrived - opened_at, params
    finally:
        server.shutdown()
        shutil.rmtree(empty, ignore_errors=True)


def bench_server(tree: Path, check_stdout: str) -> dict:
    """A new server with the tree as its workspace folder: first diagnostics of a newly opened file
    of the tree's largest program (nothing indexed or persisted yet: empty XDG_CACHE_HOME; the
    median over FIRST_OPENS new servers, the last of which goes on), then every file that names
    Fabric opened one by one; the server's peak RSS, and its last diagnostics of each opened file
    against `check`'s findings."""
    firsts = []
    for _ in range(FIRST_OPENS - 1):
        with opened_first(tree) as (_, seconds, _):
            firsts.append(seconds)
    with opened_first(tree) as (server, seconds, params):
        firsts.append(seconds)
        first_seconds = statistics.median(firsts)
        published = {str(tree / OPENED_FIRST): params["diagnostics"]}
        started = time.perf_counter()
        for path in fabric_files(tree):
            if str(path) in published:
                continue
            uri = server.did_open(str(path), path.read_text(encoding="utf-8"))
            _, params = server.wait_for_diagnostics(uri, 1, timeout=600)
            published[str(path)] = params["diagnostics"]
        opening = time.perf_counter() - started
        peak = _vm_hwm(server.pid)
    expected: dict[str, list] = {}
    for finding in json.loads(check_stdout):
        expected.setdefault(finding["filename"], []).append((finding["location"]["row"] - 1, finding["code"]))
    agree = all(  # hints are not in check's default output: errors and warnings compared
        sorted((d["range"]["start"]["line"], d.get("code")) for d in diagnostics if d.get("severity", 1) <= 2)
        == sorted(expected.get(path, []))
        for path, diagnostics in published.items()
    )
    return {"first": first_seconds, "firsts": firsts, "opened": len(published), "opening": opening, "peak_rss": peak,
            "agree": agree, "diagnostics": sum(len(d) for d in published.values()),
            "expected": sum(len(found) for found in expected.values())}


def _vm_hwm(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0
