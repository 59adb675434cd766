"""Caches never answer with an old version of a file.

Other modules are parsed from disk and cached by file identity. Timestamps are coarse (a few ms on
Linux) and can be set back (`cp -p`, `rsync -t`, `touch -r`, archive extraction), so a rewrite of
the same size with the same modification time must still be noticed.
"""

from __future__ import annotations

import os

from fabric_lsp.settings.config import Config
from fabric_lsp.engine import check_source

MAIN = '''import lightning as L
from models import Net

fabric = L.Fabric(strategy="ddp"); fabric.launch()
model = fabric.setup(Net())
model.generate(1)
'''
RUNS_A_LAYER = '''from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(2, 2)

    def generate(self, x):
        return self.layer(x)
'''
# Same length: `generate` no longer runs a module.
RUNS_NOTHING = RUNS_A_LAYER.replace("return self.layer(x)", "return x  # layer(x)")
assert len(RUNS_NOTHING) == len(RUNS_A_LAYER) and RUNS_NOTHING != RUNS_A_LAYER


def _codes(tmp_path) -> list[str]:
    main = tmp_path / "main.py"
    return [f.code for f in check_source(str(main), MAIN, Config(root=str(tmp_path)))]


def test_same_size_rewrite_with_the_old_timestamp_is_noticed(tmp_path):
    (tmp_path / "main.py").write_text(MAIN, encoding="utf-8")
    models = tmp_path / "models.py"
    models.write_text(RUNS_A_LAYER, encoding="utf-8")
    old = os.stat(models)
    assert _codes(tmp_path) == ["FAB001"]

    models.write_text(RUNS_NOTHING, encoding="utf-8")
    os.utime(models, ns=(old.st_atime_ns, old.st_mtime_ns))  # what `cp -p` / `rsync -t` do
    assert os.stat(models).st_size == old.st_size
    assert _codes(tmp_path) == []

    models.write_text(RUNS_A_LAYER, encoding="utf-8")
    os.utime(models, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert _codes(tmp_path) == ["FAB001"]


def test_rewrites_within_one_timestamp_tick_are_noticed(tmp_path):
    """Two saves within the file system's timestamp granularity look identical to stat()."""
    (tmp_path / "main.py").write_text(MAIN, encoding="utf-8")
    models = tmp_path / "models.py"
    for round_ in range(20):
        models.write_text(RUNS_A_LAYER, encoding="utf-8")
        assert _codes(tmp_path) == ["FAB001"], round_
        models.write_text(RUNS_NOTHING, encoding="utf-8")
        assert _codes(tmp_path) == [], round_
