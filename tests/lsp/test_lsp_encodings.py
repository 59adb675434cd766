"""Position encodings: utf-8, utf-16 and utf-32, with non-ASCII text before the ranges, for
diagnostics, incremental edits, hover and the edits of code actions."""

from __future__ import annotations

import pytest
from lspkit import (
    CASES,
    apply_edits,
    capabilities,
    code_actions,
    code_units,
    diagnostics,
    edits_by_uri,
    encoding_of,
    lines_of,
    lsp_position,
    open_doc,
    range_tuple,
    resolved,
    session,
)
from lsprotocol import types

ORIGINAL = "    sample = model.generate(data[:1, :3])  # expect: FAB001 error\n"
# An astral character (4 UTF-8 bytes, 2 UTF-16 units, 1 code point) and a Latin-1 one before the call.
WITH_TEXT = '    note = "ü😀"; sample = model.generate(data[:1, :3])\n'


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
async def test_positions_in_the_negotiated_encoding(encoding, tmp_path):
    def offer(caps: types.ClientCapabilities) -> None:
        caps.general = types.GeneralClientCapabilities(position_encodings=[encoding])

    source = (CASES / "fab001_generate_ddp_literal.py").read_text()
    assert ORIGINAL in source
    text = source.replace(ORIGINAL, WITH_TEXT)
    path = tmp_path / "unicode_train.py"
    path.write_text(text)
    line = next(n for n, text_line in enumerate(lines_of(text)) if text_line.startswith('    note = "'))
    column = WITH_TEXT.index("generate")  # code points
    prefix = WITH_TEXT[:column]
    expected_start = {"utf-8": 36, "utf-16": 33, "utf-32": 32}[encoding]
    assert code_units(prefix, encoding) == expected_start

    async with session(capabilities("visual-studio-code", offer), [tmp_path]) as (client, init):
        assert encoding_of(init) == encoding
        uri = open_doc(client, path)
        (finding,) = await diagnostics(client, uri, version=1)
        assert range_tuple(finding.range) == (line, expected_start, line, expected_start + 8)

        hover = await client.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=finding.range.end)
        )
        assert "`CharLM.generate()`" in hover.contents.value
        assert range_tuple(hover.range) == range_tuple(finding.range)

        # An incremental edit inside the string, just after the emoji, in the client's units. Were
        # the units read as code points (or the other way round), it would land elsewhere and break
        # the line.
        after_emoji = lsp_position(text, line, WITH_TEXT.index("😀") + 1, encoding)
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(start=after_emoji, end=after_emoji), text="é"
                    )
                ],
            )
        )
        (moved,) = await diagnostics(client, uri, version=2)
        shift = code_units("é", encoding)
        assert range_tuple(moved.range) == (line, expected_start + shift, line, expected_start + 8 + shift)

        # The noqa edit goes to the end of the edited line, in the same units.
        new_text = text.replace('"ü😀"', '"ü😀é"')
        disable = [a for a in await code_actions(client, uri, [moved]) if a.title == "Disable FAB001 for this line"]
        disable = await resolved(client, disable[0])
        (edit,) = edits_by_uri(disable.edit)[uri][1]
        end_of_line = lsp_position(new_text, line, len(lines_of(new_text)[line]), encoding)
        assert (edit.range.start.line, edit.range.start.character) == (line, end_of_line.character)
        assert apply_edits(new_text, [edit], encoding).splitlines()[line] == (
            '    note = "ü😀é"; sample = model.generate(data[:1, :3])  # noqa: FAB001'
        )
