"""The server's quick fixes and fix-all stay inside the workspace: a project module that is a link
to a file outside the workspace folder gets no edit, from a quick fix or from source.fixAll. The
finding's in-file alternative is offered instead (issue 11), in the diagnostic's own document."""

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
BUILD_ON_CPU = "Build the model on the CPU instead of the meta device"
FAB001_CASE = REPO / "fixtures" / "cases" / "fab001_flow_setup_factory_other_module"
MARK_BEFORE = "Mark `act` as a forward method just before this call"
FIX_ALL = "fabric-lsp: Fix all auto-fixable problems"


def _project(tmp_path: Path, case: Path = CASE, linked: str | None = None) -> tuple[Path, Path | None]:
    """The case's files in tmp_path/project; `linked` is instead a link to a copy in tmp_path/outside."""
    project = tmp_path / "project"
    project.mkdir()
    outside = None
    for source in sorted(case.glob("*.py")):
        if source.name == linked:
            (tmp_path / "outside").mkdir()
            outside = tmp_path / "outside" / source.name
            shutil.copy(source, outside)
            (project / source.name).symlink_to(outside)
        else:
            shutil.copy(source, project / source.name)
    return project, outside


async def _actions(client, uri: str, code: str) -> tuple[types.Diagnostic, list[tuple[types.CodeAction, dict]]]:
    """The diagnostic, and each of its code actions (and fix-all's) with the edits by uri."""
    (finding,) = await diagnostics(client, uri, version=1)
    assert finding.code == code
    actions = await code_actions(client, uri, [finding])
    actions += await code_actions(client, uri, [], only=["source.fixAll"])
    found = []
    for action in actions:
        action = await resolved(client, action) if action.edit is not None or action.data is not None else action
        found.append((action, edits_by_uri(action.edit) if action.edit else {}))
    return finding, found


def _touched(found) -> set[str]:
    return {uri for _, edits in found for uri in edits}


async def test_fix_for_a_module_linked_outside_the_workspace_is_not_offered(tmp_path):
    project, outside = _project(tmp_path, linked="model.py")
    before = outside.read_bytes()
    async with session(capabilities("visual-studio-code"), [project]) as (client, _):
        main = open_doc(client, project / "main.py")
        _, found = await _actions(client, main, "FAB002")
    titles = [action.title for action, _ in found]
    assert not any(t.startswith(ADD_RESET) for t in titles), titles
    assert _touched(found) == {main}, "only main.py is edited"
    assert "Disable FAB002 for this line" in titles  # the finding itself is still actionable
    # The in-file alternative: a quick fix, not preferred and not in fix-all (unsafe).
    [(alternative, edits)] = [(a, e) for a, e in found if a.title.startswith(BUILD_ON_CPU)]
    assert not alternative.is_preferred
    assert [edit.new_text for edit in edits[main][1]] == ['"cpu"']
    assert FIX_ALL not in titles
    assert outside.read_bytes() == before


async def test_control_fix_for_a_module_inside_the_workspace_is_offered(tmp_path):
    """The gate can fail: the same layout with a real model.py gets the edit to model.py."""
    project, _ = _project(tmp_path)
    async with session(capabilities("visual-studio-code"), [project]) as (client, _):
        _, found = await _actions(client, open_doc(client, project / "main.py"), "FAB002")
    titles = [action.title for action, _ in found]
    assert any(t.startswith(ADD_RESET) for t in titles), titles
    assert not any(t.startswith(BUILD_ON_CPU) for t in titles), titles
    assert (project / "model.py").as_uri() in _touched(found)


async def test_fab001_setup_in_a_linked_module_gets_the_mark_at_the_call(tmp_path):
    """The mark after `fabric.setup` would edit builders.py (a link outside the workspace): the quick
    fix and fix-all mark the method just before the call in main.py instead (safe, preferred)."""
    project, outside = _project(tmp_path, FAB001_CASE, linked="builders.py")
    before = outside.read_bytes()
    async with session(capabilities("visual-studio-code"), [project]) as (client, _):
        main = open_doc(client, project / "main.py")
        finding, found = await _actions(client, main, "FAB001")
    by_title = {action.title: (action, edits) for action, edits in found}
    [title] = [t for t in by_title if t.startswith(MARK_BEFORE)]
    action, edits = by_title[title]
    assert action.is_preferred and set(edits) == {main}
    [edit] = edits[main][1]
    assert edit.new_text == '        policy.mark_forward_method("act")\n'
    assert edit.range.start == types.Position(finding.range.start.line, 0) == edit.range.end
    fix_all = by_title[FIX_ALL][1]
    assert set(fix_all) == {main} and [e.new_text for e in fix_all[main][1]] == [edit.new_text]
    assert _touched(found) == {main}
    assert outside.read_bytes() == before


async def test_fab001_control_setup_module_inside_the_workspace_gets_the_main_fix(tmp_path):
    project, _ = _project(tmp_path, FAB001_CASE)
    async with session(capabilities("visual-studio-code"), [project]) as (client, _):
        _, found = await _actions(client, open_doc(client, project / "main.py"), "FAB001")
    titles = [action.title for action, _ in found]
    assert not any(t.startswith(MARK_BEFORE) for t in titles), titles
    assert (project / "builders.py").as_uri() in _touched(found)
