"""The documentation site (issue 37): mkdocs.yml and docs/, built with MkDocs and Material for MkDocs.

- The generated files (the rule pages, the rules overview, the configuration and command-line references)
  are what `python scripts/generate_docs.py` writes from the code, and the settings descriptions it reads
  (server/fabric_lsp/settings/schema.py) cover exactly the keys the settings code accepts, with examples
  the settings parser accepts.
- The site builds without a warning (`mkdocs build`, whose warnings `--strict` turns into a failure: a
  broken link or anchor, a page missing from the nav), with its search index.
- Coverage, read from the code and checked in the built site: every rule has its page, in the nav and in
  the rules overview; every settings key (project, user config, VS Code) has its entry on the
  configuration page; every option of every command (argparse's, hidden ones included) has its row on
  the command-line page.
- A `docs-url` pointing at the published site names an existing page for every rule.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from fabric_lsp.cli.arguments import build_parser
from fabric_lsp.records.pages import page_url
from fabric_lsp.records.rules_table import RULES
from fabric_lsp.settings.config import KNOWN_KEYS, parse_settings
from fabric_lsp.settings.schema import PROJECT_KEYS, USER_KEYS
from fabric_lsp.settings.user_config import UserConfig

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
REGENERATE = "python scripts/generate_docs.py"


def _generator():
    spec = importlib.util.spec_from_file_location("generate_docs", ROOT / "scripts" / "generate_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_files_are_current():
    stale = [str(path.relative_to(ROOT)) for path, text in _generator().outputs().items()
             if not path.is_file() or path.read_text(encoding="utf-8") != text]
    assert stale == [], f"stale generated documentation: {stale}; run `{REGENERATE}`"


def test_the_settings_descriptions_cover_exactly_the_keys_of_the_code():
    assert [doc.key for doc in PROJECT_KEYS if doc.key not in KNOWN_KEYS] == []
    assert sorted(doc.key for doc in PROJECT_KEYS) == sorted(KNOWN_KEYS), "describe every key in settings/schema.py"
    user_keys = {field.name.replace("_", "-") for field in fields(UserConfig)} - {"path"}
    assert sorted(doc.key for doc in USER_KEYS) == sorted(user_keys)


def test_every_settings_example_is_accepted(tmp_path):
    tomllib = pytest.importorskip("tomllib", reason="Python 3.10 has no tomllib")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").write_text("")
    (tmp_path / "docs" / "records").mkdir(parents=True)
    for doc in PROJECT_KEYS:
        table = tomllib.loads(f"{doc.key} = {doc.example}")
        parsed, problems = parse_settings(table, tmp_path, "example")
        assert problems == [] and parsed, (doc.key, problems)
    for doc in USER_KEYS:
        tomllib.loads(f"{doc.key} = {doc.example}")


# -- the built site ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> dict:
    pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]' (make docs installs it)")
    folder = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    # Not --strict here, so that a missing entry is reported by the coverage tests below by name;
    # test_the_site_builds_without_a_warning fails on any warning, as `make docs` (--strict) does.
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-f", str(ROOT / "mkdocs.yml"), "-d", str(folder)],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    return {"folder": folder, "log": built.stdout + built.stderr}


def _page(site: dict, name: str) -> str:
    return (site["folder"] / name / "index.html").read_text(encoding="utf-8")


def test_the_site_builds_without_a_warning(site):
    warnings = [line for line in site["log"].splitlines() if re.match(r"^(WARNING|ERROR)\s+-", line)]
    assert warnings == []
    search = json.loads((site["folder"] / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert {"FAB001", "docs-url", "--output-format"} <= {word for doc in search["docs"]
                                                        for word in re.findall(r"[\w-]+", doc["text"] + doc["title"])}


def _nav_pages(items) -> list[str]:
    pages = []
    for item in items:
        if isinstance(item, str):
            pages.append(item)
        elif isinstance(item, dict):
            for value in item.values():
                pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def _nav() -> list[str]:
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)  # !relative, !ENV
    return _nav_pages(yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)["nav"])


def test_every_rule_has_a_page_in_the_nav_and_the_overview(site):
    nav = _nav()
    overview = _page(site, "rules")
    missing = []
    for rule in RULES:
        if not (DOCS / "rules" / f"{rule.code}.md").is_file():
            missing.append(f"{rule.code}: no docs/rules/{rule.code}.md")
        if f"rules/{rule.code}.md" not in nav:
            missing.append(f"{rule.code}: not in mkdocs.yml's nav")
        page = site["folder"] / "rules" / rule.code / "index.html"
        if not page.is_file() or f"({rule.code})" not in page.read_text(encoding="utf-8"):
            missing.append(f"{rule.code}: no page rules/{rule.code}/ in the site")
        if f'href="{rule.code}/"' not in overview:
            missing.append(f"{rule.code}: not in the rules overview (docs/rules.md)")
    assert missing == []


def _slug(text: str) -> str:
    return re.sub(r"[^\w-]", "", re.sub(r"\s+", "-", text.strip().lower()))


def test_every_settings_key_has_an_entry(site):
    page = _page(site, "configuration")
    missing = [key for key in KNOWN_KEYS if f'<h3 id="{key}">' not in page]
    user_keys = sorted(field.name.replace("_", "-") for field in fields(UserConfig) if field.name != "path")
    missing += [f"{key} (user config)" for key in user_keys if f'<h3 id="{_slug(key + " (user config)")}">' not in page]
    vscode = page.split('id="vs-code-settings"', 1)[-1]
    properties = json.loads((ROOT / "vscode-client" / "package.json").read_text())["contributes"]["configuration"]
    missing += [key for key in properties["properties"] if f"<td><code>{key}</code></td>" not in vscode]
    assert missing == [], "no entry on the configuration page (docs/configuration.md) for these keys"


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    commands = {"fabric-lsp": parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            commands.update({f"fabric-lsp {name}": sub for name, sub in action.choices.items()})
    return commands


def test_every_command_line_option_has_an_entry(site):
    page = _page(site, "cli")
    missing = []
    for command, parser in _commands().items():
        section = re.search(rf'<h3 id="{_slug(command)}">(.*?)(?=<h[23] |\Z)', page, re.S)
        if section is None:
            missing.append(f"{command}: no section")
            continue
        cells = set(re.findall(r"<td>(.*?)</td>", section[1], re.S))
        names = {name for cell in cells for name in re.findall(r"<code>(.*?)</code>", cell)}
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            wanted = action.option_strings or str(action.metavar or action.dest).split("|")
            missing += [f"{command} {name}" for name in wanted if name not in names]
    assert missing == [], "no entry on the command-line page (docs/cli.md) for these options"


def test_docs_url_of_the_published_site_names_each_rule_page(site):
    """docs/ci.md: with the site published at https://docs.example.org/fabric-lsp/, `docs-url =
    "https://docs.example.org/fabric-lsp/rules/{code}/"` links each rule's page of the site."""
    published = "https://docs.example.org/fabric-lsp/"
    documented = re.search(r'docs-url = "([^"]+)"', (DOCS / "ci.md").read_text(encoding="utf-8"))[1]
    assert documented.startswith(published)
    for rule in RULES:
        url = page_url(rule.code, documented)
        assert url.startswith(published), url
        target = site["folder"] / url[len(published):]
        assert (target / "index.html").is_file(), f"{url}: no page in the site"
        assert f"({rule.code})" in (target / "index.html").read_text(encoding="utf-8")
