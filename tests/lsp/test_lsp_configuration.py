"""Settings: initializationOptions, workspace/configuration (per folder, re-read on
didChangeConfiguration), didChangeConfiguration payloads, [tool.fabric-lsp], bad values."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
from lspkit import (
    capabilities,
    copy_case,
    diagnostics,
    open_doc,
    session,
    wait_until,
)
from lsprotocol import types

FAB001 = "fab001_generate_ddp_literal.py"
FAB003 = "fab003_bound_method_ddp.py"


def codes(found: list[types.Diagnostic]) -> list[tuple[str, int]]:
    return [(d.code, d.severity) for d in found]


async def fresh_diagnostics(client, uri: str, published_before: int) -> list[types.Diagnostic]:
    """After a settings change: pulled again, or the next publication."""
    return await diagnostics(client, uri, since=published_before)


async def test_initialization_options_select(preset, tmp_path):
    fab001, fab003 = copy_case(FAB001, tmp_path), copy_case(FAB003, tmp_path)
    async with session(capabilities(preset), [tmp_path], initialization_options={"select": ["FAB003"]}) as (client, _):
        assert await diagnostics(client, open_doc(client, fab001), version=1) == []
        assert codes(await diagnostics(client, open_doc(client, fab003), version=1)) == [("FAB003", 1)]


@pytest.mark.parametrize("preset_name", ["visual-studio-code", "neovim"])
async def test_workspace_configuration_is_read_again_on_change(preset_name, tmp_path):
    path = copy_case(FAB001, tmp_path)
    configuration = {"": {"severity": {"FAB001": "warning"}}}
    async with session(capabilities(preset_name), [tmp_path], configuration=configuration) as (client, _):
        uri = open_doc(client, path)
        assert codes(await diagnostics(client, uri, version=1)) == [("FAB001", types.DiagnosticSeverity.Warning)]
        client.set_configuration({"ignore": ["FAB001"]}, section="fabric-lsp")
        published = len(client.published)
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        # A pull right after the notification already waits for the analysis with the new settings.
        found = await fresh_diagnostics(client, uri, published)
        assert found == []


async def test_did_change_configuration_payload_without_workspace_configuration(tmp_path):
    # Neovim 0.7 has no workspace/configuration: settings come in the notification itself.
    path = copy_case(FAB001, tmp_path)
    async with session(capabilities("neovim@v0.7.0"), [tmp_path]) as (client, _):
        uri = open_doc(client, path)
        assert codes(await diagnostics(client, uri, version=1)) == [("FAB001", 1)]
        published = len(client.published)
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"fabric-lsp": {"severity": {"FAB001": "information"}}})
        )
        found = await fresh_diagnostics(client, uri, published)
        assert codes(found) == [("FAB001", types.DiagnosticSeverity.Information)]


async def test_invalid_values_warn_once_and_fall_back(tmp_path):
    path = copy_case(FAB001, tmp_path)
    options = {
        "select": "FAB001",
        "showHints": "yes",
        "logLevel": "loud",
        "python": "/nonexistent/bin/python",
        "severity": {"FAB001": "warning"},
    }
    async with session(capabilities("visual-studio-code"), [tmp_path], initialization_options=options) as (client, _):
        uri = open_doc(client, path)
        found = await diagnostics(client, uri, version=1)
        # The good value in the same object still applies; the bad ones fall back to the defaults.
        assert codes(found) == [("FAB001", types.DiagnosticSeverity.Warning)]
        await wait_until(lambda: client.messages, message="a window/showMessage")
        published = len(client.published)
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        await fresh_diagnostics(client, uri, published)
        await asyncio.sleep(0.2)
    (message,) = client.messages  # one warning, not repeated when the settings are read again
    assert message.type == types.MessageType.Warning
    text = message.message
    assert "initializationOptions: select: expected a list of rule codes" in text
    assert "initializationOptions: hints: expected true or false" in text
    assert "initializationOptions: logLevel: expected one of error, warning, info, debug" in text
    assert "initializationOptions: python: no interpreter at /nonexistent/bin/python" in text


async def test_enable_false_turns_the_folder_off(tmp_path):
    path = copy_case(FAB001, tmp_path)
    async with session(capabilities("neovim"), [tmp_path], configuration={"": {"enable": False}}) as (client, _):
        uri = open_doc(client, path)
        assert await diagnostics(client, uri, version=1) == []
        client.set_configuration({"enable": True}, section="fabric-lsp")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        assert codes(await diagnostics(client, uri)) == [("FAB001", 1)]


async def test_pyproject_settings_and_null_editor_values(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.fabric-lsp]\nignore = ["FAB001"]\n')
    fab001, fab003 = copy_case(FAB001, tmp_path), copy_case(FAB003, tmp_path)
    # null / missing never override the file's ignore list.
    async with session(
        capabilities("neovim"),
        [tmp_path],
        initialization_options={"ignore": None, "select": None},
        configuration={"": {"ignore": None}},
    ) as (client, _):
        assert await diagnostics(client, open_doc(client, fab001), version=1) == []
        assert codes(await diagnostics(client, open_doc(client, fab003), version=1)) == [("FAB003", 1)]
    # A value set in the editor wins over the file.
    async with session(capabilities("neovim"), [tmp_path], configuration={"": {"ignore": []}}) as (client, _):
        assert codes(await diagnostics(client, open_doc(client, fab001), version=1)) == [("FAB001", 1)]


async def test_pyproject_change_through_watched_files(tmp_path):
    path = copy_case(FAB001, tmp_path)
    async with session(capabilities("visual-studio-code"), [tmp_path]) as (client, _):
        # VS Code gets the file watcher registered dynamically.
        watchers = await wait_until(
            lambda: [r for r in client.registrations if r.method == "workspace/didChangeWatchedFiles"],
            message="client/registerCapability",
        )
        patterns = [w["globPattern"] for w in watchers[0].register_options["watchers"]]
        assert patterns == ["**/*.py", "**/.fabric-lsp.toml", "**/fabric-lsp.toml", "**/pyproject.toml"]
        uri = open_doc(client, path)
        assert codes(await diagnostics(client, uri, version=1)) == [("FAB001", 1)]
        pyproject = tmp_path / "pyproject.toml"
        pyproject.write_text('[tool.fabric-lsp]\nseverity = { FAB001 = "hint" }\nhints = true\n')
        published = len(client.published)
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=pyproject.as_uri(), type=types.FileChangeType.Created)]
            )
        )
        found = await fresh_diagnostics(client, uri, published)
    assert codes(found) == [("FAB001", types.DiagnosticSeverity.Hint)]


async def test_hints_setting(tmp_path):
    path = copy_case("fab001_single_device_hint.py", tmp_path)
    async with session(capabilities("neovim"), [tmp_path]) as (client, _):
        assert await diagnostics(client, open_doc(client, path), version=1) == []
    async with session(capabilities("neovim"), [tmp_path], configuration={"": {"showHints": True}}) as (client, _):
        found = await diagnostics(client, open_doc(client, path), version=1)
    assert codes(found) == [("FAB001", types.DiagnosticSeverity.Hint)]
    assert found[0].range.start.line == 34


async def test_multi_root_folders_have_their_own_settings(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    a, b = copy_case(FAB001, first), copy_case(FAB001, second)
    configuration = {
        "": {"severity": {"FAB001": "warning"}},
        second.as_uri(): {"ignore": ["FAB001"]},
        first.as_uri(): {"logLevel": "debug"},
    }
    async with session(capabilities("visual-studio-code"), [first, second], configuration=configuration) as (client, _):
        in_first = await diagnostics(client, open_doc(client, a), version=1)
        in_second = await diagnostics(client, open_doc(client, b), version=1)
    assert codes(in_first) == [("FAB001", types.DiagnosticSeverity.Error)]  # the folder's own section
    assert in_second == []


async def test_each_folder_analyses_against_its_own_interpreter(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    a, b = copy_case(FAB001, first), copy_case(FAB001, second)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    configuration = {second.as_uri(): {"python": str(venv / "bin" / "python")}}
    async with session(capabilities("visual-studio-code"), [first, second], configuration=configuration) as (client, _):
        await diagnostics(client, open_doc(client, a), version=1)
        await diagnostics(client, open_doc(client, b), version=1)
        logs = [m.message for m in client.log_messages if m.message.startswith("analysing ")]
    assert f"analysing {first} against the interpreter {sys.executable}" in logs
    assert f"analysing {second} against the interpreter {venv / 'bin' / 'python'}" in logs


async def test_log_level(tmp_path):
    path = copy_case(FAB001, tmp_path)
    async with session(capabilities("neovim"), [tmp_path]) as (client, _):
        await diagnostics(client, open_doc(client, path), version=1)
        await asyncio.sleep(0.1)
        quiet = [m.message for m in client.log_messages]
    async with session(capabilities("neovim"), [tmp_path], configuration={"": {"logLevel": "debug"}}) as (client, _):
        await diagnostics(client, open_doc(client, path), version=1)
        await wait_until(lambda: any("analysed in" in m.message for m in client.log_messages), message="debug log")
        debug = [m for m in client.log_messages if "analysed in" in m.message]
    assert not any("analysed in" in m for m in quiet)
    assert any(m.startswith("fabric-lsp ") for m in quiet)  # the info-level start message
    assert debug[0].type == types.MessageType.Log
    assert "version 1 analysed in" in debug[0].message and "1 finding(s)" in debug[0].message


async def test_python_setting_accepts_a_venv_folder_and_a_name_and_says_what_failed(tmp_path):
    """Issue 29 item 7: the server reads `python` as `check --python` does (a venv folder, a name on
    PATH); an interpreter that cannot tell its sys.path is one showMessage saying what failed."""
    project = tmp_path / "project"
    project.mkdir()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "fabric-test-python").write_text(f'#!/bin/sh\nexec {venv / "bin" / "python"} "$@"\n')
    (tools / "fabric-test-python").chmod(0o755)
    broken = tmp_path / "broken-python"
    broken.write_text("#!/bin/sh\necho 'boom' >&2\nexit 3\n")
    broken.chmod(0o755)
    path = copy_case(FAB001, project)
    env = {"PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    for value in (str(venv), "fabric-test-python"):
        async with session(capabilities("neovim"), [project], initialization_options={"python": value},
                           env=env) as (client, _):
            await diagnostics(client, open_doc(client, path), version=1)
            await wait_until(lambda: any(m.message.startswith("analysing ") for m in client.log_messages),
                             message="the analysis log")
            logs = [m.message for m in client.log_messages if m.message.startswith("analysing ")]
            assert client.messages == [], [m.message for m in client.messages]
        expected = venv / "bin" / "python" if value == str(venv) else tools / "fabric-test-python"
        assert f"analysing {project} against the interpreter {expected}" in logs, logs
    async with session(capabilities("neovim"), [project], initialization_options={"python": str(broken)}) as (client, _):
        assert codes(await diagnostics(client, open_doc(client, path), version=1)) == [("FAB001", 1)]
        await wait_until(lambda: client.messages, message="a window/showMessage")
    (message,) = client.messages
    assert message.message == (f"fabric-lsp: config: initializationOptions: python: {broken}: it exited with "
                               "status 3: boom; not overriding"), message.message


async def test_a_settings_mistake_is_one_message_and_the_last_good_settings_stay(tmp_path):
    """Issue 29 item 2 in the server: a settings file saved with a mistake (broken TOML) is one
    window/showMessage (an error, with file:line) and the settings read before stay in force (the run is
    not widened to every rule); a bad `select` entry at the first read keeps the good entries."""
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.fabric-lsp]\nselect = ["FAB003"]\n')
    fab001, fab003 = copy_case(FAB001, tmp_path), copy_case(FAB003, tmp_path)
    async with session(capabilities("visual-studio-code"), [tmp_path]) as (client, _):
        uri = open_doc(client, fab001)
        assert await diagnostics(client, uri, version=1) == []
        pyproject.write_text('[tool.fabric-lsp]\nselect = ["FAB003"\nhints = true\n')
        for _ in range(2):  # saved twice: still one message
            published = len(client.published)
            client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=pyproject.as_uri(), type=types.FileChangeType.Changed)]))
            assert await fresh_diagnostics(client, uri, published) == []  # FAB001 still not selected
        assert codes(await diagnostics(client, open_doc(client, fab003), version=1)) == [("FAB003", 1)]
        await wait_until(lambda: client.messages, message="a window/showMessage")
        await asyncio.sleep(0.2)
    (message,) = client.messages
    assert message.type == types.MessageType.Error
    assert message.message == (f"fabric-lsp: config error: {pyproject}:3: invalid TOML: Unclosed array (at line 3, "
                               f"column 1)\nfabric-lsp: the last good settings of {tmp_path} stay in force")

    pyproject.write_text('[tool.fabric-lsp]\nselect = ["FAB002", "FAB01"]\n')
    async with session(capabilities("neovim"), [tmp_path]) as (client, _):
        assert await diagnostics(client, open_doc(client, fab001), version=1) == []  # never every rule
        assert await diagnostics(client, open_doc(client, fab003), version=1) == []
        await wait_until(lambda: client.messages, message="a window/showMessage")
    (message,) = client.messages
    assert message.message == (f"fabric-lsp: config error: {pyproject}:2: select: unknown rule code 'FAB01' "
                               "(did you mean 'FAB001'?)")
