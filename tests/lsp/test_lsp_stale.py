"""Stale versions and cancellation. The server runs with a testing hook that makes every analysis
take DELAY seconds, so that edits and cancellations reliably arrive while one is running."""

from __future__ import annotations

import asyncio

import pytest
from lspkit import (
    CASES,
    DELAY_ENV,
    TIMEOUT,
    capabilities,
    diagnostics,
    is_pull,
    open_doc,
    pushes,
    replace_text,
    session,
    wait_until,
)
from lsprotocol import types
from pygls.exceptions import JsonRpcException

DELAY = 0.4
REQUEST_CANCELLED = -32800
CALL = "model.generate(data[:1, :3])"


def variants(text: str) -> dict[int, str]:
    """Versions 2..7: even ones without the finding, odd ones with it; 7 also moves it down 3 lines."""
    clean = text.replace(CALL, "model.module.generate(data[:1, :3])")
    out = {v: (clean if v % 2 == 0 else text) for v in range(2, 7)}
    out[7] = "\n\n\n" + text
    return out


async def test_rapid_changes_report_only_the_final_version(preset, tmp_path):
    path = tmp_path / "train.py"
    text = (CASES / "fab001_generate_ddp_literal.py").read_text()
    path.write_text(text)
    final_line = text.splitlines().index(next(line for line in text.splitlines() if CALL in line)) + 3
    async with session(
        capabilities(preset), [tmp_path], env={DELAY_ENV: str(DELAY)}, initialization_options={"logLevel": "debug"}
    ) as (client, _):
        uri = open_doc(client, path)
        assert [d.code for d in await diagnostics(client, uri, version=1)] == ["FAB001"]
        published = len(client.published)
        early_pull = None
        for version, content in variants(text).items():
            replace_text(client, uri, version, content)
            if version == 2 and is_pull(client):  # a pull sent while version 2 is being analysed
                # send_request writes the request now, between the didChange notifications.
                early_pull = asyncio.wrap_future(
                    client.protocol.send_request(
                        types.TEXT_DOCUMENT_DIAGNOSTIC,
                        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri)),
                    )
                )
        if is_pull(client):
            report = await asyncio.wait_for(early_pull, TIMEOUT)
            assert [(d.code, d.range.start.line) for d in report.items] == [("FAB001", final_line)]
            assert [(d.code, d.range.start.line) for d in await diagnostics(client, uri)] == [("FAB001", final_line)]
            assert client.published == []
        else:
            final = await wait_until(
                lambda: [p for p in pushes(client, uri, published) if p.version == 7], message="version 7 published"
            )
            await asyncio.sleep(2 * DELAY)  # a stale result would arrive by now
            assert [p.version for p in pushes(client, uri, published)] == [7]
            assert [(d.code, d.range.start.line) for d in final[0].diagnostics] == [("FAB001", final_line)]
        # Version 2 really was analysed and its result thrown away (not merely never started).
        assert any(m.message.endswith("dropped the result for version 2 (stale)") for m in client.log_messages)


async def test_cancel_request_while_waiting_for_an_analysis(preset, tmp_path):
    path = tmp_path / "train.py"
    text = (CASES / "fab001_generate_ddp_literal.py").read_text()
    path.write_text(text)
    call_line = next(n for n, line in enumerate(text.splitlines()) if CALL in line)
    position = types.Position(line=call_line, character=text.splitlines()[call_line].index("generate") + 1)
    async with session(capabilities(preset), [tmp_path], env={DELAY_ENV: str(DELAY)}) as (client, _):
        uri = open_doc(client, path)
        hover_params = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=position)
        # The hover waits for the analysis of version 1 (DELAY seconds); cancel it right away.
        pending = asyncio.ensure_future(
            client.protocol.send_request_async(types.TEXT_DOCUMENT_HOVER, hover_params, msg_id="hover-to-cancel")
        )
        await asyncio.sleep(0.05)
        client.cancel_request(types.CancelParams(id="hover-to-cancel"))
        with pytest.raises(JsonRpcException) as cancelled:
            await asyncio.wait_for(pending, TIMEOUT)
        assert cancelled.value.code == REQUEST_CANCELLED

        if is_pull(client):
            pull = types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
            replace_text(client, uri, 2, text + "\n")
            pending = asyncio.ensure_future(
                client.protocol.send_request_async(types.TEXT_DOCUMENT_DIAGNOSTIC, pull, msg_id="pull-to-cancel")
            )
            await asyncio.sleep(0.05)
            client.cancel_request(types.CancelParams(id="pull-to-cancel"))
            with pytest.raises(JsonRpcException) as cancelled:
                await asyncio.wait_for(pending, TIMEOUT)
            assert cancelled.value.code == REQUEST_CANCELLED

        # The analysis itself went on: the next request is answered with the record.
        hover = await asyncio.wait_for(client.text_document_hover_async(hover_params), TIMEOUT)
        assert hover.contents.value.startswith("### FAB001 unmarked-forward-method")
