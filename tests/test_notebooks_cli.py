"""Jupyter notebooks on the command line: the joining of cells and the neutralising of IPython
syntax (fabric_lsp.sources.notebook), discovery and its settings, findings located by cell in every output
format, `--fix`/`--diff` edits in the right cells with the rest of the JSON byte for byte the same,
a fix from a notebook into a module, and malformed notebooks."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fabric_lsp.findings import Position
from fabric_lsp.sources.notebook import SpansCells, apply_cell_edits, cell_edit, join_cells, neutralise, read_notebook

ROOT = Path(__file__).resolve().parents[1]
SERVER = str(ROOT / "server")

MODEL = '''import torch
from torch import nn
from lightning.fabric import Fabric


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)

    def forward(self, x):
        return self.head(x)

    def generate(self, x):
        return self(x).argmax(-1)'''
SETUP = 'fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")\nfabric.launch()\nmodel = fabric.setup(TinyLM())'
CALL = "%time x = torch.randn(2, 4)\ntokens = model.generate(x)"


def lines(text: str) -> list[str]:
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def notebook(*cells, language="python", **dump) -> str:
    """An .ipynb text; a cell is ("code"|"markdown"|"raw", text) or a ready dict."""
    built = []
    for cell in cells:
        if isinstance(cell, dict):
            built.append(cell)
            continue
        kind, text = cell
        entry = {"cell_type": kind, "metadata": {}, "source": lines(text)}
        if kind == "code":
            entry.update(execution_count=None, outputs=[])
        built.append(entry)
    document = {"cells": built, "metadata": {"language_info": {"name": language}}, "nbformat": 4, "nbformat_minor": 5}
    options = {"indent": 1, "ensure_ascii": False, "sort_keys": True}
    options.update(dump)
    return json.dumps(document, **options) + "\n"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SERVER)
    return subprocess.run([sys.executable, "-m", "fabric_lsp", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'nb'\n")
    return tmp_path


def fab001_notebook(folder: Path, name: str = "nb.ipynb", **dump) -> Path:
    path = folder / name
    path.write_text(notebook(("markdown", "# title"), ("code", MODEL), ("code", SETUP), ("code", CALL), **dump),
                    encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------ the text layer


@pytest.mark.parametrize(("cell", "expected"), [
    ("%pip install torch", "0#ip install torch"),
    ("!nvidia-smi", "0#vidia-smi"),
    ("%ls", "0#s"),
    ("%time y = model.generate(x)", "0;    y = model.generate(x)"),
    ("%timeit -n 3 -r1 f()", "0;               f()"),
    ("%time for i in x: f(i)", "0#ime for i in x: f(i)"),
    ("pip install torch", "0#p install torch"),
    ("ls = 3", "ls = 3"),
    ('print("%d"\n      % x)', 'print("%d"\n      % x)'),
    ("!", "0"),
    ("files = !ls -la", "files = 0#s -la"),
    ("a, b = %sx echo", "a, b = 0#x echo"),
    ("model?", "0#del?"),
    ("??model.generate", "0#model.generate"),
    ("for i in range(2):\n    !echo $i\nx = 1", "for i in range(2):\n    0#cho $i\nx = 1"),
    ("%%time\nx = 1\ny = 2", "#%time\nx = 1\ny = 2"),
    ("%%bash\necho hi\n  ls\n\ndone", "#%bash\n#cho hi\n  #s\n\n#one"),
    ('s = """\n%not a magic\n!nor this\n"""', 's = """\n%not a magic\n!nor this\n"""'),
    ("!echo a \\\n  b\nx = 1", "0#cho a \\\n  #\nx = 1"),
    ("x = 100 % 7\ny = x != 2", "x = 100 % 7\ny = x != 2"),
])
def test_ipython_syntax_is_neutralised_in_place(cell, expected):
    assert neutralise(cell) == expected
    assert [len(line) for line in neutralise(cell).split("\n")] == [len(line) for line in cell.split("\n")]
    ast.parse(neutralise(cell))


def test_cells_join_with_a_separator_line_that_belongs_to_the_cell_before():
    joined = join_cells([(2, "import torch\n"), (4, "%time y = 1\nz = y")])
    assert joined.text == "import torch\n\n0;    y = 1\nz = y\n\n"  # `%time stmt` runs stmt
    assert joined.to_cell(Position(3, 2)) == (joined.cell(4), Position(1, 2))
    assert joined.to_joined(4, Position(1, 2)) == Position(3, 2)
    # "After the last line of cell 2" is the separator line: the edit goes to the end of cell 2.
    after_cell_2 = cell_edit(joined, Position(1, 0), Position(1, 0), "torch.manual_seed(0)\n")
    assert (after_cell_2.number, after_cell_2.start) == (2, Position(1, 0))
    assert apply_cell_edits("import torch\n", [after_cell_2]) == "import torch\ntorch.manual_seed(0)\n"
    # Cell 4 ends without a newline: the appended line starts on a line of its own.
    end_of_4 = cell_edit(joined, Position(4, 0), Position(4, 0), "print(z)\n")
    assert apply_cell_edits("%time y = 1\nz = y", [end_of_4]) == "%time y = 1\nz = y\nprint(z)"
    with pytest.raises(SpansCells):
        cell_edit(joined, Position(0, 0), Position(3, 0), "")


def test_updated_changes_only_the_edited_cells_source():
    text = notebook(("code", "a = 1\nb = 2"), ("markdown", "é"), ("code", "c = 3\n"), indent=2, sort_keys=False)
    document = read_notebook("nb.ipynb", text.encode())
    new = document.updated({3: "c = 3\nd = 4\n"})
    assert json.loads(new)["cells"][2]["source"] == ["c = 3\n", "d = 4\n"]
    start, end = document.cells[2].source_span
    assert new[:start] == text[:start] and new.endswith(text[end:])
    assert '"é"' in new  # the file's own (unescaped) style kept


# ------------------------------------------------------------------------------------ discovery and config


def test_check_discovers_notebooks_and_reports_by_cell(project):
    fab001_notebook(project)
    completed = run("check", ".", cwd=project)
    assert completed.returncode == 1, completed.stderr
    assert completed.stdout.startswith("nb.ipynb:cell 4:2:16: FAB001 [*] error: `TinyLM.generate()`")
    assert "note: nb.ipynb:cell 3:3:9: `model` is wrapped by Fabric here" in completed.stdout
    assert "note: nb.ipynb:cell 2:14:9: `TinyLM.generate` is defined here" in completed.stdout


def test_the_same_script_as_a_py_file_gives_the_same_finding(project):
    fab001_notebook(project)
    (project / "script.py").write_text(MODEL + "\n" + SETUP + "\ntokens = model.generate(None)\n")
    found = json.loads(run("check", "--format", "json", ".", cwd=project).stdout)
    assert sorted((Path(f["filename"]).name, f["code"], f["severity"]) for f in found) == [
        ("nb.ipynb", "FAB001", "error"), ("script.py", "FAB001", "error")]


@pytest.mark.parametrize(("settings", "checked"), [
    ("", True),
    ("notebooks = false", False),
    ('include = ["*.py"]', False),
    ('include = ["*.py"]\nextend-include = ["*.ipynb"]', True),
])
def test_notebook_settings(project, settings, checked):
    (project / "pyproject.toml").write_text(f"[project]\nname = 'nb'\n\n[tool.fabric-lsp]\n{settings}\n")
    fab001_notebook(project)
    completed = run("check", "--format", "json", ".", cwd=project)
    assert completed.returncode == (1 if checked else 0), completed.stderr
    assert bool(json.loads(completed.stdout)) is checked
    assert "config" not in completed.stderr


def test_notebooks_off_skips_a_notebook_named_on_the_command_line_with_a_notice(project):
    (project / "pyproject.toml").write_text("[project]\nname = 'nb'\n\n[tool.fabric-lsp]\nnotebooks = false\n")
    fab001_notebook(project)
    completed = run("check", "nb.ipynb", cwd=project)
    assert completed.returncode == 0
    assert completed.stderr.strip() == "fabric-lsp: notice: nb.ipynb: a notebook, and notebooks are off (notebooks = false); skipped"


def test_noqa_in_a_cell(project):
    path = project / "nb.ipynb"
    path.write_text(notebook(("code", MODEL), ("code", SETUP), ("code", "tokens = model.generate(None)  # noqa: FAB001")))
    assert run("check", ".", cwd=project).stdout.strip() == "All checks passed!"


def test_a_notebook_in_another_language_is_not_read(project):
    (project / "nb.ipynb").write_text(notebook(("code", MODEL), ("code", SETUP), ("code", CALL), language="julia"))
    completed = run("check", ".", cwd=project)
    assert (completed.returncode, completed.stdout.strip()) == (0, "All checks passed!")


def test_markdown_raw_and_other_language_cells_are_not_code(project):
    tagged = {"cell_type": "code", "metadata": {"vscode": {"languageId": "shellscript"}}, "execution_count": None,
              "outputs": [], "source": ["model.generate(x)\n"]}
    (project / "nb.ipynb").write_text(notebook(("code", MODEL), ("code", SETUP), ("markdown", "model.generate(x)"),
                                               ("raw", "model.generate(x)"), tagged))
    assert run("check", ".", cwd=project).stdout.strip() == "All checks passed!"


# ------------------------------------------------------------------------------------ output formats


def test_json_locates_by_cell_as_ruff(project):
    fab001_notebook(project)
    [finding] = json.loads(run("check", "--format", "json", ".", cwd=project).stdout)
    assert (finding["cell"], finding["location"], finding["end_location"], finding["noqa_row"]) == (
        4, {"row": 2, "column": 16}, {"row": 2, "column": 24}, 2)
    [edit] = finding["fix"]["edits"]
    assert edit["cell"] == 3 and "filename" not in edit  # the fix edits another cell of the same notebook
    assert [r["cell"] for r in finding["related"]] == [3, 2]


def test_json_cell_is_null_in_a_python_file(project):
    (project / "script.py").write_text(MODEL + "\n" + SETUP + "\ntokens = model.generate(None)\n")
    [finding] = json.loads(run("check", "--format", "json", ".", cwd=project).stdout)
    assert finding["cell"] is None


def test_sarif_and_github_point_at_the_json_line_holding_the_character(project):
    path = fab001_notebook(project)
    raw_lines = path.read_text().split("\n")
    row = next(i for i, line in enumerate(raw_lines) if "tokens = model.generate(x)" in line) + 1
    column = raw_lines[row - 1].index("generate") + 1
    sarif = json.loads(run("check", "--format", "sarif", ".", cwd=project).stdout)
    [result] = sarif["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"], region["endColumn"]) == (row, column, column + 8)
    assert result["properties"]["cell"] == 4 and result["properties"]["cellLine"] == 2
    assert result["message"]["text"].endswith("(cell 4, line 2)")
    github = run("check", "--format", "github", ".", cwd=project).stdout
    assert github.startswith(f"::error file=nb.ipynb,line={row},col={column},endLine={row},endColumn={column + 8},"
                             "title=FAB001::cell 4:2:16: `TinyLM.generate()`")


# ------------------------------------------------------------------------------------ --fix and --diff


@pytest.mark.parametrize("dump", [
    {},
    {"indent": 2, "sort_keys": False},
    {"indent": 4, "ensure_ascii": True},
], ids=["jupyter", "indent-2-unsorted", "indent-4-ascii"])
def test_fix_edits_the_right_cell_and_keeps_every_other_byte(project, dump):
    path = fab001_notebook(project, **dump)
    document = json.loads(path.read_text())
    document["cells"][1]["outputs"] = [{"name": "stdout", "output_type": "stream", "text": ["héllo\n"]}]
    document["metadata"]["custom"] = {"z": 1, "a": [1, 2]}
    options = {"indent": 1, "ensure_ascii": False, "sort_keys": True}
    options.update(dump)
    original = json.dumps(document, **options)  # no trailing newline this time
    path.write_text(original)
    completed = run("check", "--fix", ".", cwd=project)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    written = path.read_text()
    after = json.loads(written)
    assert "".join(after["cells"][2]["source"]).endswith('model = fabric.setup(TinyLM())\nmodel.mark_forward_method("generate")')
    start, end = read_notebook(str(path), original.encode()).cells[2].source_span
    assert written[:start] == original[:start] and written.endswith(original[end:])
    assert {k: v for k, v in after.items() if k != "cells"} == {k: v for k, v in document.items() if k != "cells"}


def test_diff_shows_cell_diffs_and_writes_nothing(project):
    path = fab001_notebook(project)
    original = path.read_bytes()
    completed = run("check", "--diff", ".", cwd=project)
    assert completed.returncode == 1
    assert completed.stdout.splitlines()[:2] == ["--- a/nb.ipynb:cell 3", "+++ b/nb.ipynb:cell 3"]
    assert '+model.mark_forward_method("generate")' in completed.stdout
    assert path.read_bytes() == original


def test_a_fix_from_a_notebook_into_a_module(project):
    (project / "blocks.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass Gate(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.gate = nn.Parameter(torch.zeros(4))\n\n"
        "    def forward(self, x):\n        return x * self.gate\n")
    path = project / "nb.ipynb"
    path.write_text(notebook(
        ("code", "import torch\nfrom lightning.fabric.utilities.init import _materialize_meta_tensors\nfrom blocks import Gate"),
        ("code", 'with torch.device("meta"):\n    gate = Gate()\n_materialize_meta_tensors(gate, torch.device("cpu"))')))
    before = path.read_bytes()
    [finding] = json.loads(run("check", "--format", "json", ".", cwd=project).stdout)
    assert (finding["code"], finding["cell"], finding["fix"]["edits"][0]["filename"]) == (
        "FAB002", 2, str(project / "blocks.py"))
    completed = run("check", "--fix", ".", cwd=project)
    assert completed.returncode == 0, completed.stderr
    assert "def reset_parameters(self)" in (project / "blocks.py").read_text()
    assert path.read_bytes() == before


# ------------------------------------------------------------------------------------ malformed notebooks


@pytest.mark.parametrize(("text", "reason"), [
    ("{not json", "not a notebook: invalid JSON (Expecting property name enclosed in double quotes at line 1 column 2)"),
    (json.dumps({"nbformat": 3, "worksheets": [{"cells": []}], "metadata": {}}),
     "nbformat 3 notebook (only nbformat 4 is read; convert it with `jupyter nbconvert --to notebook`)"),
    (json.dumps({"nbformat": 4, "cells": [{"cell_type": "code", "metadata": {}}], "metadata": {}}),
     "cell 1 has no `source`"),
    (json.dumps({"nbformat": 4, "metadata": {}}), "not a notebook: no `cells` list"),
    (json.dumps({"nbformat": 4, "cells": [{"cell_type": "code", "source": [1, 2]}], "metadata": {}}),
     "cell 1: `source` is neither a list of lines nor a string"),
    ("\x00\x01binary", "not a notebook: invalid JSON (Expecting value at line 1 column 1)"),
])
def test_a_malformed_notebook_gets_one_notice_and_the_run_goes_on(project, text, reason):
    (project / "bad.ipynb").write_text(text)
    (project / "script.py").write_text(MODEL + "\n" + SETUP + "\ntokens = model.generate(None)\n")
    completed = run("check", "--fix", "--unsafe-fixes", ".", cwd=project)
    assert completed.stderr.splitlines()[0] == f"fabric-lsp: notice: bad.ipynb: {reason}"
    assert "Traceback" not in completed.stderr
    assert (project / "bad.ipynb").read_text() == text
    assert 'model.mark_forward_method("generate")' in (project / "script.py").read_text()  # the rest was fixed


def test_a_string_source_is_checked_but_not_written(project):
    document = json.loads(notebook(("code", MODEL), ("code", SETUP), ("code", CALL)))
    for cell in document["cells"]:
        cell["source"] = "".join(cell["source"])
    text = json.dumps(document, indent=1)
    (project / "nb.ipynb").write_text(text)
    checked = run("check", ".", cwd=project)
    assert checked.stdout.startswith("nb.ipynb:cell 3:2:16: FAB001")
    assert "fabric-lsp: notice: nb.ipynb: cell 1: `source` is a string, not a list of lines" in checked.stderr
    fixed = run("check", "--fix", ".", cwd=project)
    assert fixed.returncode == 1 and (project / "nb.ipynb").read_text() == text
    assert "not fixed" in fixed.stderr and "Traceback" not in fixed.stderr


def test_cached_run_gives_the_same_notebook_findings(project):
    fab001_notebook(project)
    first = run("check", "--format", "json", ".", cwd=project)
    second = run("check", "--format", "json", ".", cwd=project)
    assert (project / ".fabric-lsp-cache").is_dir()
    assert first.stdout == second.stdout and json.loads(first.stdout)


def test_large_outputs_do_not_count_against_max_file_size(project):
    path = fab001_notebook(project)
    document = json.loads(path.read_text())
    document["cells"][1]["outputs"] = [{"data": {"image/png": "iVBORw0KGgo" * 300_000}, "metadata": {},
                                        "output_type": "display_data"}]  # 3.3 MB of plot
    path.write_text(json.dumps(document, indent=1))
    assert path.stat().st_size > 3 * 1024 * 1024
    assert run("check", ".", cwd=project).stdout.startswith("nb.ipynb:cell 4:2:16: FAB001")
    assert run("check", "--fix", ".", cwd=project).returncode == 0
    assert 'model.mark_forward_method("generate")' in "".join(json.loads(path.read_text())["cells"][2]["source"])


def test_code_cells_larger_than_max_file_size_are_not_read(project):
    (project / "pyproject.toml").write_text("[project]\nname = 'nb'\n\n[tool.fabric-lsp]\nmax-file-size = 2000\n")
    (project / "nb.ipynb").write_text(notebook(("code", MODEL), ("code", SETUP), ("code", CALL + "\n" + "# pad\n" * 300)))
    completed = run("check", ".", cwd=project)
    code = sum(len(text.encode()) for text in (MODEL, SETUP, CALL + "\n" + "# pad\n" * 300))
    assert completed.stderr.strip() == ("fabric-lsp: notice: nb.ipynb: the notebook's code cells are larger than "
                                        f"max-file-size ({code} > 2000 bytes)")
    assert completed.stdout.strip() == "All checks passed!"


# ------------------------------------------------------------------------------------ found on real notebooks


def test_percent_and_bang_inside_brackets_are_python(project):
    (project / "nb.ipynb").write_text(notebook(
        ("code", MODEL), ("code", 'print("step %d"\n      % 3)\nok = (3\n      != 2)'), ("code", SETUP), ("code", CALL)))
    assert run("check", ".", cwd=project).stdout.startswith("nb.ipynb:cell 4:2:16: FAB001")


def test_a_statement_timed_with_a_magic_is_analysed(project):
    (project / "nb.ipynb").write_text(notebook(("code", MODEL), ("code", SETUP),
                                               ("code", "x = torch.randn(2, 4)\n%timeit -n 3 model.generate(x)")))
    assert run("check", ".", cwd=project).stdout.startswith("nb.ipynb:cell 3:2:20: FAB001")


def test_automagic_lines_are_not_python(project):
    (project / "nb.ipynb").write_text(notebook(("code", "pip install lightning\ncd /tmp\n" + MODEL), ("code", SETUP),
                                               ("code", CALL)))
    assert run("check", ".", cwd=project).stdout.startswith("nb.ipynb:cell 3:2:16: FAB001")


def test_a_cell_that_does_not_parse_is_left_out_and_the_rest_analysed(project):
    (project / "nb.ipynb").write_text(notebook(("code", MODEL), ("code", "lr = ???  # exercise: fill in"),
                                               ("code", SETUP), ("code", CALL)))
    completed = run("check", "--output-format", "concise", ".", cwd=project)
    # As ruff, the cell is reported as an invalid-syntax entry (by cell, exit 1), once: no notice repeats it.
    assert completed.stdout.startswith("nb.ipynb:cell 2:1:6: invalid-syntax error: invalid syntax\n"
                                       "nb.ipynb:cell 4:2:16: FAB001")
    # The full format's frame shows the cell as written (the analysis comments the line out).
    full = run("check", ".", cwd=project).stdout
    assert "1 | lr = ???  # exercise: fill in\n  |      ^ invalid-syntax\n" in full
    assert completed.returncode == 1
    assert completed.stderr == ""


def test_every_file_that_does_not_parse_is_reported(project):
    (project / "a.py").write_text("from lightning.fabric import Fabric\nx = (\n")
    (project / "b.py").write_text("from lightning.fabric import Fabric\ny = ]\n")
    completed = run("check", "--no-cache", "--output-format", "json", ".", cwd=project)
    assert completed.returncode == 1
    assert [(Path(f["filename"]).name, f["code"], f["location"]) for f in json.loads(completed.stdout)] == [
        ("a.py", "invalid-syntax", {"row": 2, "column": 5}), ("b.py", "invalid-syntax", {"row": 2, "column": 5})]
    assert "not analysed" not in completed.stderr  # said once: in the report
