"""The handlers, one module per request or notification family (as ruff's server keeps them):

lifecycle.py       initialize, initialized, shutdown, exit
text_documents.py  textDocument/didOpen, didChange, didSave, didClose
notebooks.py       notebookDocument/didOpen, didChange, didSave, didClose
workspace.py       workspace/didChangeWatchedFiles, didChangeConfiguration, didChangeWorkspaceFolders
diagnostics.py     textDocument/diagnostic, workspace/diagnostic (pull; registered in initialize)
code_actions.py    textDocument/codeAction, codeAction/resolve
hover.py           textDocument/hover
commands.py        workspace/executeCommand: fabric-lsp.explain, fabric-lsp.recheck
guard.py           `guarded`: a handler's exception is a log line and a default answer

Each handler is a module-level function whose first parameter `ls` is the server (pygls passes it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fabric_lsp.lsp.session import FabricLanguageServer


def register_all(server: FabricLanguageServer) -> None:
    from fabric_lsp.lsp.handlers import (
        code_actions,
        commands,
        hover,
        lifecycle,
        notebooks,
        text_documents,
        workspace,
    )

    for module in (lifecycle, text_documents, notebooks, workspace, code_actions, hover, commands):
        module.register(server)
