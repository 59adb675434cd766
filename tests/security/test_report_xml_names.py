"""Issue 24, item 15: file names XML cannot hold leave the JUnit report well-formed.

XML 1.0 forbids the C0 controls (but tab, LF, CR), U+FFFE, U+FFFF and lone surrogates (a name that is
not UTF-8, decoded by Python's surrogateescape). Before, a name holding U+FFFE made `--output-format
junit` not well-formed (a CI's test-report reader rejects the whole report), and a name that is not
UTF-8 made `--output-format sarif` end in a traceback. Now the JUnit report writes such characters as
escapes (`\\ufffe`), and every JSON format stays valid JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from tests.security.hostile import REPO_ROOT, user_config_env

CASE = REPO_ROOT / "fixtures" / "cases" / "fab001_generate_ddp_literal.py"
NAMES = [b"a\xef\xbf\xbeb\xef\xbf\xbf.py",  # U+FFFE, U+FFFF
         b"c\x01d.py",  # a C0 control
         b"not-utf8-\xff.py"]  # not UTF-8: a lone surrogate once decoded


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    for name in NAMES:
        shutil.copy(CASE, os.path.join(os.fsencode(root), name))
    return root


def run(cwd, env, *args):
    env = {**env, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "server"), env.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--no-cache", *args], cwd=cwd, env=env,
                          capture_output=True, timeout=120)


def test_junit_is_well_formed(repo, tmp_path):
    env = user_config_env(tmp_path)
    result = run(repo, env, "--output-format", "junit", ".")
    assert result.returncode == 1 and b"Traceback" not in result.stderr, result.stderr
    written = run(repo, env, "--output-format", "junit", "--output-file", "report.xml", ".")
    assert written.returncode == 1 and b"Traceback" not in written.stderr, written.stderr
    for document in (result.stdout, (repo / "report.xml").read_bytes()):
        suites = ElementTree.fromstring(document).findall("testsuite")  # raises when not well-formed
        names = sorted(suite.get("name") for suite in suites)
        assert names == ["a\\ufffeb\\uffff.py", "c\\x01d.py", "not-utf8-\\udcff.py"], names


@pytest.mark.parametrize("format", ["json", "sarif", "gitlab"])
def test_json_formats_stay_valid(repo, tmp_path, format):
    result = run(repo, user_config_env(tmp_path), "--output-format", format, ".")
    assert result.returncode == 1 and b"Traceback" not in result.stderr, result.stderr
    document = json.loads(result.stdout)
    text = json.dumps(document)
    assert text.count("FAB001") >= len(NAMES)
    if format == "sarif":  # URIs carry the names' bytes
        uris = {location["physicalLocation"]["artifactLocation"]["uri"]
                for run_ in document["runs"] for result_ in run_["results"] for location in result_["locations"]}
        assert uris == {"a%EF%BF%BEb%EF%BF%BF.py", "c%01d.py", "not-utf8-%FF.py"}, uris
