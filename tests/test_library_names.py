"""Names that leave the project: a library's classes are read from its files (never imported), and
where its binding statements do not say what a name is (here a star import), jedi answers, bounded
by a count of its inference steps, so the answer is the same on every run and under any load."""

from __future__ import annotations

import logging
import venv
from pathlib import Path

import pytest

import fabric_lsp.analysis.workspace as workspace_module
import fabric_lsp.engine as engine
from fabric_lsp.config import Config
from fabric_lsp.engine import check_source
from fabric_lsp.findings import Severity

LIBRARY = {
    "starlib/__init__.py": "from starlib.impl import *\n",
    "starlib/impl.py": (
        "from torch import nn\n\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.head = nn.Linear(4, 4)\n\n"
        "    def generate(self, x):\n"
        "        return self.head(x)\n"
    ),
    "plainlib/__init__.py": "from plainlib.models import Net\n",
    "plainlib/models.py": (
        "from torch import nn\n\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.head = nn.Linear(4, 4)\n\n"
        "    def generate(self, x):\n"
        "        return self.head(x)\n"
    ),
}

MAIN = (
    "import lightning as L\n"
    "from {library} import Net\n\n"
    "fabric = L.Fabric(strategy='ddp')\n"
    "model = fabric.setup(Net())\n"
    "model.generate(1)\n"
)


@pytest.fixture(scope="module")
def python(tmp_path_factory) -> str:
    """An interpreter whose site-packages hold the two libraries (nothing else installed)."""
    target = tmp_path_factory.mktemp("libvenv") / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    site = next(target.glob("lib/python3*/site-packages"))
    for name, text in LIBRARY.items():
        path = site / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return str(target / "bin" / "python")


def _check(tmp_path: Path, python: str, library: str):
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    main = project / "main.py"
    text = MAIN.format(library=library)
    main.write_text(text, encoding="utf-8")
    engine._workspaces.clear()
    engine._programs.clear()
    return check_source(str(main), text, Config(root=str(project), python=python))


def test_a_library_class_is_read_from_its_binding_statements(tmp_path, python):
    [finding] = _check(tmp_path, python, "plainlib")
    assert (finding.code, finding.severity) == ("FAB001", Severity.ERROR)
    assert "`Net.generate()`" in finding.message


def test_what_only_jedi_can_follow_is_followed_within_a_counted_bound(tmp_path, python, monkeypatch, caplog):
    [finding] = _check(tmp_path, python, "starlib")
    assert (finding.code, finding.severity) == ("FAB001", Severity.ERROR)
    assert finding.related[-1].span.path.endswith("impl.py")  # the method, in the library file
    monkeypatch.setattr(workspace_module, "JEDI_STEPS_PER_QUESTION", 1)
    with caplog.at_level(logging.INFO, logger="fabric_lsp"):
        bounded = _check(tmp_path, python, "starlib")
        again = _check(tmp_path, python, "starlib")
    assert bounded == again == []  # the class stays unknown: no finding
    assert "jedi stopped after 1 inference steps (counted, not timed)" in caplog.text
