"""`fabric-lsp rules [CODE ...]`: the rules, their codes and records (text, json, or their pages)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from fabric_lsp.settings.config import (load_config)
from fabric_lsp.cli.arguments import PROG, UsageError
from fabric_lsp.cli.output import say


def cmd_rules(args: argparse.Namespace) -> int:
    import json

    from fabric_lsp.records import RULES, default_records, rule_by_code

    chosen = []
    for code in args.codes:
        rule = rule_by_code(code)
        if rule is None:
            raise UsageError(f"rules: no rule {code!r} (see `{PROG} rules`)")
        chosen.append(rule)
    rules = tuple(chosen) or RULES
    if args.format == "markdown":
        from fabric_lsp.report.rule_docs import render_rule_pages

        sys.stdout.write(render_rule_pages([rule.code for rule in rules]))
        return 0
    records = default_records()
    if args.format == "json":
        from fabric_lsp.records.pages import page_url

        config, problems = load_config(Path(os.getcwd()))
        for problem in problems:
            say(problem)
        rows = []
        for rule in rules:
            record = records.by_id(rule.record_id)
            rows.append(
                {
                    "code": rule.code,
                    "name": rule.name,
                    "record": rule.record_id,
                    "summary": rule.summary,
                    "url": page_url(rule.code, config.docs_url),  # the rule page (records/pages.py)
                    "source": record.github_url if record else None,  # Lightning's source: the evidence
                }
            )
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    name_width = max(len(rule.name) for rule in rules)
    for rule in rules:
        sys.stdout.write(f"{rule.code}  {rule.name:<{name_width}}  {rule.record_id}  {rule.summary}\n")
    return 0

