"""Language-server measurements through a real client over stdio: warm edit latency, cold start,
memory under a long edit replay. Each returns plain numbers; run.py prints the table."""

from __future__ import annotations

import ast
import gc
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from edits import Typist
from generate import no_fabric_script, training_script, write_tree
from check_bench import as_installed
from lsp_client import ServerProcess

REPO = Path(__file__).resolve().parents[1]


def server_command() -> list[str]:
    return [sys.executable, "-m", "fabric_lsp", "serve"]


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = as_installed(dict(os.environ))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "server"), env.get("PYTHONPATH")) if p)
    env.pop("VIRTUAL_ENV", None)  # analyse against the interpreter running the server (torch + lightning)
    env.pop("FABRIC_LSP_TEST_ANALYSIS_DELAY", None)
    env.update(extra or {})
    return env


def parse_seconds(text: str, repeat: int = 1) -> float:
    """Median wall time of ast.parse(text), the floor of any Python-based analysis."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        ast.parse(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def make_workspace(base: Path, name: str) -> Path:
    root = base / name
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "bench"\nversion = "0"\n\n[tool.fabric-lsp]\n')
    return root


def edit_latency(base: Path, text: str, name: str, edits: int = 300, warmup: int = 30, pause: float = 0.02) -> dict:
    """Open `text`, type `edits` keystrokes, each time waiting for the publishDiagnostics of that
    version; between keystrokes time ast.parse on the current text (same process, same moments)."""
    root = make_workspace(base, f"edit-{name}")
    path = root / "train.py"
    path.write_text(text)
    server = ServerProcess(server_command(), str(root), server_env())
    try:
        server.initialize(str(root))
        uri = server.did_open(str(path), text, version=1)
        _, first = server.wait_for_diagnostics(uri, 1, timeout=300)
        typist = Typist(text)
        latencies: list[float] = []
        parses: list[float] = []
        version = 1
        findings = len(first["diagnostics"])
        for index in range(warmup + edits):
            stroke = typist.next()
            version += 1
            after = server.published_count()
            end_line = stroke.line if stroke.end_line is None else stroke.end_line
            sent = time.perf_counter()
            server.did_change(uri, version, (stroke.line, stroke.start), (end_line, stroke.end), stroke.text)
            arrived, params = server.wait_for_diagnostics(uri, version, after=after)
            if index >= warmup:
                latencies.append(arrived - sent)
                findings = len(params["diagnostics"])
            time.sleep(pause)
            if index >= warmup:
                gc.collect()
                parses.append(parse_seconds(typist.text))
            time.sleep(pause)
        return {
            "p50": percentile(latencies, 0.5),
            "p95": percentile(latencies, 0.95),
            "parse": statistics.median(parses),
            "edits": edits,
            "lines": text.count("\n"),
            "findings": findings,
            "rss": server.rss_bytes(),
        }
    finally:
        server.shutdown()


if __name__ == "__main__":
    base = REPO / "artifacts" / "bench"
    base.mkdir(parents=True, exist_ok=True)
    for label, text in (("fabric", training_script()), ("plain", no_fabric_script())):
        result = edit_latency(base, text, label, edits=int(os.environ.get("EDITS", "100")))
        print(label, {k: (round(v * 1000, 2) if isinstance(v, float) else v) for k, v in result.items()},
              "ratio p50 %.2f p95 %.2f" % (result["p50"] / result["parse"], result["p95"] / result["parse"]))


def cold_start(base: Path, text: str, env_extra: dict[str, str] | None = None, fresh: bool = False) -> dict:
    """Spawn the server, `initialize` + `didOpen`, until the first diagnostics. `fresh`: a new
    project folder (no .fabric-lsp-cache); otherwise what an earlier run persisted stays."""
    root = base / "cold"
    if fresh or not root.exists():
        root = make_workspace(base, "cold")
    path = root / "train.py"
    path.write_text(text)
    started = time.perf_counter()
    server = ServerProcess(server_command(), str(root), server_env(env_extra))
    try:
        server.initialize(str(root))
        initialized = time.perf_counter()
        uri = server.did_open(str(path), text, version=1)
        arrived, params = server.wait_for_diagnostics(uri, 1, timeout=300)
        return {"seconds": arrived - started, "initialize": initialized - started, "findings": len(params["diagnostics"])}
    finally:
        server.shutdown()


def initialize_time(base: Path, runs: int = 5) -> dict:
    """A new server process each run: seconds from spawning it to the `initialize` answer (median and
    range), and the modules imported when it answered and at the end (counted in a separate run of the
    same server)."""
    root = make_workspace(base, "startup")
    seconds, floor = [], []
    for _ in range(runs):  # interleaved with the floor: both see the same load
        started = time.perf_counter()
        server = ServerProcess(server_command(), str(root), server_env())
        try:
            server.initialize(str(root))
            seconds.append(time.perf_counter() - started)
        finally:
            server.shutdown()
        # The floor: a process that only imports pygls (lsprotocol's ~1,000 attrs classes are most of it).
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import pygls.lsp.server"], env=server_env(), check=True)
        floor.append(time.perf_counter() - started)
    return {"median": statistics.median(seconds), "min": min(seconds), "max": max(seconds), "runs": runs,
            "pygls_import": statistics.median(floor), **_modules_at_initialize(root)}


# The server in this process (cli.main, as the console script runs it), stdout recorded: the modules
# imported when its first bytes (the `initialize` answer) are written, and those at the end.
_MODULES_PROBE = """
import io, json, os, sys

class Recorder(io.RawIOBase):
    first = None
    def writable(self):
        return True
    def write(self, data):
        if Recorder.first is None:
            Recorder.first = sorted(sys.modules)
        os.write(1, bytes(data))
        return len(data)

sys.stdout = kept = io.TextIOWrapper(io.BufferedWriter(Recorder()), encoding="utf-8")
from fabric_lsp.cli import main
main(['serve'])
sys.__stderr__.write('MODULES ' + json.dumps({"first": Recorder.first, "end": sorted(sys.modules)}) + '\\n')
"""


def _modules_at_initialize(root: Path) -> dict:
    import json

    frames = b""
    for message in ({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}},
                    {"jsonrpc": "2.0", "method": "exit"}):
        body = json.dumps(message).encode()
        frames += b"Content-Length: %d\r\n\r\n" % len(body) + body
    completed = subprocess.run([sys.executable, "-c", _MODULES_PROBE], input=frames, capture_output=True,
                               env=server_env(), cwd=root, timeout=120)
    line = next((l for l in completed.stderr.decode(errors="replace").splitlines() if l.startswith("MODULES ")), None)
    report = json.loads(line[len("MODULES "):]) if line else {"first": None, "end": []}
    modules, first = report["end"], report["first"] or []
    return {"modules": len(modules), "fabric_lsp_modules": sum(m.split(".")[0] == "fabric_lsp" for m in modules),
            "jedi_loaded": any(m.split(".")[0] in ("jedi", "parso") for m in modules),
            "modules_at_answer": len(first) if report["first"] is not None else None,
            "pygls_at_answer": report["first"] is None or any(m.split(".")[0] in ("pygls", "lsprotocol") for m in first)}


def version_time(runs: int = 5) -> dict:
    """`fabric-lsp --version` in a new process each run (median and range), and a bare interpreter
    (`python -c pass`) interleaved with it for reference."""
    seconds, floor = [], []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "fabric_lsp", "--version"], env=server_env(), check=True,
                       capture_output=True)
        seconds.append(time.perf_counter() - started)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=server_env(), check=True)
        floor.append(time.perf_counter() - started)
    return {"median": statistics.median(seconds), "min": min(seconds), "max": max(seconds), "runs": runs,
            "interpreter": statistics.median(floor)}


def memory_replay(base: Path, edits: int = 5000, files: int = 20, per_session: int = 25, sample_every: int = 250) -> dict:
    """Open `files` documents (training scripts and project modules importing each other), type
    `edits` keystrokes over them in sessions of `per_session` (each waiting for its diagnostics),
    and sample the server's RSS. Ends by checking the last diagnostics against a fresh analysis."""
    root = make_workspace(base, "memory")
    tree_root = root / "tree"
    written = write_tree(str(tree_root), files=80, seed=23, per_project=80)
    project_files = [Path(p) for p in written if p.endswith(".py") and "/models/" in p and not p.endswith("__init__.py")]
    project_files += [Path(p) for p in written if "/scripts/" in p]
    chosen = project_files[: files // 2]
    for index in range(files - len(chosen)):
        path = root / f"train_{index}.py"
        path.write_text(training_script(lines=400 + 150 * index, seed=100 + index))
        chosen.append(path)
    server = ServerProcess(server_command(), str(root), server_env())
    try:
        server.initialize(str(root))
        documents = []
        for path in chosen:
            text = path.read_text()
            uri = server.did_open(str(path), text, version=1)
            documents.append({"uri": uri, "path": path, "typist": Typist(text, seed=len(documents)), "version": 1})
        for document in documents:
            server.wait_for_diagnostics(document["uri"], 1, timeout=300)
        samples: list[tuple[int, int]] = [(0, server.rss_bytes())]
        started = time.perf_counter()
        order = list(range(len(documents)))
        done = 0
        session = 0
        while done < edits:
            document = documents[order[session % len(order)]]
            session += 1
            for _ in range(min(per_session, edits - done)):
                stroke = document["typist"].next()
                document["version"] += 1
                after = server.published_count()
                end_line = stroke.line if stroke.end_line is None else stroke.end_line
                server.did_change(document["uri"], document["version"], (stroke.line, stroke.start), (end_line, stroke.end), stroke.text)
                server.wait_for_diagnostics(document["uri"], document["version"], after=after)
                done += 1
                if done % sample_every == 0:
                    samples.append((done, server.rss_bytes()))
        seconds = time.perf_counter() - started
        time.sleep(1.0)  # let the dependents' re-analysis settle
        final = {}
        for document in documents:
            latest = [p for _, p in server.published if p["uri"] == document["uri"]]
            final[str(document["path"])] = (document["typist"].text, len(latest[-1]["diagnostics"]) if latest else None)
        return {"samples": samples, "seconds": seconds, "edits": done, "files": len(documents), "final": final, "root": str(root)}
    finally:
        server.shutdown()
