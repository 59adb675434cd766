"""The user-facing documents say what exists: the README without the stale sentences issue 14
found, short (issue 37: at most 250 lines, the rest on the documentation site) and linking only to files
that exist, one VS Code section (the extension's README points at the documentation's), the screenshots
the documents show present, and a CHANGELOG in Keep a Changelog's shape that covers every rule and the
main features."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fabric_lsp.records import RULES

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("stale", [
    "soon, a language server",
    "arrives with the language-server issue",
    "two errors",
])
def test_readme_has_no_stale_sentence(stale):
    assert stale not in README


def test_readme_is_short_and_links_what_exists():
    assert len(README.splitlines()) <= 250
    links = re.findall(r"\]\(([^)\s]+)\)", README)
    relative = [link.split("#", 1)[0] for link in links if not re.match(r"^[a-z]+:", link)]
    assert relative and all((ROOT / link).exists() for link in relative), relative
    for section in ("## Install", "## Quick start", "## VS Code", "## Command line", "## Documentation"):
        assert f"\n{section}\n" in README, section


def test_the_extensions_readme_points_at_the_one_vs_code_section():
    assert "\n## VS Code\n" in (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    assert "(docs/editors.md#vs-code)" in README
    extension = " ".join((ROOT / "vscode-client" / "README.md").read_text(encoding="utf-8").split())
    # The .vsix's README cannot link into the repository: it names the page and its section.
    assert 'page "Editors", section "VS Code", with the settings on page "Configuration"' in extension
    assert "fabric-lsp.trustedWorkspace" not in extension and "| `fabric-lsp." not in extension  # no copy of the table


@pytest.mark.parametrize("document", ["README.md", *sorted(p.name for p in (ROOT / "docs").glob("*.md"))])
def test_every_image_a_document_shows_exists_and_is_no_labelled_fixture(document):
    path = ROOT / document if document == "README.md" else ROOT / "docs" / document
    text = path.read_text(encoding="utf-8")
    for image in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text):
        assert (path.parent / image).is_file(), image
    assert "# expect:" not in README.split("## Quick start", 1)[0]


def test_the_documentation_shows_the_vscode_pictures():
    editors = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    for name in ("vscode-diagnostic.png", "vscode-hover.png", "vscode-quickfix.png"):
        assert f"(images/{name})" in editors


def test_changelog_follows_keep_a_changelog_and_covers_what_exists():
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert changelog.startswith("# Changelog\n")
    assert "https://keepachangelog.com/" in changelog
    assert re.search(r"^## \[0\.1\.0\] - Unreleased$", changelog, re.M)
    sections = re.findall(r"^### (\w+)$", changelog, re.M)
    assert sections and set(sections) <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
    for rule in RULES:
        assert rule.code in changelog and rule.name in changelog
    for feature in ("notebooks", "language server", "VS Code", "pre-commit", "SARIF", "cache"):
        assert feature.lower() in changelog.lower(), feature
