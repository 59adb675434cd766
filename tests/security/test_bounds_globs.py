"""Hostile `exclude` globs in a repository's pyproject: matched in linear time, a bad one reported in one
line and ignored while the others still apply; `check` and the server both go on."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "lsp"))  # lspkit

from lspkit import TIMEOUT, capabilities, diagnostics, open_doc, session  # noqa: E402
from lsprotocol import types  # noqa: E402

CASE = REPO / "fixtures" / "cases" / "fab001_call_before_mark.py"
# Twelve `**/` in one glob: a backtracking regex takes > 120 s on a deep path that does not match.
HANG_GLOB = "**/" * 12 + "nomatch_*.py"


def run_check(root: Path, *args: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "server")}
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "fabric_lsp", "check", "--no-cache", *args, "."],
        cwd=root, env=env, capture_output=True, text=True, timeout=timeout,
    )
    return result, time.monotonic() - started


def reported_files(stdout: str) -> list[str]:
    return sorted(Path(finding["filename"]).name for finding in json.loads(stdout))


def hostile_tree(root: Path, excludes: list[str]) -> None:
    """A real FAB001 in main.py, a planted file under `generated/` the other glob must exclude, and a
    deep directory chain so that the backtracking glob has something to chew on."""
    listed = ", ".join('"' + pattern.replace("\\", "\\\\") + '"' for pattern in excludes)
    (root / "pyproject.toml").write_text(f"[tool.fabric-lsp]\nexclude = [{listed}]\n")
    shutil.copy(CASE, root / "main.py")
    (root / "generated").mkdir()
    shutil.copy(CASE, root / "generated" / "planted.py")  # would add a second FAB001 if not excluded
    deep = root.joinpath(*["a" * 8] * 40)
    deep.mkdir(parents=True)
    (deep / "leaf.py").write_text("x = 1\n")


def test_glob_with_twelve_double_stars_finishes_quickly(tmp_path):
    hostile_tree(tmp_path, [HANG_GLOB, "generated/"])
    # A backtracking matcher takes > 120 s here: run_check's timeout (60 s) fails it; never timed otherwise.
    result, _ = run_check(tmp_path, "--format", "json")
    assert "Traceback" not in result.stderr
    assert result.returncode == 1, result.stderr  # the real finding
    assert reported_files(result.stdout) == ["main.py"]


def test_glob_of_many_stars_finishes_quickly(tmp_path):
    # `*a*a...*b` against a long name of a's: polynomial of degree 20 for a backtracking matcher.
    hostile_tree(tmp_path, ["*a" * 20 + "b.py", "generated/"])
    (tmp_path / ("a" * 200 + ".py")).write_text("x = 1\n")
    result, _ = run_check(tmp_path, "--format", "json")  # the timeout is the hang guard
    assert "Traceback" not in result.stderr
    assert reported_files(result.stdout) == ["main.py"]


def test_reversed_range_is_one_notice_and_other_excludes_apply(tmp_path):
    hostile_tree(tmp_path, ["[z-a]", "generated/"])
    result, _ = run_check(tmp_path, "--format", "json")
    assert "Traceback" not in result.stderr
    notices = [line for line in result.stderr.splitlines() if "[z-a]" in line]
    assert len(notices) == 1, result.stderr
    assert notices[0].startswith("fabric-lsp: notice: ") and 'exclude: "[z-a]": ' in notices[0]
    assert notices[0].endswith("; ignored")
    assert result.returncode == 1  # as for the tree without the bad glob: one FAB001
    assert reported_files(result.stdout) == ["main.py"]


@pytest.mark.parametrize("pattern", ["[abc", "a/[b/c]d", "x" * 5000])
def test_other_bad_globs_are_reported_not_fatal(tmp_path, pattern):
    hostile_tree(tmp_path, [pattern, "generated/"])
    result, _ = run_check(tmp_path)
    assert "Traceback" not in result.stderr
    assert result.returncode == 1
    assert sum("exclude:" in line and line.endswith("; ignored") for line in result.stderr.splitlines()) == 1


async def test_server_answers_hover_with_hostile_globs(tmp_path):
    hostile_tree(tmp_path, [HANG_GLOB, "[z-a]", "generated/"])
    main = tmp_path / "main.py"
    async with session(capabilities("neovim"), [tmp_path]) as (client, result):
        uri = open_doc(client, main)
        found = await diagnostics(client, uri, version=1)  # (lspkit's TIMEOUT: only a hang guard)
        assert [d.code for d in found] == ["FAB001"]
        position = found[0].range.start  # hover on the finding shows its record
        hover = await asyncio.wait_for(
            client.text_document_hover_async(
                types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=position)
            ),
            TIMEOUT,
        )
        assert hover is not None and "mark_forward_method" in str(hover.contents)
