"""`# noqa` read from the tokens, in ruff's forms (issue 14): a `# noqa` inside a string is text;
`# noqa: E501 FAB001`, `# noqa:FAB001,FAB002`, `# NOQA`, `# type: ignore # noqa: FAB001` suppress;
a malformed directive suppresses nothing and is warned about on stderr in ruff's words. The lexer is
a port of ruff's: FORMS below was taken from ruff 0.17.5 (F401 in the place of our codes), and
`test_forms_match_ruff` checks it against the ruff found in the environment, when there is one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fabric_lsp.fixes.noqa import directives

from support.cli_runs import FAB001_LINE, FAB003_LINE, PROGRAM, findings, program_with, run_check, write

sys.path.insert(0, str(Path(__file__).resolve().parent / "lsp"))  # lspkit, for the server test

# comment -> (suppresses F401 on its line, number of warnings), as ruff 0.17.5 does:
#   ruff check --isolated --select F401 v.py --output-format json   (one `import mN  <comment>` a line)
FORMS = {
    "# noqa": (True, 0),
    "# noqa: F401": (True, 0),
    "# noqa:F401,E501": (True, 0),
    "# noqa: E501 F401": (True, 0),
    "# NOQA": (True, 0),
    "# type: ignore # noqa: F401": (True, 0),
    "# noqa: ": (False, 1),
    "# noqa:": (False, 1),
    "# noqa: fab-1": (False, 1),
    "# noqa F401": (True, 0),  # no colon: a blanket noqa (ruff; its PGH004 flags it)
    "# noqa: E501": (False, 0),
    "# noqa:E501,,F401": (True, 1),
    "# noqa : F401": (True, 0),
    "#noqa:F401": (True, 0),
    "# noqa: F401, fab-1": (True, 0),
    "# foo # noqa: F401 trailing words": (True, 0),
    "# noqa: F401: explanation": (False, 1),
    "# noqa: F401 explanation here": (True, 0),
    "# NoQA: f401": (False, 1),
    "# noqa:F401 # noqa: E501": (True, 0),
    "# noqa: E501 # noqa: F401": (False, 0),  # the first directive of a comment counts
    "# noqanope": (False, 1),
    "# noqa:F401E501": (True, 1),
    "# noqa: F401 , E501": (True, 1),
    "# noqa: F4": (False, 0),
    "# noqa -- F401": (True, 0),
    "# noqa:F401;E501": (False, 1),
    "# noqa:F401abc": (False, 1),
    "# noqa: A, F401": (False, 1),
    "# noqa: E501,F401,": (True, 0),
    "# noqa#F401": (True, 0),
    "# noqa; F401": (False, 1),
    "# xnoqa: F401": (False, 0),
    "# noqa: (F401)": (False, 1),
    "##noqa:F401": (True, 0),
}


def forms_source() -> str:
    return "".join(f"import m{index}  {comment}\n" for index, comment in enumerate(FORMS))


def test_forms():
    found = directives(forms_source())
    warned: dict[int, int] = {}
    for problem in found.problems:
        warned[problem.line] = warned.get(problem.line, 0) + 1
    got = {comment: (found.suppresses(index, "F401"), warned.get(index, 0)) for index, comment in enumerate(FORMS)}
    assert got == FORMS


RUFF = shutil.which("ruff", path=os.path.dirname(sys.executable)) or shutil.which("ruff")


@pytest.mark.skipif(RUFF is None, reason="ruff is not installed")
def test_forms_match_ruff(tmp_path):
    write(tmp_path / "v.py", forms_source())
    result = subprocess.run([RUFF, "check", "--isolated", "--no-cache", "--select", "F401", "--output-format", "json",
                             "v.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    reported = {entry["location"]["row"] for entry in json.loads(result.stdout)}
    warned: dict[int, int] = {}
    for line in result.stderr.splitlines():
        if "v.py:" in line:
            row = int(line.split("v.py:")[1].split(":")[0].split(".")[0].split()[0])
            warned[row] = warned.get(row, 0) + 1
    got = {comment: (index + 1 not in reported, warned.get(index + 1, 0)) for index, comment in enumerate(FORMS)}
    assert got == FORMS


def test_a_noqa_in_a_string_suppresses_nothing(tmp_path):
    write(tmp_path / "train.py", program_with(FAB001_LINE, 'model.encode("# noqa")'))
    write(tmp_path / "fstring.py", program_with(FAB001_LINE, 'model.encode(f"{1} # noqa: FAB001")'))
    result = run_check(["--format", "json"], tmp_path)
    assert {(path, code) for path, code, _ in findings(result, tmp_path)} >= {
        ("train.py", "FAB001"), ("fstring.py", "FAB001")}


@pytest.mark.parametrize("comment", ["# noqa", "# NOQA", "# noqa: FAB001", "# noqa:FAB001,FAB002",
                                     "# noqa: E501 FAB001", "# type: ignore # noqa: FAB001",
                                     "# noqa: FAB001 because the model is tiny"])
def test_ruffs_forms_suppress(tmp_path, comment):
    write(tmp_path / "train.py", program_with(FAB001_LINE, f"model.encode(None)  {comment}"))
    result = run_check(["--format", "json"], tmp_path)
    assert findings(result, tmp_path) == {("train.py", "FAB003", FAB003_LINE)}
    assert result.stderr == ""


@pytest.mark.parametrize("comment, message", [
    ("# noqa: ", "invalid # noqa directive: expected a comma-separated list of codes (e.g., `# noqa: FAB001, FAB002`)."),
    ("# noqa: fab-1", "invalid # noqa directive: expected a comma-separated list of codes"),
    ("# noqa: FAB001: why", "invalid # noqa directive: expected code to consist of uppercase letters followed by "
                            "digits only (e.g. `FAB001`)"),
    ("#noqaFAB001", "invalid # noqa directive: expected `:` followed by a comma-separated list of codes"),
])
def test_a_malformed_directive_suppresses_nothing_and_is_warned_about_on_every_run(tmp_path, tmp_path_factory,
                                                                                   comment, message):
    write(tmp_path / "train.py", program_with(FAB001_LINE, f"model.encode(None)  {comment}"))
    env = {"FABRIC_LSP_CACHE_SECRET_DIR": str(tmp_path_factory.mktemp("secret"))}
    for _ in range(2):  # the second run answers from the cache: the warning is said all the same
        result = run_check(["--format", "json"], tmp_path, cache=True, env=env)
        assert findings(result, tmp_path) == {("train.py", "FAB001", FAB001_LINE), ("train.py", "FAB003", FAB003_LINE)}
        warnings = [line for line in result.stderr.splitlines() if "warning" in line]
        assert len(warnings) == 1
        assert warnings[0].startswith(f"fabric-lsp: warning: train.py:{FAB001_LINE}: {message}")


def test_joined_codes_warn_and_still_count(tmp_path):
    write(tmp_path / "train.py", program_with(FAB001_LINE, "model.encode(None)  # noqa:FAB003FAB001"))
    result = run_check(["--format", "json"], tmp_path)
    assert findings(result, tmp_path) == {("train.py", "FAB003", FAB003_LINE)}
    assert result.stderr == (f"fabric-lsp: warning: train.py:{FAB001_LINE}: missing or joined rule code(s) in "
                             "# noqa directive: expected comma or space delimiter between codes\n")


def notebook_text(*cells: str) -> str:
    built = [{"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]}]
    for text in cells:
        built.append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                      "source": text.splitlines(keepends=True)})
    return json.dumps({"cells": built, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def test_noqa_in_a_notebook_applies_per_cell_line(tmp_path):
    lines = PROGRAM.splitlines(keepends=True)
    first = "".join(lines[:FAB003_LINE - 1])
    second = ("%time x = 1\n" + lines[FAB003_LINE - 1].rstrip("\n") + "  # noqa: FAB003\n"
              + lines[FAB001_LINE - 1].rstrip("\n") + "  # noqa: \n")
    write(tmp_path / "nb.ipynb", notebook_text(first, second))
    result = run_check(["--format", "json"], tmp_path)
    data = json.loads(result.stdout)
    assert [(entry["code"], entry["cell"], entry["location"]["row"]) for entry in data] == [("FAB001", 3, 3)]
    assert result.stderr.startswith("fabric-lsp: warning: nb.ipynb:cell 3:3: invalid # noqa directive")


async def test_the_server_reads_noqa_as_check_does(tmp_path):
    from lspkit import capabilities, diagnostics, open_doc, session

    write(tmp_path / "train.py", program_with(FAB001_LINE, 'model.encode("# noqa")  # noqa: fab-1'))
    write(tmp_path / "other.py", program_with(FAB001_LINE, "model.encode(None)  # noqa: E501 FAB001"))
    expected = findings(run_check(["--format", "json"], tmp_path), tmp_path)
    assert expected == {("train.py", "FAB001", FAB001_LINE), ("train.py", "FAB003", FAB003_LINE),
                        ("other.py", "FAB003", FAB003_LINE)}
    async with session(capabilities("neovim"), [tmp_path]) as (client, _):
        for name in ("train.py", "other.py"):
            found = await diagnostics(client, open_doc(client, tmp_path / name), version=1)
            assert {(name, d.code, d.range.start.line + 1) for d in found} == {e for e in expected if e[0] == name}


@pytest.mark.parametrize(("text", "may"), [
    ("x = 1  # noqa\n", False),
    ("x = 1  # noqa: FAB001, E501\n", False),
    ("x = 1  # NOQA:E501 # type: ignore\n", False),
    ("# fabric-lsp: noqa: FAB001\n", False),
    ("x = 1  # fabric-lsp: noqa\n", True),  # the file-level form on a line of code: a warning
    ("x = 1  # noqa: fab-1\n", True),
    ('s = "noqa"\n', True),  # not a comment: the tokens decide (no warning)
])
def test_the_quick_scan_leaves_every_possible_warning_to_the_lexer(text, may):
    from fabric_lsp.fixes.noqa import directives, may_warn

    assert may_warn(text) is may
    if not may:
        assert directives(text).problems == ()
