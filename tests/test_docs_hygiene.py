"""The user-facing documents say what exists: the README without the stale sentences issue 14
found, one VS Code section (the extension's README points at it), the screenshots it shows present,
and a CHANGELOG in Keep a Changelog's shape that covers every rule and the main features."""

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


def test_the_extensions_readme_points_at_the_one_vs_code_section():
    assert "\n## VS Code\n" in README
    extension = " ".join((ROOT / "vscode-client" / "README.md").read_text(encoding="utf-8").split())
    # The .vsix's README cannot link into the repository: it names the README and its section.
    assert 'README (`README.md` at the root of the repository), section "VS Code"' in extension
    assert "fabric-lsp.trustedWorkspace" not in extension and "| `fabric-lsp." not in extension  # no copy of the table


def test_every_image_the_readme_shows_exists_and_is_no_labelled_fixture():
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README)
    assert images
    for image in images:
        assert (ROOT / image).is_file(), image
    assert "# expect:" not in README.split("## Quick start", 1)[0]


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
