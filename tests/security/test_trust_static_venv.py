"""venv_sys_path (files only) equals the sys.path the venv's own python has when started, on every
real virtual environment this machine can build; jedi answers from a repo .venv without running it."""

from __future__ import annotations

import glob
import json
import os
import subprocess
from pathlib import Path

import pytest

from fabric_lsp.analysis.workspace import Workspace, venv_sys_path


def _bases() -> list[str]:
    found = []
    for candidate in ["/usr/bin/python3.11", *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")))]:
        if os.path.isfile(candidate) and candidate not in found:
            found.append(candidate)
    return found


def _real_sys_path(python: Path) -> list[str]:
    """What the venv's python (our own venv, built here) has: run from an empty folder, minus ''."""
    out = subprocess.run([str(python), "-c", "import json, sys; print(json.dumps(sys.path[1:]))"],
                         capture_output=True, text=True, timeout=60, cwd=python.parent, check=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")})
    return json.loads(out.stdout)


@pytest.mark.parametrize("system", [False, True], ids=["isolated", "system-site-packages"])
@pytest.mark.parametrize("base", _bases())
def test_static_venv_path_equals_the_real_one(tmp_path, base, system):
    venv = tmp_path / "venv"
    subprocess.run([base, "-m", "venv", "--without-pip", *(["--system-site-packages"] if system else []), str(venv)],
                   check=True, capture_output=True, timeout=120)
    site = Path(glob.glob(str(venv / "lib" / "python3.*" / "site-packages"))[0])
    extra = tmp_path / "extra_src"
    (extra / "extrapkg").mkdir(parents=True)
    (extra / "extrapkg" / "__init__.py").write_text("")
    (site / "extra.pth").write_text(f"# a comment\n{extra}\n")
    # An editable install as setuptools writes it: a finder module whose MAPPING names the folder.
    editable_src = tmp_path / "editable_src"
    (editable_src / "edpkg").mkdir(parents=True)
    (editable_src / "edpkg" / "__init__.py").write_text("")
    (site / "__editable___edpkg_1_0_finder.py").write_text(
        f"MAPPING = {{'edpkg': {str(editable_src / 'edpkg')!r}}}\ndef install():\n    pass\n")
    (site / "__editable__.edpkg-1.0.pth").write_text("import __editable___edpkg_1_0_finder; __editable___edpkg_1_0_finder.install()\n")
    real = _real_sys_path(venv / "bin" / "python")
    static = list(venv_sys_path(str(venv)))
    # site.py imports the finder (which would add a meta path hook, not a folder); the static read
    # adds the package's folder instead, so jedi can find it: the only allowed difference.
    assert [p for p in static if p != str(editable_src)] == real
    assert str(editable_src) in static


def test_jedi_answers_from_the_repo_venv_without_running_it(tmp_path):
    marker = tmp_path / "marker"
    venv = tmp_path / "repo" / ".venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    (site / "hostilelib").mkdir(parents=True)
    (site / "hostilelib" / "__init__.py").write_text("from hostilelib.impl import only_in_repo_venv\n")
    (site / "hostilelib" / "impl.py").write_text("def only_in_repo_venv():\n    return 1\n")
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n")
    (venv / "bin").mkdir()
    (venv / "bin" / "python").write_text(f"#!/bin/sh\necho ran >> '{marker}'\n")
    (venv / "bin" / "python").chmod(0o755)
    workspace = Workspace(str(tmp_path / "repo"))
    assert not workspace.interpreter.runnable
    found = workspace.module_attribute(str(site / "hostilelib" / "__init__.py"), "only_in_repo_venv")
    assert [(Path(d.path).name, d.kind) for d in found] == [("impl.py", "function")]
    assert not marker.exists()
