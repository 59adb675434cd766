"""Issue 29 item 6: the rule pages (docs/rules/*.md) ship inside the package, and every output links
the installed page, or the team's `docs-url` when the settings set one:

- the wheel, built from the repository as it is and installed alone in a new virtual environment,
  holds `fabric_lsp/rule_pages/<CODE>.md` for every rule of the registry, equal to docs/rules;
  `explain` ends with its file:// link, JSON `url` and SARIF `helpUri` are that link, and Lightning's
  source stays the record's evidence (`Source:`, SARIF `properties.source`);
- `docs-url` in `[tool.fabric-lsp]` makes every link the team's page (`{code}` replaced); a value that
  is not an http(s) URL is refused with the key named;
- the server (tests/lsp/test_lsp_rule_pages.py): every diagnostic carries `codeDescription.href`,
  hover ends with the page's link.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
from fabric_lsp.records import RULES, default_records
from fabric_lsp.records.pages import page_url

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "fixtures" / "cases" / "fab001_generate_ddp_literal.py"
TEAM = "https://docs.example.org/fabric/{code}.html"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A new virtual environment with the wheel built from the repository (its `rule_pages` link to
    docs/rules kept as a link, as a checkout has it) installed alone; its dependencies (pygls, jedi, ...)
    are read from the test interpreter's site-packages through a .pth line (no network), which holds
    no fabric_lsp of its own (the developer's editable install is a .pth there, not followed)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "LICENSE", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "docs", source / "docs")
    shutil.copytree(ROOT / "server", source / "server", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    assert (source / "server" / "fabric_lsp" / "rule_pages").is_symlink()
    dist = tmp_path_factory.mktemp("dist")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", str(source), "-w", str(dist)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    (wheel,) = dist.glob("fabric_lsp-*.whl")
    env_dir = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet",
                                "--target", str(site), str(wheel)], capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr
    (site / "zz_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def run(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(python), "-m", "fabric_lsp", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_the_installed_wheel_ships_and_links_every_rule_page(installed, tmp_path):
    located = subprocess.run([str(installed), "-c", "import fabric_lsp, os; print(os.path.dirname(fabric_lsp.__file__))"],
                             capture_output=True, text=True, cwd=tmp_path, env={"PATH": os.environ["PATH"]})
    package = Path(located.stdout.strip())
    assert package.is_relative_to(installed.parent.parent), package  # the wheel's copy, not the checkout
    for rule in RULES:  # every rule of the registry, whatever its number
        page = package / "rule_pages" / f"{rule.code}.md"
        assert page.is_file() and not page.is_symlink(), page
        assert page.read_text(encoding="utf-8") == (ROOT / "docs" / "rules" / f"{rule.code}.md").read_text(encoding="utf-8")
        explained = run(installed, "explain", rule.code, cwd=tmp_path)
        assert explained.returncode == 0, explained.stderr
        assert explained.stdout.endswith(f"\n\nRule page: {page.as_uri()}\n")
        assert run(installed, "explain", "--url", rule.code, cwd=tmp_path).stdout == page.as_uri() + "\n"
        record = default_records().by_id(rule.record_id)
        assert f"Source: " in explained.stdout and record.github_url in explained.stdout  # the evidence stays
    shutil.copy(CASE, tmp_path / "train.py")
    page = package / "rule_pages" / "FAB001.md"
    [item] = json.loads(run(installed, "check", "--no-cache", "--output-format", "json", "train.py", cwd=tmp_path).stdout)
    assert item["url"] == page.as_uri()
    sarif = json.loads(run(installed, "check", "--no-cache", "--output-format", "sarif", "train.py", cwd=tmp_path).stdout)
    rules = {r["id"]: r for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["FAB001"]["helpUri"] == page.as_uri()
    assert rules["FAB001"]["properties"]["source"] == default_records().by_code("FAB001").github_url
    listed = json.loads(run(installed, "rules", "--format", "json", cwd=tmp_path).stdout)
    assert [(r["code"], r["url"]) for r in listed] == [(r.code, (package / "rule_pages" / f"{r.code}.md").as_uri())
                                                       for r in RULES]


def test_docs_url_points_every_link_at_the_teams_pages(tmp_path):
    shutil.copy(CASE, tmp_path / "train.py")
    (tmp_path / "pyproject.toml").write_text(f'[tool.fabric-lsp]\ndocs-url = "{TEAM}"\n')
    env = dict(os.environ, PYTHONPATH=str(ROOT / "server"))

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "fabric_lsp", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)

    team = TEAM.replace("{code}", "FAB001")
    [item] = json.loads(cli("check", "--no-cache", "--output-format", "json", ".").stdout)
    assert item["url"] == team
    sarif = json.loads(cli("check", "--no-cache", "--output-format", "sarif", ".").stdout)
    assert {r["id"]: r["helpUri"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}["FAB001"] == team
    explained = cli("explain", "FAB001").stdout
    assert explained.endswith(f"\n\nRule page: {team}\nInstalled copy: {page_url('FAB001')}\n")
    # `explain --url`: the link alone, one line per query; a pasted message names its rule's page.
    assert cli("explain", "--url", "FAB001", "FAB009").stdout == f"{team}\n{TEAM.replace('{code}', 'FAB009')}\n"
    assert cli("explain", "--url", "You are calling the method from outside the model").stdout == team + "\n"
    unknown = cli("explain", "--url", "FAB999")
    assert unknown.returncode == 2 and unknown.stdout == ""
    # The documentation site's rule pages (MkDocs directory URLs, docs/ci.md): `{code}/`.
    (tmp_path / "pyproject.toml").write_text('[tool.fabric-lsp]\ndocs-url = "https://docs.example.org/fabric-lsp/rules/{code}/"\n')
    assert cli("explain", "--url", "FAB003").stdout == "https://docs.example.org/fabric-lsp/rules/FAB003/\n"
    # A folder URL: the page's file name is appended.
    (tmp_path / "pyproject.toml").write_text('[tool.fabric-lsp]\ndocs-url = "https://git.example.org/t/docs/rules/"\n')
    [item] = json.loads(cli("check", "--no-cache", "--output-format", "json", ".").stdout)
    assert item["url"] == "https://git.example.org/t/docs/rules/FAB001.md"
    # Not an http(s) URL: a configuration error (status 2, as every mistake in a settings file), with the
    # file, line and key; nothing is checked with other settings than those written.
    (tmp_path / "pyproject.toml").write_text('[tool.fabric-lsp]\ndocs-url = "javascript:alert(1)"\n')
    refused = cli("check", "--no-cache", "--output-format", "json", ".")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.startswith(f"fabric-lsp: config error: {tmp_path / 'pyproject.toml'}:2: docs-url: "
                                     "expected an http(s) URL")
