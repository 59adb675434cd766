"""Dependents: changing a module (open buffer, closing it, or on disk) re-analyses the open files
that use it."""

from __future__ import annotations

from lspkit import capabilities, copy_case, diagnostics, open_doc, replace_text, session, wait_until
from lsprotocol import types

EMBED_RUNS_TOWER = "    def embed(self, x):\n        return self.tower(x)\n"
EMBED_IS_MATH = "    def embed(self, x):\n        return x * 2.0\n"


async def test_editing_the_model_class_updates_the_training_script(preset, tmp_path):
    case = copy_case("fab001_model_in_other_file", tmp_path)
    main, models = case / "main.py", case / "models.py"
    models_text = models.read_text()
    assert EMBED_RUNS_TOWER in models_text
    async with session(capabilities(preset), [case]) as (client, _):
        main_uri = open_doc(client, main)
        (finding,) = await diagnostics(client, main_uri, version=1)
        assert finding.code == "FAB001" and "SiameseNet.embed()" in finding.message
        assert finding.related_information[1].location.uri == models.as_uri()

        # Edit models.py in the editor, unsaved: embed() no longer runs a layer.
        models_uri = open_doc(client, models)
        await diagnostics(client, models_uri, version=1)
        published = len(client.published)
        replace_text(client, models_uri, 2, models_text.replace(EMBED_RUNS_TOWER, EMBED_IS_MATH))
        assert await diagnostics(client, main_uri, since=published) == []

        # Undo: the finding is back.
        published = len(client.published)
        replace_text(client, models_uri, 3, models_text)
        assert [d.code for d in await diagnostics(client, main_uri, since=published)] == ["FAB001"]

        # Edited again and closed without saving: the file on disk counts again.
        published = len(client.published)
        replace_text(client, models_uri, 4, models_text.replace(EMBED_RUNS_TOWER, EMBED_IS_MATH))
        assert await diagnostics(client, main_uri, since=published) == []
        published = len(client.published)
        client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=models_uri))
        )
        assert [d.code for d in await diagnostics(client, main_uri, since=published)] == ["FAB001"]
        assert main.read_text() and models.read_text() == models_text  # nothing was written


async def test_a_module_changed_on_disk_is_seen_through_watched_files(preset, tmp_path):
    case = copy_case("fab002_block_in_other_module", tmp_path)
    main, model = case / "main.py", case / "model.py"
    async with session(capabilities(preset), [case]) as (client, _):
        main_uri = open_doc(client, main)
        (finding,) = await diagnostics(client, main_uri, version=1)
        assert finding.code == "FAB002" and "`Block`" in finding.message
        # Another tool (git checkout, a formatter) gives Block a reset_parameters on disk.
        text = model.read_text()
        model.write_text(
            text.replace(
                "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        return x + torch.tanh",
                "    def reset_parameters(self) -> None:\n        nn.init.zeros_(self.gate)\n\n"
                "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        return x + torch.tanh",
                1,
            )
        )
        published = len(client.published)
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=model.as_uri(), type=types.FileChangeType.Changed)]
            )
        )
        assert await diagnostics(client, main_uri, since=published) == []


async def test_pull_client_with_refresh_support_is_asked_to_pull_again(tmp_path):
    def refresh(caps: types.ClientCapabilities) -> None:
        caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)

    case = copy_case("fab001_model_in_other_file", tmp_path)
    main, models = case / "main.py", case / "models.py"
    async with session(capabilities("neovim", refresh), [case]) as (client, _):
        main_uri = open_doc(client, main)
        assert [d.code for d in await diagnostics(client, main_uri)] == ["FAB001"]
        models_uri = open_doc(client, models)
        await diagnostics(client, models_uri)
        assert client.diagnostic_refresh_count == 0
        # main.py's own text does not change, so only a refresh request makes the editor pull it.
        replace_text(client, models_uri, 2, models.read_text().replace(EMBED_RUNS_TOWER, EMBED_IS_MATH))
        await wait_until(lambda: client.diagnostic_refresh_count > 0, message="workspace/diagnostic/refresh")
        assert await diagnostics(client, main_uri) == []
        assert client.published == []


SETUP_LINE = "    model, optimizer = fabric.setup(model, optimizer)\n"
MARKED = SETUP_LINE + '    model.mark_forward_method("continue_sequence")\n'


async def test_a_finding_in_a_helper_follows_edits_of_its_caller(preset, tmp_path):
    """The finding sits in sampling.py, where the call raises; whether it does depends on main.py,
    which wraps the model and passes it in. Editing main.py (open in the editor) updates the
    helper's diagnostics, and the helper's finding points back at the call chain in main.py."""
    case = copy_case("fab001_flow_helper_other_module", tmp_path)
    main, sampling = case / "main.py", case / "sampling.py"
    main_text = main.read_text()
    assert SETUP_LINE in main_text
    async with session(capabilities(preset), [case]) as (client, _):
        sampling_uri = open_doc(client, sampling)
        (finding,) = await diagnostics(client, sampling_uri, version=1)
        assert finding.code == "FAB001" and "MelodyLSTM.continue_sequence()" in finding.message
        related = {(r.location.uri, r.message) for r in finding.related_information}
        assert (main.as_uri(), "the wrapped model is passed to `sample_melodies` here") in related

        main_uri = open_doc(client, main)
        await diagnostics(client, main_uri, version=1)
        published = len(client.published)
        replace_text(client, main_uri, 2, main_text.replace(SETUP_LINE, MARKED))  # marked: no error
        assert await diagnostics(client, sampling_uri, since=published) == []

        published = len(client.published)
        replace_text(client, main_uri, 3, main_text)  # undone: the helper's finding is back
        assert [d.code for d in await diagnostics(client, sampling_uri, since=published)] == ["FAB001"]
