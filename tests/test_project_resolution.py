"""Where a project's imports lead (analysis/project.py, analysis/program.py), checked against jedi's
answer for the same import statements: plain modules, packages, relative imports, namespace
packages, `src/` layouts, package folders declared in pyproject.toml / setup.cfg, folders a script
puts on sys.path, re-exports through `__init__.py` and names bound in `if TYPE_CHECKING:` blocks."""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import jedi
import pytest

from fabric_lsp.analysis.program import plan_project, program_of
from fabric_lsp.analysis.project import Resolver, declared_package_roots, scan_imports, sys_path_literals
from fabric_lsp.analysis.values import Class, Module

ROOT = Path(__file__).resolve().parents[1]

PROJECT = {
    "pyproject.toml": "[project]\nname = 'demo'\n[tool.setuptools.packages.find]\nwhere = ['lib']\n",
    "src/core/__init__.py": "from core.models import Net as Exported\n",
    "src/core/models.py": "class Net:\n    pass\n",
    "src/core/sub/__init__.py": "",
    "src/core/sub/heads.py": "from ..models import Net\n\nclass Head(Net):\n    pass\n",
    "lib/declared/__init__.py": "",
    "lib/declared/blocks.py": "class Block:\n    pass\n",
    "nspkg/portion/mod.py": "class InNamespace:\n    pass\n",
    "typed/__init__.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from typed.impl import Lazy\n"
        "else:\n"
        "    Lazy = None\n"
        "try:\n"
        "    from typed.impl import Guarded\n"
        "except ImportError:\n"
        "    Guarded = None\n"
    ),
    "typed/impl.py": "class Lazy:\n    pass\n\nclass Guarded:\n    pass\n",
    "vendored/extra.py": "class Extra:\n    pass\n",
    "scripts/helpers.py": "def helper():\n    return 1\n",
    "scripts/train.py": (
        "import sys\n"
        "sys.path.insert(0, '../vendored')\n"
        "from core.models import Net\n"
        "from core import Exported\n"
        "from core.sub.heads import Head\n"
        "from declared.blocks import Block\n"
        "from nspkg.portion.mod import InNamespace\n"
        "from typed import Lazy, Guarded\n"
        "from helpers import helper\n"
        "from extra import Extra\n"
        "import core.sub.heads as heads_module\n"
    ),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("resolution")
    for name, text in PROJECT.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_declared_package_folders_and_src_are_search_roots(project):
    roots = declared_package_roots(str(project))
    assert str(project / "lib") in roots and str(project / "src") in roots


def _jedi_module_of(script_path: Path, line: int, column: int, project_root: Path) -> str | None:
    """The file jedi says the name at (line, column) is defined in."""
    sys_path = [str(project_root / "src"), str(project_root / "lib"), str(project_root), str(project_root / "vendored"),
                *sys.path]
    jedi_project = jedi.Project(str(project_root), sys_path=sys_path, smart_sys_path=True, load_unsafe_extensions=False)
    names = jedi.Script(path=str(script_path), project=jedi_project).goto(line, column, follow_imports=True)
    paths = {str(name.module_path) for name in names if name.module_path is not None}
    return paths.pop() if len(paths) == 1 else None


def test_imports_lead_where_jedi_says(project):
    script = project / "scripts" / "train.py"
    text = script.read_text()
    resolver = Resolver(str(project), lambda: tuple(sys.path))
    resolver.inserted[str(script)] = ("../vendored",)
    compared = 0
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.ImportFrom) or node.module in ("typing",):
            continue
        location = resolver.resolve(node.module or "", str(script), node.level)
        assert location is not None, node.module
        for alias in node.names:
            if alias.name in ("Exported", "Lazy", "Guarded"):
                continue  # re-exported: jedi names the defining file; the next test follows those
            line = node.lineno
            column = text.splitlines()[line - 1].index(alias.name, node.col_offset + len("from "))
            jedi_file = _jedi_module_of(script, line, column, project)
            assert jedi_file is not None, alias.name
            target = location.path
            assert os.path.realpath(jedi_file) == os.path.realpath(target), (alias.name, jedi_file, target)
            compared += 1
    assert compared >= 6


def test_names_resolve_to_their_classes_through_reexports_and_guarded_imports(project):
    script = str(project / "scripts" / "train.py")
    plan = plan_project(str(project), [script], {}, lambda: tuple(sys.path))
    # Without Fabric nothing forms a program; resolve through a program built for the script anyway.
    plan.group_of[script] = len(plan.groups)
    plan.groups.append(sorted({script} | set(plan.entries)))
    program = program_of(plan, plan.group_of[script], [script])
    classes = {}
    for module, name in (("core", "Exported"), ("typed", "Lazy"), ("typed", "Guarded"), ("core.sub.heads", "Head")):
        location = program.resolver.resolve(module, script, 0)
        value = Module(location.path, external=True)
        found = program.external_attribute(value, name)
        classes[name] = {v.qualname for v in found if isinstance(v, Class)}
    assert classes == {"Exported": {"Net"}, "Lazy": {"Lazy"}, "Guarded": {"Guarded"}, "Head": {"Head"}}


def test_scanned_imports_find_what_the_parser_finds(project):
    for path in project.rglob("*.py"):
        text = path.read_text()
        parsed = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom):
                parsed.add((node.module or "", node.level))
            elif isinstance(node, ast.Import):
                parsed.update((alias.name, 0) for alias in node.names)
        scanned = {(item.module, item.level) for item in scan_imports(text)}
        assert parsed <= scanned, path


def test_fixture_imports_resolve_to_the_case_files():
    """Every project-form fixture case: each `from x import Y` of a case file leads to a file of the case."""
    cases = ROOT / "fixtures" / "cases"
    checked = 0
    for case in sorted(p for p in cases.iterdir() if p.is_dir()):
        resolver = Resolver(str(ROOT), lambda: tuple(sys.path))
        for path in case.rglob("*.py"):
            text = path.read_text()
            resolver.inserted[str(path)] = sys_path_literals(text)
            for item in scan_imports(text):
                if item.module.split(".")[0] in ("torch", "lightning", "torchmetrics", "sys", "os", "json", "math",
                                                 "argparse", "functools", "dataclasses", "typing", "random",
                                                 "__future__", "contextlib", "lightning_fabric", "collections", "importlib",
                                                 "pathlib", "yaml", "hydra", "omegaconf"):
                    continue
                location = resolver.resolve(item.module, str(path), item.level)
                assert location is not None and str(case) in location.path, (path, item)
                checked += 1
    assert checked >= 10


def test_editable_installs_are_read_not_run(tmp_path):
    """setuptools' editable install: a .pth line that imports a finder whose MAPPING names the
    package folder. The folder is found by reading MAPPING; the finder never runs."""
    import venv

    from fabric_lsp.analysis.workspace import interpreter_sys_path

    package = tmp_path / "proj" / "src" / "demo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("class Model:\n    pass\n")
    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    site = next(target.glob("lib/python3*/site-packages"))
    marker = tmp_path / "finder-ran"
    (site / "__editable__.demo-0.1.pth").write_text("import __editable___demo_0_1_finder; __editable___demo_0_1_finder.install()\n")
    (site / "__editable___demo_0_1_finder.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\nMAPPING = {{'demo': {str(package)!r}}}\ndef install():\n    pass\n"
    )
    interpreter_sys_path.cache_clear()
    paths = interpreter_sys_path(str(target / "bin" / "python"))
    assert str(package.parent) in paths
    assert not marker.exists()
