"""Where a rule's documentation page is: the copy installed with the package, and the team's docs URL.

The pages of docs/rules/ ship inside the package as `fabric_lsp/rule_pages/FAB001.md` (in a source
checkout, `server/fabric_lsp/rule_pages` is a link to `docs/rules`), so `explain`, hover, the JSON
`url`, SARIF `helpUri` and each diagnostic's `codeDescription.href` point at a page that exists
wherever fabric-lsp is installed. A team that publishes the pages sets `docs-url` in
`[tool.fabric-lsp]` (or the editor setting of the same name): `https://docs.example.org/rules/{code}.html`
(`{code}` is replaced by the rule's code), or a folder URL to which `FAB001.md` is appended. Lightning's
source line stays the record's evidence (`Source:` in `explain`, the record's `githubUrl`).
"""

from __future__ import annotations

import re
from pathlib import Path

PAGES_DIR = Path(__file__).resolve().parent.parent / "rule_pages"
_CODE = re.compile(r"^[A-Z]+[0-9]+$")
_URL = re.compile(r"^https?://[^\s\"'<>`]+$")


def installed_page(code: str) -> Path | None:
    """The rule's page as installed (None for a code without a page, e.g. invalid-syntax)."""
    if not _CODE.match(code):
        return None
    page = PAGES_DIR / f"{code}.md"
    return page if page.is_file() else None


def valid_docs_url(value: str) -> bool:
    """An http(s) URL without spaces or quotes (it is shown in terminals and Markdown)."""
    return bool(_URL.match(value))


def docs_page_url(code: str, docs_url: str | None) -> str | None:
    """The team's page of the rule: `{code}` replaced, else `<docs_url>/<code>.md`."""
    if not docs_url or not _CODE.match(code):
        return None
    if "{code}" in docs_url:
        return docs_url.replace("{code}", code)
    return docs_url.rstrip("/") + f"/{code}.md"


def page_url(code: str, docs_url: str | None = None) -> str | None:
    """The link every output gives for the rule: the team's page when `docs-url` is set, else the
    installed page's file:// URI; None when the code has no page."""
    if installed_page(code) is None:
        return None
    return docs_page_url(code, docs_url) or installed_page(code).as_uri()


def page_lines(code: str, docs_url: str | None = None) -> list[str]:
    """What `explain` and hover end with: the team's page (when set) and the installed copy."""
    page = installed_page(code)
    if page is None:
        return []
    team = docs_page_url(code, docs_url)
    lines = [f"Rule page: {team}"] if team else []
    lines.append(f"{'Installed copy' if team else 'Rule page'}: {page.as_uri()}")
    return lines
