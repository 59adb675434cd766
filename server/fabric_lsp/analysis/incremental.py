"""Parse once, share the tree, and re-parse only what an edit touched.

`parse_text(path, text)` returns the SourceFile for a text, shared by every caller that asks for
the same (path, text): the engine, the workspace's unsaved buffers, the modules other files import.
When the text of a path changes, the top-level statements the change did not touch are reused from
the last tree that parsed, and only the changed region is given to `ast.parse`, padded with blank
lines so that line numbers and columns come out exactly as a parse of the whole file would give.

Why that is the same tree: a region starts at the first line of a top-level statement and ends
where the next untouched one starts. The text before it is unchanged and ended with complete
statements, so the tokenizer is in the same state there. If the region parses on its own it is a
sequence of complete statements ending outside any bracket, string or continuation, so the untouched
statement after it starts a new statement in the whole file too. Anything that needs the text
around the region (an `else:` joining the statement above, an unclosed bracket or string, an
indented first line) fails to parse on its own, and then the whole file is parsed.
When the edit changes the number of lines, the statements after it move: the file being checked
(`checked=True`, from the engine) has their line numbers shifted in place when no other analysis is
running, which keeps what was computed for them (scopes, events) too; every other caller gets them
parsed again, never a shifted tree. So a SourceFile obtained from `parse_text` is valid until the
same path is checked with another text; within one analysis the workspace hands out the checked
SourceFile itself for its path (`checked_source`), never a newer buffer's.
"""

from __future__ import annotations

import ast
import bisect
import contextlib
import gc
import os
import threading
from collections import OrderedDict

from fabric_lsp.analysis.nodes import walk
from fabric_lsp.analysis.source import SourceFile

# Texts kept for incremental parsing and sharing, least recently used first out. Enough for every
# file of a large program (the engine keeps its programs' trees anyway): evicting some of them made
# each rebuild of a 60-file program parse them again as new trees, which a solve cannot replay.
MAX_PATHS = 4096
MAX_TOTAL_CHARS = 16_000_000  # ~70 bytes of tree per character

_lock = threading.Lock()
_valid: "OrderedDict[str, SourceFile]" = OrderedDict()  # path -> last SourceFile that parsed
_latest: dict[str, SourceFile] = {}  # path -> last SourceFile asked for (may be a syntax error)
_total_chars = 0
_active = 0  # analyses running now, in any thread
_collector_was_enabled = False  # whether to enable the cyclic collector again when no analysis runs
_young_at_start = 0  # the collector's young-object count when the analyses began
# The long-running server freezes what a large analysis leaves alive (freeze_what_analyses_keep).
_freeze_kept = False
FREEZE_ABOVE = 200_000  # objects an analysis added: a program built from scratch (800k), not an edit (10-80k)
FROZEN_AT_MOST = 2_000_000  # past this many frozen objects, they go back to the collector once
_checking = threading.local()  # .sources: path -> the SourceFile this thread's analysis checks
stats = {"full": 0, "incremental": 0, "reused": 0, "fallback": 0, "shifted": 0}


@contextlib.contextmanager
def analysing():
    """Brackets one analysis (the engine's check_source): counted, so that trees are shifted in
    place only while a single analysis runs, and the checked source is known to the workspace."""
    global _active, _collector_was_enabled, _young_at_start
    with _lock:
        _active += 1
        if _active == 1:
            # An analysis allocates hundreds of thousands of small objects that outlive it (trees,
            # the program's tables) and almost no cycles (about 500 per edit of a 60-file program):
            # the collector's passes over them were a quarter of a first analysis (0.3 of 1.4 s on
            # litgpt's lora.py), up to two thirds on a big file (benchmarks/bounds_bench.py). It is
            # paused while analysing; the cycles are collected after.
            _collector_was_enabled = gc.isenabled()
            gc.disable()
            _young_at_start = gc.get_count()[0]
    previous = getattr(_checking, "sources", None)
    _checking.sources = {}
    try:
        yield
    finally:
        _checking.sources = previous
        with _lock:
            _active -= 1
            if _active == 0 and _collector_was_enabled:
                if _freeze_kept and gc.get_count()[0] - _young_at_start > FREEZE_ABOVE:
                    _freeze_young_objects()
                gc.enable()


def freeze_what_analyses_keep() -> None:
    """For a process that owns its heap (the server, `check`): what a large
    analysis leaves alive is moved out of the collector's sight (gc.freeze) instead of being
    traversed by its next passes, which would take a fifth of a second at the next allocation of
    any thread. Only analyses that built a program from scratch are frozen (an edit's are small and
    collected as usual): reference counting still frees what they made, and only the cycles among
    it stay when the program is replaced (once per program opened, a few MB); all of it goes back
    to the collector past FROZEN_AT_MOST (benchmarks: the memory replay's growth rows)."""
    global _freeze_kept
    _freeze_kept = True


def _freeze_young_objects() -> None:
    if gc.get_freeze_count() > FROZEN_AT_MOST:
        gc.unfreeze()  # into the oldest generation: its next full pass reclaims the old cycles
    else:
        gc.freeze()


def checked_source(path: str) -> SourceFile | None:
    """The SourceFile the current thread's analysis is checking at `path`, if any."""
    sources = getattr(_checking, "sources", None)
    return sources.get(path) if sources else None


def parse_text(path: str, text: str, checked: bool = False) -> SourceFile:
    """The SourceFile of `text` at `path`, shared and parsed incrementally (see the module doc).
    `checked`: the engine's own parse of the file it analyses (inside `analysing()`)."""
    path = os.path.abspath(path)
    with _lock:
        latest = _latest.get(path)
        base = _valid.get(path)
        if base is not None:
            _valid.move_to_end(path)
        for known in (latest, base):
            if known is not None and (known.text is text or known.text == text):
                stats["reused"] += 1
                source = known
                break
        else:
            source = None
            if base is not None:
                source = _reparse(base, path, text, shift=checked and _active == 1)
            if source is None:
                stats["full"] += 1
                source = SourceFile.parse(path, text)
            _remember(path, source)
    if checked and getattr(_checking, "sources", None) is not None:
        _checking.sources[path] = source
    return source


def forget(path: str | None = None) -> None:
    """Drop the kept texts of `path` (all paths when None)."""
    global _total_chars
    with _lock:
        if path is None:
            _valid.clear()
            _latest.clear()
            _total_chars = 0
            return
        path = os.path.abspath(path)
        dropped = _valid.pop(path, None)
        _latest.pop(path, None)
        if dropped is not None:
            _total_chars -= len(dropped.text)


def _remember(path: str, source: SourceFile) -> None:
    """Called with _lock held."""
    global _total_chars
    _latest[path] = source
    if source.tree is None:
        return
    previous = _valid.pop(path, None)
    if previous is not None:
        _total_chars -= len(previous.text)
    _valid[path] = source
    _total_chars += len(source.text)
    while (len(_valid) > MAX_PATHS or _total_chars > MAX_TOTAL_CHARS) and len(_valid) > 1:
        old_path, old = _valid.popitem(last=False)
        _total_chars -= len(old.text)
        _latest.pop(old_path, None)
    for stale in [p for p in _latest if p not in _valid and p != path]:
        del _latest[stale]


# ---------------------------------------------------------------------------------------------


def common_prefix_length(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    if a[:limit] == b[:limit]:
        return limit
    low, high = 0, limit  # a[:low] == b[:low], a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle
    return low


def common_suffix_length(a: str, b: str, limit: int) -> int:
    """Length of the common end of a and b, at most `limit`."""
    if limit <= 0:
        return 0
    if a[len(a) - limit :] == b[len(b) - limit :]:
        return limit
    low, high = 0, limit
    while high - low > 1:
        middle = (low + high) // 2
        if a[len(a) - middle : len(a) - low] == b[len(b) - middle : len(b) - low]:
            low = middle
        else:
            high = middle
    return low


def _first_line(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", None)
    if decorators:
        return min(statement.lineno, min(d.lineno for d in decorators))
    return statement.lineno


def _regions(body: list[ast.stmt]) -> list[tuple[int, int]]:
    """(first line, index of the first statement) of each region: a region begins at a top-level
    statement that starts on a later line than the one before it ends (`a = 1; b = 2` is one)."""
    regions: list[tuple[int, int]] = []
    previous_end = 0
    for index, statement in enumerate(body):
        first = _first_line(statement)
        if first > previous_end:
            regions.append((first, index))
        previous_end = max(previous_end, statement.end_lineno or statement.lineno)
    if regions:
        regions[0] = (1, regions[0][1])  # comments and blank lines at the top belong to the first
    return regions


def _reparse(base: SourceFile, path: str, text: str, shift: bool = False) -> SourceFile | None:
    """The SourceFile of `text` built from `base` (a parsed earlier text of the same path), or
    None when only a whole-file parse can tell. `shift`: statements below an edit that changes the
    number of lines may have their line numbers moved in place instead of being parsed again."""
    old = base.text
    if base.tree is None or not base.tree.body or "barry_as_FLUFL" in text:
        return None
    prefix = common_prefix_length(old, text)
    suffix = common_suffix_length(old, text, min(len(old), len(text)) - prefix)
    offsets = base._line_offsets  # offset of each old line's first character
    first_changed = bisect.bisect_right(offsets, prefix)  # 1-based line holding the first change
    last_changed = bisect.bisect_right(offsets, max(prefix, len(old) - suffix))
    body = base.tree.body
    regions = _regions(body)
    starts = [line for line, _ in regions]
    first_region = max(0, bisect.bisect_right(starts, first_changed) - 1)
    if first_region > 0 and starts[first_region] == first_changed:
        first_region -= 1  # the edit is on a region's first line: it may join the one above
    end_region = bisect.bisect_right(starts, last_changed)  # first region wholly after the change
    changed_old, changed_new = old[prefix : len(old) - suffix], text[prefix : len(text) - suffix]
    edges = old[max(0, prefix - 1) : prefix + 1] + old[max(0, len(old) - suffix - 1) : len(old) - suffix + 1]
    line_delta = 0
    if "\r" in changed_old or "\r" in changed_new or "\r" in edges:
        end_region = len(regions)  # line breaks themselves changed: parse the rest again
    elif changed_old.count("\n") != changed_new.count("\n"):
        line_delta = changed_new.count("\n") - changed_old.count("\n")
        if not shift:
            end_region = len(regions)  # lines below move: parse them again
    first_line = regions[first_region][0]
    start_offset = offsets[first_line - 1]
    if end_region < len(regions):
        end_line = regions[end_region][0]
        old_end_offset = offsets[end_line - 1]
        if old_end_offset < len(old) - suffix:
            return None  # the change reaches into the region that should be kept
        end_offset = old_end_offset + len(text) - len(old)
        kept_after = body[regions[end_region][1] :]
    else:
        end_offset = len(text)
        kept_after = []
    kept_before = body[: regions[first_region][1]]
    padded = "\n" * (first_line - 1) + text[start_offset:end_offset]
    try:
        region = ast.parse(padded, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        stats["fallback"] += 1
        return None
    stats["incremental"] += 1
    if line_delta and kept_after:
        stats["shifted"] += 1
        _shift_lines(kept_after, line_delta)  # base now disagrees with its text: parse_text replaces it
    tree = ast.Module(body=kept_before + region.body + kept_after, type_ignores=[])
    return SourceFile(path=path, text=text, tree=tree)


def _shift_lines(statements: list[ast.stmt], delta: int) -> None:
    for statement in statements:
        for node in walk(statement):
            if "lineno" in node._attributes:  # not the shared Load/Store/operator singletons
                node.lineno += delta
                if node.end_lineno is not None:
                    node.end_lineno += delta
