"""records/patterns.py: messagePatterns matched in counted steps, with Python's answers.

The matcher must find what `re.search` finds (the same leftmost match, the same groups), refuse
what it does not support with a reason, and stop any search after its budget of steps.
"""

from __future__ import annotations

import random
import re
import sys

import pytest

from fabric_lsp.records import default_records
from fabric_lsp.records.messages import sample_message
from fabric_lsp.records.patterns import SEARCH_STEPS, BoundedPattern, PatternError, StepsExceeded

EDGE_CASES = [
    (r"(a|)*b", ["aab", "b", "ccc"]),
    (r"([^a]??)*$", ["`\n", "x\n`\n", "b\n\naax\n`\n"]),
    (r"(a|)+", ["b", ""]),
    (r"(?:ab)+c", ["ababc", "abac"]),
    (r"(a*)*b", ["aaab", "aaa"]),
    (r"(x{0,2}?)(x+)", ["xxxx"]),
    (r"(?P<name>\w+)\.(\w+)\(\)", ["call TinyLM.generate() now", "nothing"]),
    (r"^a|b$", ["ab", "ba", "b\n", "x\nb"]),
    (r"(?m)^b$", ["a\nb\nc"]),
    (r"(?s)a.b", ["a\nb"]),
    (r"a.b", ["a\nb", "axb"]),
    (r"\bfoo\b|\Bbar", ["foo", "xfoo", "xbar", "bar"]),
    (r"\Aab\Z", ["ab", "ab\n"]),
    (r"(ab){2,3}?c", ["ababababc", "abc"]),
    (r"([ab]{1,3})+?c", ["abababc"]),
    (r"[^`.]{1,200}\.", ["`Tiny.gen`"]),
    (r"(\d+|\w+)-(\d*)", ["ab12-34", "-"]),
]
if sys.version_info >= (3, 11):  # possessive repetitions are Python 3.11's
    EDGE_CASES.append((r"x*+y", ["xxy", "xx"]))


def _same(pattern: str, text: str) -> None:
    expected = re.search(pattern, text)
    found = BoundedPattern(pattern).search(text)
    assert (expected is None) == (found is None), (pattern, text, expected, found)
    if expected is not None:
        assert found.span() == expected.span(), (pattern, text)
        assert found.groups() == expected.groups(), (pattern, text)


@pytest.mark.parametrize("pattern, texts", EDGE_CASES)
def test_edge_cases_give_pythons_answer(pattern, texts):
    for text in texts:
        _same(pattern, text)


_ATOMS = ["a", "b", ".", r"\w", r"\d", r"\s", "[ab]", "[^a]", "[a-c]", r"\.", "x", " ", "`", "^", "$", r"\b"]
_QUANTIFIERS = ["", "", "*", "+", "?", "*?", "+?", "??", "{1,3}", "{0,2}?", "{2}"]


def _pattern(chosen: random.Random, depth: int = 0) -> str:
    """Groups (capturing or not, with alternatives) are repeated only when they hold no
    repetition, so that Python's own search stays fast on the short texts below."""
    parts = []
    for _ in range(chosen.randint(1, 4)):
        if depth < 2 and chosen.random() < 0.35:
            inner = "|".join(_pattern(chosen, depth + 1) for _ in range(chosen.randint(1, 2)))
            group = chosen.choice(["(", "(?:"]) + inner + ")"
            repeatable = not re.search(r"[*+?}]", inner)
            parts.append(group + (chosen.choice(_QUANTIFIERS) if repeatable else ""))
        else:
            atom = chosen.choice(_ATOMS)
            parts.append(atom + ("" if atom in ("^", "$", r"\b") else chosen.choice(_QUANTIFIERS)))
    return "".join(parts)


def test_random_patterns_give_pythons_answer():
    chosen = random.Random(2024)
    compared = 0
    while compared < 3000:
        pattern = _pattern(chosen)
        try:
            re.compile(pattern)
        except re.error:
            continue
        for _ in range(4):
            _same(pattern, "".join(chosen.choice("ab x.`1\n") for _ in range(chosen.randint(0, 12))))
            compared += 1


@pytest.mark.parametrize("pattern, reason", [
    (r"(a)\1", "back-references"),
    (r"a(?=b)", "look-arounds"),
    (r"(?<!a)b", "look-arounds"),
    (r"(?i)error", "(?i)"),
    (r"(?s:a.)b", "scoped flags"),
    (r"(a)?(?(1)b|c)", "conditional"),
    *([(r"(?:ab)++", "possessive")] if sys.version_info >= (3, 11) else []),
    (r"(?:a.c){1000}", "too large"),
    (r"(", "invalid regular expression"),
])
def test_what_is_not_supported_is_refused_with_the_reason(pattern, reason):
    with pytest.raises(PatternError, match=re.escape(reason)):
        BoundedPattern(pattern)


def test_a_search_stops_after_its_steps():
    pattern = BoundedPattern(r".*a.*a.*a.*a.*b")  # hours for Python's re on 400 characters
    with pytest.raises(StepsExceeded):
        pattern.search("a" * 400)
    with pytest.raises(StepsExceeded):
        pattern.search("a" * 40, budget=100)
    assert pattern.search("aaaab").span() == (0, 5)


def test_the_shipped_patterns_take_a_few_thousand_steps():
    """SEARCH_STEPS leaves them room: on their own messages and inside a 4,000-character log."""
    log = "  File \"train.py\", line 3, in <module>\n    main()\n" * 70
    for record in default_records().records:
        messages = [record.error_message, *(path.error_message for path in record.paths)]
        for pattern, message in zip(record.patterns, messages):
            sample = sample_message(message)
            found, steps = pattern.search_counted(sample)
            assert found is not None and steps < SEARCH_STEPS // 20, (pattern, steps)
            found, steps = pattern.search_counted(log[:4000 - len(sample)] + sample)
            assert found is not None and steps < SEARCH_STEPS // 20, (pattern, steps)
