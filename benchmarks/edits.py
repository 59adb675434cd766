"""Keystrokes that keep a Python file valid after every single one, spread over the whole file.

Three kinds of typing, each undone by the same number of keystrokes so the text comes back:
- a trailing comment typed on a code line ("  # tune the rate"), then erased;
- a new line under a simple statement (Enter with indentation, then a name typed letter by letter:
  `t`, `to`, `tot`... are all valid expression statements), then erased;
- a digit of a number literal overwritten (select one character, type another), then restored.
Positions are in characters; the generated texts are ASCII, so they equal UTF-16 units.
"""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Keystroke:
    line: int  # 0-based
    start: int  # character of the replaced range's start on `line`
    end: int  # its end (same line)
    text: str  # inserted text
    end_line: int | None = None  # 0-based line of the range's end when it is not `line`


class Typist:
    def __init__(self, text: str, seed: int = 3) -> None:
        self.text = text
        self.rng = random.Random(seed)
        tree = ast.parse(text)
        lines = text.split("\n")
        self._comment_lines = [
            i for i, line in enumerate(lines) if line.strip() and not line.rstrip().endswith("\\")
            and '"""' not in line and "#" not in line
        ]
        simple = (ast.Assign, ast.AugAssign, ast.Expr, ast.Return, ast.AnnAssign)
        self._statement_lines: list[tuple[int, str]] = []
        self._digits: list[tuple[int, int]] = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for statement in node.body:
                    if isinstance(statement, simple) and statement.lineno == statement.end_lineno and not isinstance(statement, ast.Return):
                        indent = lines[statement.lineno - 1][: statement.col_offset]
                        self._statement_lines.append((statement.lineno - 1, indent))
            if isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.lineno == node.end_lineno:
                literal = lines[node.lineno - 1][node.col_offset : node.end_col_offset]
                for offset, char in enumerate(literal):
                    if char in "123456789":
                        self._digits.append((node.lineno - 1, node.col_offset + offset))
                        break
        self._pending: list[Keystroke] = []

    # -- the text ------------------------------------------------------------------------------
    def _apply(self, stroke: Keystroke) -> None:
        self.text = apply_to(self.text, stroke)

    def next(self) -> Keystroke:
        """The next keystroke, already applied to `self.text`."""
        if not self._pending:
            self._pending = self._plan()
        stroke = self._pending.pop(0)
        self._apply(stroke)
        return stroke

    # -- plans ---------------------------------------------------------------------------------
    def _plan(self) -> list[Keystroke]:
        kind = self.rng.random()
        if kind < 0.4:
            return self._comment()
        if kind < 0.8 and self._statement_lines:
            return self._new_statement()
        return self._literal() if self._digits else self._comment()

    def _line_length(self, index: int) -> int:
        return len(self.text.split("\n")[index])

    def _comment(self) -> list[Keystroke]:
        line = self.rng.choice(self._comment_lines)
        column = self._line_length(line)
        typed = "  # tune the rate"
        strokes = [Keystroke(line, column + i, column + i, char) for i, char in enumerate(typed)]
        strokes += [Keystroke(line, column + i, column + i + 1, "") for i in reversed(range(len(typed)))]
        return strokes

    def _new_statement(self) -> list[Keystroke]:
        line, indent = self.rng.choice(self._statement_lines)
        column = self._line_length(line)
        name = self.rng.choice(("total", "scale", "warmup"))
        strokes = [Keystroke(line, column, column, "\n" + indent)]
        strokes += [Keystroke(line + 1, len(indent) + i, len(indent) + i, char) for i, char in enumerate(name)]
        strokes += [Keystroke(line + 1, len(indent) + i, len(indent) + i + 1, "") for i in reversed(range(len(name)))]
        # Join the (now blank) line back: delete from the end of `line` to the end of the indentation.
        strokes.append(Keystroke(line, column, len(indent), "", end_line=line + 1))
        return strokes

    def _literal(self) -> list[Keystroke]:
        line, column = self.rng.choice(self._digits)
        original = self.text.split("\n")[line][column]
        other = self.rng.choice([d for d in "123456789" if d != original])
        return [Keystroke(line, column, column + 1, other), Keystroke(line, column, column + 1, original)]


def apply_to(text: str, stroke: Keystroke) -> str:
    """The text after one keystroke."""
    lines = text.split("\n")
    end_line = stroke.line if stroke.end_line is None else stroke.end_line
    head = lines[stroke.line][: stroke.start]
    tail = lines[end_line][stroke.end :]
    lines[stroke.line : end_line + 1] = (head + stroke.text + tail).split("\n")
    return "\n".join(lines)
