"""The report formats for CI services and their shared parts: GitLab Code Quality, JUnit XML, SARIF for
GitHub code scanning (rule help, informationUri, partialFingerprints, paths from the repository root),
and `invalid-syntax` entries for files that do not parse, in every format (as ruff reports them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from fabric_lsp.findings import Finding, Position, Severity, Span
from fabric_lsp.records import RULES, default_records, render_markdown, render_text
from fabric_lsp.records.pages import page_url
from fabric_lsp.report import ReportContext, render

from test_notebooks_cli import CALL, MODEL, SETUP, notebook
from test_report import _validate

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
SERVER = ROOT / "server"
FORMATS = ("text", "json", "sarif", "github", "gitlab", "junit")


def check(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SERVER), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "fabric_lsp", "check", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def at(path: Path, line: int, column: int, code: str = "FAB001", severity=Severity.ERROR, message="m") -> Finding:
    return Finding(code, severity, Span(str(path), Position(line, column), Position(line, column + 3)), message,
                   "af391673c4dd180e")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository (a `.git` folder) with the code in a subdirectory."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "src" / "a.py").write_text((CASES / "fab001_generate_ddp_literal.py").read_text(encoding="utf-8"))
    (tmp_path / "src" / "b.py").write_text((CASES / "fab001_strategy_from_argparse.py").read_text(encoding="utf-8"))
    return tmp_path


# --- gitlab -----------------------------------------------------------------------------------


def test_gitlab_code_quality_report(repo):
    completed = check("--no-cache", "--output-format", "gitlab", ".", cwd=repo / "src")
    assert completed.returncode == 1
    issues = json.loads(completed.stdout)
    assert [set(issue) for issue in issues] == [{"description", "check_name", "fingerprint", "severity", "location"}] * 2
    a, b = issues
    assert (a["check_name"], a["severity"], b["severity"]) == ("FAB001", "major", "minor")  # error, warning
    assert a["description"].startswith("FAB001: `CharLM.generate()` runs submodules but is called on the Fabric-wrapped `model`\n")
    # Relative to the repository root, not to the directory `check` ran in.
    assert a["location"] == {"path": "src/a.py", "lines": {"begin": 42, "end": 42}}
    assert b["location"]["path"] == "src/b.py"
    assert len({a["fingerprint"], b["fingerprint"]}) == 2 and all(len(i["fingerprint"]) == 64 for i in issues)


def test_gitlab_severities_and_unique_fingerprints_of_identical_lines(tmp_path):
    path = tmp_path / "x.py"
    path.write_text("model.generate(x)\nmodel.generate(x)\nother()\nother()\n")
    findings = [at(path, 0, 6), at(path, 1, 6), at(path, 2, 0, "FAB003", Severity.HINT),
                at(path, 3, 0, "FAB004", Severity.INFORMATION)]
    issues = json.loads(render("gitlab", findings, ReportContext(cwd=str(tmp_path))))
    assert [i["severity"] for i in issues] == ["major", "major", "info", "info"]
    assert len({i["fingerprint"] for i in issues}) == 4  # the same line twice: two occurrences
    assert [i["location"]["path"] for i in issues] == ["x.py"] * 4  # no .git above: the current directory


def test_fingerprints_do_not_move_with_the_lines(repo):
    def reports():
        gitlab = json.loads(check("--no-cache", "--output-format", "gitlab", ".", cwd=repo / "src").stdout)
        sarif = json.loads(check("--no-cache", "--output-format", "sarif", ".", cwd=repo / "src").stdout)
        results = sarif["runs"][0]["results"]
        return ([(i["fingerprint"], i["location"]["lines"]["begin"]) for i in gitlab],
                [(r["partialFingerprints"]["primaryLocationLineHash"],
                  r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results])

    gitlab_before, sarif_before = reports()
    a = repo / "src" / "a.py"
    a.write_text("# a comment\n# and another\n\n" + a.read_text(encoding="utf-8"), encoding="utf-8")
    gitlab_after, sarif_after = reports()
    assert [f for f, _ in gitlab_after] == [f for f, _ in gitlab_before]
    assert [f for f, _ in sarif_after] == [f for f, _ in sarif_before]
    assert gitlab_after[0][1] == gitlab_before[0][1] + 3 and sarif_after[0][1] == sarif_before[0][1] + 3
    assert all(hash_.endswith(":1") for hash_, _ in sarif_after)


# --- junit ------------------------------------------------------------------------------------


def test_junit_is_valid_xml_with_a_suite_per_file_and_a_failing_case_per_finding(repo):
    (repo / "src" / "c.py").write_text((CASES / "fab001_generate_ddp_literal.py").read_text(encoding="utf-8"))
    completed = check("--no-cache", "--output-format", "junit", ".", cwd=repo / "src")
    assert completed.returncode == 1
    assert completed.stdout.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    suites = ElementTree.fromstring(completed.stdout)
    assert (suites.tag, suites.get("tests"), suites.get("failures")) == ("testsuites", "3", "3")
    assert [(s.get("name"), s.get("tests"), s.get("failures")) for s in suites] == [
        ("a.py", "1", "1"), ("b.py", "1", "1"), ("c.py", "1", "1")]
    case = suites[0][0]
    assert (case.tag, case.get("name"), case.get("classname"), case.get("line"), case.get("column")) == (
        "testcase", "org.fabric-lsp.FAB001", "a", "42", "20")
    failure = case.find("failure")
    assert failure.get("message").startswith("`CharLM.generate()` runs")
    assert failure.text == "line 42, col 20, " + failure.get("message")


def test_junit_without_findings_is_one_passing_case(tmp_path):
    suites = ElementTree.fromstring(render("junit", [], ReportContext(cwd=str(tmp_path))))
    assert suites.get("failures") == "0"
    [case] = suites.iter("testcase")
    assert case.get("name") == "No findings" and case.find("failure") is None


def test_junit_escapes_markup_and_control_characters(tmp_path):
    path = tmp_path / "we<ird>&.py"
    path.write_text("x\n")
    finding = at(path, 0, 0, message='<b>"q" & \x1b[31m\x00 ]]>')
    suites = ElementTree.fromstring(render("junit", [finding], ReportContext(cwd=str(tmp_path))))
    failure = next(suites.iter("failure"))
    assert failure.get("message") == '<b>"q" & \\x1b[31m\\x00 ]]>'
    assert next(suites.iter("testsuite")).get("name") == "we<ird>&.py"


# --- sarif ------------------------------------------------------------------------------------


def test_sarif_rules_carry_the_records_help_and_the_driver_an_information_uri(tmp_path, monkeypatch):
    import email.message
    import importlib.metadata

    def metadata_with(*urls):
        message = email.message.Message()
        for url in urls:
            message["Project-URL"] = url
        return lambda name: message

    # Without [project.urls] (the case today): the repository the knowledge-base records come from.
    monkeypatch.setattr(importlib.metadata, "metadata", metadata_with())
    document = json.loads(render("sarif", [], ReportContext(cwd=str(tmp_path))))
    driver = document["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == "https://github.com/Lightning-AI/pytorch-lightning"
    monkeypatch.setattr(importlib.metadata, "metadata", metadata_with("Issues, https://example.org/i",
                                                                      "Homepage, https://example.org/fabric-lsp"))
    other = json.loads(render("sarif", [], ReportContext(cwd=str(tmp_path))))["runs"][0]["tool"]["driver"]
    assert other["informationUri"] == "https://example.org/fabric-lsp"
    records = default_records()
    for entry, rule in zip(driver["rules"], RULES):
        record = records.by_id(rule.record_id)
        assert entry["help"] == {"text": render_text(record, code=rule.code),
                                 "markdown": render_markdown(record, code=rule.code)}
        assert entry["help"]["markdown"].startswith(f"### {rule.code} {rule.name}")
        assert entry["helpUri"] == page_url(rule.code)  # the rule page; Lightning's source is the evidence
        assert entry["properties"]["source"] == record.github_url
    _validate(document)


def test_sarif_from_a_subdirectory_is_relative_to_the_repository_root(repo):
    completed = check("--no-cache", "--output-format", "sarif", ".", cwd=repo / "src")
    run = json.loads(completed.stdout)["runs"][0]
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": repo.as_uri() + "/"}}
    locations = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in run["results"]]
    assert locations == [{"uri": "src/a.py", "uriBaseId": "%SRCROOT%"}, {"uri": "src/b.py", "uriBaseId": "%SRCROOT%"}]
    fixes = [c["artifactLocation"] for r in run["results"] for f in r.get("fixes", []) for c in f["artifactChanges"]]
    assert fixes and all(location["uri"].startswith("src/") for location in fixes)
    _validate(json.loads(completed.stdout))


def test_github_annotations_from_a_subdirectory_name_files_from_the_repository_root(repo):
    completed = check("--no-cache", "--output-format", "github", ".", cwd=repo / "src")
    files = [line.split("file=", 1)[1].split(",", 1)[0] for line in completed.stdout.splitlines()]
    assert files == ["src/a.py", "src/b.py"]


# --- invalid-syntax ---------------------------------------------------------------------------


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "broken.py").write_text("from lightning.fabric import Fabric\n\nx = (1,  # noqa\n")
    (tmp_path / "fine.py").write_text("print('fine')\n")
    return tmp_path


@pytest.mark.parametrize("format", FORMATS)
def test_a_file_that_does_not_parse_is_reported_in_every_format(broken, format):
    completed = check("--no-cache", "--output-format", format, ".", cwd=broken)
    assert completed.returncode == 1, completed.stderr
    assert "not analysed" not in completed.stderr  # reported once, in the report
    out = completed.stdout
    if format == "text":
        assert out == ("broken.py:3:5: invalid-syntax error: '(' was never closed\n"
                       "  |\n"
                       "2 |\n"
                       "3 | x = (1,  # noqa\n"
                       "  |     ^ invalid-syntax\n"
                       "  |\n"
                       "\n"
                       "Found 1 finding: 1 error.\n")
    elif format == "json":
        [item] = json.loads(out)
        assert (item["code"], item["severity"], item["message"], item["location"], item["fix"]) == (
            "invalid-syntax", "error", "'(' was never closed", {"row": 3, "column": 5}, None)
    elif format == "sarif":
        document = json.loads(out)
        _validate(document)
        run = document["runs"][0]
        [result] = run["results"]
        assert (result["ruleId"], result["level"], result["message"]["text"]) == (
            "invalid-syntax", "error", "'(' was never closed")
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "invalid-syntax"
        assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 3
    elif format == "github":
        assert out == ("::error file=broken.py,line=3,col=5,endLine=3,endColumn=5,title=invalid-syntax::"
                       "'(' was never closed\n")
    elif format == "gitlab":
        [issue] = json.loads(out)
        assert (issue["check_name"], issue["severity"], issue["location"]) == (
            "invalid-syntax", "major", {"path": "broken.py", "lines": {"begin": 3, "end": 3}})
    else:
        [case] = ElementTree.fromstring(out).iter("testcase")
        assert case.get("name") == "org.fabric-lsp.invalid-syntax"
        assert case.find("failure").text == "line 3, col 5, '(' was never closed"


def test_invalid_syntax_is_not_selected_nor_suppressed(broken):
    # `# noqa` on its line, --ignore and --select do not hide it (as in ruff); --exit-zero exits 0.
    for args in (["--ignore", "FAB001,FAB002,FAB003,FAB004"], ["--select", "FAB002"]):
        completed = check("--no-cache", *args, ".", cwd=broken)
        assert completed.returncode == 1 and "invalid-syntax" in completed.stdout, args
    assert check("--no-cache", "--exit-zero", ".", cwd=broken).returncode == 0


def test_what_python_refuses_to_compile_is_invalid_syntax(tmp_path):
    (tmp_path / "a.py").write_text("def f(x, x):\n    pass\n")
    (tmp_path / "b.py").write_text("return 1\n")
    (tmp_path / "c.py").write_text("def f():\n  x = 1\n\tif x:\n")
    found = json.loads(check("--no-cache", "--format", "json", ".", cwd=tmp_path).stdout)
    assert [(Path(f["filename"]).name, f["message"], f["location"]["row"]) for f in found] == [
        ("a.py", "duplicate argument 'x' in function definition", 1),
        ("b.py", "'return' outside function", 1),
        ("c.py", "inconsistent use of tabs and spaces in indentation", 3),
    ]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="this Python parses the syntax itself")
def test_syntax_of_a_newer_python_is_not_invalid(tmp_path):
    (tmp_path / "new.py").write_text("def first[T](items: list[T]) -> T:\n    return items[0]\n")
    completed = check("--no-cache", ".", cwd=tmp_path)
    assert (completed.returncode, completed.stdout) == (0, "All checks passed!\n")


def test_a_notebook_cell_that_does_not_parse_in_every_format(tmp_path):
    (tmp_path / "nb.ipynb").write_text(notebook(("markdown", "# t"), ("code", MODEL),
                                                ("code", "lr = ???  # exercise: fill in"), ("code", SETUP), ("code", CALL)))
    raw = (tmp_path / "nb.ipynb").read_text().split("\n")
    row = next(i for i, line in enumerate(raw) if "lr = ???" in line) + 1

    def entry(format):
        completed = check("--no-cache", "--output-format", format, ".", cwd=tmp_path)
        assert completed.returncode == 1 and completed.stderr == "", completed.stderr
        return completed.stdout

    assert entry("text").startswith("nb.ipynb:cell 3:1:6: invalid-syntax error: invalid syntax\n")
    item = json.loads(entry("json"))[0]
    assert (item["code"], item["cell"], item["location"]) == ("invalid-syntax", 3, {"row": 1, "column": 6})
    result = json.loads(entry("sarif"))["runs"][0]["results"][0]
    assert result["properties"]["cell"] == 3 and result["message"]["text"] == "invalid syntax (cell 3, line 1)"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == row
    issue = json.loads(entry("gitlab"))[0]
    assert issue["description"] == "invalid-syntax: invalid syntax (cell 3, line 1)"
    assert issue["location"] == {"path": "nb.ipynb", "lines": {"begin": row, "end": row}}
    case = next(ElementTree.fromstring(entry("junit")).iter("testcase"))
    assert case.find("failure").text == "cell 3, line 1, col 6, invalid syntax"
    assert case.get("line") == str(row)
    assert entry("github").startswith(f"::error file=nb.ipynb,line={row},")


def test_syntax_verdicts_follow_each_file_through_the_cache(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "a.py").write_text("x = (\n")
    (tmp_path / "b.py").write_text("y = 1\n")

    def broken_files():
        completed = check("--format", "json", ".", cwd=tmp_path)
        return sorted(Path(f["filename"]).name for f in json.loads(completed.stdout) if f["code"] == "invalid-syntax")

    assert broken_files() == ["a.py"]
    assert broken_files() == ["a.py"]  # from the cache
    (tmp_path / "b.py").write_text("y = 2\n")  # another file changed: a.py's verdict is kept
    assert broken_files() == ["a.py"]
    (tmp_path / "a.py").write_text("x = ()\n")
    (tmp_path / "b.py").write_text("y = ]\n")
    assert broken_files() == ["b.py"]


def test_an_unchanged_file_is_not_parsed_again_after_another_file_changed(tmp_path, monkeypatch, capsys):
    """The cost of parsing every file is paid once per file content: a run after an edit parses the
    edited file only (the verdicts of the others come from the cache's stamps)."""
    import fabric_lsp.report.syntax as syntax
    from fabric_lsp.cli import main

    parsed: list[str] = []
    original = syntax.syntax_report

    def counting(path, text, notebook=None, library_path=None):
        parsed.append(Path(path).name)
        return original(path, text, notebook, library_path)

    monkeypatch.setattr(syntax, "syntax_report", counting)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(f"{name[0]} = (\n" if name == "a.py" else f"{name[0]} = 1\n")
    assert main(["check", "--jobs", "1", "."]) == 1
    assert sorted(parsed) == ["a.py", "b.py", "c.py"]
    parsed.clear()
    (tmp_path / "b.py").write_text("b = 2\n")
    assert main(["check", "--jobs", "1", "."]) == 1
    assert parsed == ["b.py"]
    assert "a.py:1:5: invalid-syntax" in capsys.readouterr().out
    parsed.clear()
    assert main(["check", "--jobs", "1", "--no-cache", "."]) == 1
    assert sorted(parsed) == ["a.py", "b.py", "c.py"]


def test_a_cell_indented_as_a_whole_is_not_invalid_syntax(tmp_path):
    # IPython dedents it and runs it: the analysis leaves it out with a notice, nothing is reported.
    (tmp_path / "nb.ipynb").write_text(notebook(("code", "    a = 1\n    b = 2"), ("code", "lr = ???"),
                                                ("code", "print(a)")))
    completed = check("--no-cache", ".", cwd=tmp_path)
    assert completed.stdout.startswith("nb.ipynb:cell 2:1:6: invalid-syntax error: invalid syntax\n"
                                       "  |\n"
                                       "1 | lr = ???\n"
                                       "  |      ^ invalid-syntax\n"
                                       "  |\n\n")
    assert "cell 1" not in completed.stdout
    assert completed.stderr == ("fabric-lsp: notice: nb.ipynb: left out, as they do not parse on their own: "
                                "cell 1: unexpected indent (line 1)\n")


def test_gitlab_fingerprint_ignores_the_line_numbers_a_message_names(tmp_path):
    """A flow finding's message names where the model was wrapped (`wrapped at train.py:34`): when lines
    move, that number moves too, and the fingerprint must not."""
    path = tmp_path / "train.py"
    path.write_text("model.generate(x)\n")
    before = at(path, 0, 6, message="`M.generate()` ... (wrapped at train.py:34) ... nb.ipynb:cell 2:4")
    after = at(path, 0, 6, message="`M.generate()` ... (wrapped at train.py:37) ... nb.ipynb:cell 2:5")
    other = at(path, 0, 6, message="`M.sample()` ... (wrapped at train.py:34) ... nb.ipynb:cell 2:4")
    prints = [json.loads(render("gitlab", [f], ReportContext(cwd=str(tmp_path))))[0]["fingerprint"]
              for f in (before, after, other)]
    assert prints[0] == prints[1] != prints[2]
