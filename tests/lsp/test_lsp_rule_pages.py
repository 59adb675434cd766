"""Issue 29 item 6 in the server: every diagnostic carries `codeDescription.href` (the rule page: the
team's `docs-url` here), also for a client that does not declare codeDescriptionSupport, and hover
ends with the page's links (the team's page and the installed copy)."""

from __future__ import annotations

import pytest
from lspkit import capabilities, copy_case, diagnostics, open_doc, session
from lsprotocol import types

from fabric_lsp.records.pages import page_url

TEAM = "https://docs.example.org/fabric/{code}.html"


@pytest.mark.parametrize("declares_support", [True, False])
async def test_every_diagnostic_carries_the_page_and_hover_links_it(tmp_path, declares_support):
    def support(caps: types.ClientCapabilities) -> None:
        caps.text_document.publish_diagnostics.code_description_support = declares_support

    path = copy_case("fab001_generate_ddp_literal.py", tmp_path)
    (tmp_path / "pyproject.toml").write_text(f'[tool.fabric-lsp]\ndocs-url = "{TEAM}"\n')
    team = TEAM.replace("{code}", "FAB001")
    async with session(capabilities("neovim", support), [tmp_path]) as (client, init):
        uri = open_doc(client, path)
        (diagnostic,) = await diagnostics(client, uri, version=1)
        assert diagnostic.code_description is not None and diagnostic.code_description.href == team
        shown = await client.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=diagnostic.range.start))
    value = shown.contents.value
    assert team in value and page_url("FAB001") in value  # the team's page, and the installed copy
