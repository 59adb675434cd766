"""`fabric-lsp.explain` (what VS Code's "Explain Error Message…" runs) matches what `explain` on the
command line matches: fragments of a runtime message too, with the reason and the rule page."""

from __future__ import annotations

import asyncio

from lspkit import TIMEOUT, capabilities, session
from lsprotocol import types

from fabric_lsp.records.pages import page_url


async def _explain(client, query: str):
    return await asyncio.wait_for(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="fabric-lsp.explain", arguments=[query])),
        TIMEOUT,
    )


async def test_fragments_and_reason(tmp_path):
    async with session(capabilities("visual-studio-code"), [tmp_path]) as (client, _):
        first_sentence = await _explain(client, "RuntimeError: You are calling the method `CharLM.sample()` from "
                                                "outside the model.")
        assert first_sentence["code"] == "FAB001"
        assert first_sentence["context"] == {"class": "CharLM", "method": "sample"}
        assert first_sentence["reason"] == "the record's errorMessage by 9 of 9 words; the message has 30"
        assert "`CharLM.sample()`" in first_sentence["markdown"]
        assert "Matched: the record's errorMessage by 9 of 9 words" in first_sentence["markdown"]
        assert first_sentence["markdown"].endswith(f"\n\nRule page: [FAB001]({page_url('FAB001')})\n")
        assert first_sentence["plaintext"].endswith(f"\n\nRule page: {page_url('FAB001')}\n")

        no_backticks = await _explain(client, "Materialization requires that the Block.reset_parameters method is "
                                              "implemented")
        assert no_backticks["code"] == "FAB002" and no_backticks["context"] == {"class": "Block"}

        by_code = await _explain(client, "FAB004")
        assert by_code["reason"] == "the rule code FAB004"
        assert "Matched:" not in by_code["markdown"]

        assert await _explain(client, "'Block' object has no attribute 'forward'") is None
