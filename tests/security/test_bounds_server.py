"""The server's work per document is bounded: a big document being analysed does not keep hover
and shutdown/exit on other documents waiting, an edit re-analyses only the edited document and its
dependents, and didOpen of a URI naming a FIFO does not hang."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "lsp"))  # lspkit

from lspkit import TIMEOUT, capabilities, diagnostics, open_doc, replace_text, session, wait_until  # noqa: E402
from lsprotocol import types  # noqa: E402

CASE = REPO / "fixtures" / "cases" / "fab001_call_before_mark.py"


def big_source(size: int) -> str:
    # Valid, under the default max-file-size, and slow to analyse: one FAB001 per statement pair.
    parts = [CASE.read_text()]
    total, i = len(parts[0]), 0
    while total < size:
        parts.append(f"m{i}, o{i} = fabric.setup(Policy(), optimizer)\nm{i}.act(obs)\n")
        total += len(parts[-1])
        i += 1
    return "".join(parts)


async def hover_on_finding(client, uri: str, finding: types.Diagnostic) -> types.Hover | None:
    return await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=finding.range.start)
        ),
        TIMEOUT,
    )


async def test_hover_and_exit_answered_while_a_big_document_is_analysed(tmp_path):
    small = tmp_path / "small.py"
    shutil.copy(CASE, small)
    big = tmp_path / "big.py"
    big.write_text(big_source(1_500_000))  # analysing it takes tens of seconds
    session_cm = session(capabilities("neovim"), [tmp_path])
    client, _ = await session_cm.__aenter__()
    try:
        small_uri = open_doc(client, small)
        [finding] = await diagnostics(client, small_uri, version=1)
        open_doc(client, big)
        await asyncio.sleep(1.0)  # the worker is inside the big document now
        hover = await hover_on_finding(client, small_uri, finding)
        assert hover is not None and "mark_forward_method" in str(hover.contents)
        # The proof that the hover did not wait for the big document: it is answered while that
        # analysis (tens of seconds) is still running, not by how long it took (hover_on_finding's
        # TIMEOUT is only a hang guard).
        assert not any(p.uri == big.as_uri() for p in client.published), "the big document was already done"
    finally:
        # shutdown, exit, and the process ends; TIMEOUT is only a hang guard (a server still running
        # then is killed: its returncode is not 0)
        try:
            await asyncio.wait_for(session_cm.__aexit__(None, None, None), TIMEOUT)
        finally:
            if client._server.returncode is None:
                client._server.kill()
    # The proof that exit did not wait for the big document: the process ended by itself (0) and the
    # big document's analysis (tens of seconds) never got to publish.
    assert client._server.returncode == 0
    assert not any(p.uri == big.as_uri() for p in client.published), "exit waited for the big document"


def program(index: int) -> str:
    # Each document is a program of its own (its own Fabric and setup): no document reads another.
    return CASE.read_text().replace("Policy", f"Policy{index}")


async def test_edit_reanalyses_only_the_document_and_its_dependents(tmp_path):
    others = []
    for index in range(12):
        path = tmp_path / f"alone_{index}.py"
        path.write_text(program(index))
        others.append(path)
    # user.py imports the model from model.py: an edit of model.py must re-analyse user.py.
    model = tmp_path / "model.py"
    model.write_text("import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
                     "    def __init__(self):\n        super().__init__()\n        self.layer = nn.Linear(2, 2)\n\n"
                     "    def forward(self, x):\n        return self.layer(x)\n\n"
                     "    def score(self, x):\n        return self(x).sum()\n")
    user = tmp_path / "user.py"
    user.write_text("import torch\nfrom lightning.fabric import Fabric\nfrom model import Net\n\n"
                    "fabric = Fabric(accelerator='cpu', devices=1, strategy='ddp')\nfabric.launch()\n"
                    "net = fabric.setup(Net())\nnet.score(torch.randn(1, 2))\n")
    async with session(capabilities("neovim"), [tmp_path]) as (client, _):
        uris = {path: open_doc(client, path) for path in [*others, model, user]}
        for path in [*others, user]:
            assert [d.code for d in await diagnostics(client, uris[path], version=1)] == ["FAB001"], path
        await diagnostics(client, uris[model], version=1)
        await asyncio.sleep(0.5)  # the dependents' pass after the opens has run
        client.protocol.notify(types.SET_TRACE, types.SetTraceParams(value=types.TraceValue.Messages))
        await asyncio.sleep(0.2)
        start = len(client.traces)

        def analysed() -> set[str]:
            return {uri for uri in uris.values() for t in client.traces[start:]
                    if "analysed in" in t.message and t.message.startswith(uri + ":")}

        replace_text(client, uris[others[0]], 2, program(0) + "\n")
        await wait_until(lambda: uris[others[0]] in analysed(), message="the edited document analysed")
        await asyncio.sleep(1.0)  # well past the dependents' pause
        assert analysed() == {uris[others[0]]}

        start = len(client.traces)
        replace_text(client, uris[model], 2, model.read_text() + "\n")
        await wait_until(lambda: uris[user] in analysed(), message="the dependent analysed")
        await asyncio.sleep(1.0)
        assert analysed() == {uris[model], uris[user]}


async def test_did_open_of_a_fifo_does_not_hang(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    small = tmp_path / "small.py"
    shutil.copy(CASE, small)
    async with session(capabilities("neovim"), [tmp_path]) as (client, _):
        fifo_uri = open_doc(client, fifo, text="x = 1\n")  # the buffer differs from the (unread) disk
        small_uri = open_doc(client, small)
        [finding] = await diagnostics(client, small_uri, version=1)
        await diagnostics(client, fifo_uri, version=1)
        hover = await hover_on_finding(client, small_uri, finding)
        assert hover is not None
