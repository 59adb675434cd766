"""jedi's answers kept in `.fabric-lsp-cache/` (cache.JediAnswers) are believed only when this user
signed them: a file that comes with the repository or from another user, a link, a FIFO, an
oversized or a malformed file is ignored (jedi is asked again, the findings are those jedi's own
answers give) and replaced by this user's answers."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fabric_lsp import cache as cache_module

from tests.test_jedi_cache import _check, _edit, _jedi_files, _project, environment, zoo  # noqa: F401 (fixtures)


def _answers(path: Path, secret: bytes) -> dict:
    return json.loads(cache_module.verified_body(secret, path.name, path.read_bytes()))


def _forged(data: dict) -> dict:
    """Every stored answer pointed at another line: believed, it would move the finding's location."""
    for entry in data["answers"].values():
        entry["found"] = [[path, line + 1, column, kind, full] for path, line, column, kind, full in entry["found"]]
    return data


def test_an_answer_signed_by_another_user_is_not_believed(tmp_path, environment, zoo):
    project = _project(tmp_path)
    expected, _ = _check(project, environment, "--jobs", "1", "--no-cache", "--format", "json")
    _check(project, environment, "--jobs", "1")
    [path] = _jedi_files(project)
    other = os.urandom(32)  # the repository's author's secret: the file as it would be committed
    body = json.dumps(_forged(_answers(path, cache_module.user_secret()))).encode()
    path.write_bytes(cache_module.sign(other, path.name, body))
    _edit(project)
    found, asked = _check(project, environment, "--jobs", "1", "--format", "json")
    assert asked >= 1 and found == expected
    assert _answers(path, cache_module.user_secret())["answers"]  # replaced: signed by this user again


def test_linked_fifo_oversized_and_malformed_answer_files_are_ignored(tmp_path, environment, zoo):
    project = _project(tmp_path)
    expected, _ = _check(project, environment, "--jobs", "1", "--no-cache", "--format", "json")
    _check(project, environment, "--jobs", "1")
    [path] = _jedi_files(project)
    valid = path.read_bytes()
    outside = tmp_path / "outside.json"

    def planted_link():
        outside.write_bytes(valid)  # this user's own valid answers, reached through a link
        path.unlink()
        path.symlink_to(outside)

    def planted_fifo():
        path.unlink()
        os.mkfifo(path)

    def planted_oversized():
        path.write_bytes(valid[:-1] + b" " * (cache_module.MAX_JEDI_FILE_SIZE + 1) + valid[-1:])

    def planted_malformed():
        data = _answers(path, cache_module.user_secret()) if path.is_file() and not path.is_symlink() else None
        data = data or json.loads(cache_module.verified_body(cache_module.user_secret(), path.name, valid))
        for entry in data["answers"].values():
            entry["found"], entry["reads"] = [["x"]], "nonsense"
        path.write_bytes(cache_module.sign(cache_module.user_secret(), path.name, json.dumps(data).encode()))

    for plant in (planted_link, planted_fifo, planted_oversized, planted_malformed):
        plant()
        _edit(project)
        found, asked = _check(project, environment, "--jobs", "1", "--format", "json")
        assert asked >= 1, plant.__name__
        assert found == expected, plant.__name__
        if path.is_symlink() or not path.is_file():
            path.unlink()
    assert outside.read_bytes() == valid  # never written through the link
