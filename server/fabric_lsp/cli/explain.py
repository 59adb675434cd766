"""`fabric-lsp explain CODE|MESSAGE`: a rule's or a runtime error's documentation from its record."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Sequence

from fabric_lsp.settings.config import (load_config)
from fabric_lsp.report.escape import escape_lines
from fabric_lsp.cli.arguments import PROG, UsageError
from fabric_lsp.cli.output import say


def cmd_explain(args: argparse.Namespace) -> int:
    """The record of a rule code or name, a record id, a runtime message, or a fragment of one
    (records/matching.py): best match first, with why it matched. Exit 0 when a record is shown;
    1 when the message matches none; 2 for usage errors, and for a code-shaped query (`FAB999`)
    that names no rule."""
    from fabric_lsp.records import (explain_note, explain_query, load_records, looks_like_code, render_markdown,
                                    render_text)
    from fabric_lsp.records.pages import page_url

    queries = _separate_queries(args.query)
    query = queries[0] if queries else ""
    if query == "-":
        queries = [query := sys.stdin.read().strip()]
    if not query:
        raise UsageError("explain: give a rule code, a rule name, a record id or an error message")
    config, problems = load_config(Path(os.getcwd()))
    for problem in problems:
        say(problem)
    records = load_records(config.extend_records)
    for problem in records.problems:
        say(f"{PROG}: records: {problem}")
    for notice in records.notices:
        say(f"{PROG}: notice: records: {notice}")
    renderer = render_markdown if args.format == "markdown" else render_text
    status = 0
    shown = 0
    for query in queries:
        notices: list[str] = []
        found = explain_query(records, query, notices)
        for notice in notices:
            say(f"{PROG}: notice: records: {notice}")
        if not found:
            if looks_like_code(query):
                say(f"{PROG}: error: no rule or record matches {query[:200]!r} (see `{PROG} rules`)")
                status = 2
            else:
                say(f"{PROG}: no rule or record matches {query[:200]!r}: give a rule code (see `{PROG} rules`), "
                     "a runtime error message, or at least 3 words of one in order")
                status = max(status, 1)
            continue
        best = found[0]
        if args.url:  # the rule page's link alone: the team's (docs-url) or the installed copy
            url = page_url(best.code, config.docs_url) if best.code else None
            if url is None:
                say(f"{PROG}: error: {query[:200]!r} matches the record {best.record.id}, which is no rule's: "
                    "it has no rule page")
                status = max(status, 1)
            else:
                sys.stdout.write(escape_lines(url + "\n"))
            continue
        note = explain_note(best, found[1:])
        if shown:
            sys.stdout.write("\n")  # one blank line between the rules of `explain FAB001 FAB003`
        sys.stdout.write(escape_lines(renderer(best.record, context=best.context, code=best.code, note=note,
                                               docs_url=config.docs_url)))
        shown += 1
    return status


def _separate_queries(words: Sequence[str]) -> list[str]:
    """`explain FAB001 FAB003` (or rule names, record ids): one query per word when every word is one
    of those; any other words are one message (`explain You are calling the method`), as before."""
    from fabric_lsp.records import looks_like_code

    words = [word.strip() for word in words if word.strip()]
    single = re.compile(r"[a-z]+(?:-[a-z]+)+|[0-9a-f]{16}")
    if len(words) > 1 and all(looks_like_code(word) or single.fullmatch(word) for word in words):
        return words
    return [" ".join(words)] if words else []

