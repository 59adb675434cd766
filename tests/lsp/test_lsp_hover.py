"""Hover: the record of the finding under the cursor with this occurrence's names, and the record of
a rule named in a `# noqa:` comment."""

from __future__ import annotations

import asyncio
import json

from lspkit import (
    REPO,
    TIMEOUT,
    capabilities,
    copy_case,
    diagnostics,
    encoding_of,
    find_position,
    open_doc,
    range_tuple,
    session,
)
from lsprotocol import types

FAB001_MESSAGE = (
    "RuntimeError: You are calling the method `CharLM.generate()` from outside the model. To avoid issues "
    "with the currently selected strategy, explicitly mark it as a forward method with "
    "`fabric_model.mark_forward_method('generate')` after `fabric.setup()`."
)


async def hover(client, uri: str, position: types.Position) -> types.Hover | None:
    return await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=position)
        ),
        TIMEOUT,
    )


async def test_hover_shows_the_record_for_the_occurrence(preset, tmp_path):
    path = copy_case("fab001_generate_ddp_literal.py", tmp_path)
    block = copy_case("fab002_block_in_other_module", tmp_path)
    noqa_text = path.read_text().replace("    fabric.launch()\n", "    fabric.launch()  # noqa: E501, FAB003\n")
    noqa_path = tmp_path / "with_noqa.py"
    noqa_path.write_text(noqa_text)
    async with session(capabilities(preset), [tmp_path]) as (client, init):
        encoding = encoding_of(init)
        uri = open_doc(client, path)
        (finding,) = await diagnostics(client, uri, version=1)
        start, end = finding.range.start, finding.range.end
        middle = types.Position(line=start.line, character=(start.character + end.character) // 2)
        hovers = [await hover(client, uri, p) for p in (start, middle, end)]
        outside = await hover(client, uri, types.Position(line=start.line - 1, character=0))

        main_uri = open_doc(client, block / "main.py")
        (fab002,) = await diagnostics(client, main_uri, version=1)
        fab002_hover = await hover(client, main_uri, fab002.range.start)

        noqa_uri = open_doc(client, noqa_path)
        await diagnostics(client, noqa_uri, version=1)
        on_code = find_position(noqa_text, "FAB003", encoding, line_containing="# noqa:")
        noqa_hover = await hover(client, noqa_uri, on_code.start)
        other_code = await hover(client, noqa_uri, find_position(noqa_text, "E501", encoding).start)

    for found in hovers:
        assert found is not None
        assert found.contents.kind == types.MarkupKind.Markdown  # every preset prefers Markdown
        assert range_tuple(found.range) == range_tuple(finding.range)
        value = found.contents.value
        assert value.startswith("### FAB001 unmarked-forward-method\n")
        assert FAB001_MESSAGE in value  # the class and method of this call, not placeholders
        assert "**How to fix**" in value
        assert "af391673c4dd180e" in value
    assert outside is None
    assert (
        "Materialization requires that the `Block.reset_parameters` method is implemented"
        in fab002_hover.contents.value
    )
    assert noqa_hover.contents.value.startswith("### FAB003 mark-forward-method-bound\n")
    assert range_tuple(noqa_hover.range) == range_tuple(on_code)
    assert other_code is None  # E501 is not ours


async def test_plaintext_hover_and_extra_records(tmp_path):
    def plaintext_only(caps: types.ClientCapabilities) -> None:
        caps.text_document.hover.content_format = [types.MarkupKind.PlainText]

    # An extend-records directory whose record replaces the shipped FAB001 one.
    record_dir = tmp_path / "records"
    record_dir.mkdir()
    shipped = json.loads((REPO / "server/fabric_lsp/records/data/af391673c4dd180e.json").read_text())
    shipped["record"]["documentation"] = "Team note: always mark generate() in our trainers."
    (record_dir / "af391673c4dd180e.json").write_text(json.dumps(shipped))

    workspace = tmp_path / "ws"
    path = copy_case("fab001_generate_ddp_literal.py", workspace)
    user_config = tmp_path / "user-config.toml"  # replacing a built-in record needs the user's opt-in
    user_config.write_text("replace-records = true\n")
    async with session(
        capabilities("neovim", plaintext_only), [workspace], initialization_options={"extendRecords": [str(record_dir)]},
        env={"FABRIC_LSP_USER_CONFIG": str(user_config)},
    ) as (client, init):
        uri = open_doc(client, path)
        (finding,) = await diagnostics(client, uri, version=1)
        found = await hover(client, uri, finding.range.start)
        # the record directory loaded without problems; the replacement is noted once
        assert [m.message for m in client.messages] == [
            f"fabric-lsp: records: {record_dir / 'af391673c4dd180e.json'}: record af391673c4dd180e overrides "
            f"the one from {REPO / 'server/fabric_lsp/records/data/af391673c4dd180e.json'}"
        ]
    assert found.contents.kind == types.MarkupKind.PlainText
    value = found.contents.value
    assert value.startswith("FAB001 unmarked-forward-method\n==============================\n")
    assert FAB001_MESSAGE in value
    assert "Team note: always mark generate() in our trainers." in value
    assert "###" not in value and "```" not in value
