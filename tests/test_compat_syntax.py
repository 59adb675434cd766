"""Files written for a newer Python than the one running fabric-lsp (analysis/compat.py): still
analysed, with every other position where it was, and a notice that says what was left out; a
file that is merely broken is not rewritten."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fabric_lsp.analysis.compat import neutralize
from fabric_lsp.analysis.source import SourceFile
from fabric_lsp.settings.config import Config
from fabric_lsp.engine import check_source

ROOT = Path(__file__).resolve().parents[1]

NEWER = '''import torch.nn as nn
from lightning.fabric import Fabric

type Pair[T] = tuple[T, T]


class LM[T](nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)

    def generate[S](self, x: S) -> S:
        names = {"a": 1}
        print(f"{names["a"]} and {f"{names['a']}"}")
        return self.head(x)


fabric = Fabric(strategy="ddp"); fabric.launch()
model = fabric.setup(LM())
print(f"{"nested"}")
model.generate(None)
'''

needs_older_python = pytest.mark.skipif(sys.version_info >= (3, 12), reason="this Python parses the syntax itself")


@needs_older_python
def test_newer_syntax_is_blanked_in_place():
    with pytest.raises(SyntaxError):
        compile(NEWER, "newer.py", "exec")
    text, blanked = neutralize(NEWER)
    assert blanked == ["f-string contents", "type parameter lists", "`type` statements"]
    compile(text, "newer.py", "exec")
    assert len(text) == len(NEWER) and text.count("\n") == NEWER.count("\n")
    for original, rewritten in zip(NEWER.splitlines(), text.splitlines()):
        if "f\"" not in original and "[" not in original:
            assert original == rewritten


@needs_older_python
def test_a_finding_in_a_file_of_newer_syntax_is_reported_where_it_is(tmp_path):
    path = tmp_path / "main.py"
    path.write_text(NEWER, encoding="utf-8")
    [finding] = check_source(str(path), NEWER, Config(root=str(tmp_path)))
    assert (finding.code, finding.severity.value) == ("FAB001", "error")
    line = NEWER.splitlines()[finding.span.start.line]
    assert line[finding.span.start.character:finding.span.end.character] == "generate"
    completed = subprocess.run(
        [sys.executable, "-m", "fabric_lsp", "check", "--format", "json", "--no-cache", str(path)],
        capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT / "server")),
    )
    assert [f["code"] for f in json.loads(completed.stdout)] == ["FAB001"]
    assert "uses syntax newer than Python" in completed.stderr and "left out" in completed.stderr


def test_broken_code_is_not_rewritten():
    half_typed = NEWER.replace("def generate[S](self, x: S) -> S:", "def generate(self, x")
    source = SourceFile.parse("half.py", half_typed)
    assert source.tree is None and source.syntax_error and source.newer_syntax is None
    assert neutralize("x = (1,\n") is None
