"""The language server (`fabric-lsp serve`): pygls wiring around the engine.

server.py     entry points: create_server(), run()
session.py    FabricLanguageServer: the session state (documents, notebooks, settings, folders,
              client features), transport loops, messages, configuration
scheduling.py when analyses run (debounce, worker thread, staleness, dependents); publishing
handlers/     one module per request/notification family (lifecycle, text_documents, notebooks,
              workspace, diagnostics, code_actions, hover, commands)
documents.py  open documents (incremental sync) and notebooks, analysis snapshots and results
cells.py      a notebook's findings, from its joined cells to each cell
positions.py  code points <-> utf-8 / utf-16 / utf-32 positions
convert.py    findings -> diagnostics (with their fixes and suppression edit in `data`)
actions.py    quick fixes, "disable for this line", fix-all, codeAction/resolve
hover.py      the knowledge-base record of the finding (or noqa code) under the cursor
settings.py   initializationOptions / workspace/configuration -> per-folder settings
logs.py       Python logging -> window/logMessage and $/logTrace
protocol.py   JSON-RPC checks pygls leaves out; notebook bookkeeping that never blocks a handler
transport.py  LSP frames from a byte stream; the TCP token check
early_initialize.py      `initialize` answered over stdio before pygls is imported (standard library only)
early_initialize_data.py its data: the request schema pygls is sure to accept, pygls' answers (generated)
early_initialize_gen.py  writes that data with lsprotocol and the real server
"""
