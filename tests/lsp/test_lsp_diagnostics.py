"""Diagnostics of real fixture programs, push vs pull, result ids, clearing on close."""

from __future__ import annotations

import asyncio
import re

from fabric_lsp.records import default_records
from fabric_lsp.records.pages import page_url
from lspkit import (
    capabilities,
    copy_case,
    diagnostics,
    encoding_of,
    find_position,
    is_pull,
    open_doc,
    pushes,
    range_tuple,
    replace_text,
    session,
    wait_until,
)
from lsprotocol import types

LABEL = re.compile(r"# expect: (FAB\d{3}) (error|warning|hint)\b")
SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning}
# fixture -> the text the diagnostic covers on its labelled line
CASES = {
    "fab001_generate_ddp_literal.py": "generate",
    "fab001_strategy_from_argparse.py": "decode",
    "fab003_bound_method_ddp.py": "model.generate",
    "fab002_parameter_list.py": "nn.ParameterList([nn.Parameter(torch.zeros(dim)) for _ in range(num_tasks)])",
}


def labels(text: str) -> list[tuple[int, str, str]]:
    return [(n, m.group(1), m.group(2)) for n, line in enumerate(text.splitlines()) if (m := LABEL.search(line))]


async def test_diagnostics_match_the_fixture_labels(preset, tmp_path):
    records = default_records()
    async with session(capabilities(preset), [tmp_path]) as (client, init):
        encoding = encoding_of(init)
        assert encoding == ("utf-8" if preset == "neovim" else "utf-16")
        # Pull is offered exactly to the client that declares it (Neovim 0.11 does).
        assert (init.capabilities.diagnostic_provider is not None) == (preset == "neovim")
        results = {}
        for name in CASES:
            path = copy_case(name, tmp_path)
            uri = open_doc(client, path)
            results[name] = (path.read_text(), await diagnostics(client, uri, version=1))

    for name, (text, found) in results.items():
        expected = labels(text)
        assert len(found) == len(expected) == 1, (name, found)
        (line, code, severity), diagnostic = expected[0], found[0]
        assert diagnostic.code == code
        assert diagnostic.source == "fabric-lsp"
        assert diagnostic.severity == SEVERITY[severity]
        want = find_position(text, CASES[name], encoding, line_containing="# expect:")
        assert range_tuple(diagnostic.range) == range_tuple(want)
        assert diagnostic.range.start.line == line
        record = records.by_code(code)
        # Every client gets the rule page's link (issue 29), whether or not it declares codeDescriptionSupport.
        assert diagnostic.code_description.href == page_url(code)
        assert diagnostic.data["code"] == code and diagnostic.data["record"] == record.id

    text, (generate,) = results["fab001_generate_ddp_literal.py"]
    assert generate.message.startswith("`CharLM.generate()` runs submodules but is called on the Fabric-wrapped `model`")
    related = {(r.location.range.start.line, r.message) for r in generate.related_information}
    assert related == {(31, "`model` is wrapped by Fabric here"), (18, "`CharLM.generate` is defined here")}
    fix = generate.data["fix"]
    assert fix["applicability"] == "safe"
    assert [e["newText"] for e in fix["edits"]] == ['\n    model.mark_forward_method("generate")']
    assert generate.data["noqa"]["edit"]["newText"] == "  # noqa: FAB001"


async def test_pull_client_gets_no_push_and_real_unchanged_reports(tmp_path):
    path = copy_case("fab001_generate_ddp_literal.py", tmp_path)
    text = path.read_text()
    doc = types.TextDocumentIdentifier(uri=path.as_uri())
    async with session(capabilities("neovim"), [tmp_path]) as (client, init):
        uri = open_doc(client, path)

        async def pull(previous: str | None = None):
            return await client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(text_document=doc, previous_result_id=previous)
            )

        first = await pull()
        assert first.kind == "full" and [d.code for d in first.items] == ["FAB001"] and first.result_id
        again = await pull(first.result_id)
        assert again.kind == "unchanged" and again.result_id == first.result_id

        # An edit that leaves the diagnostics as they are: still unchanged.
        replace_text(client, uri, 2, text + "\n# a trailing comment\n")
        assert (await pull(first.result_id)).kind == "unchanged"

        # An edit that removes the finding: a full report with a new id.
        fixed = text.replace("model.generate(data", "model.module.generate(data")
        replace_text(client, uri, 3, fixed)
        changed = await pull(first.result_id)
        assert changed.kind == "full" and list(changed.items) == [] and changed.result_id != first.result_id

        # workspace/diagnostic covers the open documents, with the same ids and the version.
        report = await client.workspace_diagnostic_async(
            types.WorkspaceDiagnosticParams(
                previous_result_ids=[types.PreviousResultId(uri=uri, value=changed.result_id)]
            )
        )
        assert [(item.uri, item.kind, item.version) for item in report.items] == [(uri, "unchanged", 3)]
        report = await client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=[]))
        assert [(item.uri, item.kind, list(item.items)) for item in report.items] == [(uri, "full", [])]

        # A closed file gets one empty workspace report, so that the client drops what it had.
        client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc))
        report = await client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=[]))
        assert [(item.uri, item.kind, list(item.items)) for item in report.items] == [(uri, "full", [])]
        report = await client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=[]))
        assert list(report.items) == []

        await asyncio.sleep(0.5)  # nothing may arrive late either
        assert client.published == []
        assert is_pull(client)


async def test_push_carries_the_version_and_close_clears(preset, tmp_path):
    path = copy_case("fab003_bound_method_ddp.py", tmp_path)
    async with session(capabilities(preset), [tmp_path]) as (client, init):
        uri = open_doc(client, path, version=7)
        found = await diagnostics(client, uri, version=7)
        assert [d.code for d in found] == ["FAB003"]
        published_before_close = len(client.published)
        client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        if is_pull(client):
            await asyncio.sleep(0.3)
            assert client.published == []
        else:
            assert [p.version for p in pushes(client, uri)][0] == 7
            cleared = await wait_until(
                lambda: pushes(client, uri, published_before_close), message="clearing publication"
            )
            assert list(cleared[-1].diagnostics) == []


async def test_related_information_folded_into_the_message_when_unsupported(tmp_path):
    def no_related(caps: types.ClientCapabilities) -> None:
        caps.text_document.publish_diagnostics.related_information = False

    path = copy_case("fab001_generate_ddp_literal.py", tmp_path)
    async with session(capabilities("visual-studio-code", no_related), [tmp_path]) as (client, init):
        uri = open_doc(client, path)
        (diagnostic,) = await diagnostics(client, uri, version=1)
    assert diagnostic.related_information is None
    lines = diagnostic.message.splitlines()
    assert lines[0].startswith("`CharLM.generate()` runs submodules but is called on the Fabric-wrapped `model`")
    assert "fab001_generate_ddp_literal.py:32:24: `model` is wrapped by Fabric here" in lines
    assert "fab001_generate_ddp_literal.py:19:9: `CharLM.generate` is defined here" in lines
