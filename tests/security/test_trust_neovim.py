"""A real headless Neovim with the documented configuration (docs/editors.md), opening a hostile repository (issue 11).

The repository (tests/security/hostile.py) has a `.venv/bin/python`, a pyproject
`[tool.fabric-lsp] python = "./evil.sh"` and a `.pth` that leave a marker file when run. Untrusted
(the default), Neovim shows the real FAB001 diagnostic, its hover, its quick fix and fix-all, applies
the fix and sees the re-check, and the marker never appears. The control: with `trusted = true` in
the user config (under the test's own XDG_CONFIG_HOME) the server runs the repository's interpreter
when it confines the fix to the workspace, and the marker appears, so the untrusted gate can fail.

Neovim, its skip conditions and the README extraction are those of tests/editors/test_neovim.py;
`neovim_trust_session.lua` drives Neovim and records what it saw, the assertions are here.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.editors.test_neovim import NVIM, NVIM_ERROR, neovim_env, readme_neovim_snippet
from tests.editors.test_neovim import pytestmark as pytestmark  # skipped exactly when test_neovim.py is
from tests.security.hostile import build_hostile_repo

SESSION_LUA = Path(__file__).resolve().parent / "neovim_trust_session.lua"
TIMEOUT_S = 60  # outer bound for one Neovim session (`timeout 60 nvim ...`)
STEP_WAIT_MS = 20000  # per step inside the session
IGNORED_NOTICE = "python: ignored: a repository cannot choose a program to run"
# The steps after which the session looks for the marker (each one a chance for the server to run it).
STEPS = ["attached", "diagnostics", "hover", "quick fix", "fix-all", "re-checked", "stopped"]


def run_session(tmp_path: Path, user_config: str, *, wait_for_marker: bool = False) -> tuple[dict, Path, Path]:
    marker = tmp_path / "marker"
    repo = build_hostile_repo(tmp_path / "repo", marker)
    config_file = tmp_path / "init.lua"
    config_file.write_text(readme_neovim_snippet('vim.lsp.config("fabric_lsp"'))

    env = neovim_env(tmp_path)
    # Nothing of the person running the tests: their home, fabric-lsp user config and cache secret.
    # The user config is found where a user's is, under XDG_CONFIG_HOME.
    home = tmp_path / "home"
    home.mkdir()
    env["HOME"] = str(home)
    for name in ("FABRIC_LSP_USER_CONFIG", "FABRIC_LSP_CACHE_SECRET_DIR"):
        env.pop(name, None)
    user_config_file = Path(env["XDG_CONFIG_HOME"]) / "fabric-lsp" / "config.toml"
    user_config_file.parent.mkdir(parents=True)
    user_config_file.write_text(user_config)

    env["FABRIC_NVIM_CONFIG"] = str(config_file)
    env["FABRIC_NVIM_FILE"] = str(repo / "train.py")
    env["FABRIC_NVIM_MARKER"] = str(marker)
    env["FABRIC_NVIM_WAIT_MS"] = str(STEP_WAIT_MS)
    env["FABRIC_NVIM_WAIT_MARKER"] = "1" if wait_for_marker else "0"

    command = ["timeout", str(TIMEOUT_S), str(NVIM), "--headless", "-n", "-i", "NONE", "-u", str(SESSION_LUA)]
    proc = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=TIMEOUT_S + 30)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    lsp_log = Path(env["XDG_STATE_HOME"]) / "nvim" / "lsp.log"
    context = (
        f"exit {proc.returncode}\nstdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}\n"
        f"lsp.log:\n{lsp_log.read_text(errors='replace')[-4000:] if lsp_log.exists() else '(none)'}"
    )
    assert lines, f"Neovim wrote no result (124 = killed by timeout)\n{context}"
    result = json.loads(lines[-1])
    assert "error" not in result, f"session failed after steps {result['steps']}:\n{result['error']}\n{context}"
    assert proc.returncode == 0, context
    return result, repo, marker


def fab001_location(text: str) -> tuple[int, int, int]:
    """(0-based line, start, end) of `predict` in the labelled `model.predict(` call (ASCII file)."""
    for number, line in enumerate(text.splitlines()):
        if "# expect: FAB001 error" in line:
            start = line.index(".predict(") + 1
            return number, start, start + len("predict")
    raise AssertionError("the hostile repository's train.py has no `# expect: FAB001 error` label")


def check_editor_features(result: dict, repo: Path) -> None:
    """Neovim ran the documented client on the repository and saw the real finding and its fixes."""
    assert result["filetype"] == "python"
    assert result["client"]["name"] == "fabric_lsp"
    assert os.path.realpath(result["client"]["root_dir"]) == os.path.realpath(repo)
    assert result["client_stopped"] is True

    line, start, end = fab001_location((repo / "train.py").read_text())
    fab001 = [d for d in result["diagnostics"] if d["code"] == "FAB001"]
    assert [(d["lnum"], d["col"], d["end_col"], d["severity"]) for d in fab001] == [
        (line, start, end, NVIM_ERROR)
    ], result["diagnostics"]
    assert "MLP.predict()" in fab001[0]["message"]
    assert isinstance(result["hover"], str) and "FAB001" in result["hover"], result["hover"]

    mark = '\nmodel.mark_forward_method("predict")'
    assert any(
        a["kind"] == "quickfix" and mark in a["new_texts"] for a in result["quickfixes"]
    ), result["quickfixes"]
    assert any(
        str(a["kind"]).startswith("source.fixAll") and mark in a["new_texts"] for a in result["fix_all"]
    ), result["fix_all"]
    # The fix-all edit was applied in the buffer and the server analysed the new text.
    assert 'model.mark_forward_method("predict")' in result["text_after_fix"]
    assert result["fab001_after_fix"] == 0


def test_neovim_untrusted_repository_runs_nothing(tmp_path):
    result, repo, marker = run_session(tmp_path, "")
    check_editor_features(result, repo)
    assert {step: result["marker_after"][step] for step in STEPS} == dict.fromkeys(STEPS, False)
    assert not marker.exists(), marker.read_text()
    # The repository's `python` was seen and refused, and Neovim was told so.
    notices = [m["message"] for m in result["show_messages"] if IGNORED_NOTICE in m["message"]]
    assert len(notices) == 1 and str(repo / "pyproject.toml") in notices[0], result["show_messages"]


def test_neovim_trusted_repository_runs_its_python(tmp_path):
    """The control: trusted by the user config, the same session runs the repository's python."""
    result, repo, marker = run_session(tmp_path, "trusted = true\n", wait_for_marker=True)
    assert result["marker_after"]["waited for marker"] is True, result["marker_after"]
    assert marker.exists()
    assert "ran" in marker.read_text().splitlines()  # written by evil.sh / .venv/bin/python themselves
    assert not [m for m in result["show_messages"] if IGNORED_NOTICE in m["message"]], result["show_messages"]
    check_editor_features(result, repo)
