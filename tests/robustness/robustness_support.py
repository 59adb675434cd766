"""Helpers shared by the robustness tests: fixture files, finding invariants, measured figures.

Figures (counts tried, worst time, worst memory) are what the README "Reliability" section quotes.
Set FABRIC_LSP_FIGURES=/some/file.jsonl to collect them; each test appends one JSON line per figure.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES_DIR = ROOT / "fixtures" / "cases"
SERVER_DIR = ROOT / "server"

if str(ROOT / "tests") not in sys.path:  # `support` is the shared test package in tests/
    sys.path.insert(0, str(ROOT / "tests"))

from support.cases import discover_cases  # noqa: E402


def fixture_files() -> list[tuple[Path, Path]]:
    """(case root, file) for every .py file of every labelled case."""
    found = []
    for case in discover_cases(CASES_DIR):
        for name in case.files:
            found.append((case.root, case.root / name))
    return found


def record_figure(name: str, value, **details) -> None:
    """Append one measured figure for the README; a no-op unless FABRIC_LSP_FIGURES is set."""
    target = os.environ.get("FABRIC_LSP_FIGURES")
    if not target:
        return
    with open(target, "a", encoding="utf-8") as out:
        out.write(json.dumps({"figure": name, "value": value, **details}) + "\n")


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextmanager
def stopwatch():
    """`with stopwatch() as elapsed: ...; elapsed()` -> seconds since the block started."""
    started = time.perf_counter()
    yield lambda: time.perf_counter() - started


def line_lengths(text: str) -> list[int]:
    """Lengths (code points) of the lines as LSP and Python count them (\\n, \\r\\n, \\r only)."""
    import re

    return [len(line) for line in re.split(r"\r\n|\r|\n", text)]


def span_problems(findings, path: str, text: str) -> list[str]:
    """Positions of findings in `path` (and of fix edits in it) that fall outside `text`."""
    lengths = line_lengths(text)
    problems = []

    def check(where: str, start, end) -> None:
        if (start.line, start.character) > (end.line, end.character):
            problems.append(f"{where}: start {start} after end {end}")
        for position in (start, end):
            if not 0 <= position.line < len(lengths):
                problems.append(f"{where}: line {position.line} outside 0..{len(lengths) - 1}")
            elif not 0 <= position.character <= lengths[position.line]:
                problems.append(
                    f"{where}: character {position.character} outside line {position.line} "
                    f"of length {lengths[position.line]}"
                )

    for finding in findings:
        if finding.span.path == path:
            check(f"{finding.code} span", finding.span.start, finding.span.end)
        if finding.fix is not None:
            for edit in finding.fix.edits:
                if edit.path == path:
                    check(f"{finding.code} fix edit", edit.start, edit.end)
    return problems
