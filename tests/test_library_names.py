"""Names that leave the project: a library's classes are read from its files (never imported), and
where its binding statements do not say what a name is (here a star import), jedi answers, bounded
by a count of its inference steps, so the answer is the same on every run and under any load."""

from __future__ import annotations

import logging
import sys
import venv
from pathlib import Path

import pytest

import fabric_lsp.analysis.workspace as workspace_module
import fabric_lsp.engine as engine
from fabric_lsp.settings.config import Config
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
    "fabric = L.Fabric(strategy='ddp'); fabric.launch()\n"
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


# -- names jedi is not asked about ------------------------------------------------------------------
# A library name bound only by assignments (`MARK_GEN = MarkGenerator()`) or imported from an extension
# or stub-only module (numpy's `SeedSequence`) is answered without jedi: its goto would end on the
# assignment statement or in a .so/.pyi file, where the analysis reads nothing. Proven here on the
# test environment's own installed packages, name by name, against jedi's real answer.

SAMPLED_PACKAGES = ("numpy", "_pytest", "jedi", "pygls", "hypothesis", "lsprotocol")


def _bound_names(tree) -> dict[str, str]:
    """CapWords names a module binds at its top level: "assigned" (assignments only) or "imported"
    (from-imports only)."""
    import ast

    kinds: dict[str, set[str]] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        kinds.setdefault(node.id, set()).add("assigned")
        elif isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                kinds.setdefault(alias.asname or alias.name, set()).add("imported")
    return {name: kind.pop() for name, kind in sorted(kinds.items()) if name[:1].isupper() and len(kind) == 1}


def _skippable_names(program, site_packages: Path, per_kind: int) -> dict[str, list[tuple[str, str]]]:
    """Up to `per_kind` names of each kind that the analysis answers without jedi, one per module."""
    found: dict[str, list[tuple[str, str]]] = {"assigned": [], "imported": []}
    for package in SAMPLED_PACKAGES:
        for path in sorted((site_packages / package).rglob("*.py")):
            source = program.external_source(str(path))
            if source is None:
                continue
            for kind in found:
                if len(found[kind]) >= per_kind:
                    continue
                names = [name for name, bound in _bound_names(source.tree).items() if bound == kind]
                skippable = [name for name in names if program._jedi_finds_nothing(str(path), name, 0)]
                if skippable:
                    found[kind].append((str(path), skippable[0]))
    return found


def test_names_jedi_is_not_asked_about_are_the_ones_it_answers_with_nothing(tmp_path):
    import sysconfig

    from fabric_lsp.analysis.program import build_programs
    from fabric_lsp.analysis.workspace import Workspace

    main = tmp_path / "train.py"
    main.write_text("from lightning.fabric import Fabric\n")
    [program], _ = build_programs(str(tmp_path), [str(main)], {}, lambda: engine.interpreter_sys_path(sys.executable))
    program.jedi = Workspace(str(tmp_path))
    sampled = _skippable_names(program, Path(sysconfig.get_paths()["purelib"]), per_kind=20)
    # Both kinds are common in real packages: the check is not vacuous.
    assert len(sampled["assigned"]) == 20 and len(sampled["imported"]) >= 5, sampled
    ended_in_compiled = 0
    for kind, names in sampled.items():
        for path, name in names:
            definitions = program.jedi.module_attribute(path, name, [])
            assert [program._definition_value(d) for d in definitions] == [None] * len(definitions), (kind, path, name, definitions)
            # jedi's goto stops at the assignment statement, or follows the imports into an extension
            # module or a stub (or to an assignment further down a re-export chain).
            assert all(d.kind == "statement" or d.path.endswith((".so", ".pyi", ".pyd")) for d in definitions), definitions
            ended_in_compiled += any(d.path.endswith((".so", ".pyi", ".pyd")) for d in definitions)
    assert ended_in_compiled >= 1, ended_in_compiled


def test_a_library_name_bound_by_assignment_or_from_an_extension_module_costs_no_jedi(tmp_path, monkeypatch):
    library = tmp_path / "lib" / "shapes"
    (library / "fast").mkdir(parents=True)
    (library / "__init__.py").write_text("from .core import GENERATOR\nfrom .fast.kernel import Kernel\n")
    (library / "core.py").write_text("class _Maker:\n    pass\n\nGENERATOR = _Maker()\n")
    (library / "fast" / "__init__.py").write_text("")
    (library / "fast" / "kernel.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    project = tmp_path / "project"
    project.mkdir()
    main = project / "train.py"
    text = "import lightning as L\nfrom shapes import GENERATOR, Kernel\n\nfabric = L.Fabric()\nk = Kernel(GENERATOR)\n"
    main.write_text(text)

    def asked(*args, **kwargs):
        raise AssertionError(f"jedi asked: {args}")

    monkeypatch.setattr(workspace_module.Workspace, "module_attribute", asked)
    monkeypatch.setattr(workspace_module.Interpreter, "sys_path", lambda self: (str(tmp_path / "lib"),))
    assert check_source(str(main), text, Config(root=str(project))) == []
