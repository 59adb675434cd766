"""FAB006 and FAB007 in the editor: the diagnostic, the record on hover, and the quick fix that makes
the diagnostic go away (`fabric.backward(loss)`; removing the second setup)."""

from __future__ import annotations

from lspkit import (
    apply_edits,
    capabilities,
    code_actions,
    copy_case,
    diagnostics,
    edits_by_uri,
    encoding_of,
    open_doc,
    range_tuple,
    replace_text,
    resolved,
    session,
)
from lsprotocol import types
from test_lsp_hover import hover

MESSAGE = (
    "RuntimeError: The current strategy and precision selection requires you to call `fabric.backward(loss)` "
    "instead of `loss.backward()`."
)


async def test_fab006_diagnostic_hover_and_quick_fix(preset, tmp_path):
    path = copy_case("fab006_bf16_mixed_cross_entropy.py", tmp_path)
    text = path.read_text()
    async with session(capabilities(preset), [tmp_path]) as (client, init):
        encoding = encoding_of(init)
        uri = open_doc(client, path)
        (finding,) = await diagnostics(client, uri, version=1)
        assert finding.code == "FAB006"
        assert finding.severity == types.DiagnosticSeverity.Error
        assert (finding.range.start.line, finding.range.start.character) == (20, 8)  # `loss.backward()`
        assert 'under precision="bf16-mixed"\ncall `fabric.backward(loss)`' in finding.message

        found = await hover(client, uri, finding.range.start)
        assert found is not None and range_tuple(found.range) == range_tuple(finding.range)
        assert found.contents.value.startswith("### FAB006 loss-backward-on-wrapped-output\n")
        assert MESSAGE in found.contents.value and "1530a0a419e77f8e" in found.contents.value

        actions = await code_actions(client, uri, [finding])
        assert [(a.title, bool(a.is_preferred)) for a in actions][:2] == [
            ("Call `fabric.backward(loss)`", True),
            ("Disable FAB006 for this line", False),
        ]
        fix = await resolved(client, actions[0])
        new_text = apply_edits(text, edits_by_uri(fix.edit)[uri][1], encoding)
        assert "        fabric.backward(loss)  # expect: FAB006 error\n" in new_text
        replace_text(client, uri, 2, new_text)
        assert await diagnostics(client, uri, version=2) == []


async def test_fab007_diagnostic_hover_and_quick_fix(preset, tmp_path):
    path = copy_case("fab007_setup_module_twice.py", tmp_path)
    text = path.read_text()
    async with session(capabilities(preset), [tmp_path]) as (client, init):
        encoding = encoding_of(init)
        uri = open_doc(client, path)
        (finding,) = await diagnostics(client, uri, version=1)
        assert finding.code == "FAB007" and finding.severity == types.DiagnosticSeverity.Error
        assert finding.range.start.line == 13  # the second `fabric.setup_module(model)`
        assert "A model should be passed only once to the `setup_module` method." in finding.message

        found = await hover(client, uri, finding.range.start)
        assert found is not None and found.contents.value.startswith("### FAB007 setup-misuse\n")
        assert "aa5948b33c548d53" in found.contents.value

        actions = await code_actions(client, uri, [finding])
        assert [(a.title, bool(a.is_preferred)) for a in actions][:2] == [
            ("Remove the second setup", True),
            ("Disable FAB007 for this line", False),
        ]
        fix = await resolved(client, actions[0])
        new_text = apply_edits(text, edits_by_uri(fix.edit)[uri][1], encoding)
        assert new_text.count("fabric.setup_module(model)") == 1
        replace_text(client, uri, 2, new_text)
        assert await diagnostics(client, uri, version=2) == []
