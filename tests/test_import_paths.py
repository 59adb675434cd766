"""The jedi-free answer for `from module import Name` (analysis/import_paths.py) is the answer jedi
gives, whenever it answers at all; and it declines every case it cannot be sure of."""

from __future__ import annotations

import ast
from pathlib import Path

import jedi
import pytest

from fabric_lsp.analysis.source import SourceFile
from fabric_lsp.analysis.workspace import Definition, Workspace
from fabric_lsp.engine import project_root_for

ROOT = Path(__file__).resolve().parents[1]

PROJECT = {
    "pyproject.toml": "[project]\nname = 'demo'\n",
    "pkg/__init__.py": "from pkg.models.net import Net as Exported\n",
    "pkg/models/__init__.py": "",
    "pkg/models/net.py": "import torch\n\n\n@decorate\nclass Net:\n    pass\n\n\nasync def build():\n    return Net()\n",
    "pkg/models/twice.py": "class Twice:\n    pass\n\n\nTwice = wrap(Twice)\n",
    "pkg/models/starred.py": "from os.path import *\n\n\nclass Starred:\n    pass\n",
    "pkg/models/stubbed.py": "class Stubbed:\n    pass\n",
    "pkg/models/stubbed.pyi": "class Stubbed: ...\n",
    "pkg/extended/__init__.py": "__path__ = __import__('pkgutil').extend_path(__path__, __name__)\n",
    "pkg/extended/mod.py": "class Extended:\n    pass\n",
    "scripts/sibling.py": "def helper():\n    return 1\n",
    "scripts/train.py": (
        "from pkg.models.net import Net, build\n"
        "from pkg.models.twice import Twice\n"
        "from pkg.models.starred import Starred\n"
        "from pkg.models.stubbed import Stubbed\n"
        "from pkg.extended.mod import Extended\n"
        "from pkg import Exported\n"
        "from sibling import helper\n"
        "from . import nothing\n"
        "from json import dumps\n"
        "\n"
        "def main(build=None):\n"
        "    return Net(), build, Twice(), Starred(), Stubbed(), Extended(), Exported(), helper(), dumps\n"
    ),
    "scripts/shadowed.py": "from pkg.models.net import Net\n\nNet = None\nprint(Net)\n",
    "scripts/early.py": "print(Net)\nfrom pkg.models.net import Net\nprint(Net)\n",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("imports")
    for name, text in PROJECT.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _compare(path: Path) -> tuple[dict[str, tuple], int]:
    """Name -> the direct answer (None: declined), checked against jedi where given; and the count checked."""
    workspace = Workspace(project_root_for(str(path), None), None)
    source = SourceFile.parse(str(path), path.read_text())
    script = jedi.Script(code=source.text, path=str(path), project=workspace.project)
    answers: dict[str, tuple] = {}
    checked = 0
    for node in ast.walk(source.tree):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
            continue
        direct = workspace._imported_directly(source, node)
        answers.setdefault(node.id, direct[0] if direct else None)
        if direct is None:
            continue
        names = script.goto(node.lineno, node.col_offset, follow_imports=True)
        expected = tuple(
            Definition(str(n.module_path), n.line, n.column, n.type, n.full_name)
            for n in names if n.module_path is not None and n.line is not None
        )
        assert direct[0] == expected, (path.name, node.id, node.lineno)
        checked += 1
    return answers, checked


def test_direct_answers_equal_jedi_and_decline_what_is_not_certain(project):
    answers, checked = _compare(project / "scripts" / "train.py")
    assert checked == 2  # Net and helper, one use each
    assert answers["Net"] is not None and answers["Net"][0].kind == "class"
    assert answers["helper"] is not None  # a module beside the script (jedi searches the script's folder)
    for declined in ("build", "Twice", "Starred", "Stubbed", "Extended", "Exported", "dumps"):
        # a parameter shadows it; bound twice; star import; stub; __path__ games; re-export; library
        assert answers[declined] is None, declined
    assert _compare(project / "scripts" / "shadowed.py")[0]["Net"] is None
    early, _ = _compare(project / "scripts" / "early.py")
    assert early["Net"] is None


def test_direct_answers_equal_jedi_on_the_fixtures():
    checked = 0
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        checked += _compare(path)[1]
    assert checked >= 5
