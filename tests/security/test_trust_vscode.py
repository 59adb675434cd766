"""VS Code Restricted Mode with a user setting that names a program in the workspace (issue 24, item 10).

A user-level `fabric-lsp.interpreter` of `${workspaceFolder}/.venv/bin/python` (a common way to say "my
project's venv") is the user's own setting, so VS Code applies it in Restricted Mode (`restrictedConfigurations`
drops only the workspace's values). Resolved inside a hostile folder it would run that folder's program.
The setting is in code-server's `Machine/settings.json`: the user's settings for the machine the extension host
runs on, where a remote window reads settings of scope `machine-overridable` (its `User/settings.json` values of
that scope are not applied).

The real workbench (code-server with workspace trust on, the built `.vsix`, Chromium; the session helpers of
tests/editors/test_vscode.py) opens the hostile repository (tests/security/hostile.py, its `.venv/bin/python`
replaced by a script that leaves a marker and then runs the real Python) in Restricted Mode. Once the server
runs and has reported the file's FAB001, the extension has taken every launch decision: the marker must not
exist, and the extension's log says in one line that the setting was ignored. The control, in the same
session: the user trusts the folder, the extension restarts, and now the setting applies (the marker appears,
the server runs under the workspace's interpreter), so the Restricted Mode gate is what kept it from running.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.editors.test_vscode import ARTIFACTS, _run_workbench, _step, needs_tools
from tests.editors.test_vscode import vsix as vsix  # the session fixture that builds the .vsix
from tests.security.hostile import build_hostile_repo

SETTING = "${workspaceFolder}/.venv/bin/python"
UNTRUSTED_ARTIFACTS = ARTIFACTS / "untrusted"
IGNORED_LINE = (
    f'fabric-lsp.interpreter ("{SETTING}") is ignored: the workspace is untrusted (Restricted Mode) and it names the '
    "workspace folder; going on as if it were unset. Trust the workspace to use it."
)


@pytest.fixture(scope="module")
def untrusted_session(vsix: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("vscode-untrusted")
    marker = root / "marker"
    workspace = build_hostile_repo(root / "ws", marker)
    python3 = shutil.which("python3")
    assert python3, "the session needs python3 on PATH"
    # Where it runs, it runs the real Python: the server starts and nothing on the screen looks wrong.
    venv_python = workspace / ".venv" / "bin" / "python"
    venv_python.write_text(f"#!/bin/sh\necho '.venv/bin/python ran' >> '{marker}'\nexec '{python3}' \"$@\"\n")
    (workspace / ".vscode").mkdir()
    (workspace / ".vscode" / "settings.json").write_text("{}\n")
    shutil.rmtree(UNTRUSTED_ARTIFACTS, ignore_errors=True)
    result = _run_workbench(
        vsix, root, UNTRUSTED_ARTIFACTS,
        ["--untrusted", "--file", "train.py", "--marker", str(marker)],
        machine_settings={"fabric-lsp.interpreter": SETTING},
        workspace_trust=True,
    )
    result["marker"] = marker
    result["venv_python"] = venv_python
    return result


@needs_tools
def test_vscode_restricted_mode_runs_no_program_a_user_setting_finds_in_the_workspace(untrusted_session: dict) -> None:
    opened = _step(untrusted_session, "open")
    assert "Restricted Mode" in opened["indicator"]

    # Restricted Mode: the server runs (bundled, python3 on PATH, as with the setting unset) and reports the
    # finding, and the workspace's program never ran.
    restricted = _step(untrusted_session, "restricted")
    assert restricted["marker"] is None, f"the workspace's program ran in Restricted Mode: {restricted['marker']!r}"
    assert restricted["trusted"] is False
    assert restricted["launchSource"] == "python3 on PATH"
    assert restricted["serverCommand"][0] == shutil.which("python3")
    workspace = str(untrusted_session["workspace"])
    assert not restricted["analysisPython"].startswith(workspace)
    assert [d["code"] for d in restricted["diagnostics"]] == ["FAB001"]
    assert restricted["ignoredSettings"] == [IGNORED_LINE]

    # The control: trusted, the setting applies (restart): the workspace's interpreter runs the server.
    trusted = _step(untrusted_session, "trust")
    assert trusted["trusted"] is True
    assert trusted["startsAfter"] == trusted["startsBefore"] + 1
    assert trusted["launchSource"] == "interpreter setting"
    assert trusted["serverCommand"][0] == str(untrusted_session["venv_python"])
    assert trusted["ignoredSettings"] == []
    assert trusted["marker"] and trusted["marker"].startswith(".venv/bin/python ran\n")

    # The extension's output channel: the one line, once, before the trust restart.
    log = (UNTRUSTED_ARTIFACTS / "fabric-lsp-output-channel.log").read_text()
    assert log.count(IGNORED_LINE) == 1, log
    assert log.index(IGNORED_LINE) < log.index("the workspace is now trusted")
    assert untrusted_session["errors"] == []
