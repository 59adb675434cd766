"""Syntax judged for the project's Python, not the one running fabric-lsp (issue 25, item 6).

`requires-python = ">=3.12"` and `f"{a}\\t{'\\t'.join(terms)}"` (PEP 701) was an invalid-syntax error
when fabric-lsp ran on 3.11; ruff passes it. Now: code valid for the target, or for any newer
Python fabric-lsp knows, is never reported; the file is analysed with that syntax blanked (one
notice); a file broken anyway is reported at the place of its own error; code that only an older
target rejects is not reported (decision: analysis/compat.py); a target newer than any syntax
fabric-lsp knows leaves a file that does not parse here unjudged, said once. Files and notebooks
alike, the command line and the editor's analysis alike. Each test runs the real command (or
server) on a project built in tmp_path.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from fabric_lsp.analysis import compat

ROOT = Path(__file__).resolve().parents[1]
OLDER = sys.version_info < (3, 12)  # this Python does not parse PEP 701 / PEP 695 itself

# Valid on Python 3.12+ (one construct a line or block); none of it parses on 3.11.
PEP_701_AND_695 = r'''terms = ["x", "y"]
a = 1
line = f"{a}\t{'\t'.join(terms)}"
names = {"a": 1}
same_quotes = f"{names["a"]} and {f"{names['a']}"}"
comment = f"""{
    a  # a comment inside a replacement field
}"""
spans_lines = f"{a +
    1}"
type Pair = tuple[int, int]
type Box[T] = list[T]


class Stack[T]:
    def push[S](self, item: S) -> S:
        return item


def first[
    T
](items: list[T]) -> T:
    return items[0]
'''

MODEL = '''import torch
from torch import nn
from lightning.fabric import Fabric


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)

    def generate(self, x):
        return self.head(x)


fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
fabric.launch()
model = fabric.setup(LM())
tokens = model.generate(torch.randn(2, 4))
'''


def project(tmp_path: Path, requires: str | None) -> Path:
    table = f'[project]\nname = "p"\nrequires-python = "{requires}"\n' if requires else '[project]\nname = "p"\n'
    (tmp_path / "pyproject.toml").write_text(table, encoding="utf-8")
    return tmp_path


def check(folder: Path, *args: str, cache: bool = False) -> tuple[list[dict], subprocess.CompletedProcess]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "server"))
    env.pop("VIRTUAL_ENV", None)
    completed = subprocess.run(
        [sys.executable, "-m", "fabric_lsp", "check", *([] if cache else ["--no-cache"]), "--output-format", "json",
         *args],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300,
    )
    assert "Traceback" not in completed.stderr, completed.stderr
    return json.loads(completed.stdout), completed


def codes(found: list[dict]) -> list[tuple[str, str, int, int]]:
    return [(Path(f["filename"]).name, f["code"], f["location"]["row"], f["location"]["column"]) for f in found]


def test_syntax_of_the_projects_python_is_not_an_error_and_the_file_is_analysed(tmp_path):
    folder = project(tmp_path, ">=3.12")
    (folder / "train.py").write_text(PEP_701_AND_695 + MODEL, encoding="utf-8")
    found, completed = check(folder, "train.py")
    model_line = len(PEP_701_AND_695.splitlines()) + MODEL.splitlines().index("tokens = model.generate(torch.randn(2, 4))") + 1
    assert codes(found) == [("train.py", "FAB001", model_line, 16)], completed.stdout
    assert completed.returncode == 1  # the finding, not the syntax
    notes = [line for line in completed.stderr.splitlines() if "train.py" in line]
    if OLDER:  # analysed with the newer syntax blanked, said once
        assert len(notes) == 1 and "uses syntax newer than Python 3." in notes[0], completed.stderr
        assert "f-string contents" in notes[0] and "type parameter lists" in notes[0]
    else:
        assert notes == []


def test_a_file_broken_anyway_is_reported_at_its_own_error(tmp_path):
    folder = project(tmp_path, ">=3.12")
    # The newer syntax comes first: the error this Python meets first is not the file's own.
    broken = PEP_701_AND_695 + "\n\ndef train(:\n    pass\n"
    (folder / "broken.py").write_text(broken, encoding="utf-8")
    (folder / "return.py").write_text(PEP_701_AND_695 + "return 1\n", encoding="utf-8")  # a compiler check
    found, completed = check(folder, ".")
    row = broken.splitlines().index("def train(:") + 1
    assert codes(found) == [("broken.py", "invalid-syntax", row, 11),
                            ("return.py", "invalid-syntax", len(PEP_701_AND_695.splitlines()) + 1, 1)]
    assert [f["message"] for f in found] == ["invalid syntax", "'return' outside function"]
    assert completed.returncode == 1


ISSUE_LINE = "terms = ['a']\na = 1\n" + 'line = f"{a}\\t{\'\\t\'.join(terms)}"\n'  # the issue's f-string


def test_syntax_only_an_older_target_rejects_is_not_reported(tmp_path):
    """Decision: `requires-python = ">=3.10"` with a PEP 701 f-string runs on 3.12+, one of the
    project's Pythons; reporting it would depend on the Python running fabric-lsp (3.12 compiles it,
    3.11 does not), so it is never reported, and no more is a `match` statement under ">=3.8"
    (ruff's version-related syntax errors report both). The file is analysed as under ">=3.12"."""
    (tmp_path / "p310").mkdir()
    (tmp_path / "p38").mkdir()
    (project(tmp_path / "p310", ">=3.10") / "train.py").write_text(ISSUE_LINE + MODEL, encoding="utf-8")
    (project(tmp_path / "p38", ">=3.8") / "old.py").write_text("match 1:\n    case 1:\n        pass\n",
                                                               encoding="utf-8")
    found, completed = check(tmp_path, "p310", "p38")
    assert codes(found) == [("train.py", "FAB001", 3 + MODEL.splitlines().index(
        "tokens = model.generate(torch.randn(2, 4))") + 1, 16)], completed.stdout


def test_a_target_newer_than_any_syntax_known_is_not_judged(tmp_path):
    """`lazy import` (a Python after NEWEST_GRAMMAR): unknown here. With requires-python beyond what
    fabric-lsp knows, not an error, one notice; with a known target, an error (3.12-3.14 refuse it)."""
    folder = project(tmp_path, f">={compat.NEWEST_GRAMMAR[0]}.{compat.NEWEST_GRAMMAR[1] + 1}")
    (folder / "app.py").write_text("lazy import json\nfrom lightning.fabric import Fabric\n", encoding="utf-8")
    (folder / "tool.py").write_text("lazy import json\n", encoding="utf-8")
    for _ in range(2):  # the second run from the cache says the same
        found, completed = check(folder, ".", cache=True)
        assert found == [] and completed.returncode == 0
        for name in ("app.py", "tool.py"):
            notes = [line for line in completed.stderr.splitlines() if f"{name}:" in line]
            assert len(notes) == 1, completed.stderr
            assert "not analysed: does not parse with Python" in notes[0] and "is newer than any syntax" in notes[0]
    # A known target: an error, also for the cache (requires-python is part of its key).
    (folder / "pyproject.toml").write_text('[project]\nname = "p"\nrequires-python = ">=3.12"\n')
    found, _ = check(folder, ".", cache=True)
    assert codes(found) == [("app.py", "invalid-syntax", 1, 6), ("tool.py", "invalid-syntax", 1, 6)]


def notebook(*cells: str) -> str:
    def cell(text: str) -> dict:
        lines = text.split("\n")
        source = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
        return {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source}

    document = {"cells": [cell(c) for c in cells], "metadata": {"language_info": {"name": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, indent=1) + "\n"


def test_notebook_cells_are_judged_as_files_are(tmp_path):
    folder = project(tmp_path, ">=3.12")
    model, setup = MODEL.split("fabric = Fabric(")
    newer = ISSUE_LINE + "type Pair = tuple[int, int]"
    (folder / "nb.ipynb").write_text(notebook(model.rstrip("\n"), newer, "fabric = Fabric(" + setup.rstrip("\n"),
                                              "x = 1\ndef broken(:\n    pass"), encoding="utf-8")
    found, completed = check(folder, "nb.ipynb")
    cells = [(f["code"], f["cell"], f["location"]["row"], f["location"]["column"]) for f in found]
    # The cell of newer syntax is analysed (the model set up in cell 3 is the one of cell 1); the
    # broken cell is reported at its own line and column.
    assert cells == [("FAB001", 3, 4, 16), ("invalid-syntax", 4, 2, 12)], completed.stdout
    if OLDER:
        assert "uses syntax newer than Python" in completed.stderr


@pytest.mark.skipif(not OLDER, reason="this Python parses the syntax itself")
def test_the_fast_path_is_one_compile(tmp_path, monkeypatch, capsys):
    """The newer-syntax pass runs only for a file that does not compile: never for files that do."""
    from fabric_lsp.cli import main

    calls = []
    original = compat._neutralize
    monkeypatch.setattr(compat, "_neutralize", lambda text, *a, **k: calls.append(len(text)) or original(text, *a, **k))
    monkeypatch.chdir(project(tmp_path, ">=3.12"))
    for index in range(5):
        (tmp_path / f"m{index}.py").write_text(MODEL, encoding="utf-8")
    assert main(["check", "--no-cache", "--jobs", "1", "."]) == 1
    assert calls == []
    (tmp_path / "m0.py").write_text(PEP_701_AND_695, encoding="utf-8")
    assert main(["check", "--no-cache", "--jobs", "1", "m0.py"]) == 0
    assert calls and set(calls) == {len(PEP_701_AND_695)}  # that file only (the check, the analysis)
    capsys.readouterr()


def test_the_string_scanner_reads_real_code_as_the_tokenizer_does():
    """The strings and comments neutralize() steps over, on this Python's own standard library
    (files it tokenizes), against tokenize: the same spans, and no f-string taken for a 3.12 one
    when this Python parses it."""
    library = Path(os.__file__).parent
    files = sorted(library.glob("*.py"))[::4]
    checked = 0
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            compile(text, str(path), "exec", dont_inherit=True)
            tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        except (SyntaxError, tokenize.TokenError, ValueError):
            continue
        offsets = [0]
        for line in text.splitlines(keepends=True):
            offsets.append(offsets[-1] + len(line))
        expected = [(offsets[t.start[0] - 1] + t.start[1], offsets[t.end[0] - 1] + t.end[1])
                    for t in tokens if t.type in (tokenize.STRING, tokenize.COMMENT)]
        if sys.version_info >= (3, 12):  # f-strings are several tokens there: compare the rest
            expected = None
        scanned = compat._strings(text)
        if expected is not None:
            assert scanned.spans == expected, path
        if OLDER:
            assert not [f for f in scanned.formatted if f[5]], path
        rewritten = compat.neutralize(text)
        assert rewritten is None or compile(rewritten[0], str(path), "exec") is not None
        checked += 1
    assert checked > 20


# Valid on 3.12+ (PEP 701, 695, 696; PEP 750 and 758 on 3.14), refused by 3.11.
NEWER_SNIPPETS = [
    'x = 1\ns = f"{f"{f"{x}"}"}"\n',
    'd = {"a": 1}\ns = f"{d["a"]!r:>{10}} {d["a"]=}"\n',
    's = f"{ {"k": 1}["k"] } {(lambda: "}")()} {1 != 2}"\n',
    "s = f'''{\n    '\\n'.join([])  # a comment\n}'''\n",
    'w = 3\ns = f"{1:{"<"}{w}} {"\\N{BULLET}"}"\n',
    "s = (f'{'a'}'\n     f'{'b'}')\nclass A[T = int, *Ts, **P]:\n    pass\n",
    "type Alias[K, V = str] = dict[\n    K, V]\n",
    'x = 1\ns = t"{x}" if False else rf"\\d{x!s}"\n',
    "try:\n    pass\nexcept ValueError, TypeError:\n    pass\n",
]


@pytest.mark.skipif(not OLDER, reason="this Python parses the syntax itself")
@pytest.mark.parametrize("snippet", NEWER_SNIPPETS)
def test_newer_syntax_is_blanked_in_place_and_parses(snippet):
    with pytest.raises(SyntaxError):
        compile(snippet, "newer.py", "exec")
    text, _ = compat.neutralize(snippet)
    compile(text, "newer.py", "exec")
    assert len(text) == len(snippet) and text.count("\n") == snippet.count("\n")


@pytest.mark.parametrize("broken", ['x = 1\ns = f"{x y}"\n', 'x = (1,\ns = f"{1}"\n', "s = f'{'\ntype T = int\n"])
def test_a_broken_f_string_is_still_broken(broken):
    assert compat.own_syntax_error(broken, lambda text: compile(text, "x.py", "exec")) is not None


HOSTILE = {  # texts that make a naive scanner start over at every line (each ~1.5 MB)
    "unclosed f-string fields": 'x = f"{\n' * 200_000,
    "unclosed strings in fields": "x = f\"{'''\n" * 150_000,
    "unclosed type parameter lists": "def f[\n" * 200_000,
    "unclosed except lists": "try:\n pass\nexcept A, (\n" * 60_000,
    "type statements on one line": "type a=" * 200_000,
    "f-strings nested 2,000 deep": 'f"{' * 2000 + "1" + '}"' * 2000 + "\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_the_newer_syntax_pass_is_linear_and_a_broken_text_stays_broken(name, monkeypatch):
    """Counted: the f-string scan visits at most 2 characters per character of the text; brackets
    are matched once. None of these texts is valid for any Python: each is reported."""
    text = HOSTILE[name]
    visits = [0]
    spend = compat._Formatted._spend

    def counted(self, count=1):
        visits[0] += count
        return spend(self, count)

    monkeypatch.setattr(compat._Formatted, "_spend", counted)
    error = compat.own_syntax_error(text, lambda source: compile(source, "hostile.py", "exec"))
    assert error is not None
    # The work, counted (not timed: a quadratic scan, hours before, would visit ~len(text)^2).
    assert visits[0] <= 2 * len(text) + 10_000


def test_requires_python_lower_bound():
    requires_python_floor = compat.requires_python_floor
    assert requires_python_floor(">=3.12") == (3, 12)
    assert requires_python_floor(">= 3.10, <4") == (3, 10)
    assert requires_python_floor("~=3.11") == (3, 11)
    assert requires_python_floor("==3.13.*") == (3, 13)
    assert requires_python_floor(">3.9,>=3.11") == (3, 11)
    assert requires_python_floor("<3.13") is None
    assert requires_python_floor("") is None


async def test_the_editor_analyses_a_file_of_the_projects_syntax(tmp_path):
    """The server publishes no invalid-syntax diagnostic (unchanged) and analyses the file as the
    command line does: the FAB001 of a file with the issue's f-string."""
    sys.path.insert(0, str(ROOT / "tests" / "lsp"))
    from lspkit import capabilities, diagnostics, open_doc, session

    folder = project(tmp_path, ">=3.12")
    (folder / "broken.py").write_text(ISSUE_LINE + MODEL + "def broken(:\n", encoding="utf-8")
    (folder / "train.py").write_text(ISSUE_LINE + MODEL, encoding="utf-8")
    async with session(capabilities("visual-studio-code"), [folder]) as (client, _):
        broken = await diagnostics(client, open_doc(client, folder / "broken.py"), version=1)
        found = await diagnostics(client, open_doc(client, folder / "train.py"), version=1)
    assert broken == []  # a broken file: not analysed, and no invalid-syntax diagnostic (as before)
    assert [(d.code, d.range.start.line) for d in found] == [("FAB001", 3 + MODEL.splitlines().index(
        "tokens = model.generate(torch.randn(2, 4))"))]


@pytest.mark.skipif(not OLDER, reason="this Python parses PEP 695 itself: no notice at all")
async def test_the_editor_says_files_of_newer_syntax_in_one_debug_line_per_analysis(tmp_path):
    """Trial 12-07: the command said one notice per file of newer syntax. The server never shows them
    (no window/showMessage; the analysis's notes are debug lines in the editor's log); at logLevel
    debug, each analysis of a program of 10 such files said 10 lines, one line now."""
    sys.path.insert(0, str(ROOT / "tests" / "lsp"))
    from lspkit import capabilities, diagnostics, open_doc, replace_text, session

    folder = project(tmp_path, ">=3.12")
    body = "from lightning.fabric import Fabric\n\n\ndef first[T](items: list[T]) -> T:\n    return items[0]\n"
    for number in range(2, 11):
        (folder / f"a{number:02}.py").write_text(body, encoding="utf-8")
    main = "import a02, a03, a04, a05, a06, a07, a08, a09, a10\n" + body  # one program of 10 files
    (folder / "a01.py").write_text(main, encoding="utf-8")
    said = {}
    for level in ("info", "debug"):  # info: the default
        async with session(capabilities("visual-studio-code"), [folder],
                           configuration={"": {"logLevel": level}}) as (client, _):
            uri = open_doc(client, folder / "a01.py")
            await diagnostics(client, uri, version=1)
            for version in (2, 3):  # typing: each edit analyses the program again
                replace_text(client, uri, version, main + "\n" * version)
                await diagnostics(client, uri, version=version)
            await asyncio.sleep(0.2)
            assert not [m for m in client.messages if "newer than Python" in m.message]
            said[level] = [m.message for m in client.log_messages if "newer than Python" in m.message]
    assert said["info"] == []
    assert 1 <= len(said["debug"]) <= 3, said["debug"]
    assert all(line.startswith(f"10 files ({folder / 'a01.py'}, {folder / 'a02.py'} and 8 more) use syntax newer")
               for line in said["debug"]), said["debug"]
