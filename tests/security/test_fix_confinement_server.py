"""The server's quick fixes and fix-all stay inside the workspace: a project module that is a link
to a file outside the workspace folder gets no edit, from a quick fix or from source.fixAll."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "lsp"))  # lspkit

from lspkit import capabilities, code_actions, diagnostics, edits_by_uri, open_doc, resolved, session  # noqa: E402
from lsprotocol import types  # noqa: E402

CASE = REPO / "fixtures" / "cases" / "fab002_block_in_other_module"
ADD_RESET = "Add `Block.reset_parameters()`"


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(CASE / "main.py", project / "main.py")
    return project


async def _edited_uris(client, uri: str) -> tuple[types.Diagnostic, list[str], set[str]]:
    """The FAB002 diagnostic, the titles of its code actions and every uri their edits (and
    fix-all's) touch."""
    (finding,) = await diagnostics(client, uri, version=1)
    assert finding.code == "FAB002"
    actions = await code_actions(client, uri, [finding])
    actions += await code_actions(client, uri, [], only=["source.fixAll"])
    touched: set[str] = set()
    for action in actions:
        touched |= set(edits_by_uri((await resolved(client, action)).edit))
    return finding, [a.title for a in actions], touched


async def test_fix_for_a_module_linked_outside_the_workspace_is_not_offered(tmp_path):
    project = _project(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(CASE / "model.py", outside / "model.py")
    before = (outside / "model.py").read_bytes()
    (project / "model.py").symlink_to(outside / "model.py")
    async with session(capabilities("visual-studio-code"), [project]) as (client, _):
        _, titles, touched = await _edited_uris(client, open_doc(client, project / "main.py"))
    assert not any(t.startswith(ADD_RESET) for t in titles), titles
    assert (project / "model.py").as_uri() not in touched and (outside / "model.py").as_uri() not in touched
    assert "Disable FAB002 for this line" in titles  # the finding itself is still actionable
    assert (outside / "model.py").read_bytes() == before


async def test_control_fix_for_a_module_inside_the_workspace_is_offered(tmp_path):
    """The gate can fail: the same layout with a real model.py gets the edit to model.py."""
    project = _project(tmp_path)
    shutil.copy(CASE / "model.py", project / "model.py")
    async with session(capabilities("visual-studio-code"), [project]) as (client, _):
        _, titles, touched = await _edited_uris(client, open_doc(client, project / "main.py"))
    assert any(t.startswith(ADD_RESET) for t in titles), titles
    assert (project / "model.py").as_uri() in touched
