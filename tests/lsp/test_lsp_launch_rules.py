"""FAB005 (missing launch) and FAB008 (launch misuse) in the editor: the diagnostic on the labelled line of
their fixture cases, the record on hover with the runtime message, and the quick fix that, applied, leaves
no diagnostic (the fixed text is what the ground truth runs clean: tests/test_fix_round_trip.py)."""

from __future__ import annotations

import asyncio

import pytest
from lspkit import (
    TIMEOUT,
    apply_edits,
    capabilities,
    code_actions,
    copy_case,
    diagnostics,
    edits_by_uri,
    encoding_of,
    open_doc,
    replace_text,
    resolved,
    session,
)
from lsprotocol import types

CASES = [
    # case, code, severity, quick fix title, text the fix writes, hover heading and runtime message
    ("fab005_ddp_one_device_no_launch.py", "FAB005", types.DiagnosticSeverity.Warning,
     "Call `fabric.launch()` after creating the Fabric",
     'fabric = Fabric(strategy="ddp", accelerator="cpu", devices=1)\nfabric.launch()\n',
     "### FAB005 missing-launch",
     "RuntimeError: To use Fabric with more than one device, you must call `.launch()` or use the CLI"),
    ("fab008_launch_called.py", "FAB008", types.DiagnosticSeverity.Error,
     "Pass `train` itself to launch", "fabric.launch(train)  # expect: FAB008 error\n",
     "### FAB008 launch-misuse",
     "TypeError: `Fabric.launch(...)` needs to be a callable, but got None."),
    ("fab008_function_without_parameter.py", "FAB008", types.DiagnosticSeverity.Error,
     "Add a `fabric` parameter to `train`", "def train(fabric):\n",
     "### FAB008 launch-misuse",
     "needs to take at least one argument. The launcher will pass in the `Fabric` object"),
]


async def _hover(client, uri: str, position: types.Position) -> types.Hover | None:
    return await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=position)
        ),
        TIMEOUT,
    )


def _label_line(text: str, code: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if f"# expect: {code}" in line)


@pytest.mark.parametrize(("case", "code", "severity", "title", "written", "heading", "message"), CASES,
                         ids=[c[0].removesuffix(".py") for c in CASES])
async def test_launch_rule_diagnostic_hover_and_quick_fix(tmp_path, case, code, severity, title, written, heading,
                                                           message):
    path = copy_case(case, tmp_path)
    text = path.read_text()
    async with session(capabilities("visual-studio-code"), [tmp_path]) as (client, init):
        encoding = encoding_of(init)
        uri = open_doc(client, path)
        (finding,) = await diagnostics(client, uri, version=1)
        assert (finding.code, finding.severity, finding.range.start.line) == (code, severity, _label_line(text, code))

        shown = await _hover(client, uri, finding.range.start)
        assert shown is not None and shown.contents.value.startswith(heading + "\n")
        assert message in shown.contents.value

        actions = {a.title: a for a in await code_actions(client, uri, [finding])}
        fix = await resolved(client, actions[title])
        new_text = apply_edits(text, edits_by_uri(fix.edit)[uri][1], encoding)
        assert written in new_text
        replace_text(client, uri, 2, new_text)
        assert await diagnostics(client, uri, version=2) == []
