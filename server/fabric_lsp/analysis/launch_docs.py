"""Which scripts a project says it starts with Lightning's CLI (`fabric run ... train.py`,
`lightning run model ... train.py`) in its README, docs and shell scripts.

A script started that way never calls `launch()` (the CLI sets LT_CLI_USED, and Fabric counts itself
launched), so FAB005 must not call it broken. TinyLlama-style pretraining repositories document the
command in README.md or scripts/*.sh, not in the script. Read as text only (nothing is run), in the
project folder and the folders right below it, with every cost bounded: a hostile clone can make this
read at most MAX_DOCUMENTS files of MAX_DOCUMENT_BYTES each."""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass

from fabric_lsp.sources.files import disk_identity, existence_identity, identity_of, names_identity_of, read_text

MAX_DOCUMENTS = 200
MAX_DOCUMENT_BYTES = 256 * 1024
MAX_ENTRIES = 2_000
MAX_COMMANDS = 200  # commands read per document  # folder entries looked at, all folders together
DOCUMENT_SUFFIXES = (".md", ".rst", ".txt", ".sh", ".bash", ".slurm", ".sbatch", ".yaml", ".yml")
DOCUMENT_NAMES = ("Makefile", "makefile", "Justfile")

# A command as written to be run: at a line's start (after a prompt) or in backticks, not in prose.
_COMMAND = re.compile(r"(?:^|`)[ \t]*(?:[$>][ \t]*)?(?:\w+=\S*[ \t]+){0,8}(?:fabric\s+run(?:\s+model)?|lightning\s+run\s+model)\b", re.M)
_SCRIPT = re.compile(r"[\w./-]+\.py\b")


@dataclass(frozen=True)
class LaunchDocuments:
    scripts: frozenset[str]  # base names of the .py files named in a CLI launch command
    any_command: bool  # the project documents a CLI launch at all
    # (path, identity) of what was read: documents by disk_identity, folders by names_identity (a new
    # .ruff_cache or __pycache__ beside the scripts changes no document found)
    read: tuple[tuple[str, tuple | list | None], ...]


_cache: dict[str, LaunchDocuments] = {}


def launch_documents(root: str) -> LaunchDocuments:
    known = _cache.get(root)
    if known is not None and all(identity_of(path, identity) == (None if identity is None else list(identity))
                                 for path, identity in known.read):
        return known
    found = _scan(root)
    if len(_cache) > 64:
        _cache.clear()
    _cache[root] = found
    return found


def scripts_in(text: str) -> set[str]:
    """The .py paths each CLI launch command of `text` starts, as written (its line and the lines it
    continues with a trailing backslash)."""
    names: set[str] = set()
    for count, match in enumerate(_COMMAND.finditer(text)):
        if count >= MAX_COMMANDS:
            break
        end = match.end()
        command = []
        for line in text[end:end + 2_000].split("\n")[:20]:
            command.append(line)
            if not line.rstrip().endswith("\\"):
                break
        script = _SCRIPT.search(" ".join(command))
        if script is not None:
            names.add(script.group(0))
    return names


def _scan(root: str) -> LaunchDocuments:
    read: list[tuple[str, tuple | None]] = []
    documents: list[str] = []
    budget = [MAX_ENTRIES]  # folder entries still to look at, all folders together
    folders = []
    # The project folder, and its parent when the project folder is not a repository's root (a script
    # folder without markers: `pretrain/` of a repository whose README is one level up).
    tops = [root]
    parent = os.path.dirname(root)
    if not os.path.exists(os.path.join(root, ".git")) and parent and parent != root and parent != os.sep:
        tops.append(parent)
    for top_folder in tops:
        for entry in _listing(top_folder, budget, read):
            if entry.name.startswith(".") or entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.path not in tops:
                    folders.append(entry.path)
            elif _is_document(entry.name):
                documents.append(entry.path)
    for folder in folders:
        if len(documents) >= MAX_DOCUMENTS:
            break
        marker = os.path.join(folder, ".git")
        if os.path.lexists(marker):
            # Another repository (a checkout beside ours, a submodule): its commands start its scripts,
            # as long as it holds a .git (its own files change nothing here).
            read.append((marker, existence_identity(marker)))
            continue
        documents.extend(entry.path for entry in _listing(folder, budget, read)
                         if _is_document(entry.name) and not entry.name.startswith(".")
                         and entry.is_file(follow_symlinks=False))
    scripts: set[str] = set()
    any_command = False
    for path in documents[:MAX_DOCUMENTS]:
        identity = disk_identity(path)
        try:
            text = read_text(path, MAX_DOCUMENT_BYTES, follow=False, prefix=True)
        except (OSError, ValueError):
            continue
        read.append((path, identity))
        # Only scripts that exist where the command would run (the document's folder or a project
        # folder): an example in release notes (`fabric run ... x.py`) names none of ours.
        for written in scripts_in(text):
            bases = {os.path.dirname(path), *tops}
            if any(os.path.isfile(os.path.join(base, written)) for base in bases):
                scripts.add(os.path.basename(written))
                any_command = True
    return LaunchDocuments(frozenset(scripts), any_command, tuple(read))


def _listing(folder: str, budget: list[int], read: list) -> list:
    """A folder's entries in name order, at most the budget left (taken from it): a folder of a
    million entries costs what the budget allows, not its size."""
    if budget[0] <= 0:
        return []
    identity = disk_identity(folder)  # before the listing: a change after it is seen
    try:
        with os.scandir(folder) as listing:
            entries = list(itertools.islice(listing, budget[0]))
    except OSError:
        return []
    # Cut short by the budget, which entries were seen depends on every entry: the folder's own state.
    read.append((folder, names_identity_of(entries) if len(entries) < budget[0] else identity))
    budget[0] -= len(entries)
    return sorted(entries, key=lambda e: e.name)


def _is_document(name: str) -> bool:
    return name in DOCUMENT_NAMES or name.lower().startswith("readme") or name.endswith(DOCUMENT_SUFFIXES)
