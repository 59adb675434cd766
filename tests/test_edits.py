"""Applying TextEdits: positions, conflicts between fixes, several files, line endings, diffs."""

from __future__ import annotations

import difflib
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from fabric_lsp.fixes.edits import (
    OverlappingEdits,
    apply_fixes,
    apply_text_edits,
    detect_newline,
    line_starts,
    offset_of,
    position_of,
    unified_diff,
)
from fabric_lsp.findings import Applicability, Fix, Position, TextEdit

A = "/project/a.py"
B = "/project/b.py"


def edit(path: str, start: tuple[int, int], end: tuple[int, int], text: str) -> TextEdit:
    return TextEdit(path, Position(*start), Position(*end), text)


def fix(*edits: TextEdit, title: str = "fix", applicability: Applicability = Applicability.SAFE) -> Fix:
    return Fix(title, applicability, tuple(edits))


# --- positions ------------------------------------------------------------------------------


def test_only_python_line_breaks_start_lines():
    # \x0c (form feed) and U+2028 are line breaks for str.splitlines() but not for Python's tokenizer.
    text = "a\r\nb\rc\nd\x0ce\u2028f\n"
    assert line_starts(text) == [0, 3, 5, 7, 13]
    assert offset_of(text, Position(3, 2)) == 9  # "e", after "d\x0c" on the same line
    assert position_of(text, 9) == Position(3, 2)


def test_columns_count_code_points_not_bytes_or_utf16_units():
    text = "x = 'é😀'; y\n"
    # "y" is the 11th character: é is 2 bytes in UTF-8, 😀 is 2 UTF-16 units, each is 1 here.
    assert offset_of(text, Position(0, 10)) == text.index("y")


def test_positions_past_the_end_clamp_like_lsp():
    text = "ab\r\ncd"
    assert offset_of(text, Position(0, 99)) == 2  # end of line 0, before the \r\n
    assert offset_of(text, Position(1, 99)) == len(text)
    assert offset_of(text, Position(7, 0)) == len(text)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab\r\n\x0cé", max_size=30), st.data())
def test_offset_and_position_round_trip(text, data):
    offset = data.draw(st.integers(0, len(text)))
    # Offsets inside a \r\n pair are not positions; move to the pair's start.
    if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n":
        offset -= 1
    assert offset_of(text, position_of(text, offset)) == offset


# --- one file ---------------------------------------------------------------------------------


def test_edits_apply_against_the_original_text():
    text = "model = fabric.setup(model)\nout = model.generate(x)\n"
    edits = [
        edit(A, (1, 6), (1, 11), "model.module"),
        edit(A, (1, 0), (1, 0), "# fixed\n"),
        edit(A, (0, 27), (0, 27), '\nmodel.mark_forward_method("generate")'),
    ]
    assert apply_text_edits(text, edits) == (
        "model = fabric.setup(model)\n"
        'model.mark_forward_method("generate")\n'
        "# fixed\n"
        "out = model.module.generate(x)\n"
    )


def test_overlapping_edits_of_one_file_raise():
    text = "abcdef"
    try:
        apply_text_edits(text, [edit(A, (0, 1), (0, 4), "X"), edit(A, (0, 3), (0, 5), "Y")])
    except OverlappingEdits:
        pass
    else:
        raise AssertionError("overlapping edits were applied")


def test_insertion_inside_a_replacement_overlaps_but_at_its_edges_does_not():
    text = "abcdef"
    assert apply_text_edits(text, [edit(A, (0, 1), (0, 4), "X"), edit(A, (0, 1), (0, 1), "<")]) == "a<Xef"
    assert apply_text_edits(text, [edit(A, (0, 1), (0, 4), "X"), edit(A, (0, 4), (0, 4), ">")]) == "aX>ef"
    try:
        apply_text_edits(text, [edit(A, (0, 1), (0, 4), "X"), edit(A, (0, 2), (0, 2), "!")])
    except OverlappingEdits:
        pass
    else:
        raise AssertionError("an insertion inside a replaced range was applied")


def test_newline_of_inserted_text_follows_the_file():
    text = "a = 1\r\nb = 2\r\n"
    assert detect_newline(text) == "\r\n"
    result = apply_text_edits(text, [edit(A, (1, 0), (1, 0), "x = 0\n")], newline=detect_newline(text))
    assert result == "a = 1\r\nx = 0\r\nb = 2\r\n"


# --- fixes across findings and files ---------------------------------------------------------


def test_overlapping_fix_is_skipped_whole_and_the_first_wins():
    text = "out = model.generate(x)\n"
    first = fix(edit(A, (0, 6), (0, 11), "model.module"))
    second = fix(edit(A, (0, 0), (0, 0), "# note\n"), edit(A, (0, 6), (0, 20), "other"))
    result = apply_fixes([first, second], {A: text})
    assert result.applied == [0]
    assert result.skipped == [1]
    # The second fix's harmless insertion is not applied either: a fix is all or nothing.
    assert result.texts == {A: "out = model.module.generate(x)\n"}


def test_identical_edits_from_two_findings_apply_once_and_both_count():
    text = "model = fabric.setup(model)\na = model.generate(x)\nb = model.generate(y)\n"
    mark = edit(A, (0, 27), (0, 27), '\nmodel.mark_forward_method("generate")')
    result = apply_fixes([fix(mark), fix(mark)], {A: text})
    assert result.applied == [0, 1] and result.skipped == []
    assert result.texts[A].count("mark_forward_method") == 1


def test_different_insertions_at_one_point_all_apply_in_order():
    text = "model = fabric.setup(model)\n"
    fixes = [
        fix(edit(A, (0, 27), (0, 27), '\nmodel.mark_forward_method("generate")')),
        fix(edit(A, (0, 27), (0, 27), '\nmodel.mark_forward_method("encode")')),
    ]
    result = apply_fixes(fixes, {A: text})
    assert result.applied == [0, 1]
    assert result.texts[A] == (
        'model = fabric.setup(model)\nmodel.mark_forward_method("generate")\nmodel.mark_forward_method("encode")\n'
    )


def test_fix_editing_two_files_applies_to_both_or_neither():
    texts = {A: "x = Block()\n", B: "class Block:\n    pass\n"}
    both = fix(edit(A, (0, 0), (0, 0), "# a\n"), edit(B, (1, 4), (1, 8), "def reset_parameters(self): ..."))
    clash = fix(edit(B, (1, 4), (1, 8), "..."), edit(A, (0, 4), (0, 9), "Other"))
    result = apply_fixes([both, clash], texts)
    assert result.applied == [0] and result.skipped == [1]
    assert result.texts == {
        A: "# a\nx = Block()\n",
        B: "class Block:\n    def reset_parameters(self): ...\n",
    }


def test_fix_naming_an_unreadable_or_unloaded_file_is_unavailable():
    texts = {A: "a\n", B: None}
    result = apply_fixes(
        [fix(edit(A, (0, 0), (0, 0), "1"), edit(B, (0, 0), (0, 0), "2")), fix(edit("/elsewhere.py", (0, 0), (0, 0), "3"))],
        texts,
    )
    assert result.applied == [] and result.texts == {}
    assert set(result.unavailable) == {0, 1}
    assert "cannot read /project/b.py" in result.unavailable[0]


def test_fix_whose_own_edits_overlap_is_unavailable_not_half_applied():
    result = apply_fixes([fix(edit(A, (0, 0), (0, 3), "X"), edit(A, (0, 2), (0, 4), "Y"))], {A: "abcdef"})
    assert result.applied == [] and result.texts == {} and 0 in result.unavailable


def test_fix_that_changes_nothing_reports_no_changed_file():
    result = apply_fixes([fix(edit(A, (0, 0), (0, 1), "a"))], {A: "abc"})
    assert result.applied == [0] and result.texts == {}


def test_fixes_keep_crlf_files_crlf():
    text = "model = fabric.setup(model)\r\nout = model.generate(x)\r\n"
    result = apply_fixes([fix(edit(A, (0, 27), (0, 27), '\nmodel.mark_forward_method("generate")'))], {A: text})
    assert result.texts[A] == 'model = fabric.setup(model)\r\nmodel.mark_forward_method("generate")\r\nout = model.generate(x)\r\n'
    assert not re.search(r"(?<!\r)\n", result.texts[A])


# --- diffs ----------------------------------------------------------------------------------


def test_unified_diff_has_git_headers_and_applies_back():
    old = "a\nb\nc\n"
    new = "a\nB\nc\nd\n"
    diff = unified_diff(old, new, "pkg/m.py")
    assert diff.startswith("--- a/pkg/m.py\n+++ b/pkg/m.py\n@@")
    assert "-b\n+B\n" in diff and "+d\n" in diff
    # The same lines as difflib's own diff: nothing lost or reordered.
    expected = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "a/pkg/m.py", "b/pkg/m.py"))
    assert diff == expected


def test_unified_diff_marks_a_last_line_without_line_break():
    diff = unified_diff("a\nb", "a\nb\nc", "m.py")
    assert "-b\n\\ No newline at end of file\n+b\n+c\n\\ No newline at end of file\n" in diff


def test_identical_texts_give_an_empty_diff():
    assert unified_diff("a\n", "a\n", "m.py") == ""
