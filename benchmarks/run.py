"""`make bench`: every performance target of issues 5, 12 and 25, measured in one run on this machine,
printed as one table. Ratios compare figures taken in the same run (these machines are shared and noisy).

    python benchmarks/run.py              # the table (about 9 minutes)
    python benchmarks/run.py --quick      # fewer edits and samples, to try the harness
    python benchmarks/run.py --record     # also write benchmarks/RESULTS.md (date, commit, machine)
    python benchmarks/run.py --only libs  # only some steps' rows (startup, edits, cold, check, memory, real, libs, fabric)

The `libs` rows need `.venv-libs` (`make libs`, which `make test` runs): without it they say so.

Inputs are generated (benchmarks/generate.py) or downloaded from the package index
(benchmarks/corpus.py: the real-code trees) under artifacts/bench/, never committed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "server"))

import check_bench  # noqa: E402
import lsp_bench  # noqa: E402
from generate import no_fabric_script, training_script, write_tree  # noqa: E402

WORK = REPO / "artifacts" / "bench"
MB = 1024 * 1024


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def row(target: str, measured: str, threshold: str, holds: bool | None) -> dict:
    return {"target": target, "measured": measured, "threshold": threshold,
            "holds": "yes" if holds else ("no" if holds is not None else "-")}


# ---------------------------------------------------------------------------------------------


def bench_edits(quick: bool) -> list[dict]:
    say("== warm edit latency: 3,000-line training script (torch + lightning in the analysis interpreter)")
    edits = 80 if quick else 400
    fabric = lsp_bench.edit_latency(WORK, training_script(), "fabric", edits=edits)
    say(f"   {fabric}")
    say("== warm edit latency: 3,000-line script that never mentions Fabric/setup/init_module/meta")
    plain = lsp_bench.edit_latency(WORK, no_fabric_script(), "plain", edits=edits // 2)
    say(f"   {plain}")
    rows = []
    parse = fabric["parse"]
    rows.append(row(
        f"edit -> publishDiagnostics p50, {fabric['lines']}-line script, {fabric['edits']} keystrokes",
        f"{fabric['p50'] * 1000:.1f} ms = {fabric['p50'] / parse:.2f}x ast.parse ({parse * 1000:.1f} ms)",
        "<= 2x", fabric["p50"] <= 2 * parse,
    ))
    rows.append(row(
        "edit -> publishDiagnostics p95, same run",
        f"{fabric['p95'] * 1000:.1f} ms = {fabric['p95'] / parse:.2f}x ast.parse",
        "<= 3x", fabric["p95"] <= 3 * parse,
    ))
    plain_parse = plain["parse"]
    rows.append(row(
        f"file without Fabric/setup/init_module/meta ({plain['lines']} lines): edit -> diagnostics p95",
        f"{plain['p95'] * 1000:.1f} ms = {plain['p95'] / plain_parse:.2f}x ast.parse ({plain_parse * 1000:.1f} ms); p50 {plain['p50'] * 1000:.1f} ms",
        "<= 1.2x", plain["p95"] <= 1.2 * plain_parse,
    ))
    return rows


def bench_startup(quick: bool) -> list[dict]:
    say("== server start: spawn -> `initialize` answered (a new server process each run)")
    started = lsp_bench.initialize_time(WORK, runs=3 if quick else 7)
    say(f"   {started}")
    say("== fabric-lsp --version (a new process each run)")
    version = lsp_bench.version_time(runs=3 if quick else 7)
    say(f"   {version}")
    return [
        row("server start: spawn -> `initialize` answered (new process, no document yet)",
            f"{started['median']:.2f} s (median of {started['runs']}; {started['min']:.2f}-{started['max']:.2f} s); "
            f"{started['modules']} modules imported, {started['fabric_lsp_modules']} of fabric_lsp, "
            f"jedi {'loaded' if started['jedi_loaded'] else 'not loaded'}; a process importing only pygls: "
            f"{started['pygls_import']:.2f} s",
            "<= pygls' import + 0.3 s, jedi not loaded",
            started["median"] <= started["pygls_import"] + 0.3 and not started["jedi_loaded"]),
        row("`initialize` answered <= 0.2 s (spawn -> answer, new process; answered before pygls is imported)",
            f"{started['median']:.2f} s (median of {started['runs']}); {started['modules_at_answer']} modules "
            f"imported when answered, pygls {'imported' if started['pygls_at_answer'] else 'not imported'}",
            "<= 0.2 s, pygls not imported", started["median"] <= 0.2 and not started["pygls_at_answer"]),
        row("`fabric-lsp --version` (new process)",
            f"{version['median']:.2f} s (median of {version['runs']}; {version['min']:.2f}-{version['max']:.2f} s); "
            f"a bare interpreter: {version['interpreter']:.2f} s",
            "<= interpreter + 0.1 s", version["median"] <= version["interpreter"] + 0.1),
    ]


def bench_cold(quick: bool) -> list[dict]:
    say("== cold start: initialize + didOpen -> first diagnostics (a new server process each time)")
    text = training_script()
    lsp_bench.make_workspace(WORK, "cold")  # a fresh project: no .fabric-lsp-cache yet
    empty = tempfile.mkdtemp(prefix="fabric-lsp-bench-xdg-")
    try:
        first = lsp_bench.cold_start(WORK, text, {"XDG_CACHE_HOME": empty}, fresh=True)
        say(f"   first run ever (no jedi cache, no .fabric-lsp-cache): {first}")
        runs = [lsp_bench.cold_start(WORK, text, {"XDG_CACHE_HOME": empty}) for _ in range(1 if quick else 3)]
        say(f"   next runs (persisted caches): {runs}")
    finally:
        shutil.rmtree(empty, ignore_errors=True)
    median = statistics.median(r["seconds"] for r in runs)
    return [
        row("cold start: initialize + didOpen -> first diagnostics (new process; caches persisted by an earlier run)",
            f"{median:.2f} s (median of {len(runs)}; initialize {statistics.median(r['initialize'] for r in runs):.2f} s)",
            "<= 2 s", median <= 2.0),
        row("cold start, first run ever (empty jedi and fabric-lsp caches; for reference)",
            f"{first['seconds']:.2f} s", "-", None),
    ]


def bench_check(quick: bool) -> list[dict]:
    tree = WORK / "tree"
    if tree.exists():
        shutil.rmtree(tree)
    say("== generating the 2,000-file tree")
    paths = write_tree(str(tree), 2000)
    count = len(paths)
    rows = []
    say("== fabric-lsp check --no-cache --jobs 1 / --jobs 2 (nothing persisted), then with the cache")
    check_bench.clear_caches(tree)
    serial, out_serial = check_bench.run_check(tree, "--no-cache", "--jobs", "1")
    parallel, out_parallel = check_bench.run_check(tree, "--no-cache", "--jobs", "2")
    check_bench.clear_caches(tree)
    filling, out_filling = check_bench.run_check(tree)  # writes .fabric-lsp-cache
    warm_runs = [check_bench.run_check(tree) for _ in range(3)]
    warm = statistics.median(seconds for seconds, _ in warm_runs)
    same = out_serial == out_parallel == out_filling and all(out == out_serial for _, out in warm_runs)
    findings = len(json.loads(out_serial))
    # One model module edited: only it and the files depending on it are checked again.
    model = next(p for p in sorted(paths) if "/models/net_" in p)
    with open(model, "a") as handle:
        handle.write("\n\ndef helper_added_by_the_benchmark():\n    return 1\n")
    after_edit, _ = check_bench.run_check(tree)
    say(f"   jobs1 {serial:.2f}s jobs2 {parallel:.2f}s fill {filling:.2f}s warm {warm:.2f}s after-edit {after_edit:.2f}s same={same}")
    rows.append(row(
        f"fabric-lsp check, {count} files, persistent cache warm (unchanged tree), automatic jobs",
        f"{count / warm:.0f} files/s ({warm:.2f} s; {findings} findings; identical to uncached: {'yes' if same else 'NO'})",
        ">= 1000 files/s", count / warm >= 1000 and same,
    ))
    rows.append(row(
        "fabric-lsp check --no-cache --jobs 2 (nothing persisted: every file read and analysed)",
        f"{count / parallel:.0f} files/s ({parallel:.2f} s)",
        ">= 1000 files/s", count / parallel >= 1000,
    ))
    rows.append(row(
        "scaling with processes: --no-cache --jobs 2 vs --jobs 1",
        f"{serial / parallel:.2f}x ({count / serial:.0f} -> {count / parallel:.0f} files/s)",
        "> 1x", serial / parallel > 1.0,
    ))
    rows.append(row(
        "fabric-lsp check after editing one model module (cache warm otherwise)",
        f"{count / after_edit:.0f} files/s ({after_edit:.2f} s)", "-", None,
    ))
    ruff_cold = check_bench.run_ruff(tree, "--no-cache")
    ruff_warm = None
    if ruff_cold is not None:
        check_bench.run_ruff(tree)
        ruff_warm = check_bench.run_ruff(tree)
        rows.append(row("reference: ruff check --no-cache, same tree", f"{count / ruff_cold:.0f} files/s ({ruff_cold:.2f} s)", "-", None))
        rows.append(row("reference: ruff check with its cache warm", f"{count / ruff_warm:.0f} files/s ({ruff_warm:.2f} s)", "-", None))
    else:
        rows.append(row("reference: ruff check", "ruff not installed (make bench installs it)", "-", None))
    sample = sorted(paths)[:: 10] if not quick else sorted(paths)[:: 40]
    jedi_seconds, asked = check_bench.run_jedi_pass(tree, sample)
    rows.append(row(
        f"reference: jedi-only pass (goto on every import; {len(sample)} files, every {2000 // len(sample)}th; one process)",
        f"{len(sample) / jedi_seconds:.0f} files/s ({jedi_seconds:.2f} s, {asked} questions)", "-", None,
    ))
    return rows


def bench_real(quick: bool) -> list[dict]:
    import corpus
    import real_bench

    say("== real code: the corpus (lightning 2.6.6 + litgpt 0.5.13 wheels from the index, the installed torch)")
    trees = [corpus.lightning_litgpt(), corpus.torch_tree()]
    if check_bench.ruff_executable() is None:
        return [row("real code", "ruff not installed (make bench installs it)", "-", False)]
    runs = 3 if quick else 5
    rows = []
    thresholds = {"lightning-litgpt": 5.0, "torch": 3.0}
    results = {}
    for tree in trees:
        say(f"== {tree.name}: check vs ruff check --select ALL ({runs} pairs each: uncached, cached, after an edit)")
        result = results[tree.name] = real_bench.bench_tree(tree, runs)
        say(f"   {result}")
        name = f"{tree.name} ({result['files']} files)"
        u, c, e = result["uncached"], result["cached"], result.get("edited")
        rows.append(row(f"real code, {name}: check --no-cache vs ruff check --select ALL --no-cache",
                        f"{u['a']:.2f} s vs {u['b']:.2f} s = {u['ratio']:.2f}x", f"<= {thresholds[tree.name]:.0f}x",
                        u["ratio"] <= thresholds[tree.name]))
        q = result["uncached_concise"]
        rows.append(row(f"real code, {name}: reference, check --no-cache vs ruff's linting alone "
                        "(--output-format concise: no code frames drawn)",
                        f"{q['a']:.2f} s vs {q['b']:.2f} s = {q['ratio']:.2f}x", "-", None))
        rows.append(row(f"real code, {name}: cached re-run of the unchanged tree vs ruff's cached run",
                        f"{c['a']:.2f} s vs {c['b']:.2f} s = {c['ratio']:.2f}x", "<= 2x", c["ratio"] <= 2.0))
        if e is not None:
            rows.append(row(f"real code, {name}: cached run after editing `{result['edited_module']}` vs ruff's, same edit",
                            f"{e['a']:.2f} s vs {e['b']:.2f} s = {e['ratio']:.2f}x", "<= 3x", e["ratio"] <= 3.0))
        rows.append(row(f"real code, {name}: findings of every run identical ({', '.join(result['compared'])})",
                        f"{'yes' if result['identical'] else 'NO'} ({result['findings']} findings)", "identical",
                        result["identical"]))
        peak = result["peak_rss"] / MB
        rows.append(row(f"real code, {name}: peak RSS of check --no-cache (largest process)", f"{peak:.0f} MB",
                        "<= 1024 MB" if tree.name == "torch" else "-", peak <= 1024 if tree.name == "torch" else None))
    tree = trees[0]
    say(f"== server on {tree.name}: first diagnostics of a newly opened file, then every file naming Fabric")
    check_stdout = real_bench.run_process(real_bench.check_command("--no-cache"), tree, check_bench._env())[1]
    server = real_bench.bench_server(tree, check_stdout)
    say(f"   {server}")
    rows.append(row(f"editor, {tree.name} as the workspace folder: first diagnostics of a newly opened "
                    f"`{real_bench.OPENED_FIRST}` (new server, empty caches)",
                    f"{server['first']:.2f} s (median of {len(server['firsts'])} new servers: "
                    f"{', '.join(f'{t:.2f}' for t in server['firsts'])} s)", "<= 1 s", server["first"] <= 1.0))
    rows.append(row(f"editor, same server: peak RSS after opening every file that names Fabric ({server['opened']} files, "
                    f"{server['opening']:.1f} s)", f"{server['peak_rss'] / MB:.0f} MB", "<= 500 MB",
                    server["peak_rss"] <= 500 * MB))
    rows.append(row("editor, same server: its diagnostics of every opened file equal check's findings",
                    f"{'yes' if server['agree'] else 'NO'} ({server['diagnostics']} diagnostics, {server['expected']} findings)",
                    "equal", server["agree"]))
    return rows


def bench_fabric(quick: bool) -> list[dict]:
    """Issue 36: Fabric-heavy public projects (benchmarks/fabric_bench.py), check vs ruff check --select ALL."""
    import fabric_bench

    say("== Fabric-heavy projects: check --no-cache --python <this interpreter> vs ruff check --select ALL --no-cache, then cached")
    if check_bench.ruff_executable() is None:
        return [row("Fabric-heavy projects", "ruff not installed (make bench installs it)", "-", False)]
    runs = 3 if quick else 5
    rows = []
    for name, where, tree in fabric_bench.trees():
        if tree is None:
            say(f"   {name}: not available ({where}; see benchmarks/fabric_bench.py)")
            rows.append(row(f"Fabric-heavy, {name} ({where})", "not available (benchmarks/fabric_bench.py says how to provide it)",
                            "-", None))
            continue
        say(f"== {name} ({where}): {runs} pairs uncached, {runs} cached")
        result = fabric_bench.bench_tree(tree, runs)
        say(f"   {result}")
        uncached_holds, cached_holds = fabric_bench.holds(result)
        u, c = result["uncached"], result["cached"]
        label = f"Fabric-heavy, {name} ({where}; {result['files']} files, {result['fabric_files']} naming Fabric)"
        rows.append(row(f"{label}: check --no-cache vs ruff --no-cache",
                        f"{u['a']:.2f} s vs {u['b']:.2f} s = {u['ratio']:.2f}x; {result['findings']} findings",
                        f"<= {fabric_bench.UNCACHED_RATIO:.0f}x (or <= {fabric_bench.ABSOLUTE} s where ruff < {fabric_bench.RUFF_FAST} s)",
                        uncached_holds))
        after = ", ".join(f"{seconds:.2f}" for seconds in result["after_ruff_creates_its_cache"])
        rows.append(row(f"{label}: cached re-run vs ruff's cached run",
                        f"{c['a']:.2f} s vs {c['b']:.2f} s = {c['ratio']:.2f}x (check's next runs after ruff makes "
                        f".ruff_cache anew: {after} s)", f"<= {fabric_bench.CACHED_RATIO:.0f}x", cached_holds))
        rows.append(row(f"{label}: findings identical ({', '.join(result['compared'])})",
                        f"{'yes' if result['identical'] else 'NO'} ({result['findings']} findings)", "identical",
                        result["identical"]))
    return rows


def bench_libs(quick: bool) -> list[dict]:
    """Issue 25: transformers, peft, timm, open_clip, torchvision, diffusers and sentence-transformers
    installed in the analysis interpreter (.venv-libs, from `make libs`)."""
    import lib_bench

    say("== libraries in the analysis interpreter (.venv-libs): check --no-cache with and without --python")
    skipped = lib_bench.missing_libraries()
    if skipped is not None:
        say(f"   {skipped}")
        return [row("libraries (transformers, peft, timm, open_clip, torchvision, diffusers, sentence-transformers) "
                    "in the analysis interpreter", skipped, "-", None)]
    paths = lib_bench.write_scripts(WORK)
    runs = 3 if quick else 5
    cli = lib_bench.bench_cli(paths, runs)
    floor = lib_bench.bench_floor(paths[lib_bench.ALL_LABEL].parent, runs)
    say(f"   {lib_bench.FLOOR}: {floor}")
    rows = []
    for label, result in cli.items():
        libs, plain = result["libs"], result["plain"]
        holds = libs["wall"] <= 1.0 and libs["peak"] <= 300 * MB and result["equal"]
        rows.append(row(
            f"libraries, `check --no-cache --python .venv-libs/bin/python`: {label}, "
            f"`{paths[label].name}` ({result['lines']} lines); without `--python` for comparison",
            f"{libs['wall']:.2f} s (CPU {libs['cpu']:.2f} s), {libs['peak'] / MB:.0f} MB, {_findings(libs['findings'])}; "
            f"without: {plain['wall']:.2f} s (CPU {plain['cpu']:.2f} s), {plain['peak'] / MB:.0f} MB, "
            f"{_findings(plain['findings'])} ({'equal' if result['equal'] else 'DIFFERENT'}; median wall of {runs} runs each, largest peak RSS)",
            "<= 1 s, <= 300 MB, equal findings", holds,
        ))
    rows.append(row(
        f"libraries, reference: the CLI's own start-up, same command on a one-line file (`{lib_bench.FLOOR}`)",
        f"{floor['wall']:.2f} s (CPU {floor['cpu']:.2f} s), {floor['peak'] / MB:.0f} MB (median wall of {runs} runs)",
        "-", None,
    ))
    starts = 1 if quick else 3
    say(f"== libraries: a new server initialized with {{\"python\": \".venv-libs/bin/python\"}} opens the all-libraries file ({starts} starts)")
    everything = paths[lib_bench.ALL_LABEL]
    server = lib_bench.bench_server(everything, starts)
    expected = sorted((line, code) for line, _, code, _ in lib_bench.run_cli(everything, lib_bench.LIBS_PYTHON)["findings"])
    agree = server["same"] and server["diagnostics"] == expected
    rows.append(row(
        f"libraries, new server (initializationOptions python = .venv-libs/bin/python): didOpen `{everything.name}` "
        "-> first diagnostics",
        f"{server['first']:.2f} s (median of {server['starts']}; from the spawn {server['spawn']:.2f} s, initialize "
        f"{server['initialize']:.2f} s); {len(server['diagnostics'])} diagnostics, equal to check's findings: "
        f"{'yes' if agree else 'NO'}",
        "<= 1 s", server["first"] <= 1.0 and agree,
    ))
    rows.append(row("libraries, same server: peak RSS (VmHWM) after the first diagnostics",
                    f"{server['peak'] / MB:.0f} MB", "<= 300 MB", server["peak"] <= 300 * MB))
    say("== libraries: what jedi is asked and does (one counted check --no-cache --python .venv-libs/bin/python per file)")
    jedi = lib_bench.bench_jedi(paths)
    questions = sum(r["questions"] for r in jedi.values())
    library_questions = sum(r["library_questions"] for r in jedi.values())
    steps = sum(r["steps"] for r in jedi.values())
    imported = sum(r["jedi_imported"] for r in jedi.values())
    read: dict[str, int] = {}
    for result in jedi.values():
        for library, count in result["library_read"].items():
            read[library] = read.get(library, 0) + count
    every = jedi[lib_bench.ALL_LABEL]
    rows.append(row(
        f"libraries, no unbounded jedi walk: jedi questions (Workspace.module_attribute) and inference steps over "
        f"the {len(jedi)} files, with .venv-libs",
        f"{questions} questions ({library_questions} about names of the seven libraries), {steps} jedi steps, jedi "
        f"imported in {imported} of {len(jedi)} runs; library modules read as text (for names the tables lack): "
        f"{', '.join(f'{name} {count}' for name, count in sorted(read.items())) or 'none'}, "
        f"{sum(every['library_read'].values())} of them for `{paths[lib_bench.ALL_LABEL].name}`",
        "0 questions about library names", library_questions == 0,
    ))
    return rows


def _findings(count: int) -> str:
    return f"{count} finding{'' if count == 1 else 's'}"


def bench_memory(quick: bool) -> list[dict]:
    edits = 600 if quick else 5000
    say(f"== memory: {edits} keystrokes over 20 open files")
    result = lsp_bench.memory_replay(WORK, edits=edits, sample_every=50 if quick else 250)
    samples = result["samples"]
    say(f"   {[(n, round(rss / MB)) for n, rss in samples]} in {result['seconds']:.0f} s")
    final = samples[-1][1]
    half = min(samples, key=lambda s: abs(s[0] - samples[-1][0] / 2))
    last_fifth = min(samples, key=lambda s: abs(s[0] - samples[-1][0] * 0.8))
    peak = max(rss for _, rss in samples)
    growth_half = (final - half[1]) / MB
    growth_end = (final - last_fifth[1]) / MB
    agree = _agreement(result)
    return [
        row(f"server RSS after {result['edits']} edits across {result['files']} files",
            f"{final / MB:.0f} MB (peak {peak / MB:.0f} MB; {samples[1][1] / MB:.0f} MB after {samples[1][0]} edits)",
            "<= 300 MB", final <= 300 * MB),
        row("RSS not growing: change over the last fifth of the replay (and over its second half)",
            f"{growth_end:+.1f} MB over {last_fifth[0]} -> {samples[-1][0]} edits ({growth_half:+.1f} MB over {half[0]} -> {samples[-1][0]}); "
            f"last diagnostics agree with a fresh analysis: {agree}",
            "< 2% of RSS over the last fifth", growth_end * MB < 0.02 * final and agree == "yes"),
    ]


def _agreement(result: dict) -> str:
    """The last published diagnostics of every file equal a fresh analysis of the final texts."""
    from dataclasses import replace

    from fabric_lsp.settings.config import load_config
    from fabric_lsp.engine import check_source
    from fabric_lsp.analysis.workspace import Workspace

    texts = {path: text for path, (text, _) in result["final"].items()}
    mismatches = []
    for path, (text, published) in result["final"].items():
        config, _ = load_config(Path(path))
        if config.root is None:
            config = replace(config, root=result["root"])
        from fabric_lsp.engine import project_root_for

        workspace = Workspace(project_root_for(path, config.root), config.python)
        workspace.overlays = dict(texts)
        fresh = [f for f in check_source(path, text, config, workspace) if f.span.path == path]
        if published != len(fresh):
            mismatches.append(f"{Path(path).name}: {published} published, {len(fresh)} fresh")
    return "yes" if not mismatches else "NO (" + "; ".join(mismatches) + ")"


# ---------------------------------------------------------------------------------------------


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            names = [line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")]
        if names:
            cpu = names[0]
    except OSError:
        pass
    try:
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    memory = ""
    try:
        with open("/proc/meminfo") as handle:
            total = int(handle.readline().split()[1]) // 1024
        memory = f", {total / 1024:.0f} GB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return f"{os.cpu_count()} cores ({cpu}){memory}, Python {platform.python_version()}, {platform.system()} {platform.release()}; load average at start {load}"


def commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except OSError:
        return "unknown"


def table(rows: list[dict]) -> str:
    lines = ["| target | measured | threshold | holds |", "|---|---|---|---|"]
    lines += [f"| {r['target']} | {r['measured']} | {r['threshold']} | {r['holds']} |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer edits and samples")
    parser.add_argument("--record", action="store_true", help="write benchmarks/RESULTS.md")
    parser.add_argument("--only", choices=("startup", "edits", "cold", "check", "memory", "real", "libs", "fabric"), action="append",
                        help="run only these steps (repeatable)")
    args = parser.parse_args(argv)
    if args.record and args.only:
        parser.error("--record writes the whole table: run every step (no --only)")
    WORK.mkdir(parents=True, exist_ok=True)
    check_bench.compile_package()  # as pip installs it: the bytecode written once (check_bench.as_installed)
    header = f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, commit {commit()}, {machine()}"
    started = time.perf_counter()
    rows: list[dict] = []
    steps = {"startup": bench_startup, "edits": bench_edits, "cold": bench_cold, "check": bench_check, "memory": bench_memory, "real": bench_real,
             "libs": bench_libs, "fabric": bench_fabric}
    for name, step in steps.items():
        if args.only and name not in args.only:
            continue
        rows += step(args.quick)
    text = f"{header}\n\n{table(rows)}\n\n(total {time.perf_counter() - started:.0f} s{', --quick' if args.quick else ''})\n"
    print(text)
    (WORK / "results.md").write_text(text)
    (WORK / "results.json").write_text(json.dumps({"header": header, "rows": rows}, indent=2))
    if args.record:
        record(text)
    failing = [r for r in rows if r["holds"] == "no"]
    return 1 if failing else 0


def record(text: str) -> None:
    path = HERE / "RESULTS.md"
    intro = path.read_text().split("<!-- results -->")[0] if path.exists() else "# Benchmark results\n\n"
    path.write_text(intro + "<!-- results -->\n\n" + text)


if __name__ == "__main__":
    raise SystemExit(main())
