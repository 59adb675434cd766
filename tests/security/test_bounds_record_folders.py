"""`extend-records` cannot make a run read the machine (issue 24, item 12).

`extend-records = ["/"]` made every cached `check` walk the whole file system for the cache's
fingerprint (measured: 64 s, 8 CPU-s, 438 MB for the second run here; the first one failed with a
traceback from /proc). Now a settings file may name record folders inside its own folder only,
others with the user config's consent (`record-paths`, or a trusted workspace); a check reads no
record folder at all (extension records change no finding), and explain reads a folder's `*.json`
files, at most MAX_RECORD_FILES of them.

What a run read is counted, not timed (tests/security/audited.py: an audit hook records every file
opened and folder listed): nothing outside the project, the user config's folder and Python's own
files, where the old cached run listed the whole machine.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from fabric_lsp.records.loader import MAX_RECORD_FILES

from tests.security.audited import FOLDERS_BOUND, run_cli_audited
from tests.security.hostile import REPO_ROOT, user_config_env
from tests.security.measure import run_cli

CASE = REPO_ROOT / "fixtures" / "cases" / "fab001_call_before_mark.py"
DATA_DIR = REPO_ROOT / "server" / "fabric_lsp" / "records" / "data"
ADDED_ID = "0badc0de0badc0de"
MEMORY_BOUND_MB = 250  # measured about 40 MB (the old cached run: 438 MB)


def _repo(root: Path, folder: str) -> Path:
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(f"[tool.fabric-lsp]\nextend-records = [{json.dumps(folder)}]\n")
    shutil.copy(CASE, root / "train.py")
    return root


def _record_folder(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    document = json.loads(next(DATA_DIR.glob("*.json")).read_text(encoding="utf-8"))
    document["record"]["id"] = ADDED_ID
    (folder / "added.json").write_text(json.dumps(document), encoding="utf-8")
    return folder


def _notices(stderr: str, folder: str) -> list[str]:
    return [line for line in stderr.splitlines() if "extend-records" in line and repr(folder) in line]


@pytest.mark.parametrize("consent", [False, True], ids=["refused", "consented"])
def test_root_folder_costs_nothing_in_cached_checks(tmp_path, consent):
    repo = _repo(tmp_path / "repo", "/")
    env = user_config_env(tmp_path, 'record-paths = ["/"]\n' if consent else "")
    for run in range(2):  # the second run answers from the cache
        result, reads = run_cli_audited(repo, env, "check", ".")
        assert result.returncode == 1 and "FAB001" in result.stdout, result.stderr
        assert "Traceback" not in result.stderr
        assert result.peak_mb < MEMORY_BOUND_MB, (run, result)
        # Counted, not timed: a check reads no record folder, so nothing outside (the old cached run
        # listed every folder of the machine for its fingerprint).
        assert reads.outside(tmp_path) == ([], []), (run, reads.outside(tmp_path))
        assert len(set(reads.listed)) <= FOLDERS_BOUND, (run, len(set(reads.listed)))
        assert len(_notices(result.stderr, "/")) == (0 if consent else 1), result.stderr
    explained, reads = run_cli_audited(repo, env, "explain", "FAB001")
    assert explained.returncode == 0 and "Traceback" not in explained.stderr, explained.stderr
    assert explained.peak_mb < MEMORY_BOUND_MB, explained
    assert len(set(reads.listed)) <= FOLDERS_BOUND, len(set(reads.listed))
    opened, listed = reads.outside(tmp_path)
    if consent:  # "/" itself is listed once for its own *.json files (at most MAX_RECORD_FILES), no folder below
        assert listed == ["/"], listed
        assert len(opened) <= MAX_RECORD_FILES and all(
            os.path.dirname(path) == "/" and path.endswith(".json") for path in opened), opened
    else:
        assert (opened, listed) == ([], []), (opened, listed)


def test_folder_outside_needs_the_user_configs_consent(tmp_path):
    repo = _repo(tmp_path / "repo", "../outside")
    outside = _record_folder(tmp_path / "outside")
    refused = run_cli(repo, user_config_env(tmp_path), "explain", ADDED_ID)
    assert refused.returncode == 1, refused.stderr  # its records are not loaded
    [notice] = _notices(refused.stderr, str(outside))
    assert "outside the settings file's folder" in notice and "record-paths" in notice, notice
    consented = run_cli(repo, user_config_env(tmp_path, f'record-paths = ["{outside}"]\n'), "explain", ADDED_ID)
    assert consented.returncode == 0, consented.stderr
    assert not _notices(consented.stderr, str(outside)), consented.stderr
    trusted = run_cli(repo, user_config_env(tmp_path, "trusted = true\n"), "explain", ADDED_ID)
    assert trusted.returncode == 0, trusted.stderr


def test_a_link_inside_leading_outside_is_outside(tmp_path):
    repo = _repo(tmp_path / "repo", "kb")
    _record_folder(tmp_path / "outside")
    (repo / "kb").symlink_to(tmp_path / "outside")
    result = run_cli(repo, user_config_env(tmp_path), "explain", ADDED_ID)
    assert result.returncode == 1 and len(_notices(result.stderr, str(repo / "kb"))) == 1, result.stderr
    (repo / "kb").unlink()
    _record_folder(repo / "kb")  # a folder of its own: no consent needed
    result = run_cli(repo, user_config_env(tmp_path), "explain", ADDED_ID)
    assert result.returncode == 0 and "extend-records" not in result.stderr, result.stderr


def test_record_files_are_capped_with_one_notice(tmp_path):
    repo = _repo(tmp_path / "repo", "kb")
    (repo / "kb").mkdir()
    (repo / "kb" / "nested").mkdir()  # subfolders are not read
    _record_folder(repo / "kb" / "nested")
    for index in range(MAX_RECORD_FILES + 20):
        (repo / "kb" / f"r{index:04}.json").write_text("{}")
    result, reads = run_cli_audited(repo, user_config_env(tmp_path), "explain", ADDED_ID)
    assert result.returncode == 1, result.stderr  # the nested record is not read
    capped = [line for line in result.stderr.splitlines() if f"first {MAX_RECORD_FILES} by name" in line]
    assert len(capped) == 1, result.stderr
    refused = [line for line in result.stderr.splitlines() if "r0" in line and "field 'record'" in line]
    assert len(refused) == MAX_RECORD_FILES, len(refused)  # each file read was judged, the rest not read
    # Counted, not timed: the folder's files are opened once each up to the cap, the nested folder never listed.
    read = [path for path in reads.opened if os.path.dirname(path) == str(repo / "kb")]
    assert len(read) == len(set(read)) == MAX_RECORD_FILES, len(read)
    assert not [path for path in reads.listed + reads.opened if path.startswith(str(repo / "kb" / "nested"))]
    assert reads.outside(tmp_path) == ([], []), reads.outside(tmp_path)
