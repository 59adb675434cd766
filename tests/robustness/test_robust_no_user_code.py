"""Analysing a repository never runs its code, nor the hooks of the interpreter it is analysed for.

Every hook below writes a marker file when it is imported or executed. A control run first proves
that each hook does fire when Python runs normally (so an empty marker folder means something);
then the CLI (`--python` the hostile venv) and the language server (initializationOptions
{"python": ...}) analyse the project, and the marker folder must stay empty.

Hooks: the project's modules, `conftest.py`, `setup.py`, `sitecustomize.py` / `usercustomize.py`
in the project, files named like modules the tool imports lazily (`argparse.py`, `jedi.py`,
`tomllib.py`: `python -m` puts the current directory on sys.path), a package that shadows
`lightning`; in the analysed venv's site-packages: a `.pth` line with code, a `.pth` path entry,
`sitecustomize.py`, `usercustomize.py` and an installed package.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from robustness_support import SERVER_DIR, record_figure
from rpc_client import RawServer, server_env


def _hook(markers: Path, name: str) -> str:
    """One line of Python that leaves `markers/name` behind when it runs."""
    return f"open({str(markers / name)!r}, 'w').write('ran')\n"


PROJECT_MAIN = '''
import lightning as L
import torch
from torch import nn

import helpers
import evilpkg
import extra_mod
from helpers import Model

fabric = L.Fabric(strategy="ddp")
model = fabric.setup(Model())
model.generate(1)
with torch.device("meta"):
    block = helpers.Block()
L.Fabric(strategy="fsdp").setup(block)
'''


def build_hostile_world(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(project, venv python, marker folder)."""
    markers = tmp_path / "markers"
    markers.mkdir()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # Asked before any hook exists. (With -S, getsitepackages() names the *base* interpreter's folder.)
    site = Path(subprocess.run(
        [str(python), "-I", "-c", "import site; print(site.getsitepackages()[0])"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip())
    assert site.is_relative_to(venv), site  # never plant hooks outside the temporary venv
    site.mkdir(parents=True, exist_ok=True)
    extra = tmp_path / "extra_src"
    extra.mkdir()
    (extra / "extra_mod.py").write_text(_hook(markers, "pth-path-module"), encoding="utf-8")
    (site / "zz_hostile.pth").write_text(
        f"import os; {_hook(markers, 'pth-code').strip()}\n{extra}\n", encoding="utf-8"
    )
    (site / "sitecustomize.py").write_text(_hook(markers, "venv-sitecustomize"), encoding="utf-8")
    (site / "usercustomize.py").write_text(_hook(markers, "venv-usercustomize"), encoding="utf-8")
    (site / "evilpkg").mkdir()
    (site / "evilpkg" / "__init__.py").write_text(_hook(markers, "installed-package") + "X = 1\n", encoding="utf-8")

    project = tmp_path / "project"
    project.mkdir()
    (project / "main.py").write_text(PROJECT_MAIN, encoding="utf-8")
    (project / "helpers.py").write_text(_hook(markers, "project-module") + textwrap.dedent('''
        import torch
        from torch import nn


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layer = nn.Linear(1, 1)

            def generate(self, x):
                return self.layer(x)


        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = nn.Parameter(torch.ones(1))
        '''), encoding="utf-8")
    for name in ("conftest.py", "setup.py", "sitecustomize.py", "usercustomize.py", "argparse.py",
                 "jedi.py", "tomllib.py", "json.py", "typing_extensions.py"):
        (project / name).write_text(_hook(markers, f"project-{name}"), encoding="utf-8")
    (project / "lightning").mkdir()  # shadows the real package for jedi: parsed, never imported
    (project / "lightning" / "__init__.py").write_text(_hook(markers, "shadow-lightning") + "Fabric = object\n", encoding="utf-8")
    (project / "pyproject.toml").write_text("[tool.fabric-lsp]\nhints = true\n", encoding="utf-8")
    return project, python, markers


def fired(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


@pytest.fixture
def hostile(tmp_path):
    project, python, markers = build_hostile_world(tmp_path)
    # Control: the hooks are live. The venv's own interpreter, started normally in the project,
    # runs the .pth code, sitecustomize and (importing them) the project's and installed modules.
    control = "import evilpkg, extra_mod\ntry:\n    import helpers\nexcept ImportError:\n    pass  # no torch there\n"
    subprocess.run([str(python), "-c", control], cwd=project,
                   env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
                   check=True, timeout=60, capture_output=True)
    assert {"pth-code", "venv-sitecustomize", "project-module", "installed-package", "pth-path-module"} <= set(fired(markers))
    subprocess.run([sys.executable, "conftest.py"], cwd=project, check=True, timeout=60)
    assert "project-conftest.py" in fired(markers)
    for marker in markers.iterdir():
        marker.unlink()
    return project, python, markers


def test_cli_never_runs_project_or_interpreter_hooks(hostile):
    project, python, markers = hostile
    env = {**os.environ, "PYTHONPATH": str(SERVER_DIR)}
    env.pop("VIRTUAL_ENV", None)
    for argv in (
        ["check", "--python", str(python), "--format", "json", "."],
        ["check", "--python", str(python), "--jobs", "2", "main.py", "helpers.py", "conftest.py", "setup.py"],
        ["check", "--python", str(python), "--fix", "--unsafe-fixes", "--diff", "."],
    ):
        # `python -m fabric_lsp` from inside the project, as an editor or a CI step would start it.
        completed = subprocess.run([sys.executable, "-m", "fabric_lsp", *argv], cwd=project, env=env,
                                   capture_output=True, text=True, timeout=180)
        assert completed.returncode in (0, 1), completed.stderr
        assert "Traceback" not in completed.stderr, completed.stderr
        assert fired(markers) == [], (argv, fired(markers))
    # The analysis did look at the project (it is not clean because nothing was read).
    completed = subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--python", str(python), "main.py"],
                               cwd=project, env=env, capture_output=True, text=True, timeout=180)
    assert "FAB001" in completed.stdout, completed.stdout + completed.stderr
    assert fired(markers) == []
    record_figure("no_user_code_hooks", 16, surfaces="cli")


def test_server_never_runs_project_or_interpreter_hooks(hostile, tmp_path):
    project, python, markers = hostile
    server = RawServer(project, env=server_env(), stderr_path=tmp_path / "stderr.txt")
    try:
        server.initialize(project, options={"python": str(python)})
        uris = [server.open(project / name) for name in ("main.py", "helpers.py", "conftest.py", "setup.py")]
        main = server.diagnostics(uris[0], timeout=60)
        for uri in uris[1:]:
            server.diagnostics(uri, timeout=60)
        # hover and code actions make the server resolve names too
        server.call("textDocument/hover", {"textDocument": {"uri": uris[0]}, "position": {"line": 11, "character": 8}})
        server.call("textDocument/codeAction", {
            "textDocument": {"uri": uris[0]},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 15, "character": 0}},
            "context": {"diagnostics": main["diagnostics"]},
        })
        assert any(d.get("code") == "FAB001" for d in main["diagnostics"]), main
        assert server.shutdown_and_exit() == 0
    finally:
        server.close()
    assert fired(markers) == []
    record_figure("no_user_code_hooks", 16, surfaces="server")


def test_the_analysed_sys_path_is_the_venvs_own_and_reading_it_runs_nothing(hostile):
    """The analysis resolves imports against the venv's site-packages (and the folders its .pth
    files name), read with `-I -S`: the .pth code line is skipped, not executed."""
    from fabric_lsp.analysis.workspace import interpreter_sys_path

    project, python, markers = hostile
    interpreter_sys_path.cache_clear()
    paths = interpreter_sys_path(str(python))
    venv = python.parent.parent
    site = [p for p in paths if p.endswith("site-packages")]
    assert site and all(os.path.realpath(p).startswith(os.path.realpath(venv)) for p in site), paths
    assert str(project.parent / "extra_src") in paths  # the .pth path line
    assert fired(markers) == []


def test_jedis_helper_process_is_our_interpreter_not_the_analysed_one(hostile):
    """jedi runs a helper process for compiled modules; it must be this (trusted) interpreter, so
    the analysed venv's sitecustomize/.pth never run even there."""
    from fabric_lsp.analysis.workspace import Workspace

    project, python, markers = hostile
    workspace = Workspace(str(project), str(python))
    assert workspace.python == str(python)
    package = next(p for p in workspace.library_path if os.path.isdir(os.path.join(p, "evilpkg")))
    definitions = workspace.module_attribute(os.path.join(package, "evilpkg", "__init__.py"), "X")
    # jedi found the name in the installed package of the venv (by reading it) ...
    assert any(d.path.endswith(os.path.join("evilpkg", "__init__.py")) for d in definitions), definitions
    # ... with a helper process of our own interpreter.
    assert os.path.realpath(workspace.project.get_environment().executable) == os.path.realpath(sys.executable)
    assert fired(markers) == []
