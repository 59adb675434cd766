"""workspace/executeCommand: `fabric-lsp.explain` (a rule, record or runtime error message ->
the record) and `fabric-lsp.recheck` (settings read again, every open document checked again)."""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, Mapping

from lsprotocol import types

from fabric_lsp.lsp.session import FabricLanguageServer
from fabric_lsp.report.escape import escape_controls

log = logging.getLogger("fabric_lsp.lsp")

EXPLAIN_COMMAND = "fabric-lsp.explain"
RECHECK_COMMAND = "fabric-lsp.recheck"


async def explain(ls: FabricLanguageServer, *arguments: Any) -> dict[str, Any] | None:
    """Explain a rule code/name, a record id or a runtime error message: returns the record
    rendered as Markdown and as plain text, and shows the plain text with window/showMessage."""
    # The matcher and the renderers load on first use, not at `initialize` (issue 29).
    from fabric_lsp.records import explain_note, explain_query, render_markdown, render_text
    from fabric_lsp.records.pages import page_url

    try:
        query = arguments[0] if arguments else None
        if isinstance(query, Mapping):
            query = query.get("query") or query.get("code") or query.get("message")
        if not isinstance(query, str) or not query.strip():
            ls.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Warning,
                    message=f"{EXPLAIN_COMMAND}: give a rule code or an error message",
                )
            )
            return None
        query = query.strip()
        config, _ = ls.config_for(os.path.join(ls.root_path or os.getcwd(), "__explain__.py"))
        # Off the event loop: loading extension records and matching are bounded by counts, not short.
        loop = asyncio.get_running_loop()
        records = await loop.run_in_executor(None, ls.records_for, config)
        notices: list[str] = []
        # a code, a record id, a message or a fragment of one
        found = await loop.run_in_executor(None, explain_query, records, query, notices)
        for notice in notices:
            log.info("records: %s", notice)
        if not found:
            ls.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Warning, message=f"fabric-lsp: no rule or record matches {query[:200]!r}"
                )
            )
            return None
        best = found[0]
        record, context, code = best.record, best.context, best.code
        note = explain_note(best, found[1:])
        plaintext = render_text(record, context=context, code=code, note=note, docs_url=config.docs_url)
        ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Info, message=escape_controls(plaintext, keep="\n"))
        )
        return {
            "code": code,
            "record": record.id,
            "url": page_url(code, config.docs_url) if code else None,  # the rule page
            "source": record.github_url,  # Lightning's source: the record's evidence
            "context": context or {},
            "reason": best.reason,
            "markdown": render_markdown(record, context=context, code=code, note=note, docs_url=config.docs_url),
            "plaintext": plaintext,
        }
    except Exception:
        log.exception("%s failed", EXPLAIN_COMMAND)
        return None


async def recheck(ls: FabricLanguageServer, *arguments: Any) -> dict[str, Any] | None:
    """Re-read the settings and re-check every open document; returns when their diagnostics are
    out (or after a timeout)."""
    try:
        await ls.reload_settings()
        docs = [doc for doc in ls.units() if doc.is_python]
        try:
            await asyncio.wait_for(asyncio.gather(*(ls.current_result(doc) for doc in docs)), 60)
        except asyncio.TimeoutError:
            log.warning("%s: timed out waiting for the analyses", RECHECK_COMMAND)
        return {"rechecked": len(docs), "findings": sum(len(d.result.findings) for d in docs if d.result)}
    except Exception:
        log.exception("%s failed", RECHECK_COMMAND)
        return None


def register(server: FabricLanguageServer) -> None:
    server.command(EXPLAIN_COMMAND)(explain)
    server.command(RECHECK_COMMAND)(recheck)
