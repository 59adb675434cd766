"""Records' messagePatterns, matched in counted steps.

A record's `messagePattern` is a Python regular expression, and a record file can come from an
unvetted repository (`extend-records`). Python's `re` backtracks without limit: a pattern that no
structural check rejects (`.*a.*a.*a.*a.*b`) ran for hours against its own 400-character message.
No clock may bound it either (the same input must give the same answer on every run), so the
patterns are compiled here into a small program and run by a backtracking matcher that marks each
(instruction, position) state it has tried (as RE2's BitState does): a state that failed once fails
again, so a search tries at most `instructions x (characters + 1)` states, and it stops after
`budget` steps, counted. A search that runs out raises StepsExceeded: the caller leaves that
pattern unmatched and says so. The answer is otherwise Python's: the same leftmost match, the
greedy or lazy choice Python's engine prefers, the same groups.

Supported: literals, `.`, classes (`[^`.]`, `\\w`, `\\d`, `\\s` and their negations, ranges), groups
(capturing, non-capturing, named), alternation, greedy, lazy and possessive repetitions (counted
ones of a group expanded, up to MAX_INSTRUCTIONS), the anchors `^ $ \\A \\Z \\b \\B`, and the flags
`(?s)`, `(?m)`, `(?x)` at the start. Not supported (a record using them is refused with the
reason): back-references, look-arounds, conditionals, atomic groups, scoped flags, `(?i)`, `(?a)`
and `(?L)`.
"""

from __future__ import annotations

import re
from typing import Any, Callable, NamedTuple

try:  # the stdlib's regex parser; it moved in 3.11 and the old name warns there
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

# Steps one search may take: about 0.1 s of Python. A shipped pattern takes a few thousand against
# a whole 4,000-character traceback (tests/test_records.py measures them).
SEARCH_STEPS = 200_000
MAX_INSTRUCTIONS = 2_000  # a compiled program's length (counted repetitions of groups are expanded)
MAX_PATTERN_CHARS = 4_000
_SCAN_LIMIT = 256  # repetitions of one character up to this many are scanned where they start

_MAXREPEAT = _sre_parse.MAXREPEAT
_REPEATS = {_sre_parse.MAX_REPEAT: "greedy", _sre_parse.MIN_REPEAT: "lazy"}
if hasattr(_sre_parse, "POSSESSIVE_REPEAT"):
    _REPEATS[_sre_parse.POSSESSIVE_REPEAT] = "possessive"
_UNSUPPORTED_FLAGS = {
    re.IGNORECASE: "(?i) (case-insensitive matching)",
    re.LOCALE: "(?L) (locale-dependent matching)",
    re.ASCII: "(?a) (ASCII-only classes)",
}
_CATEGORIES = {
    getattr(_sre_parse, name): re.compile(regex).match
    for name, regex in (
        ("CATEGORY_DIGIT", r"\d"), ("CATEGORY_NOT_DIGIT", r"\D"), ("CATEGORY_SPACE", r"\s"),
        ("CATEGORY_NOT_SPACE", r"\S"), ("CATEGORY_WORD", r"\w"), ("CATEGORY_NOT_WORD", r"\W"),
    )
}
_is_word = re.compile(r"\w").match

# Instructions: (opcode, a, b, c, d)
_LIT, _CHAR, _SPAN, _SPLIT, _JMP, _SAVE, _ASSERT, _MATCH, _LOOP_END = range(9)
# Jobs on the backtracking stack: (kind, ...)
_RUN, _RESTORE, _LENGTHS = range(3)


class PatternError(ValueError):
    """The pattern cannot be compiled here: its message says what it uses that is not supported."""


class StepsExceeded(Exception):
    """A search took more than its budget of steps: the answer is unknown."""


class PatternMatch(NamedTuple):
    string: str
    spans: tuple[int, ...]  # start, end of the match, then of each group (-1: did not take part)

    def groups(self) -> tuple[str | None, ...]:
        spans = self.spans
        return tuple(
            self.string[spans[i]:spans[i + 1]] if spans[i] >= 0 and spans[i + 1] >= 0 else None
            for i in range(2, len(spans), 2)
        )

    def group(self, index: int = 0) -> str | None:
        start, end = self.spans[2 * index], self.spans[2 * index + 1]
        return self.string[start:end] if start >= 0 and end >= 0 else None

    def span(self) -> tuple[int, int]:
        return self.spans[0], self.spans[1]


class _Compiler:
    def __init__(self, flags: int) -> None:
        self.program: list[tuple] = []
        self.predicates: list[Callable[[str], bool]] = []
        self._predicate_index: dict[Any, int] = {}
        self.registers = 0  # each loop whose iterations may be empty keeps where its iteration started
        self.live: list[int] = []  # the registers of the loops being compiled (innermost last)
        self.dotall = bool(flags & re.DOTALL)
        self.multiline = bool(flags & re.MULTILINE)

    def emit(self, *instruction: Any) -> int:
        if len(self.program) >= MAX_INSTRUCTIONS:
            raise PatternError(f"too large: more than {MAX_INSTRUCTIONS} instructions once compiled "
                               f"(counted repetitions of groups are expanded)")
        self.program.append(self._instruction(instruction))
        return len(self.program) - 1

    def patch(self, at: int, *instruction: Any) -> None:
        self.program[at] = self._instruction(instruction, self.program[at][5])

    def _instruction(self, parts: tuple, live: tuple | None = None) -> tuple:
        # (opcode, a, b, c, d, the registers of the loops it is inside whose iterations may be empty)
        return parts + (None,) * (5 - len(parts)) + (tuple(self.live) if live is None else live,)

    def predicate(self, op: Any, value: Any) -> int | None:
        """The index of a one-character test for this node, or None when it is not one."""
        key = (str(op), repr(value))
        if key in self._predicate_index:
            return self._predicate_index[key]
        test = self._char_test(op, value)
        if test is None:
            return None
        self.predicates.append(test)
        self._predicate_index[key] = len(self.predicates) - 1
        return len(self.predicates) - 1

    def _char_test(self, op: Any, value: Any) -> Callable[[str], bool] | None:
        if op is _sre_parse.LITERAL:
            char = chr(value)
            return lambda c: c == char
        if op is _sre_parse.NOT_LITERAL:
            char = chr(value)
            return lambda c: c != char
        if op is _sre_parse.ANY:
            return (lambda c: True) if self.dotall else (lambda c: c != "\n")
        if op is not _sre_parse.IN:
            return None
        negate, chars, ranges, categories = False, set(), [], []
        for item_op, item in value:
            if item_op is _sre_parse.NEGATE:
                negate = True
            elif item_op is _sre_parse.LITERAL:
                chars.add(chr(item))
            elif item_op is _sre_parse.RANGE:
                ranges.append((item[0], item[1]))
            elif item_op is _sre_parse.CATEGORY and item in _CATEGORIES:
                categories.append(_CATEGORIES[item])
            else:
                raise PatternError(f"unsupported in a character class: {item_op}")
        frozen, ranges_t, categories_t = frozenset(chars), tuple(ranges), tuple(categories)

        def test(c: str) -> bool:
            found = (c in frozen or any(low <= ord(c) <= high for low, high in ranges_t)
                     or any(match(c) is not None for match in categories_t))
            return found != negate

        return test

    def sequence(self, items: Any) -> None:
        items = list(items)
        index = 0
        while index < len(items):
            op, value = items[index]
            if op is _sre_parse.LITERAL:  # a run of literals: one string comparison
                run = []
                while index < len(items) and items[index][0] is _sre_parse.LITERAL:
                    run.append(chr(items[index][1]))
                    index += 1
                self.emit(_LIT, "".join(run))
                continue
            self.node(op, value)
            index += 1

    def node(self, op: Any, value: Any) -> None:
        predicate = self.predicate(op, value)
        if predicate is not None:
            self.emit(_CHAR, predicate)
        elif op is _sre_parse.SUBPATTERN:
            group, add_flags, del_flags, body = value[0], value[1], value[2], value[-1]
            if (add_flags or del_flags) & ~re.VERBOSE:
                raise PatternError("scoped flags such as (?s:...) are not supported")
            if group is not None:
                self.emit(_SAVE, 2 * group)
            self.sequence(body)
            if group is not None:
                self.emit(_SAVE, 2 * group + 1)
        elif op is _sre_parse.BRANCH:
            alternatives = value[1]
            jumps = []
            for position, alternative in enumerate(alternatives):
                if position < len(alternatives) - 1:
                    split = self.emit(_SPLIT)
                    self.sequence(alternative)
                    jumps.append(self.emit(_JMP))
                    self.patch(split, _SPLIT, split + 1, len(self.program))
                else:
                    self.sequence(alternative)
            for jump in jumps:
                self.patch(jump, _JMP, len(self.program))
        elif op in _REPEATS:
            self.repeat(value[0], value[1], value[2], _REPEATS[op])
        elif op is _sre_parse.AT:
            self.emit(_ASSERT, value)
        else:
            name = {"GROUPREF": "back-references", "GROUPREF_EXISTS": "conditional groups",
                    "ASSERT": "look-arounds", "ASSERT_NOT": "look-arounds", "ATOMIC_GROUP": "atomic groups"}
            raise PatternError(f"{name.get(str(op), str(op))} are not supported")

    def repeat(self, low: int, high: int, body: Any, kind: str) -> None:
        items = list(body)
        if len(items) == 1 and (predicate := self.predicate(*items[0])) is not None:
            self.emit(_SPAN, predicate, low, high, kind)  # one character each time: tried by lengths
            return
        if kind == "possessive":
            raise PatternError("possessive repetitions of more than one character are not supported")
        for _ in range(low):  # the first `low` iterations are not optional, even when empty
            self.sequence(items)
        count = None if high == _MAXREPEAT else high - low
        if count == 0:
            return
        # Each optional iteration: SPLIT (iterate or go on), the body, then back to the SPLIT (or the
        # next copy, for a counted repetition). Python's engine ends the repetition after an iteration
        # that matched nothing; a body that can match nothing keeps where its iteration started in a
        # register, and its states are told apart by that register (so that a tried state is a state).
        empty = _nullable(items)
        splits: list[int] = []
        ends: list[int] = []
        for _ in range(count if count is not None else 1):
            splits.append(self.emit(_SPLIT))
            if empty:
                register = -1 - self.registers
                self.registers += 1
                self.emit(_SAVE, register)
                self.live.append(register)
            self.sequence(items)
            if empty:
                ends.append(self.emit(_LOOP_END, register))
                self.live.pop()
            elif count is None:
                self.emit(_JMP, splits[0])
        after = len(self.program)
        for index, split in enumerate(splits):
            body = split + 1
            self.patch(split, _SPLIT, *((body, after) if kind == "greedy" else (after, body)))
        for index, end in enumerate(ends):
            again = splits[0] if count is None else (splits[index + 1] if index + 1 < len(splits) else after)
            self.patch(end, _LOOP_END, self.program[end][1], again, after)


def _nullable(items: Any) -> bool:
    """Can this sequence of parsed nodes match the empty string?"""
    for op, value in items:
        if op in _REPEATS:
            if value[0] > 0 and not _nullable(value[2]):
                return False
        elif op is _sre_parse.SUBPATTERN:
            if not _nullable(value[-1]):
                return False
        elif op is _sre_parse.BRANCH:
            if not any(_nullable(alternative) for alternative in value[1]):
                return False
        elif op is not _sre_parse.AT:
            return False  # one character (or something refused when compiled)
    return True


class BoundedPattern:
    """A compiled messagePattern: `search` as `re.Pattern.search`, in counted steps."""

    def __init__(self, pattern: str) -> None:
        if len(pattern) > MAX_PATTERN_CHARS:
            raise PatternError(f"longer than {MAX_PATTERN_CHARS} characters")
        try:
            re.compile(pattern)  # Python's own verdict on the syntax, and its messages
            parsed = _sre_parse.parse(pattern)
        except (re.error, RecursionError, OverflowError) as error:
            raise PatternError(f"invalid regular expression: {error}") from None
        flags = parsed.state.flags
        for flag, what in _UNSUPPORTED_FLAGS.items():
            if flags & flag:
                raise PatternError(f"{what} is not supported")
        compiler = _Compiler(flags)
        try:
            compiler.sequence(parsed)
        except RecursionError:
            raise PatternError("nested too deeply") from None
        compiler.emit(_MATCH)
        self.pattern = pattern
        self.groups = parsed.state.groups - 1
        self._program = tuple(compiler.program)
        self._predicates = tuple(compiler.predicates)
        self._multiline = compiler.multiline
        self._slots = 2 * self.groups + 2 + compiler.registers  # groups, then loop registers (negative indexes)
        first = self._program[0]
        self._prefix = first[1] if first[0] == _LIT else None  # a search starts only where it occurs

    def __repr__(self) -> str:
        return f"BoundedPattern({self.pattern!r})"

    def search(self, text: str, budget: int = SEARCH_STEPS) -> PatternMatch | None:
        """The leftmost match in `text`, or None; StepsExceeded after `budget` steps."""
        return self.search_counted(text, budget)[0]

    def search_counted(self, text: str, budget: int = SEARCH_STEPS) -> tuple[PatternMatch | None, int]:
        """search(), and the steps it took."""
        run = _Search(self, text, budget)
        return self._search(run, text), budget - run.left

    def _search(self, run: "_Search", text: str) -> PatternMatch | None:
        n = len(text)
        start = 0
        while start <= n:
            if self._prefix is not None:
                start = text.find(self._prefix, start)
                if start < 0:
                    return None
            found = run.attempt(start)
            if found is not None:
                return PatternMatch(text, found)
            start += 1
        return None


class _Search:
    def __init__(self, pattern: BoundedPattern, text: str, budget: int) -> None:
        self.pattern = pattern
        self.text = text
        self.left = budget
        self.visited: set = set()  # instruction * (len + 1) + position (and live registers): tried, and failed
        self.runs: dict[int, list[int]] = {}  # predicate -> length of the run of matching characters at each position

    def spend(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise StepsExceeded

    def run_lengths(self, predicate: int) -> list[int]:
        runs = self.runs.get(predicate)
        if runs is None:
            text, test = self.text, self.pattern._predicates[predicate]
            self.spend(len(text) + 1)
            runs = [0] * (len(text) + 1)
            for index in range(len(text) - 1, -1, -1):
                if test(text[index]):
                    runs[index] = runs[index + 1] + 1
            self.runs[predicate] = runs
        return runs

    def check(self, kind: Any, pos: int) -> bool:
        text, n = self.text, len(self.text)
        at = _sre_parse
        if kind is at.AT_BEGINNING_STRING:
            return pos == 0
        if kind is at.AT_END_STRING:
            return pos == n
        if kind is at.AT_BEGINNING:
            return pos == 0 or (self.pattern._multiline and text[pos - 1] == "\n")
        if kind is at.AT_END:
            if self.pattern._multiline:
                return pos == n or text[pos] == "\n"
            return pos == n or (pos == n - 1 and text[pos] == "\n")
        if kind in (at.AT_BOUNDARY, at.AT_NON_BOUNDARY):
            before = pos > 0 and _is_word(text[pos - 1]) is not None
            after = pos < n and _is_word(text[pos]) is not None
            return (before != after) == (kind is at.AT_BOUNDARY)
        raise StepsExceeded  # an anchor this matcher does not know (refused at compile time in practice)

    def attempt(self, start: int) -> tuple[int, ...] | None:
        program, text, n = self.pattern._program, self.text, len(self.text)
        width = n + 1
        visited = self.visited
        caps = [-1] * self.pattern._slots
        caps[0] = start
        stack: list[tuple] = [(_RUN, 0, start)]
        while stack:
            job = stack.pop()
            if job[0] == _RESTORE:
                caps[job[1]] = job[2]
                continue
            if job[0] == _LENGTHS:  # the next length to try for a repetition of one character
                _, pc, base, length, last, direction = job
                if length != last:
                    stack.append((_LENGTHS, pc, base, length + direction, last, direction))
                pos = base + length
            else:
                _, pc, pos = job
            while True:
                self.left -= 1
                if self.left < 0:
                    raise StepsExceeded
                op, a, b, c, d, live = program[pc]
                if op == _LOOP_END:  # its way on depends on where the iteration started: not a state
                    pc = c if caps[a] == pos else b
                    continue
                key = (pc * width + pos) if not live else (pc, pos, *[caps[r] for r in live])
                if key in visited:
                    break
                visited.add(key)
                if op == _LIT:
                    if not text.startswith(a, pos):
                        break
                    pos += len(a)
                    pc += 1
                elif op == _CHAR:
                    if pos >= n or not self.pattern._predicates[a](text[pos]):
                        break
                    pos += 1
                    pc += 1
                elif op == _SPAN:
                    if c <= _SCAN_LIMIT:  # a short repetition: its characters are looked at where it is
                        test, longest = self.pattern._predicates[a], 0
                        while longest < c and pos + longest < n and test(text[pos + longest]):
                            longest += 1
                        self.left -= longest
                    else:  # a long one: the runs of matching characters, found once for the text
                        longest = min(c, self.run_lengths(a)[pos])
                    if longest < b:
                        break
                    if d == "greedy":
                        if longest > b:
                            stack.append((_LENGTHS, pc + 1, pos, longest - 1, b, -1))
                        pos += longest
                    elif d == "lazy":
                        if longest > b:
                            stack.append((_LENGTHS, pc + 1, pos, b + 1, longest, 1))
                        pos += b
                    else:  # possessive: the longest, nothing else
                        pos += longest
                    pc += 1
                elif op == _SPLIT:
                    stack.append((_RUN, b, pos))
                    pc = a
                elif op == _JMP:
                    pc = a
                elif op == _SAVE:
                    stack.append((_RESTORE, a, caps[a]))
                    caps[a] = pos
                    pc += 1
                elif op == _ASSERT:
                    if not self.check(a, pos):
                        break
                    pc += 1
                else:  # _MATCH
                    caps[1] = pos
                    return tuple(caps[:2 * self.pattern.groups + 2])
        return None


def compile_pattern(pattern: str) -> BoundedPattern:
    """PatternError when the pattern is invalid or uses what the counted matcher does not support."""
    return BoundedPattern(pattern)
