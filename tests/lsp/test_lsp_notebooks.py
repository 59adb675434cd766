"""Jupyter notebooks over LSP 3.17 notebook sync: the notebook is one analysis unit (its Python code
cells joined, as the kernel runs them); diagnostics, quick fixes and hover are per cell URI.

The "visual-studio-code" preset is VS Code 1.65, before notebook sync: the tests add the
`notebookDocument` capability VS Code declares since 1.75 (vscode-languageclient 8+)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from fabric_lsp.settings.config import load_config
from fabric_lsp.engine import check_source
from fabric_lsp.sources.notebook import join_cells
from lspkit import (
    TIMEOUT,
    apply_edits,
    capabilities,
    code_actions,
    edits_by_uri,
    encoding_of,
    find_position,
    lsp_position,
    range_tuple,
    resolved,
    session,
    wait_until,
)
from lsprotocol import types

CODE, MARKUP = types.NotebookCellKind.Code, types.NotebookCellKind.Markup
FIX_ALL = "source.fixAll.fabric-lsp"
NOTEBOOK_FIX_ALL = "notebook.source.fixAll.fabric-lsp"
FIX_TITLE = "Mark `generate` as a forward method after `fabric.setup`"
MARK = 'model.mark_forward_method("generate")'

# Cells of a script like fixtures/cases/fab001_generate_ddp_literal.py, magics included.
MODEL_CELL = """%pip install lightning
!nvidia-smi
import torch
from torch import nn
from lightning.fabric import Fabric


class CharLM(nn.Module):
    def __init__(self, vocab_size: int = 32, hidden: int = 16):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)
        self.head = nn.Linear(hidden, vocab_size)

    def forward(self, tokens):
        return self.head(self.embed(tokens))

    def generate(self, prompt, steps: int = 3):
        tokens = prompt
        for _ in range(steps):
            next_token = self(tokens)[:, -1].argmax(-1, keepdim=True)
            tokens = torch.cat([tokens, next_token], dim=1)
        return tokens
"""
SETUP_CELL = """fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
fabric.launch()
model = fabric.setup(CharLM())"""
MARKDOWN_CELL = "## Sampling\nThe model's `generate` runs `self(...)`: {not Python}"
CALL_CELL = """x = torch.randint(0, 32, (1, 3))
échantillon = model.generate(x)  # ≠ positions in UTF-8, UTF-16 and code points
print(échantillon.tolist())
"""
NOQA_CALL_CELL = CALL_CELL.replace("code points\n", "code points  # noqa: FAB001\n")
R_CELL = "f <- function(a) { a + 1 }\nprint(f(1))"
# A call in a function: its message names the setup's place, "(wrapped at nb.ipynb:cell 2:3)".
SAMPLER_CELL = """def sample(x):
    return model.generate(x)


print(sample(torch.randint(0, 32, (1, 3))))"""
CELLS = [(CODE, "python", MODEL_CELL), (CODE, "python", SETUP_CELL), (MARKUP, "markdown", MARKDOWN_CELL),
         (CODE, "python", CALL_CELL), (CODE, "r", R_CELL)]


def notebook_capabilities(
    preset: str = "visual-studio-code", pull: bool = False, related: bool = True, utf8: bool = False
) -> types.ClientCapabilities:
    def change(caps: types.ClientCapabilities) -> None:
        caps.notebook_document = types.NotebookDocumentClientCapabilities(
            synchronization=types.NotebookDocumentSyncClientCapabilities(
                dynamic_registration=True, execution_summary_support=True
            )
        )
        if pull:
            caps.text_document.diagnostic = types.DiagnosticClientCapabilities(dynamic_registration=True)
        caps.text_document.publish_diagnostics.related_information = related
        if utf8:
            caps.general = types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf8])

    return capabilities(preset, change)


@dataclass
class CellState:
    uri: str
    kind: types.NotebookCellKind
    language: str
    text: str
    version: int = 1

    def item(self) -> types.TextDocumentItem:
        return types.TextDocumentItem(uri=self.uri, language_id=self.language, version=self.version, text=self.text)

    def cell(self) -> types.NotebookCell:
        return types.NotebookCell(kind=self.kind, document=self.uri)


class Notebook:
    """A client-side notebook sending notebookDocument/* as VS Code does (cell URIs included)."""

    def __init__(self, client, uri: str, cells: list[tuple[types.NotebookCellKind, str, str]]):
        self.client = client
        self.uri = uri
        self.version = 1
        self._made = 0
        self.cells = [self._new(kind, language, text) for kind, language, text in cells]

    def _new(self, kind, language, text) -> CellState:
        uri = f"vscode-notebook-cell:{self.uri.split(':', 1)[1]}#W{self._made}sZmlsZQ%3D%3D"
        self._made += 1
        return CellState(uri, kind, language, text)

    def uri_of(self, index: int) -> str:
        return self.cells[index].uri

    def open(self) -> None:
        self.client.notebook_document_did_open(
            types.DidOpenNotebookDocumentParams(
                notebook_document=types.NotebookDocument(
                    uri=self.uri,
                    notebook_type="jupyter-notebook",
                    version=self.version,
                    cells=[c.cell() for c in self.cells],
                ),
                cell_text_documents=[c.item() for c in self.cells],
            )
        )

    def _change(self, cells: types.NotebookDocumentCellChanges) -> None:
        self.version += 1
        self.client.notebook_document_did_change(
            types.DidChangeNotebookDocumentParams(
                notebook_document=types.VersionedNotebookDocumentIdentifier(version=self.version, uri=self.uri),
                change=types.NotebookDocumentChangeEvent(cells=cells),
            )
        )

    def edit(self, index: int, text: str) -> None:
        """Cell `index` gets `text` (a whole-text change)."""
        cell = self.cells[index]
        cell.text, cell.version = text, cell.version + 1
        self._change(
            types.NotebookDocumentCellChanges(
                text_content=[
                    types.NotebookDocumentCellContentChanges(
                        document=types.VersionedTextDocumentIdentifier(uri=cell.uri, version=cell.version),
                        changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
                    )
                ]
            )
        )

    def apply(self, edit: types.WorkspaceEdit, encoding: str) -> None:
        """A workspace edit on the cells, sent as one notebook change (as VS Code applies it)."""
        contents = []
        for uri, (version, edits) in edits_by_uri(edit).items():
            cell = next(c for c in self.cells if c.uri == uri)
            assert version in (None, cell.version), "the edit is for another version of the cell"
            cell.text, cell.version = apply_edits(cell.text, edits, encoding), cell.version + 1
            contents.append(
                types.NotebookDocumentCellContentChanges(
                    document=types.VersionedTextDocumentIdentifier(uri=cell.uri, version=cell.version),
                    changes=[types.TextDocumentContentChangeWholeDocument(text=cell.text)],
                )
            )
        self._change(types.NotebookDocumentCellChanges(text_content=contents))

    def insert(self, index: int, kind, language: str, text: str) -> CellState:
        cell = self._new(kind, language, text)
        self.cells.insert(index, cell)
        self._change(
            types.NotebookDocumentCellChanges(
                structure=types.NotebookDocumentCellChangeStructure(
                    array=types.NotebookCellArrayChange(start=index, delete_count=0, cells=[cell.cell()]),
                    did_open=[cell.item()],
                )
            )
        )
        return cell

    def remove(self, index: int) -> CellState:
        cell = self.cells.pop(index)
        self._change(
            types.NotebookDocumentCellChanges(
                structure=types.NotebookDocumentCellChangeStructure(
                    array=types.NotebookCellArrayChange(start=index, delete_count=1),
                    did_close=[types.TextDocumentIdentifier(uri=cell.uri)],
                )
            )
        )
        return cell

    def move(self, index: int, to: int) -> None:
        """VS Code moves a cell as a structure change that closes nothing (the cell keeps its URI)."""
        cell = self.cells.pop(index)
        self.cells.insert(to, cell)
        start = min(index, to)
        count = abs(index - to) + 1
        self._change(
            types.NotebookDocumentCellChanges(
                structure=types.NotebookDocumentCellChangeStructure(
                    array=types.NotebookCellArrayChange(
                        start=start, delete_count=count, cells=[c.cell() for c in self.cells[start : start + count]]
                    )
                )
            )
        )

    def relanguage(self, index: int, language: str) -> None:
        """A cell's language changed: vscode-languageclient closes and opens it again."""
        cell = self.cells[index]
        self._change(
            types.NotebookDocumentCellChanges(
                structure=types.NotebookDocumentCellChangeStructure(
                    array=types.NotebookCellArrayChange(start=index, delete_count=1, cells=[cell.cell()]),
                    did_open=[types.TextDocumentItem(uri=cell.uri, language_id=language, version=cell.version, text=cell.text)],
                    did_close=[types.TextDocumentIdentifier(uri=cell.uri)],
                )
            )
        )
        cell.language = language

    def close(self) -> None:
        self.client.notebook_document_did_close(
            types.DidCloseNotebookDocumentParams(
                notebook_document=types.NotebookDocumentIdentifier(uri=self.uri),
                cell_text_documents=[types.TextDocumentIdentifier(uri=c.uri) for c in self.cells],
            )
        )


def expected(path: Path, cells: list[CellState], root: Path) -> dict[int, list[tuple]]:
    """What `fabric-lsp check` finds in these cells: check_source on the joined cells (numbered among
    all cells), mapped to the cells -> {cell index: [(code, severity, range in the cell, message)]}."""
    numbered = [(i + 1, c.text) for i, c in enumerate(cells) if c.kind == CODE and c.language == "python"]
    joined = join_cells(numbered)
    config, _ = load_config(path)
    config = replace(config, root=str(root))
    found: dict[int, list[tuple]] = {}
    for finding in check_source(str(path), joined.text, config):
        cell, start = joined.to_cell(finding.span.start)
        _, end = joined.to_cell(finding.span.end)
        found.setdefault(cell.number - 1, []).append(
            (finding.code, finding.severity.value, (start.line, start.character, end.line, end.character), finding.message)
        )
    return found


SEVERITY = {types.DiagnosticSeverity.Error: "error", types.DiagnosticSeverity.Warning: "warning",
            types.DiagnosticSeverity.Information: "information", types.DiagnosticSeverity.Hint: "hint"}


def shown(diagnostics: list[types.Diagnostic], text: str, encoding: str) -> list[tuple]:
    """Diagnostics in the form of `expected` (ranges back in code points; a message without the
    related locations folded into it)."""
    lines = text.split("\n")

    def column(position: types.Position) -> int:
        line, units = lines[position.line], 0
        for index, char in enumerate(line):
            if units >= position.character:
                return index
            units += len(char.encode("utf-16-le")) // 2 if encoding == "utf-16" else (
                len(char.encode("utf-8")) if encoding == "utf-8" else 1)
        return len(line)

    return [
        (d.code, SEVERITY[d.severity], (d.range.start.line, column(d.range.start), d.range.end.line, column(d.range.end)),
         d.message.split("\n")[0])
        for d in diagnostics
    ]


async def published(client, uris: list[str], since: int = 0) -> None:
    """Until each of `uris` has had diagnostics published after index `since` of client.published."""
    await wait_until(lambda: {p.uri for p in client.published[since:]} >= set(uris), message=f"diagnostics of {uris}")


async def recheck(client) -> None:
    """Every open document analysed again and its diagnostics out: a point where nothing is pending."""
    await asyncio.wait_for(
        client.workspace_execute_command_async(types.ExecuteCommandParams(command="fabric-lsp.recheck")), TIMEOUT
    )


async def hover(client, uri: str, position: types.Position) -> types.Hover | None:
    return await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=position)
        ),
        TIMEOUT,
    )


def python_cells(notebook: Notebook) -> list[int]:
    return [i for i, c in enumerate(notebook.cells) if c.kind == CODE and c.language == "python"]


async def test_notebook_sync_is_advertised_to_clients_that_declare_it(tmp_path):
    async with session(notebook_capabilities(), [tmp_path]) as (_, init):
        sync = init.capabilities.notebook_document_sync
        assert sync is not None
        ((selector),) = sync.notebook_selector
        assert selector.notebook.notebook_type == "jupyter-notebook"
        assert selector.cells is None  # every cell: numbers count markdown cells, as `check` does
    async with session(capabilities("neovim"), [tmp_path]) as (_, init):
        assert init.capabilities.notebook_document_sync is None


@pytest.mark.parametrize("client_kind", ["vscode", "utf-8-folded"])
async def test_diagnostics_per_cell_follow_every_cell(client_kind, tmp_path):
    """The second client counts positions in UTF-8 and has no related information: the locations
    are folded into the message, named by cell as `fabric-lsp check` names them."""
    path = tmp_path / "nb.ipynb"
    related_information = client_kind == "vscode"
    caps = notebook_capabilities(related=related_information, utf8=not related_information)
    async with session(caps, [tmp_path]) as (client, init):
        encoding = encoding_of(init)
        assert encoding == ("utf-16" if related_information else "utf-8")
        notebook = Notebook(client, path.as_uri(), CELLS)
        notebook.open()
        await published(client, [notebook.uri_of(i) for i in python_cells(notebook)])
        # The markdown cell and the R cell are not analysed (their text would not even parse).
        assert notebook.uri_of(2) not in client.diagnostics and notebook.uri_of(4) not in client.diagnostics
        want = expected(path, notebook.cells, tmp_path)
        assert list(want) == [3] and [w[0] for w in want[3]] == ["FAB001"]
        for index in python_cells(notebook):
            text = notebook.cells[index].text
            assert shown(client.diagnostics[notebook.uri_of(index)], text, encoding) == want.get(index, []), index
            assert [p.version for p in client.published if p.uri == notebook.uri_of(index)] == [1]
        (diagnostic,) = client.diagnostics[notebook.uri_of(3)]
        assert range_tuple(diagnostic.range) == range_tuple(find_position(CALL_CELL, "generate", encoding))
        assert diagnostic.severity == types.DiagnosticSeverity.Error

        # Related locations in the notebook point at their cells: the setup, the method.
        if related_information:
            related = {r.message: (r.location.uri, range_tuple(r.location.range)) for r in diagnostic.related_information}
            assert related == {
                "`model` is wrapped by Fabric here": (
                    notebook.uri_of(1), range_tuple(find_position(SETUP_CELL, "fabric.setup(CharLM())", encoding))),
                "`CharLM.generate` is defined here": (
                    notebook.uri_of(0), range_tuple(find_position(MODEL_CELL, "generate", encoding))),
            }
        else:
            assert diagnostic.related_information is None
            assert diagnostic.message.split("\n")[1:] == [
                "`generate` calls `self(...)`",  # the reasons, then the related places
                'RuntimeError under strategy="ddp"',
                "`model` is not marked with `model.mark_forward_method(\"generate\")` before this call",
                "nb.ipynb:cell 2:3:9: `model` is wrapped by Fabric here",
                "nb.ipynb:cell 1:17:9: `CharLM.generate` is defined here",
            ]

        # Hover on the cell's diagnostic: the record, for this class and method.
        shown_hover = await hover(client, notebook.uri_of(3), diagnostic.range.start)
        assert shown_hover is not None and "`CharLM.generate()`" in shown_hover.contents.value
        assert range_tuple(shown_hover.range) == range_tuple(diagnostic.range)
        assert await hover(client, notebook.uri_of(0), types.Position(line=0, character=0)) is None

        # Marking the method in cell 2 clears cell 4; taking it out brings the diagnostic back.
        since = len(client.published)
        notebook.edit(1, SETUP_CELL + "\n" + MARK + "\n")
        await wait_until(lambda: not client.diagnostics[notebook.uri_of(3)], message="cell 4 cleared")
        assert [p.uri for p in client.published[since:]] == [notebook.uri_of(1), notebook.uri_of(3)]
        assert [p.version for p in client.published[since:]] == [2, 1]
        notebook.edit(1, SETUP_CELL)
        await wait_until(lambda: client.diagnostics[notebook.uri_of(3)], message="cell 4 again")
        assert shown(client.diagnostics[notebook.uri_of(3)], CALL_CELL, encoding) == want[3]

        # `# noqa` in the cell suppresses it, as in a .py file.
        notebook.edit(3, NOQA_CALL_CELL)
        await wait_until(lambda: not client.diagnostics[notebook.uri_of(3)], message="noqa")
        notebook.edit(3, CALL_CELL)
        await wait_until(lambda: client.diagnostics[notebook.uri_of(3)], message="noqa removed")

        # Closing the notebook clears every cell.
        since = len(client.published)
        notebook.close()
        await published(client, [notebook.uri_of(i) for i in python_cells(notebook)], since)
        assert all(not client.diagnostics[notebook.uri_of(i)] for i in python_cells(notebook))


async def test_quick_fix_edits_the_setup_cell_and_fix_all_the_notebook(tmp_path):
    path = tmp_path / "nb.ipynb"
    async with session(notebook_capabilities(), [tmp_path]) as (client, init):
        encoding = encoding_of(init)
        notebook = Notebook(client, path.as_uri(), CELLS)
        notebook.open()
        await published(client, [notebook.uri_of(i) for i in python_cells(notebook)])
        call_uri, setup_uri = notebook.uri_of(3), notebook.uri_of(1)
        found = client.diagnostics[call_uri]
        actions = await code_actions(client, call_uri, found)
        assert [(a.title, a.kind) for a in actions] == [
            (FIX_TITLE, "quickfix"),
            ("Disable FAB001 for this line", "quickfix"),
            ("fabric-lsp: Fix all auto-fixable problems", FIX_ALL),
        ]
        fix = await resolved(client, actions[0])
        # The fix goes where the setup is: cell 2, for the version the analysis read.
        assert {uri: version for uri, (version, _) in edits_by_uri(fix.edit).items()} == {setup_uri: 1}
        noqa = await resolved(client, actions[1])
        assert list(edits_by_uri(noqa.edit)) == [call_uri]
        assert apply_edits(CALL_CELL, edits_by_uri(noqa.edit)[call_uri][1], encoding) == NOQA_CALL_CELL

        # Fix-all, as VS Code's `notebook.source.fixAll` (asked on any cell) or as `source.fixAll` on
        # the cell its edits are in: the same edit. `source.fixAll` on another cell: nothing.
        for cell, only, kind in ((0, ["notebook.source.fixAll"], NOTEBOOK_FIX_ALL), (1, ["source.fixAll"], FIX_ALL)):
            (fix_all,) = await code_actions(client, notebook.uri_of(cell), [], only=only)
            assert fix_all.kind == kind
            fix_all = await resolved(client, fix_all)
            assert edits_by_uri(fix_all.edit) == edits_by_uri(fix.edit)
        assert await code_actions(client, notebook.uri_of(0), [], only=["source.fixAll"]) == []
        # Another server's notebook kind: nothing.
        assert await code_actions(client, notebook.uri_of(0), [], only=["notebook.source.fixAll.other"]) == []

        since = len(client.published)
        notebook.apply(fix.edit, encoding)
        assert notebook.cells[1].text == SETUP_CELL + "\n" + MARK
        await wait_until(lambda: not client.diagnostics[call_uri], message="cell 4 fixed")
        assert any(p.uri == call_uri for p in client.published[since:])
        assert expected(path, notebook.cells, tmp_path) == {}
        assert await code_actions(client, notebook.uri_of(0), [], only=["notebook.source.fixAll"]) == []


async def test_cells_added_removed_moved_and_relanguaged(tmp_path):
    path = tmp_path / "nb.ipynb"
    async with session(notebook_capabilities(), [tmp_path]) as (client, init):
        encoding = encoding_of(init)
        notebook = Notebook(client, path.as_uri(), [*CELLS, (CODE, "python", SAMPLER_CELL)])
        notebook.open()
        await published(client, [notebook.uri_of(i) for i in python_cells(notebook)])
        call_uri, sampler_uri = notebook.uri_of(3), notebook.uri_of(5)
        before = shown(client.diagnostics[call_uri], CALL_CELL, encoding)
        (sampler,) = client.diagnostics[sampler_uri]
        assert "(wrapped at nb.ipynb:cell 2:3)" in sampler.message

        def check_all() -> None:
            want = expected(path, notebook.cells, tmp_path)
            for index in python_cells(notebook):
                cell = notebook.cells[index]
                assert shown(client.diagnostics.get(cell.uri, []), cell.text, encoding) == want.get(index, []), index

        # A cell added before the setup: the diagnostics stay on their lines in their cells; the
        # setup is now cell 3.
        since = len(client.published)
        added = notebook.insert(1, CODE, "python", "y = 1\n%time z = 2\n")
        await published(client, [added.uri], since)
        await recheck(client)
        assert not client.diagnostics[added.uri]
        assert [d[:3] for d in shown(client.diagnostics[call_uri], CALL_CELL, encoding)] == [d[:3] for d in before]
        assert "(wrapped at nb.ipynb:cell 3:3)" in client.diagnostics[sampler_uri][0].message
        check_all()

        # ... and removed again: its diagnostics go, nothing moves.
        since = len(client.published)
        notebook.remove(1)
        await published(client, [added.uri], since)
        await recheck(client)
        assert not client.diagnostics[added.uri]
        assert "(wrapped at nb.ipynb:cell 2:3)" in client.diagnostics[sampler_uri][0].message
        check_all()

        # The call moved before the setup: the kernel would run it unwrapped, no finding.
        notebook.move(3, 1)
        await wait_until(lambda: not client.diagnostics[call_uri], message="moved call")
        await recheck(client)
        check_all()
        notebook.move(1, 3)
        await wait_until(lambda: client.diagnostics[call_uri], message="moved back")
        await recheck(client)
        check_all()

        # The call cell becomes R: no longer analysed, its diagnostics cleared; Python again: back.
        notebook.relanguage(3, "r")
        await wait_until(lambda: not client.diagnostics[call_uri], message="R cell")
        notebook.relanguage(3, "python")
        await wait_until(lambda: client.diagnostics[call_uri], message="python again")
        await recheck(client)
        check_all()

        # Changes for notebooks and cells the server does not know: logged, the server answers on.
        client.notebook_document_did_change(
            types.DidChangeNotebookDocumentParams(
                notebook_document=types.VersionedNotebookDocumentIdentifier(version=9, uri=(tmp_path / "x.ipynb").as_uri()),
                change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges()),
            )
        )
        notebook._change(
            types.NotebookDocumentCellChanges(
                text_content=[
                    types.NotebookDocumentCellContentChanges(
                        document=types.VersionedTextDocumentIdentifier(uri="vscode-notebook-cell:/nowhere#x", version=2),
                        changes=[types.TextDocumentContentChangeWholeDocument(text="x")],
                    )
                ]
            )
        )
        await recheck(client)
        check_all()


async def test_pull_diagnostics_an_imported_module_and_an_untitled_notebook(tmp_path):
    """Pull diagnostics per cell; a module the notebook imports, edited in the editor, analyses the
    notebook again; an untitled notebook."""
    module = tmp_path / "charlm.py"
    module.write_text(MODEL_CELL.split("\n", 2)[2])
    imports = "from charlm import CharLM\nimport torch\nfrom lightning.fabric import Fabric\n"
    cells = [(CODE, "python", imports), (CODE, "python", SETUP_CELL), (CODE, "python", CALL_CELL)]
    async with session(notebook_capabilities(pull=True), [tmp_path]) as (client, init):
        encoding = encoding_of(init)

        async def pulled(uri: str) -> list[types.Diagnostic]:
            report = await asyncio.wait_for(
                client.text_document_diagnostic_async(
                    types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
                ),
                TIMEOUT,
            )
            return list(report.items)

        notebook = Notebook(client, (tmp_path / "nb.ipynb").as_uri(), cells)
        notebook.open()
        (diagnostic,) = await pulled(notebook.uri_of(2))
        assert diagnostic.code == "FAB001"
        assert range_tuple(diagnostic.range) == range_tuple(find_position(CALL_CELL, "generate", encoding))
        assert await pulled(notebook.uri_of(0)) == [] and await pulled(notebook.uri_of(1)) == []
        assert not client.published  # a pull client is never pushed to
        related = {r.location.uri for r in diagnostic.related_information}
        assert related == {notebook.uri_of(1), module.as_uri()}  # the setup cell; the method in charlm.py

        # The module, opened and edited so that `generate` no longer runs the model: no finding.
        module_uri = module.as_uri()
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=module_uri, language_id="python", version=1, text=module.read_text())
            )
        )
        new_text = module.read_text().replace("self(tokens)[:, -1]", "tokens[:, -1:].float()")
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=module_uri, version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=new_text)],
            )
        )

        async def cleared() -> bool:
            return await pulled(notebook.uri_of(2)) == []

        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while not await cleared():
            assert asyncio.get_running_loop().time() < deadline, "the notebook was not analysed again"
            await asyncio.sleep(0.1)

        # A cell sent as a text document on its own is not analysed (it is not a file).
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri="vscode-notebook-cell:/elsewhere/nb.ipynb#W9", language_id="python", version=1,
                    text=imports + SETUP_CELL + "\n" + CALL_CELL,
                )
            )
        )
        assert await pulled("vscode-notebook-cell:/elsewhere/nb.ipynb#W9") == []
        position = lsp_position(CALL_CELL, 1, 16, encoding)
        assert await hover(client, notebook.uri_of(2), position) is None

        # An untitled notebook is analysed like an untitled document (a path in the current folder).
        untitled = Notebook(client, "untitled:Untitled-1.ipynb", CELLS)
        untitled.open()
        (diagnostic,) = await pulled(untitled.uri_of(3))
        assert (diagnostic.code, range_tuple(diagnostic.range)) == (
            "FAB001", range_tuple(find_position(CALL_CELL, "generate", encoding)))
        assert {r.location.uri for r in diagnostic.related_information} == {untitled.uri_of(0), untitled.uri_of(1)}


FIXTURE_NOTEBOOKS = sorted(Path(__file__).resolve().parents[2].joinpath("fixtures", "notebooks").rglob("*.ipynb"))


@pytest.mark.parametrize("fixture", FIXTURE_NOTEBOOKS, ids=[p.stem for p in FIXTURE_NOTEBOOKS])
async def test_each_fixture_notebook_gets_the_findings_of_check(fixture, tmp_path):
    """The editor shows what `fabric-lsp check --hints` reports for the same notebook: the same
    cells (every cell counted), lines, codes and severities; hints included on both sides."""
    import json
    import shutil
    import subprocess
    import sys

    folder = tmp_path / "project"
    shutil.copytree(fixture.parent, folder)
    (folder / "pyproject.toml").write_text("[project]\nname = 'fixture'\n\n[tool.fabric-lsp]\nhints = true\n")
    path = folder / fixture.name
    checked = subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--format", "json", "--hints", "--exit-zero",
                              str(path)], cwd=folder, capture_output=True, text=True, timeout=300)
    expected = sorted((f["cell"], f["location"]["row"] - 1, f["code"], f["severity"], f["message"])
                      for f in json.loads(checked.stdout) if f["filename"] == str(path))
    document = json.loads(path.read_text(encoding="utf-8"))
    cells = [(CODE if c["cell_type"] == "code" else MARKUP, "python" if c["cell_type"] == "code" else "markdown",
              "".join(c["source"])) for c in document["cells"]]
    severities = {types.DiagnosticSeverity.Error: "error", types.DiagnosticSeverity.Warning: "warning",
                  types.DiagnosticSeverity.Information: "information", types.DiagnosticSeverity.Hint: "hint"}
    async with session(notebook_capabilities(), [folder]) as (client, _):
        notebook = Notebook(client, path.as_uri(), cells)
        notebook.open()
        await published(client, [notebook.uri_of(i) for i in python_cells(notebook)])
        await recheck(client)
        shown_findings = sorted(
            (index + 1, d.range.start.line, d.code, severities[d.severity], d.message)
            for index in python_cells(notebook) for d in client.diagnostics.get(notebook.uri_of(index), []))
    assert shown_findings == expected


async def test_pull_client_is_asked_to_pull_a_cell_changed_by_an_edit_of_another(tmp_path):
    """VS Code pulls diagnostics only for the cells it edited: marking the method in cell 2 changes
    cell 4's diagnostics, which must be announced with workspace/diagnostic/refresh."""

    def refresh(caps: types.ClientCapabilities) -> None:
        caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)

    caps = notebook_capabilities(pull=True)
    refresh(caps)
    async with session(caps, [tmp_path]) as (client, _):
        async def pulled(uri: str) -> list[types.Diagnostic]:
            report = await asyncio.wait_for(client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))), TIMEOUT)
            return list(report.items)

        notebook = Notebook(client, (tmp_path / "nb.ipynb").as_uri(), CELLS)
        notebook.open()
        assert [d.code for d in await pulled(notebook.uri_of(3))] == ["FAB001"]
        before = client.diagnostic_refresh_count
        notebook.edit(1, SETUP_CELL + "\n" + MARK + "\n")
        await wait_until(lambda: client.diagnostic_refresh_count > before, message="workspace/diagnostic/refresh")
        assert await pulled(notebook.uri_of(3)) == []


async def test_fix_all_on_one_cell_edits_only_that_cell(tmp_path):
    """On save VS Code asks `source.fixAll` of every cell at once and applies every answer: each
    answer holds its own cell's edits, so the mark (in the setup cell) is inserted once."""
    async with session(notebook_capabilities(), [tmp_path]) as (client, _):
        notebook = Notebook(client, (tmp_path / "nb.ipynb").as_uri(), CELLS)
        notebook.open()
        await published(client, [notebook.uri_of(i) for i in python_cells(notebook)])
        inserted = {}
        for index in python_cells(notebook):
            edits = {}
            for action in await code_actions(client, notebook.uri_of(index), [], only=[FIX_ALL]):
                edits.update(edits_by_uri((await resolved(client, action)).edit))
            inserted[index] = sorted(edits)
        assert inserted == {0: [], 1: [notebook.uri_of(1)], 3: []}
