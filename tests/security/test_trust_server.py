"""`fabric-lsp serve` with a hostile repository as the workspace folder runs nothing of it (its
.venv python, its pyproject `python`, its .pth files), unless the user trusts it."""

from __future__ import annotations

import sys
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "lsp"))  # lspkit

from lspkit import capabilities, diagnostics, open_doc, session, wait_until  # noqa: E402

from tests.security.hostile import build_hostile_repo, user_config_env  # noqa: E402


def user_config(tmp_path: Path, text: str = "") -> dict[str, str]:
    # Only the variable: a user config of the person running the tests must not be reached.
    return {"FABRIC_LSP_USER_CONFIG": user_config_env(tmp_path, text)["FABRIC_LSP_USER_CONFIG"]}


async def test_untrusted_workspace_runs_nothing(tmp_path):
    marker = tmp_path / "marker"
    repo = build_hostile_repo(tmp_path / "repo", marker)
    async with session(capabilities("neovim"), [repo], env=user_config(tmp_path)) as (client, _):
        found = await diagnostics(client, open_doc(client, repo / "train.py"), version=1)
        assert "FAB001" in [d.code for d in found]
    assert not marker.exists(), marker.read_text()


async def test_trusted_workspace_runs_its_python(tmp_path):
    """The gate can fail: trusted by the user config, the repository's python is run."""
    marker = tmp_path / "marker"
    repo = build_hostile_repo(tmp_path / "repo", marker)
    async with session(capabilities("neovim"), [repo], env=user_config(tmp_path, "trusted = true\n")) as (client, _):
        await diagnostics(client, open_doc(client, repo / "train.py"), version=1)
        await wait_until(marker.exists, message="the trusted repository's python run")
