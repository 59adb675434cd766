"""Issue 29 item 4: the text output as ruff's `full` (the default) and `concise` formats, run as users
run them (a real `python -m fabric_lsp check` process on real files).

- every finding's headline (what is wrong) is short: <= ~100 characters over all the fixtures;
- the reasons are on `note:` lines, the code frame marks the span under the flagged line;
- `concise` is one line per finding; JSON keeps its fields, its `message` the headline then the reasons, line by line;
- a rule that gives no notes (any rule of the registry) still gets a short headline;
- the editor's diagnostic message has the headline on its first line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from fabric_lsp.findings import Finding, Position, Severity, Span, headline_and_notes
from fabric_lsp.lsp.convert import diagnostic_message
from fabric_lsp.report import ReportContext, render_text

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "server"
FIXTURES = ROOT / "fixtures"
FIRST_LINE = re.compile(r"^(?P<where>\S.*?:\d+:\d+): (?P<code>[A-Z]+\d+) (\[\*\] )?(?P<severity>\w+): (?P<headline>.*)$")


def check(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SERVER), os.environ.get("PYTHONPATH", "")]))
    env.pop("FORCE_COLOR", None)
    return subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--no-cache", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_headlines_over_all_fixtures_are_short():
    """Before: messages of 178-531 characters (median 265) on one line. After: headlines median <= 90, max
    <= 110 (measured 82 and 106); the reasons moved to notes."""
    lengths, long, cut = [], [], []
    for folder in ("cases", "library_cases", "notebooks", "examples"):
        completed = check("--exit-zero", "--output-format", "full", str(FIXTURES / folder), cwd=ROOT)
        assert completed.returncode == 0, completed.stderr
        for line in completed.stdout.splitlines():
            match = FIRST_LINE.match(line)
            if match and not re.match(r"\d+ \| ", line):  # a finding's first line, not a frame's
                lengths.append(len(match["headline"]))
                long.extend([line] if len(match["headline"]) > 110 else [])
            elif "= note: " in line:  # each note one whole reason, never cut inside brackets
                cut.extend([line] if not _balanced(line.split("= note: ", 1)[1]) else [])
    assert len(lengths) >= 100
    # A rule's headline says what is wrong; the reasons go in Finding.notes (or after its first `; `).
    assert statistics.median(lengths) <= 90 and not long, (statistics.median(lengths), long)
    assert not cut, cut


def test_full_is_the_default_with_frame_notes_and_help(tmp_path):
    shutil.copy(FIXTURES / "cases" / "fab001_generate_ddp_literal.py", tmp_path / "train.py")
    source = (tmp_path / "train.py").read_text().splitlines()
    row = next(i for i, line in enumerate(source, 1) if "# expect: FAB001" in line)
    completed = check(str("train.py"), cwd=tmp_path)
    assert completed.returncode == 1
    lines = completed.stdout.splitlines()
    first = FIRST_LINE.match(lines[0])
    assert first and first["where"] == f"train.py:{row}:20" and first["code"] == "FAB001"
    assert first["headline"] == "`CharLM.generate()` runs submodules but is called on the Fabric-wrapped `model`"
    # The frame: the line before, the flagged line, the marks under `generate`, the line after.
    width = len(str(row + 1))
    assert lines[1] == " " * width + " |"
    assert lines[2] == f"{row - 1:>{width}} | {source[row - 2]}".rstrip()
    assert lines[3] == f"{row:>{width}} | {source[row - 1]}"
    column = source[row - 1].index("generate")
    assert lines[4] == " " * width + " | " + " " * column + "^" * len("generate") + " FAB001"
    assert lines[5] == f"{row + 1:>{width}} | {source[row]}"
    assert lines[6] == " " * width + " |"
    notes = [line for line in lines if line.startswith(" " * width + " = note: ")]
    assert any("RuntimeError under strategy=\"ddp\"" in note for note in notes)
    assert any(note.endswith("`model` is not marked with `model.mark_forward_method(\"generate\")` before this call")
               for note in notes)
    assert any(re.search(r"= note: train\.py:\d+:\d+: `model` is wrapped by Fabric here$", note) for note in notes)
    assert any(line.startswith(" " * width + " = help: Mark `generate`") for line in lines)
    assert lines[-1] == "Found 1 finding: 1 error (1 fixable)."
    assert max(len(line) for line in lines if not line.startswith(f"{row} |")) <= 140


def test_concise_is_one_line_per_finding_and_json_keeps_the_whole_message(tmp_path):
    shutil.copy(FIXTURES / "cases" / "fab001_generate_ddp_literal.py", tmp_path / "a.py")
    shutil.copy(FIXTURES / "cases" / "fab003_bound_method_ddp.py", tmp_path / "b.py")
    concise = check("--output-format", "concise", ".", cwd=tmp_path).stdout.splitlines()
    assert [bool(FIRST_LINE.match(line)) for line in concise[:-2]] == [True] * (len(concise) - 2)
    assert concise[-2] == "" and concise[-1].startswith("Found ")
    items = json.loads(check("--output-format", "json", ".", cwd=tmp_path).stdout)
    assert {"code", "message", "severity", "filename", "location", "end_location", "url", "noqa_row", "fix",
            "related"} <= set(items[0])
    by_code = {item["code"]: item["message"] for item in items}
    headlines = [FIRST_LINE.match(line)["headline"] for line in concise[:-2]]
    for headline in headlines:  # the JSON message is the headline, then its reasons line by line
        assert any(message.startswith(headline + "\n") for message in by_code.values())
    assert 'TypeError "Expected a method or a string, but got: function"' in by_code["FAB003"]


def test_frame_in_a_notebook_counts_rows_in_the_cell(tmp_path):
    shutil.copy(FIXTURES / "notebooks" / "fab004_misspelled_method.ipynb", tmp_path / "nb.ipynb")
    lines = check("nb.ipynb", cwd=tmp_path).stdout.splitlines()
    cell, row = re.search(r":cell (\d+):(\d+):\d+$", FIRST_LINE.match(lines[0])["where"]).groups()
    notebook = json.loads((tmp_path / "nb.ipynb").read_text())
    code = ["".join(c["source"]).splitlines() for c in notebook["cells"] if c["cell_type"] == "code"]
    flagged = code[int(cell) - 1][int(row) - 1]
    assert "mark_forward_method" in flagged
    assert any(re.fullmatch(rf"\s*{row} \| " + re.escape(flagged), line) for line in lines), lines


def test_a_rule_without_notes_gets_a_short_headline(tmp_path):
    """Any rule of the registry (FAB005+ included) may give a one-line message only: the text output
    splits it at its first clause boundary outside code and quotes."""
    path = tmp_path / "x.py"
    path.write_text("model = build()\nout = model.sample(x)\n")
    long = ("`Net.sample()` does something Fabric rejects; it runs `self.layer(x; y)` and \"a; b\" inside; "
            "RuntimeError \"...\" under strategy=\"ddp\" because the configuration says so at run time")
    finding = Finding("FAB099", Severity.ERROR, Span(str(path), Position(1, 12), Position(1, 18)), long, "")
    headline, notes = headline_and_notes(finding)
    assert headline == "`Net.sample()` does something Fabric rejects"
    assert notes == ("it runs `self.layer(x; y)` and \"a; b\" inside",
                     "RuntimeError \"...\" under strategy=\"ddp\" because the configuration says so at run time")
    out = render_text([finding], ReportContext(cwd=str(tmp_path)))
    assert out.splitlines()[:6] == [
        "x.py:2:13: FAB099 error: `Net.sample()` does something Fabric rejects",
        "  |",
        "1 | model = build()",
        "2 | out = model.sample(x)",
        "  |             ^^^^^^ FAB099",
        "  |",
    ]
    assert "  = note: it runs `self.layer(x; y)` and \"a; b\" inside" in out
    # The editor: the headline on the first line, each reason below it.
    assert diagnostic_message(finding).splitlines() == [headline, *notes]
    assert finding.full_message == "\n".join((headline, *notes))
    assert finding.one_line_message == headline + ": " + "; ".join(notes)


def _balanced(text: str) -> bool:
    """Brackets outside backticks and double quotes pair up."""
    depth, quote = 0, None
    for char in text:
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "`\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0 and quote is None


def test_a_note_is_never_cut_inside_a_parenthesis(tmp_path):
    """Trial 12-07: FAB005's reason `(the project starts other scripts with `fabric run`; started so, this
    one would not raise)` was cut at its `; ` into two `note:` lines (and two lines of the JSON message).
    Before: `= note: ... (the project starts other scripts with `fabric run`` / `= note: started so, ...`."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "README.md").write_text("# demo\n\n    fabric run --devices 2 other.py\n")
    (tmp_path / "other.py").write_text("print('other')\n")
    (tmp_path / "train.py").write_text(
        "import sys\n\nimport torch\nfrom lightning.fabric import Fabric\n\n\n"
        "def main(strategy):\n"
        "    fabric = Fabric(accelerator=\"cpu\", devices=2, strategy=strategy)\n"
        "    return fabric.setup(torch.nn.Linear(2, 2))\n\n\n"
        "if __name__ == \"__main__\":\n    main(sys.argv[1])\n")
    completed = check("--hints", ".", cwd=tmp_path)
    assert completed.returncode == 0, completed.stdout + completed.stderr  # a hint only
    notes = [line.split("= note: ", 1)[1] for line in completed.stdout.splitlines() if "= note: " in line]
    assert notes and all(_balanced(note) for note in notes), notes
    reason = "(the project starts other scripts with `fabric run`; started so, this one would not raise)"
    assert sum(reason in note for note in notes) == 1, notes
    assert not any(note.startswith("started so") for note in notes), notes
    message = json.loads(check("--hints", "--output-format", "json", ".", cwd=tmp_path).stdout)[0]["message"]
    assert message.startswith("`fabric.setup(...)` before `launch()`\n")
    assert all(_balanced(line) for line in message.splitlines()), message


def test_clauses_split_outside_brackets_and_ignore_unpaired_ones():
    span = Span("x.py", Position(0, 0), Position(0, 1))
    long = "x" * 60 + " is wrong (because a; b (nested; deeper)); RuntimeError [under c; d] " + "y" * 40
    headline, notes = headline_and_notes(Finding("FAB099", Severity.ERROR, span, long, ""))
    assert headline == "x" * 60 + " is wrong (because a; b (nested; deeper))"
    assert notes == ("RuntimeError [under c; d] " + "y" * 40,)
    # A stray `)` of prose (`1) ...; 2) ...`) pairs with nothing: split at every `; ` as before.
    prose = "1) the first reason, " + "x" * 80 + "; 2) the second reason; 3) the third"
    headline, notes = headline_and_notes(Finding("FAB099", Severity.ERROR, span, prose, ""))
    assert headline == "1) the first reason, " + "x" * 80 and notes == ("2) the second reason", "3) the third")


def test_frame_marks_under_tabs_and_wide_characters(tmp_path):
    path = tmp_path / "w.py"
    path.write_text("\tname = '漢字'; model.generate(x)\n")
    start = path.read_text().index("generate")
    finding = Finding("FAB001", Severity.WARNING, Span(str(path), Position(0, start), Position(0, start + 8)),
                      "short", "")
    lines = render_text([finding], ReportContext(cwd=str(tmp_path))).splitlines()
    assert lines[2] == "1 |     name = '漢字'; model.generate(x)"
    # tab = 4 columns, each of the two ideographs 2 columns: the marks sit under `generate` on screen.
    assert lines[3] == "  | " + " " * (4 + len("name = '") + 4 + len("'; model.")) + "^" * 8 + " FAB001"


def test_frame_escapes_control_characters_of_the_source(tmp_path):
    """The frame prints source text: an ESC or a bidi override in the flagged line is shown escaped,
    never sent to the terminal raw (report/escape.py)."""
    text = (FIXTURES / "cases" / "fab001_generate_ddp_literal.py").read_text()
    text = text.replace("# expect: FAB001 error", "# \x1b]0;pwned\x07 \u202e evil # expect: FAB001 error")
    (tmp_path / "train.py").write_text(text)
    completed = check("train.py", cwd=tmp_path)
    assert completed.returncode == 1
    assert "\x1b" not in completed.stdout and "\u202e" not in completed.stdout and "\x07" not in completed.stdout
    assert "# \\x1b]0;pwned\\x07 \\u202e evil" in completed.stdout


def test_frame_shows_the_text_checked_from_stdin_and_none_for_a_missing_path(tmp_path):
    """`--stdin-filename train.py` checks standard input (an editor's unsaved buffer): the frame shows
    that text, not the file on disk; a path that does not exist (io-error) has no frame."""
    source = (FIXTURES / "cases" / "fab001_generate_ddp_literal.py").read_text()
    (tmp_path / "train.py").write_text("# the file on disk differs\n" * 80)
    env = dict(os.environ, PYTHONPATH=str(SERVER))
    completed = subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--no-cache", "--stdin-filename",
                                "train.py", "-"], cwd=tmp_path, env=env, input=source, capture_output=True,
                               text=True, timeout=300)
    assert completed.returncode == 1, completed.stderr
    row = next(i for i, line in enumerate(source.splitlines(), 1) if "# expect: FAB001" in line)
    assert f"{row} | {source.splitlines()[row - 1]}" in completed.stdout
    assert "the file on disk differs" not in completed.stdout
    missing = check("nope.py", cwd=tmp_path)
    assert missing.stdout.splitlines()[0].startswith("nope.py:1:1: io-error error: ")
    assert " | " not in missing.stdout
