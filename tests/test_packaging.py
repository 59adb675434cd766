"""The wheel's metadata (issue 14): classifiers, keywords, a long description for the package index
with no relative link (README.md links to repository files, which a package page cannot show), and
the typing marker. Built as a user would: `pip wheel --no-deps .`, then METADATA read from it."""

from __future__ import annotations

import email.parser
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CLASSIFIERS = {
    "Development Status :: 3 - Alpha",
    "Environment :: Console",
    "Intended Audience :: Developers",
    "Operating System :: POSIX :: Linux",
    "Programming Language :: Python :: 3 :: Only",
    "Programming Language :: Python :: 3.10",
    "Programming Language :: Python :: 3.11",
    "Programming Language :: Python :: 3.12",
    "Programming Language :: Python :: 3.13",
    "Topic :: Software Development :: Quality Assurance",
    "Typing :: Typed",
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("source")
    # A copy of the tree pip builds from (no build/ or egg-info of the developer's checkout).
    for name in ("pyproject.toml", "LICENSE", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "docs", source / "docs")
    shutil.copytree(ROOT / "server", source / "server", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", str(source), "-w", str(out)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    (built,) = out.glob("fabric_lsp-*.whl")
    return built


def _metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(archive.read(name).decode("utf-8")), archive.namelist()


def test_classifiers_keywords_urls(wheel):
    metadata, _ = _metadata(wheel)
    assert CLASSIFIERS <= set(metadata.get_all("Classifier"))
    assert not [c for c in metadata.get_all("Classifier") if c.startswith("License ::")]  # License-Expression instead
    assert metadata["License-Expression"] == "MIT"
    keywords = metadata["Keywords"].split(",")
    assert {"lightning", "pytorch", "linter", "language-server", "lsp"} <= set(keywords)
    assert "Lightning Fabric runtime errors" in metadata["Summary"] and "frozen modules under DDP" in metadata["Summary"]
    # No project URL: the project has no public address yet (no git remote, none in the README).
    # Add [project.urls] once it has one; they must then be absolute https URLs.
    for url in metadata.get_all("Project-URL") or []:
        assert re.match(r"^[^,]+, https://", url), url


def _links(markdown: str) -> list[str]:
    targets = re.findall(r"\]\(\s*<?([^)\s>]+)", markdown)  # [text](target), ![alt](target)
    targets += re.findall(r"^\s*\[[^\]]+\]:\s*(\S+)", markdown, flags=re.M)  # [label]: target
    targets += re.findall(r"""(?:href|src)\s*=\s*["']([^"']+)""", markdown)  # HTML
    return targets


def test_long_description_has_no_relative_link(wheel):
    metadata, _ = _metadata(wheel)
    assert metadata["Description-Content-Type"].startswith("text/markdown")
    description = metadata.get_payload()
    assert description.startswith("# fabric-lsp\n")
    assert description == (ROOT / "docs" / "pypi.md").read_text(encoding="utf-8")
    relative = [link for link in _links(description) if not re.match(r"^(https?|mailto):", link)]
    assert relative == []
    # The detector finds what README.md has (so an empty answer above means something).
    assert "vscode-client/README.md" in _links((ROOT / "README.md").read_text(encoding="utf-8"))


def test_description_lists_the_readmes_rules():
    row = re.compile(r"^\| (FAB\d{3}) \| ([a-z-]+) \|", re.M)
    readme = row.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert readme and row.findall((ROOT / "docs" / "pypi.md").read_text(encoding="utf-8")) == readme


def test_wheel_ships_the_typing_marker_and_data(wheel):
    _, names = _metadata(wheel)
    assert "fabric_lsp/py.typed" in names
    assert "fabric_lsp/api.py" in names
    assert any(n.startswith("fabric_lsp/records/data/") and n.endswith(".json") for n in names)
    assert "fabric_lsp/records/paths.json" in names
    for library in ("transformers", "peft", "timm", "open_clip", "torchvision", "diffusers", "sentence_transformers"):
        assert f"fabric_lsp/analysis/libraries/data/{library}.json" in names
    assert "fabric_lsp/analysis/libraries/data/torch_tables.json" in names  # torch's and Lightning's
