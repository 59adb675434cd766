"""Running `python -m fabric_lsp check` as users do, for the selection / configuration / noqa / stdin
tests (tests/test_selection*.py, test_config_hierarchy.py, test_noqa.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVER_DIR = ROOT / "server"

# A program with one FAB003 (line 15: a bound method passed to mark_forward_method under DDP) and
# one FAB001 (line 16: `encode` runs a layer and is not marked). Lines are 1-based.
PROGRAM = '''import torch.nn as nn
from lightning.fabric import Fabric

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)
    def generate(self, x):
        return self.head(x)
    def encode(self, x):
        return self.head(x)
fabric = Fabric(strategy="ddp")
fabric.launch()
model = fabric.setup(LM())
model.mark_forward_method(model.generate)
model.encode(None)
'''
FAB003_LINE = 15
FAB001_LINE = 16
BOTH = {"FAB001", "FAB003"}


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def program_with(line: int, replacement: str) -> str:
    """PROGRAM with its 1-based `line` replaced (a comment added, say)."""
    lines = PROGRAM.splitlines(keepends=True)
    lines[line - 1] = replacement.rstrip("\n") + "\n"
    return "".join(lines)


def run_check(argv, cwd: Path, *, stdin: str | bytes | None = None, cache: bool = False,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m fabric_lsp check ARGV` in `cwd` (with --no-cache unless `cache`)."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SERVER_DIR), os.environ.get("PYTHONPATH", "")])}
    environment.update(env or {})
    args = [sys.executable, "-m", "fabric_lsp", "check", *([] if cache else ["--no-cache"]), *map(str, argv)]
    binary = isinstance(stdin, bytes)
    return subprocess.run(args, cwd=cwd, env=environment, input=stdin, capture_output=True, text=not binary,
                          timeout=180)


def findings(result: subprocess.CompletedProcess, cwd: Path) -> set[tuple[str, str, int]]:
    """(path relative to cwd, code, row) of each entry of a `--format json` run."""
    data = json.loads(result.stdout)
    return {(os.path.relpath(entry["filename"], cwd), entry["code"], entry["location"]["row"]) for entry in data}


def codes_by_file(result: subprocess.CompletedProcess, cwd: Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path, code, _ in findings(result, cwd):
        found.setdefault(path, set()).add(code)
    return found
