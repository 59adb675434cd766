"""What `explain` (CLI and the server's `fabric-lsp.explain` command) makes of a query: a rule code or
name, a record id, a whole runtime message (the record's messagePattern), or a fragment of one.

Fragments are what people paste: the first sentence of a runtime error, the message with its
backticks lost by a terminal, the wording quoted in a README, a few words remembered. Each record's
errorMessage (and each of its other runtime paths' messages, records/paths.json) is compared word by
word with the query: words are runs of letters, digits and `_`, compared without case, so quotes,
backticks, brackets and punctuation never matter; a `{...}` placeholder of the template (a class or
method name) stands for any one to four words, and the names it stood for are read back (so
`explain` fills them in as it does for a whole message). The comparison is a local alignment (the
fragment may start and end anywhere in the message, words may be left out) and a match needs:

- at least MIN_WORDS (3) of the template's own words, in order;
- at most one word in six of the aligned part of the query that is not in the template (a typo);
- at most half as many of the template's words left out inside the aligned part as were matched;
- no contradiction at either end: where the template goes on with a word of its own, the query does
  not go on with another one (`'Block' object has no attribute 'forward'` is not FSDP's message, and
  `You marked 'x' as a forward method` is not FAB001's `... mark it as a forward method ...`).

The query is compared line by line and sentence by sentence (a traceback's other lines do not
count against the message), and as a whole when it spans lines (a message wrapped by a terminal).
A leading `SomeError:` (and `[rank0]:`-style prefixes) is set aside and only breaks ties: the match
whose errorClass it names comes first. Matches are ranked by matched words, then by fewer unmatched
and left-out words, then by the share of the template they cover: best first, one per record.

Cost is bounded: the head and the tail of a long query (MAX_MESSAGE_CHARS each way, as
RecordSet.match_message), at most MAX_TEMPLATE_WORDS words of a template, MAX_SEGMENT_WORDS of a segment,
and MAX_ALIGNMENT_CELLS cells of the alignment tables for the whole query (counted: the records are
compared in their order, the shipped ones first, and those left when the count is spent are not
compared, with a notice). A repository's 100 extension records of 200-word messages against a pasted
20 kB log took 21 CPU-s before that count.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from fabric_lsp.records.loader import MAX_MESSAGE_CHARS, Record, RecordPath, RecordSet
from fabric_lsp.records.messages import placeholders
from fabric_lsp.records.rules_table import Rule, rule_by_code

MIN_WORDS = 3
MAX_TEMPLATE_WORDS = 200
MAX_SEGMENT_WORDS = 400
MAX_SEGMENTS = 200
MAX_ALIGNMENT_CELLS = 4_000_000  # query words x template words, summed over the query (about 3 s)

_WORD = re.compile(r"[^\W_]\w*|_\w*", re.UNICODE)  # letters, digits and underscores
_WILD = "\x00"
_PLACEHOLDER = re.compile(r"\{[^{}]+\}")
_PREFIX = re.compile(
    r"^\s*(?:\[[^\]\n]{0,40}\]\s*:?\s*)*(?:[A-Za-z_][\w.]*\.)?(?P<cls>[A-Z]\w*(?:Error|Warning|Exception))\s*:\s*"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])[`'\")\]]*\s+")

# Alignment scores: a matched word, a word a placeholder stands for, one more word for the same
# placeholder, a query word not in the template, a template word left out, a placeholder left out.
_MATCH, _WILD_ONE, _WILD_MORE, _EXTRA, _LEFT_OUT, _WILD_LEFT_OUT = 1.0, 0.0, -0.25, -1.0, -0.5, -0.1
_WILD_MAX = 4


@dataclass(frozen=True)
class Explanation:
    """One record `explain` shows for a query, and why."""

    record: Record
    code: str | None  # the rule code, when the record is a rule's
    context: dict[str, str] | None  # names read from the message, and what selects its path
    reason: str  # "the rule code FAB001", "the record's errorMessage by 7 of 9 words", ...
    path: RecordPath | None = None  # the runtime path whose message matched
    matched: int = 0  # words matched (0: not a fragment match)
    given: int = 0  # words of the query that the match is judged on
    kind: str = "code"  # "code", "name", "id", "pattern", "fragment"


@dataclass
class _Alignment:
    score: float = 0.0
    matched: int = 0
    extra: int = 0  # query words in the aligned part that the template does not have
    left_out: int = 0  # template words inside the aligned part that the query does not have
    start_query: int = 0  # query words before the aligned part
    start_template: int = 0  # template words before the aligned part
    end_query: int = 0  # query words consumed
    end_template: int = 0  # template words consumed
    captures: dict[int, tuple[int, int]] = field(default_factory=dict)  # placeholder -> (first, last) word


def _words(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0).lower(), m.start(), m.end()) for m in _WORD.finditer(text)]


def _template_words(template: str) -> tuple[list[str], list[int]]:
    """The template's words with each placeholder as one wildcard; and, per word, the placeholder's
    index (-1 for a word of the template's own)."""
    words: list[str] = []
    owners: list[int] = []
    last = 0
    for index, match in enumerate(_PLACEHOLDER.finditer(template)):
        for word, _, _ in _words(template[last : match.start()]):
            words.append(word)
            owners.append(-1)
        words.append(_WILD)
        owners.append(index)
        last = match.end()
    for word, _, _ in _words(template[last:]):
        words.append(word)
        owners.append(-1)
    return words[:MAX_TEMPLATE_WORDS], owners[:MAX_TEMPLATE_WORDS]


def _align(query: Sequence[str], template: Sequence[str], owners: Sequence[int]) -> _Alignment | None:
    """The best local alignment of the query's words with the template's (Smith-Waterman, with
    placeholders standing for one to _WILD_MAX words), traced back into counts."""
    n, m = len(query), len(template)
    if not n or not m:
        return None
    # score[i][j]: best alignment ending after query[:i] and template[:j]; move[i][j] how it got there.
    score = [[0.0] * (m + 1) for _ in range(n + 1)]
    move = [[""] * (m + 1) for _ in range(n + 1)]
    run = [[0] * (m + 1) for _ in range(n + 1)]  # words the placeholder at j-1 stands for so far
    best, best_at = 0.0, (0, 0)
    for i in range(1, n + 1):
        word = query[i - 1]
        row, above = score[i], score[i - 1]
        for j in range(1, m + 1):
            expected = template[j - 1]
            options = []
            if expected == _WILD:
                options.append((above[j - 1] + _WILD_ONE, "W"))
                if move[i - 1][j] in ("W", "X") and run[i - 1][j] < _WILD_MAX:
                    options.append((above[j] + _WILD_MORE, "X"))
                options.append((row[j - 1] + _WILD_LEFT_OUT, "T"))
            elif expected == word:
                options.append((above[j - 1] + _MATCH, "M"))
            else:
                options.append((row[j - 1] + _LEFT_OUT, "T"))
            options.append((above[j] + _EXTRA, "Q"))
            value, how = max(options, key=lambda option: option[0])
            if value < 0.0 or (value == 0.0 and how != "W"):
                value, how = 0.0, ""  # start afresh here (a leading placeholder may open the alignment)
            row[j], move[i][j] = value, how
            if how == "W":
                run[i][j] = 1
            elif how == "X":
                run[i][j] = run[i - 1][j] + 1
            if value > best or (value == best and value > 0 and (i, j) > best_at):
                best, best_at = value, (i, j)
    if best <= 0.0:
        return None
    found = _Alignment(score=best, end_query=best_at[0], end_template=best_at[1])
    i, j = best_at
    while i > 0 and j > 0 and move[i][j]:
        how = move[i][j]
        if how == "M":
            found.matched += 1
            i, j = i - 1, j - 1
        elif how in ("W", "X"):
            first, last = found.captures.get(owners[j - 1], (i - 1, i - 1))
            found.captures[owners[j - 1]] = (min(first, i - 1), max(last, i - 1))
            i, j = (i - 1, j - 1) if how == "W" else (i - 1, j)
        elif how == "Q":
            found.extra += 1
            i -= 1
        else:  # "T"
            if template[j - 1] != _WILD:
                found.left_out += 1
            j -= 1
    found.start_query, found.start_template = i, j
    return found


def _accepted(found: _Alignment, query: Sequence[str], template: Sequence[str]) -> bool:
    if found.matched < MIN_WORDS:
        return False
    if found.extra * 6 > found.matched + found.extra:
        return False
    if found.left_out > found.matched // 2:
        return False
    # Both go on past an end of the aligned part with words of their own: different messages.
    if found.end_query < len(query) and any(word != _WILD for word in template[found.end_template :]):
        return False
    if found.start_query > 0 and any(word != _WILD for word in template[: found.start_template]):
        return False
    return True


@dataclass(frozen=True)
class _Segment:
    text: str
    error_class: str | None


def _segments(query: str) -> list[_Segment]:
    """Each line, each sentence of a line, and the whole query when it spans lines; a leading
    `XError:` set aside."""
    if len(query) > MAX_MESSAGE_CHARS:
        half = MAX_MESSAGE_CHARS // 2
        windows = [query[:half], query[-half:]]
    else:
        windows = [query]
    texts: list[str] = []
    for window in windows:
        lines = [line for line in window.splitlines() if line.strip()]
        if len(lines) > 1:
            texts.append(" ".join(line.strip() for line in lines))
        for line in lines:
            texts.append(line)
            sentences = [s for s in _SENTENCE_END.split(line) if s.strip()]
            if len(sentences) > 1:
                texts.extend(sentences)
    segments: list[_Segment] = []
    seen: set[str] = set()
    for text in texts:
        prefix = _PREFIX.match(text)
        error_class = prefix.group("cls") if prefix else None
        body = text[prefix.end() :] if prefix else text
        key = body.strip()
        if key and key not in seen:
            seen.add(key)
            segments.append(_Segment(body, error_class))
    return segments[:MAX_SEGMENTS]


def _candidates(record: Record) -> list[tuple[RecordPath | None, str, str]]:
    """(path, errorClass, errorMessage template) of the record's own message and of each path's."""
    found: list[tuple[RecordPath | None, str, str]] = [(None, record.error_class, record.error_message)]
    found.extend((path, path.error_class, path.error_message) for path in record.paths)
    return found


def _context(template: str, path: RecordPath | None, text: str, words, captures) -> dict[str, str]:
    """Names the placeholders stood for (the query's own text, case and punctuation kept)."""
    context: dict[str, str] = {}
    for index, placeholder in enumerate(placeholders(template)):
        if index in captures and placeholder.key not in context:
            first, last = captures[index]
            value = text[words[first][1] : words[last][2]]
            if value:
                context[placeholder.key] = value
    if path is not None:
        context.update(path.when)
    return context


def _source_label(path: RecordPath | None) -> str:
    return "the record's errorMessage" if path is None else f"the errorMessage of its path {path.label!r}"


def fragment_matches(records: RecordSet, query: str, notices: list[str] | None = None) -> list[Explanation]:
    """Every record a fragment of one of its runtime messages matches, best first (one per record).
    `notices` gets one line when MAX_ALIGNMENT_CELLS ran out before every record was compared."""
    segments = _segments(query)
    prepared = [(segment, _words(segment.text)) for segment in segments]
    prepared = [(segment, words[:MAX_SEGMENT_WORDS]) for segment, words in prepared if words]
    ranked: list[tuple[tuple, Explanation]] = []
    cells_left = MAX_ALIGNMENT_CELLS
    left_out: list[Record] = []
    for record in records.records:
        best: tuple[tuple, Explanation] | None = None
        candidates = [(path, error_class, _template_words(template)) for path, error_class, template in _candidates(record)]
        cost = sum(len(words) * len(template_words) for _, _, (template_words, _) in candidates for _, words in prepared)
        if cost > cells_left:
            left_out.append(record)
            continue
        cells_left -= cost
        for path, error_class, (template_words, owners) in candidates:
            template = path.error_message if path is not None else record.error_message
            own_words = sum(1 for word in template_words if word != _WILD)
            if not own_words:
                continue
            for segment, words in prepared:
                query_words = [word for word, _, _ in words]
                found = _align(query_words, template_words, owners)
                if found is None or not _accepted(found, query_words, template_words):
                    continue
                given = found.matched + found.extra
                same_class = segment.error_class is not None and segment.error_class == error_class
                key = (found.matched, -found.extra, -found.left_out, same_class, found.matched / own_words)
                if best is not None and key <= best[0]:
                    continue
                reason = f"{_source_label(path)} by {found.matched} of {given} words"
                if found.matched < own_words:
                    reason += f"; the message has {own_words}"
                rule = rule_by_code(record.code) if record.code else None
                best = (key, Explanation(
                    record=record,
                    code=rule.code if rule else None,
                    context=_context(template, path, segment.text, words, found.captures) or None,
                    reason=reason,
                    path=path,
                    matched=found.matched,
                    given=given,
                    kind="fragment",
                ))
        if best is not None:
            ranked.append(best)
    if left_out and notices is not None:
        shown = ", ".join(record.source for record in left_out[:3])
        more = f" and {len(left_out) - 3} more" if len(left_out) > 3 else ""
        notices.append(f"{shown}{more}: not compared with the message: comparing the records' messages word by word "
                       f"took more than {MAX_ALIGNMENT_CELLS} steps (counted, not timed)")
    ranked.sort(key=lambda item: item[0], reverse=True)
    # Weak matches next to a strong one are noise (a sentence of a long message that another
    # message shares): keep those with at least half the best's matched words.
    best_matched = ranked[0][1].matched if ranked else 0
    return [explanation for _, explanation in ranked if explanation.matched * 2 >= best_matched]


def explain_query(records: RecordSet, query: str, notices: list[str] | None = None) -> list[Explanation]:
    """What `explain` shows for a query, best first; empty when nothing matches.

    A rule code or name, or a record id, gives that record alone; a message its record's
    messagePattern recognises (extra text around it is fine) gives that record alone; otherwise
    every record a fragment matches (see the module's docstring). `notices` gets a line for each
    pattern whose search ran out of steps (RecordSet.match_message)."""
    query = query.strip()
    if not query:
        return []
    rule: Rule | None = rule_by_code(query)
    if rule is not None:
        record = records.by_code(query)
        if record is None:
            return []
        kind = "code" if rule.code == query.upper() else "name"
        what = f"the rule code {rule.code}" if kind == "code" else f"the rule name {rule.name}"
        return [Explanation(record, rule.code, None, what, kind=kind)]
    record = records.by_id(query)
    if record is not None:
        return [Explanation(record, record.code, None, f"the record id {record.id}", kind="id")]
    match = records.match_message(query, notices)
    if match is not None:
        where = "the record's messagePattern" if match.path is None else (
            f"the messagePattern of its path {match.path.label!r}")
        return [Explanation(match.record, match.record.code, match.context, f"{where} (the whole message)",
                            path=match.path, kind="pattern")]
    return fragment_matches(records, query, notices)


def explain_note(found: Explanation, others: Sequence[Explanation] = ()) -> str | None:
    """Why `explain` chose this record, and what else matched less well (None for a rule code or
    name or a record id: the query says it). Rendered before the rule page (records/render.py)."""
    from fabric_lsp.records.render import title

    if found.kind not in ("pattern", "fragment"):
        return None
    lines = [f"Matched: {found.reason}."]
    for other in others:
        lines.append(f"Also matched: {title(other.record, other.code)}: {other.reason}. "
                     f"See `fabric-lsp explain {other.code or other.record.id}`.")
    return "\n".join(lines)


def looks_like_code(query: str) -> bool:
    """`FAB999`, `E501`: a rule code (unknown ones are a usage error for `explain`, exit 2)."""
    return re.fullmatch(r"[A-Za-z]{1,8}[0-9]{1,6}", query.strip()) is not None
