"""The language server (`fabric-lsp serve`): pygls wiring around the engine.

server.py     handlers, analysis scheduling, push/pull diagnostics, settings, commands
documents.py  open documents (incremental sync), analysis snapshots and results
positions.py  code points <-> utf-8 / utf-16 / utf-32 positions
convert.py    findings -> diagnostics (with their fixes and suppression edit in `data`)
actions.py    quick fixes, "disable for this line", fix-all, codeAction/resolve
hover.py      the knowledge-base record of the finding (or noqa code) under the cursor
settings.py   initializationOptions / workspace/configuration -> per-folder settings
logs.py       Python logging -> window/logMessage and $/logTrace
"""
