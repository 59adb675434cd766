"""The incremental parser gives exactly the tree a whole-file parse gives (positions included), for
random edits of real files, in both of its modes (statements below a line-count change parsed
again, or shifted in place for the engine's checked file); and the fast traversals visit what the
standard library's do, in the same order."""

from __future__ import annotations

import ast
import pickle
import random
import warnings
from pathlib import Path

import pytest

from fabric_lsp.analysis import incremental, nodes
from fabric_lsp.analysis.source import SourceFile

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted(ROOT.glob("fixtures/**/*.py")) + sorted((ROOT / "server" / "fabric_lsp" / "analysis").glob("*.py"))
PIECES = [
    "\n", " ", "x", "(", ")", '"""', "'", "#", "else:\n", "elif y:\n", "    ", "\t", "\\\n", "@dec\n",
    "def f():\n    pass\n", "class C:\n    z = 1\n", ";y=2", "\r\n", "\r", "\x0c", "\u2028", "\ufeff", "é",
    "\x00", "if a:\n", "\n\n", "async def g():\n    await h()\n", "import os\n", "global q\n", "'''",
]


def _mutate(rng: random.Random, text: str) -> str:
    position = rng.randrange(len(text) + 1)
    kind = rng.random()
    if kind < 0.45:
        return text[:position] + rng.choice(PIECES) + text[position:]
    if kind < 0.75:
        return text[:position] + text[min(len(text), position + rng.randint(1, 40)) :]
    return text[:position] + rng.choice(PIECES) + text[min(len(text), position + rng.randint(0, 6)) :]


def _dump(tree: ast.AST) -> str:
    return ast.dump(tree, include_attributes=True)


def _same_tree(got: ast.AST, want: ast.AST) -> bool:
    """`_dump(got) == _dump(want)`, decided by the trees' pickles first (C speed, a fifth of ast.dump's time):
    a pickle holds every node's type and all of its fields and positions, so equal pickles mean equal dumps;
    when the pickles differ (an extra attribute, another order), the dumps decide."""
    return pickle.dumps(got, 5) == pickle.dumps(want, 5) or _dump(got) == _dump(want)


@pytest.mark.parametrize("checked", [False, True], ids=["reparse", "shift"])
def test_incremental_trees_equal_whole_file_parses(checked):
    rng = random.Random(20240 + checked)
    compared = incremental_parses = 0
    warnings.simplefilter("ignore", SyntaxWarning)
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        incremental.forget()
        incremental.parse_text(str(path), text)
        for _ in range(25):
            candidate = _mutate(rng, text)
            before = incremental.stats["incremental"]
            if checked:
                with incremental.analysing():
                    got = incremental.parse_text(str(path), candidate, checked=True)
            else:
                got = incremental.parse_text(str(path), candidate)
            incremental_parses += incremental.stats["incremental"] - before
            want = SourceFile.parse(str(path), candidate)
            assert got.text == candidate
            if want.tree is None:
                assert got.tree is None, (path.name, repr(candidate[:80]))
                continue
            assert got.tree is not None
            assert _same_tree(got.tree, want.tree), path.name
            compared += 1
            text = candidate  # walk on from texts that parse, as typing does
    incremental.forget()
    assert compared >= 200 and incremental_parses >= 150, (compared, incremental_parses)


def test_shifting_leaves_no_stale_tree_behind():
    """After a shifted parse, asking again for the previous text gives a correct tree, not the
    base whose statements were moved in place."""
    text = "import os\n\n\ndef f():\n    return 1\n\n\ndef g():\n    return os.sep\n"
    path = str(ROOT / "example_shift.py")
    incremental.forget()
    first = incremental.parse_text(path, text)
    edited = text.replace("def f():\n", "def f():\n    x = 1\n")
    with incremental.analysing():
        second = incremental.parse_text(path, edited, checked=True)
    assert _dump(second.tree) == _dump(ast.parse(edited))
    again = incremental.parse_text(path, text)
    assert again is not first
    assert _dump(again.tree) == _dump(ast.parse(text))
    incremental.forget()


def test_fast_walks_match_the_standard_library():
    for path in FILES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert [id(n) for n in nodes.walk(tree)] == [id(n) for n in ast.walk(tree)]
        statements = [n for n in ast.walk(tree) if isinstance(n, (ast.stmt, ast.excepthandler, ast.match_case))]
        assert [id(n) for n in nodes.statements_breadth_first(tree)][1:] == [id(n) for n in statements]


def test_segment_equals_get_source_segment():
    text = "x = 'é'\r\ny = (1,\r\n  'ü')\rz = f'{x!r}'\n" + (ROOT / "fixtures" / "examples" / "pretrain_fsdp.py").read_text()
    source = SourceFile.parse("segment_example.py", text)
    for node in ast.walk(source.tree):
        if hasattr(node, "end_lineno"):
            assert source.segment(node) == (ast.get_source_segment(text, node) or "")
