"""jedi's answers about installed packages kept in the findings cache folder (cache.JediAnswers,
issue 36): the next `check` asks jedi nothing, and finds exactly what jedi's answers give; a changed
package file is asked about again; `--no-cache` neither reads nor writes them; the worker processes'
answers are kept. Work is counted (jedi.Script objects made: workspace.jedi_questions_asked), never
timed. The library is a package of a virtual environment ($VIRTUAL_ENV, read as files) whose class is
only reached through a star import: what jedi is asked for (program._jedi_finds_nothing)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from fabric_lsp import cache as cache_module
from fabric_lsp.cache import CACHE_DIR_NAME

ROOT = Path(__file__).resolve().parents[1]

# `check` with the number of questions put to jedi printed last on stderr (`JEDI-QUESTIONS n`).
_COUNTING = (
    "import atexit, sys\n"
    "from fabric_lsp.analysis import workspace\n"
    "atexit.register(lambda: print('JEDI-QUESTIONS', workspace.jedi_questions_asked(), file=sys.stderr))\n"
    "from fabric_lsp.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)

MODELS = '''\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(2, 2)

    def forward(self, x):
        return self.layer(x)

    def generate(self, x):
        return self(x)


class Plain:
    def generate(self, x):
        return x
'''

TRAIN = '''\
import lightning as L
from zoo import Net

fabric = L.Fabric(strategy="ddp", devices=2)
fabric.launch()
model = fabric.setup(Net())
model.generate(1)
'''


@pytest.fixture(scope="module")
def environment(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("env") / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    return target


def _site(env: Path) -> Path:
    return next(env.glob("lib/python*/site-packages"))


@pytest.fixture
def zoo(environment):
    """The package `zoo` installed in the environment: `from .models import *` in its __init__."""
    package = _site(environment) / "zoo"
    package.mkdir()
    (package / "__init__.py").write_text("from .models import *\n")
    (package / "models.py").write_text(MODELS)
    try:
        yield package
    finally:
        for path in sorted(package.rglob("*"), reverse=True):
            path.unlink() if not path.is_dir() else path.rmdir()
        package.rmdir()


def _project(tmp_path: Path, files: dict[str, str] | None = None) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.fabric-lsp]\n")
    for name, text in (files or {"train.py": TRAIN}).items():
        (project / name).write_text(text)
    return project


def _check(project: Path, env_dir: Path, *extra: str, secret: Path | None = None) -> tuple[list[str], int]:
    """(the findings as the github format shows them, or as json with `--format json` in `extra`:
    their related locations too, the number of questions put to jedi)."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT / "server"), "VIRTUAL_ENV": str(env_dir)}
    if secret is not None:
        environ["FABRIC_LSP_CACHE_SECRET_DIR"] = str(secret)
    completed = subprocess.run(
        [sys.executable, "-c", _COUNTING, "check", *([] if "json" in extra else ["--format", "github"]), "--exit-zero",
         *extra, "."],
        cwd=project, capture_output=True, text=True, timeout=600, env=environ,
    )
    assert completed.returncode == 0, completed.stderr
    asked = re.findall(r"^JEDI-QUESTIONS (\d+)$", completed.stderr, re.M)
    assert asked, completed.stderr
    if "json" in extra:
        return [json.dumps(finding, sort_keys=True) for finding in json.loads(completed.stdout)], int(asked[-1])
    return sorted(line for line in completed.stdout.splitlines() if line.startswith("::")), int(asked[-1])


def _edit(project: Path, name: str = "train.py") -> None:
    """A change of the project (a comment at the end): its findings are not answered from the cache."""
    with open(project / name, "a") as handle:
        handle.write("# edited\n")


def _jedi_files(project: Path) -> list[Path]:
    return sorted((project / CACHE_DIR_NAME).glob("*/jedi-*.json"))


def _fab001(findings: list) -> list:
    return [line for line in findings if "FAB001" in line]


def test_a_second_check_asks_jedi_nothing_and_finds_the_same(tmp_path, environment, zoo):
    project = _project(tmp_path)
    first, asked = _check(project, environment, "--jobs", "1")
    assert asked >= 1 and _fab001(first), (asked, first)  # the finding needs jedi's answer (a star import)
    assert len(_jedi_files(project)) == 1
    _edit(project)
    second, asked = _check(project, environment, "--jobs", "1")
    assert asked == 0
    assert second == first
    uncached, asked = _check(project, environment, "--jobs", "1", "--no-cache")
    assert asked >= 1 and uncached == first


def test_a_changed_package_file_is_asked_about_again(tmp_path, environment, zoo):
    project = _project(tmp_path)
    first, _ = _check(project, environment, "--jobs", "1", "--format", "json")
    assert "models.py" in "".join(first)  # the finding's related location: `Net.generate` in models.py
    models = zoo / "models.py"
    models.write_text("import os\n\n\n" + MODELS)  # Net moves three lines down: another answer
    _edit(project)
    second, asked = _check(project, environment, "--jobs", "1", "--format", "json")
    assert asked >= 1
    uncached, _ = _check(project, environment, "--jobs", "1", "--no-cache", "--format", "json")
    assert second == uncached and second != first  # the related location moved with the class
    # The class no longer in the module the star import reads: jedi says so, not the stored answer.
    models.write_text(MODELS.replace("class Net(nn.Module)", "class Other(nn.Module)"))
    _edit(project)
    third, asked = _check(project, environment, "--jobs", "1")
    assert asked >= 1 and not _fab001(third)


def test_a_stub_added_next_to_a_read_module_is_asked_about_again(tmp_path, environment, zoo):
    project = _project(tmp_path)
    _check(project, environment, "--jobs", "1")
    (zoo / "__init__.pyi").write_text("class Net: ...\n")  # jedi prefers the stub: another answer
    _edit(project)
    found, asked = _check(project, environment, "--jobs", "1")
    assert asked >= 1
    assert found == _check(project, environment, "--jobs", "1", "--no-cache")[0]


def test_no_cache_neither_reads_nor_writes_jedi_answers(tmp_path, environment, zoo):
    project = _project(tmp_path)
    _check(project, environment, "--jobs", "1", "--no-cache")
    assert not (project / CACHE_DIR_NAME).exists()
    _check(project, environment, "--jobs", "1")
    assert _jedi_files(project)
    before = {path: path.read_bytes() for path in _jedi_files(project)}
    _edit(project)
    _, asked = _check(project, environment, "--jobs", "1", "--no-cache")
    assert asked >= 1  # the stored answers are not read
    assert {path: path.read_bytes() for path in _jedi_files(project)} == before


def test_the_worker_processes_answers_are_kept(tmp_path, environment, zoo):
    files = {f"train_{number}.py": TRAIN.replace("Net", name) for number, name in enumerate(["Net", "Plain"])}
    project = _project(tmp_path, files)
    first, asked = _check(project, environment, "--jobs", "2")  # two programs, one per worker process
    assert asked == 0  # the parent asked nothing: the workers did, and sent their answers back
    [stored] = _jedi_files(project)
    body = cache_module.verified_body(cache_module.user_secret(), stored.name, stored.read_bytes())
    assert body is not None
    assert {key.rpartition("\0")[2] for key in json.loads(body)["answers"]} >= {"Net", "Plain"}
    for name in files:
        _edit(project, name)
    second, asked = _check(project, environment, "--jobs", "1")
    assert asked == 0 and second == first


def test_names_the_tables_know_never_reach_jedi(tmp_path, monkeypatch):
    """Names of torch, Lightning and the libraries with tables are answered by the tables, even when
    such a library is installed with a lazy `__init__` that only jedi could follow."""
    from fabric_lsp.analysis import workspace as workspace_module
    from fabric_lsp.engine import check_source
    from fabric_lsp.settings.config import Config

    library = tmp_path / "lib" / "transformers"
    library.mkdir(parents=True)
    (library / "__init__.py").write_text(
        "import sys\nfrom .utils import _LazyModule\nsys.modules[__name__] = _LazyModule(__name__, {})\n")
    (library / "utils.py").write_text("class _LazyModule:\n    pass\n")
    project = tmp_path / "project"
    project.mkdir()
    text = (
        "import torch\nimport lightning as L\nfrom torch.nn import Linear, TransformerEncoderLayer\n"
        "from torchmetrics import Accuracy\nfrom lightning.fabric.strategies import FSDPStrategy\n"
        "from transformers import AutoModelForCausalLM, GPT2LMHeadModel, Trainer\n"
        "from peft import LoraConfig, get_peft_model\nfrom timm import create_model\n"
        "fabric = L.Fabric(strategy=FSDPStrategy(), devices=2)\nfabric.launch()\n"
        "model = fabric.setup(GPT2LMHeadModel(None))\nmodel.generate(torch.zeros(1))\n"
        "layer = fabric.setup(TransformerEncoderLayer(8, 2))\nmetric = Accuracy(task='binary')\n"
    )
    (project / "train.py").write_text(text)

    def asked(*args, **kwargs):
        raise AssertionError(f"jedi asked: {args}")

    monkeypatch.setattr(workspace_module.Workspace, "module_attribute", asked)
    monkeypatch.setattr(workspace_module.Interpreter, "sys_path",
                        lambda self: (str(tmp_path / "lib"),) + tuple(p for p in sys.path if "site-packages" in p))
    findings = check_source(str(project / "train.py"), text, Config(root=str(project)))
    assert any(f.code == "FAB001" for f in findings), findings  # the tables answered generate


def test_a_name_a_module_binds_itself_needs_no_jedi_despite_its_star_imports(tmp_path):
    """numpy.random's shape: `from .mtrand import *` and `from ._generator import Generator` (an
    extension module). jedi looks at a module's own names before its star imports, so the name's
    own binding decides, and jedi is not asked; what jedi answers agrees (nothing to follow)."""
    from fabric_lsp.analysis.program import build_programs
    from fabric_lsp.analysis.workspace import Workspace, interpreter_sys_path

    library = tmp_path / "lib" / "dice"
    library.mkdir(parents=True)
    (library / "__init__.py").write_text(
        "from .core import *\nfrom ._fast import Generator\nRNG = Generator()\n"
        "if False:\n    from .core import Hidden\n")
    (library / "core.py").write_text("class Generator:\n    pass\n\nclass Hidden:\n    pass\n\nclass Other:\n    pass\n")
    (library / "_fast.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    project = tmp_path / "project"
    project.mkdir()
    main = project / "train.py"
    main.write_text("from lightning.fabric import Fabric\n")
    lib_path = (str(tmp_path / "lib"),) + tuple(interpreter_sys_path(sys.executable) or ())
    [program], _ = build_programs(str(project), [str(main)], {}, lambda: lib_path)
    init = str(library / "__init__.py")
    assert program._jedi_finds_nothing(init, "Generator", 0)
    assert program._jedi_finds_nothing(init, "RNG", 0)
    assert not program._jedi_finds_nothing(init, "Other", 0)  # only the star import binds it
    assert not program._jedi_finds_nothing(init, "Hidden", 0)  # its own binding may be unreachable
    workspace = Workspace(str(project))
    workspace.interpreter = type(workspace.interpreter)(sys.executable, True)
    import fabric_lsp.analysis.workspace as workspace_module

    original = workspace_module.Interpreter.sys_path
    workspace_module.Interpreter.sys_path = lambda self: lib_path
    try:
        program.jedi = workspace
        for name in ("Generator", "RNG"):
            assert [program._definition_value(d) for d in workspace.module_attribute(init, name, [])] in ([], [None])
        assert program._definition_value(workspace.module_attribute(init, "Other", [])[0]) is not None
    finally:
        workspace_module.Interpreter.sys_path = original


def test_the_interpreter_probe_reads_back_every_path_exactly():
    """The sys.path probe prints an ascii() literal (no json import in the probed interpreter)."""
    from fabric_lsp.analysis import workspace as workspace_module

    odd = ["/a b/ü", "/tmp/\udcff", "/x'\"\\y"]
    assert workspace_module._literal_paths(ascii(odd) + "\n") == odd
    for bad in ("", "{}", "['a', 1]", "[__import__('os')]", "[" * 100000):
        with pytest.raises(ValueError):
            workspace_module._literal_paths(bad)
    assert "json" not in workspace_module._SYS_PATH_PROBE
    assert ast.parse(workspace_module._SYS_PATH_PROBE)
