"""Load and validate knowledge-base records (schemaVersion 2) and match runtime messages against them.

A record file is JSON: `{"record": {...}, "datasetVersion": "..."}`. The shipped records live in
`records/data/*.json`; `extend-records` directories add more. A record there with the id of a shipped
(built-in) record is left out with a notice: a repository's config must not rewrite what the built-in
records tell the user. Only the user config's `replace-records = true` lets it replace the built-in one,
and the replacement is noted (`RecordSet.notices`) and logged. Between extend-records directories, a
later record with an id already added replaces the earlier one (noted too). A file that fails validation is left out
and reported in `RecordSet.problems` as "<file>: field '<name>': <what is wrong>"; it never keeps the
other files from loading.

`records/paths.json` adds, per record, the other runtime paths to the same root cause (torch FSDP's
AttributeError and ModelParallel's warning for FAB002, the ValueError for `"forward"` for FAB004): each
with the error it really produces, a pattern that recognises it, and the wording shown when a finding's
context selects it (`RecordPath.applies`). A faulty entry is left out and reported in
`RecordSet.problems` as "<file>: path '<record id>/<name>': field '<name>': <reason>"; the records and
the other paths keep working.

Matching is bounded in cost, by counting (records/patterns.py), never by a clock: at most
MAX_MESSAGE_CHARS characters of the message are searched (its head and its tail when it is longer),
each search by a matcher that tries each (instruction, position) state once and stops after
patterns.SEARCH_STEPS steps, and one message against all the records after MATCH_STEPS. A
messagePattern whose structure can backtrack exponentially is rejected at load time (see
`pattern_risk`), and so is one that cannot match its own errorMessage within SEARCH_STEPS.

Extension records are loaded when they are asked for (explain, hover), never for a check: the
CLI's `check` and the server's analysis use the shipped records. A folder's `*.json` files are read
(not its subfolders), at most MAX_RECORD_FILES of them per configuration, validating them within
LOAD_STEPS in all; a file's outcome (its record, or why it was refused) is kept for the process's
life while the file is unchanged, so a refused record is not validated again per request.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

try:  # the stdlib's regex parser; it moved in 3.11 and the old name warns there
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

from fabric_lsp.sources.files import FileRefused, read_bytes
from fabric_lsp.records.messages import context_from_groups, placeholders, sample_message
from fabric_lsp.records.patterns import SEARCH_STEPS, BoundedPattern, PatternError, StepsExceeded, compile_pattern
from fabric_lsp.records.rules_table import RULES, rule_by_code, rule_for_record

_logger = logging.getLogger(__name__)

SCHEMA_VERSION = 2
DATA_DIR = Path(__file__).resolve().parent / "data"
PATHS_FILE = Path(__file__).resolve().parent / "paths.json"
MAX_MESSAGE_CHARS = 4000
MAX_FILE_BYTES = 1_000_000
# Counted, never timed (the same records and message give the same answer on every run):
MATCH_STEPS = 2_000_000  # one message against every record (about half a second of matching)
LOAD_STEPS = 2_000_000  # validating the extension records of one configuration
MAX_RECORD_FILES = 100  # extension record files of one configuration; more are left out (one notice)
MAX_FOLDER_ENTRIES = 10_000  # a record folder listing more entries is not read at all


class _Field(NamedTuple):
    kind: type  # str, int or list (of str)
    nullable: bool = False


# The fields of the seed records, all required. Nullable = null in at least one seed.
FIELDS: dict[str, _Field] = {
    "id": _Field(str),
    "repo": _Field(str),
    "slug": _Field(str),
    "errorCode": _Field(str, nullable=True),
    "errorMessage": _Field(str),
    "messagePattern": _Field(str),
    "errorType": _Field(str),
    "errorClass": _Field(str),
    "httpStatus": _Field(int, nullable=True),
    "severity": _Field(str),
    "filePath": _Field(str),
    "lineNumber": _Field(int),
    "sourceCode": _Field(str),
    "sourceCodeStart": _Field(int),
    "sourceCodeEnd": _Field(int),
    "githubUrl": _Field(str),
    "documentation": _Field(str),
    "triggerScenarios": _Field(str),
    "commonSituations": _Field(str),
    "solutions": _Field(list),
    "exampleFix": _Field(str),
    "handlingStrategy": _Field(str),
    "validationCode": _Field(str),
    "typeGuard": _Field(str, nullable=True),
    "tryCatchPattern": _Field(str, nullable=True),
    "preventionTips": _Field(list),
    "tags": _Field(list),
    "backgroundTag": _Field(str),
    "analyzedSha": _Field(str),
    "analyzedAt": _Field(str),
    "schemaVersion": _Field(int),
}
_NON_EMPTY = ("id", "errorMessage", "messagePattern", "errorClass", "documentation")

# The fields of one path in paths.json, all required.
PATH_FIELDS: dict[str, type] = {
    "label": str,  # "torch FSDP"
    "when": dict,  # context keys and values that select it: {"path": "fsdp"}
    "errorClass": str,  # what that path raises (or warns with)
    "errorMessage": str,  # its message, an f-string template like the record's
    "messagePattern": str,  # one group per placeholder of errorMessage, in order
    "raises": bool,  # False: only a warning, the run goes on
    "summary": str,  # one sentence; `{class}`-style names are filled from the occurrence
    "documentation": str,
    "filePath": str,  # where the runtime produces it
    "lineNumber": int,
    "version": str,  # "torch 2.13.0": what filePath/lineNumber refer to
}
_PATH_NON_EMPTY = ("label", "errorClass", "errorMessage", "messagePattern", "summary", "filePath", "version")
_PATH_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


@dataclass(frozen=True, eq=False)
class RecordPath:
    """Another runtime path to a record's root cause, with the error that path really produces."""

    record_id: str
    name: str  # "fsdp"
    record_label: str  # what the record's own message comes from: "Lightning's `_materialize_meta_tensors`"
    label: str
    when: Mapping[str, str]
    error_class: str
    error_message: str
    pattern: BoundedPattern
    raises: bool
    summary: str
    documentation: str
    file_path: str
    line_number: int
    version: str

    def applies(self, context: Mapping[str, str] | None) -> bool:
        """Every key of `when` has its value in the occurrence's context."""
        return bool(context) and all(context.get(key) == value for key, value in self.when.items())


@dataclass(frozen=True, eq=False)  # identity equality: records are loaded once and shared
class Record:
    id: str
    fields: Mapping[str, Any]  # the validated "record" object, read-only
    dataset_version: str
    source: str  # the file it was loaded from
    patterns: tuple[BoundedPattern, ...]  # messagePattern first, then each path's pattern
    paths: tuple[RecordPath, ...] = ()  # other runtime paths to the same root cause (paths.json)

    def __getitem__(self, name: str) -> Any:
        return self.fields[name]

    def path_for(self, context: Mapping[str, str] | None) -> RecordPath | None:
        """The path an occurrence's context selects, or None for the record's own error."""
        return next((path for path in self.paths if path.applies(context)), None)

    @property
    def code(self) -> str | None:
        """The rule code whose runtime error this record explains, if any."""
        rule = rule_for_record(self.id)
        return rule.code if rule else None

    @property
    def error_class(self) -> str:
        return self.fields["errorClass"]

    @property
    def error_message(self) -> str:
        return self.fields["errorMessage"]

    @property
    def github_url(self) -> str:
        return self.fields["githubUrl"]


class MessageMatch(NamedTuple):
    record: Record
    groups: tuple[str | None, ...]
    path: RecordPath | None = None  # the path whose message matched; None: the record's own

    @property
    def context(self) -> dict[str, str]:
        """Names recovered from the message, keyed like render's context ("class", "method", ...),
        plus what selects the path that produces this message (so it renders with that path's wording)."""
        if self.path is None:
            return context_from_groups(self.record.error_message, self.groups)
        return {**context_from_groups(self.path.error_message, self.groups), **self.path.when}


@dataclass(frozen=True, eq=False)
class RecordSet:
    records: tuple[Record, ...]
    problems: tuple[str, ...] = ()  # files left out, "<file>: field '<name>': <reason>"
    notices: tuple[str, ...] = ()  # overrides by extend-records directories
    _by_id: Mapping[str, Record] = field(default_factory=dict, repr=False, compare=False)

    def by_id(self, record_id: str) -> Record | None:
        return self._by_id.get(record_id.strip())

    def by_code(self, code: str) -> Record | None:
        """The record of a rule, by code ("FAB001") or rule name ("unmarked-forward-method")."""
        rule = rule_by_code(code)
        return self._by_id.get(rule.record_id) if rule else None

    def match_message(self, message: str, notices: list[str] | None = None) -> MessageMatch | None:
        """The record whose pattern occurs in the message (extra text around it is fine). A pattern
        whose search runs out of steps does not match; `notices` gets one line saying so."""
        windows = message_windows(message)
        left = MATCH_STEPS
        cut_off: list[str] = []
        for record in self.records:
            candidates = [(record.patterns[0], None), *((path.pattern, path) for path in record.paths)]
            for pattern, path in candidates:
                for window in windows:
                    if left <= 0:
                        cut_off.append(record.source)
                        break
                    try:
                        found, steps = pattern.search_counted(window, min(SEARCH_STEPS, left))
                    except StepsExceeded:
                        left -= min(SEARCH_STEPS, left)
                        cut_off.append(record.source)
                        continue
                    left -= steps
                    if found:
                        _cut_off_notice(cut_off, notices)
                        return MessageMatch(record, found.groups(), path)
        _cut_off_notice(cut_off, notices)
        return None


def message_windows(message: str) -> tuple[str, ...]:
    """What of a message is searched: all of it, or its head and its tail (a traceback ends with
    the message; a pasted log may start with it)."""
    if len(message) <= MAX_MESSAGE_CHARS:
        return (message,)
    half = MAX_MESSAGE_CHARS // 2
    return (message[:half], message[-half:])


def _cut_off_notice(sources: list[str], notices: list[str] | None) -> None:
    if sources and notices is not None:
        names = list(dict.fromkeys(sources))
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        notices.append(f"messagePattern of {shown}: not matched, its search ran out of steps "
                       f"({SEARCH_STEPS} per search, {MATCH_STEPS} per message; counted, not timed)")


class RecordError(ValueError):
    def __init__(self, field_name: str | None, reason: str) -> None:
        super().__init__(reason)
        self.field_name = field_name
        self.reason = reason


def pattern_risk(pattern: str) -> str | None:
    """Why the regex may backtrack catastrophically, or None.

    Structural check on the parsed regex: a repetition (max > 1) whose body contains another
    repetition (max > 1), like `(a+)+` or `(\\w+\\s?)*`, or an alternation of more than single
    characters, like `(a|ab)*`, can take exponential time on a near-miss. Such patterns are rejected;
    the remaining polynomial cases (`.+?` ... `.+?`) are bounded by MAX_MESSAGE_CHARS.
    """
    repeats = {_sre_parse.MAX_REPEAT, _sre_parse.MIN_REPEAT}
    if hasattr(_sre_parse, "POSSESSIVE_REPEAT"):
        repeats.add(_sre_parse.POSSESSIVE_REPEAT)

    def children(value: Any) -> Iterable[Any]:
        if isinstance(value, _sre_parse.SubPattern):
            yield value
        elif isinstance(value, (tuple, list)):
            for item in value:
                yield from children(item)

    def is_long_repeat(op: Any, value: Any) -> bool:
        return op in repeats and value[1] > 32

    def edge_repeat(item: Any, last: bool) -> Any:
        """The long repetition this item starts (last=False) or ends (last=True) with, or None."""
        op, value = item
        if is_long_repeat(op, value):
            return value[2]
        if op is _sre_parse.SUBPATTERN:
            inner = list(value[-1])
            return edge_repeat(inner[-1] if last else inner[0], last) if inner else None
        return None

    def walk(subpattern: Any, inside_repeat: bool) -> str | None:
        items = list(subpattern)
        for before, after in zip(items, items[1:]):
            first, second = edge_repeat(before, True), edge_repeat(after, False)
            if first is not None and second is not None and _may_overlap(first, second):
                return "adjacent repetitions of overlapping characters (like `\\w*\\w*`) backtrack polynomially"
        for op, value in subpattern:
            if op in repeats and value[1] > 1:
                if inside_repeat:
                    return "nested quantifiers (a repeated group contains a repetition)"
                inner = walk(value[2], True)
                if inner:
                    return inner
                continue
            if op is _sre_parse.BRANCH and inside_repeat:
                return "a repeated group contains an alternation"
            for child in children(value):
                inner = walk(child, inside_repeat)
                if inner:
                    return inner
        return None

    return walk(_sre_parse.parse(pattern), False)


_CATEGORY_MATCHERS = {
    getattr(_sre_parse, name): re.compile(regex).match
    for name, regex in (
        ("CATEGORY_DIGIT", r"\d"), ("CATEGORY_NOT_DIGIT", r"\D"), ("CATEGORY_SPACE", r"\s"),
        ("CATEGORY_NOT_SPACE", r"\S"), ("CATEGORY_WORD", r"\w"), ("CATEGORY_NOT_WORD", r"\W"),
    )
}
_SAMPLE_CHARS = [chr(i) for i in range(0x250)] + ["\u0663", "\u2028", "\u3000", "\u4e2d", "\U0001d518"]


def _char_test(body: Any):
    """A predicate for a repetition body that matches exactly one character, else None."""
    items = list(body)
    if len(items) != 1:
        return None
    op, value = items[0]
    if op is _sre_parse.LITERAL:
        return lambda c: ord(c) == value
    if op is _sre_parse.NOT_LITERAL:
        return lambda c: ord(c) != value
    if op is _sre_parse.ANY:
        return lambda c: c != "\n"
    if op is not _sre_parse.IN:
        return None
    negate, tests = False, []
    for item_op, item in value:
        if item_op is _sre_parse.NEGATE:
            negate = True
        elif item_op is _sre_parse.LITERAL:
            tests.append(lambda c, v=item: ord(c) == v)
        elif item_op is _sre_parse.RANGE:
            tests.append(lambda c, v=item: v[0] <= ord(c) <= v[1])
        elif item_op is _sre_parse.CATEGORY and item in _CATEGORY_MATCHERS:
            tests.append(lambda c, m=_CATEGORY_MATCHERS[item]: m(c) is not None)
        else:
            return None
    return lambda c: any(t(c) for t in tests) != negate


def _may_overlap(first: Any, second: Any) -> bool:
    """Can some character be matched by both repetition bodies? (True when unsure.)"""
    a, b = _char_test(first), _char_test(second)
    if a is None or b is None:
        return True
    return any(a(c) and b(c) for c in _SAMPLE_CHARS)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


def _check_field(name: str, spec: _Field, value: Any) -> None:
    if value is None:
        if spec.nullable:
            return
        raise RecordError(name, "must not be null")
    expected = {str: "string", int: "integer", list: "array of strings"}[spec.kind]
    # bool is an int subclass in Python but not an integer in JSON
    if type(value) is not spec.kind:
        raise RecordError(name, f"expected {expected}, got {_type_name(value)}")
    if spec.kind is list:
        for index, item in enumerate(value):
            if type(item) is not str:
                raise RecordError(f"{name}[{index}]", f"expected string, got {_type_name(item)}")


def _compile(name: str, pattern: str) -> BoundedPattern:
    try:
        compiled = compile_pattern(pattern)
    except PatternError as error:
        raise RecordError(name, str(error)) from None
    risk = pattern_risk(pattern)
    if risk:
        raise RecordError(name, f"rejected, may backtrack catastrophically: {risk}")
    return compiled


class Steps:
    """What is left of a budget of matcher steps shared by several records' validation (LOAD_STEPS),
    and what the last search took (`used`: steps, or None before any search)."""

    def __init__(self, left: int) -> None:
        self.left = left
        self.used: int | None = None

    def charge(self, used: int | None) -> bool:
        """Take what a search that needs `used` steps (None: none made; OVER: more than SEARCH_STEPS)
        costs now. False when the budget cannot pay for it: the search would be cut off here."""
        if used is None:
            return True
        budget = min(SEARCH_STEPS, self.left)
        if used > budget:
            self.left -= budget
            return budget == SEARCH_STEPS  # cut off by its own bound (refused), not by the shared one
        self.left -= used
        return True


_OVER = SEARCH_STEPS + 1  # a search that ran out of its SEARCH_STEPS


def _matches_own_message(name: str, pattern: BoundedPattern, message: str, what: str, steps: Steps | None) -> None:
    """RecordError unless `pattern` finds the sample of `message` within the steps it may take
    (_LoadBudgetSpent when the shared `steps` run out first)."""
    sample = sample_message(message)
    if len(sample) > MAX_MESSAGE_CHARS:
        raise RecordError("errorMessage", f"longer than {MAX_MESSAGE_CHARS} characters (the most of a message "
                                          f"that is searched)")
    budget = SEARCH_STEPS if steps is None else min(SEARCH_STEPS, steps.left)
    try:
        found, used = pattern.search_counted(sample, budget)
    except StepsExceeded:
        found, used = None, (_OVER if budget == SEARCH_STEPS else None)
        if used is None:  # the shared budget ran out, not this pattern's own: not a verdict on the record
            steps.left -= budget
            raise _LoadBudgetSpent from None
    if steps is not None:
        steps.used = used
        steps.charge(used)
    if used == _OVER:
        raise RecordError(name, f"refused: matching {what} took more than {SEARCH_STEPS} steps of the matcher "
                                f"(counted, not timed)")
    if not found:
        raise RecordError(name, f"does not match {what}")


class _LoadBudgetSpent(Exception):
    """The steps for validating one configuration's extension records are spent (LOAD_STEPS)."""


def validate(document: Any, steps: Steps | None = None) -> tuple[dict[str, Any], str, BoundedPattern]:
    """The record object, datasetVersion and compiled messagePattern; RecordError at the first fault.
    `steps`: a budget shared with other records (_LoadBudgetSpent when it runs out here)."""
    if not isinstance(document, dict):
        raise RecordError(None, f"top level must be an object, got {_type_name(document)}")
    for name, kind in (("record", dict), ("datasetVersion", str)):
        if name not in document:
            raise RecordError(name, "missing")
        if type(document[name]) is not kind:
            raise RecordError(name, f"expected {_type_name(kind())}, got {_type_name(document[name])}")
    record = document["record"]
    for name, spec in FIELDS.items():
        if name not in record:
            raise RecordError(name, "missing")
        _check_field(name, spec, record[name])
    if record["schemaVersion"] != SCHEMA_VERSION:
        raise RecordError("schemaVersion", f"expected {SCHEMA_VERSION}, got {record['schemaVersion']}")
    for name in _NON_EMPTY:
        if not record[name].strip():
            raise RecordError(name, "must not be empty")
    if any(char.isspace() for char in record["id"]):
        raise RecordError("id", "must not contain whitespace")
    start, end, line = record["sourceCodeStart"], record["sourceCodeEnd"], record["lineNumber"]
    if not 1 <= start <= line <= end:
        raise RecordError("lineNumber", f"{line} is not within sourceCodeStart..sourceCodeEnd ({start}..{end})")
    source_lines = record["sourceCode"].count("\n") + 1
    if source_lines != end - start + 1:
        raise RecordError("sourceCode", f"has {source_lines} lines, expected {end - start + 1} (sourceCodeStart..End)")
    if not record["githubUrl"].startswith("https://"):
        raise RecordError("githubUrl", "must be an https:// URL")
    pattern = _compile("messagePattern", record["messagePattern"])
    _matches_own_message("messagePattern", pattern, record["errorMessage"], "the record's own errorMessage", steps)
    return record, document["datasetVersion"], pattern


def _read_json(path: Path) -> Any:
    """The parsed JSON of a regular, UTF-8 file of at most MAX_FILE_BYTES; RecordError(None, ...) if not."""
    try:
        # O_NONBLOCK (a FIFO named *.json must not block the loader), regular files only, bounded.
        text = read_bytes(path, MAX_FILE_BYTES).decode("utf-8")
    except FileRefused as error:
        message = error.reason.replace("larger than", "file larger than", 1)
        raise RecordError(None, message) from None
    except OSError as error:
        raise RecordError(None, f"cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise RecordError(None, f"not UTF-8: {error.reason} at byte {error.start}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise RecordError(None, f"invalid JSON at line {error.lineno} column {error.colno}: {error.msg}") from None
    except RecursionError:
        raise RecordError(None, "invalid JSON: nested too deeply") from None
    except ValueError as error:  # e.g. an integer of more than 4300 digits
        raise RecordError(None, f"invalid JSON: {error}") from None
    return document


def load_file(path: Path, paths: Mapping[str, tuple[RecordPath, ...]] | None = None, steps: Steps | None = None) -> Record:
    """One record file; RecordError (field None for file-level faults) when it is not a valid record.
    `paths`: the other runtime paths by record id (see load_paths); this record gets its own.
    `steps`: the budget shared with the other files of the load (_LoadBudgetSpent when spent)."""
    document = _read_json(path)
    record, dataset_version, pattern = validate(document, steps)
    own = tuple((paths or {}).get(record["id"], ()))
    patterns = (pattern, *(extra.pattern for extra in own))
    return Record(record["id"], MappingProxyType(dict(record)), dataset_version, str(path), patterns, own)


# Outcomes of extension record files by identity (path, device, inode, size, mtime, ctime): a file
# that was refused once is not validated again while it is unchanged.
_outcomes: dict[tuple, tuple[Record | RecordError, int | None]] = {}  # and the steps its search took
_outcomes_lock = threading.Lock()
_MAX_OUTCOMES = 4096


def _load_file_once(path: Path, paths: Mapping[str, tuple[RecordPath, ...]] | None, steps: Steps) -> Record:
    """load_file, or its outcome the last time the file was loaded as it is now, charging the
    steps its validation took then: the same files give the same records whatever was kept."""
    try:
        info = os.stat(path)
    except OSError:
        return load_file(path, paths, steps)  # reports why it cannot be read
    key = (str(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, id(paths))
    with _outcomes_lock:
        known = _outcomes.get(key)
    if known is not None:
        outcome, used = known
        if not steps.charge(used):
            raise _LoadBudgetSpent
    else:
        steps.used = None
        try:
            outcome = load_file(path, paths, steps)  # _LoadBudgetSpent: no outcome to keep
        except RecordError as error:
            outcome = error
        with _outcomes_lock:
            if len(_outcomes) >= _MAX_OUTCOMES:
                _outcomes.clear()
            _outcomes[key] = (outcome, steps.used)
    if isinstance(outcome, RecordError):
        raise outcome
    return outcome


def record_files(directory: Path) -> tuple[list[Path], str | None]:
    """The record files of an extension folder (its `*.json` entries, by name; not its subfolders),
    at most MAX_RECORD_FILES, and the problem to report when some or all are left out."""
    names = []
    try:
        with os.scandir(directory) as entries:
            for count, entry in enumerate(entries):
                if count >= MAX_FOLDER_ENTRIES:
                    return [], (f"{directory}: record directory has more than {MAX_FOLDER_ENTRIES} entries; "
                                "not read")
                if entry.name.endswith(".json"):
                    names.append(entry.name)
    except OSError as error:
        return [], f"{directory}: record directory cannot be read: {error.strerror or error}"
    names.sort()
    if len(names) > MAX_RECORD_FILES:
        return ([directory / name for name in names[:MAX_RECORD_FILES]],
                f"{directory}: {len(names)} record files; the first {MAX_RECORD_FILES} by name are read, "
                "the rest left out")
    return [directory / name for name in names], None


def _validate_path(record_id: str, record_label: str, name: str, entry: Any) -> RecordPath:
    if not _PATH_NAME.fullmatch(name):
        raise RecordError(None, "the name must be lower case letters, digits and '_'")
    if not isinstance(entry, dict):
        raise RecordError(None, f"expected object, got {_type_name(entry)}")
    for field_name, kind in PATH_FIELDS.items():
        if field_name not in entry:
            raise RecordError(field_name, "missing")
        if type(entry[field_name]) is not kind:
            raise RecordError(field_name, f"expected {_type_name(kind())}, got {_type_name(entry[field_name])}")
    unknown = sorted(set(entry) - set(PATH_FIELDS))
    if unknown:
        raise RecordError(unknown[0], f"unknown field (known: {', '.join(PATH_FIELDS)})")
    for field_name in _PATH_NON_EMPTY:
        if not entry[field_name].strip():
            raise RecordError(field_name, "must not be empty")
    when = entry["when"]
    if not when:
        raise RecordError("when", "must name at least one context key (an empty one would select every occurrence)")
    for key, value in when.items():
        if type(value) is not str or not value:
            raise RecordError(f"when.{key}", f"expected a non-empty string, got {_type_name(value)}")
    if entry["lineNumber"] < 1:
        raise RecordError("lineNumber", f"must be at least 1, got {entry['lineNumber']}")
    pattern = _compile("messagePattern", entry["messagePattern"])
    _matches_own_message("messagePattern", pattern, entry["errorMessage"], "the path's own errorMessage", None)
    holes = len(placeholders(entry["errorMessage"]))
    if pattern.groups != holes:
        raise RecordError(
            "messagePattern", f"has {pattern.groups} groups, errorMessage has {holes} placeholders (one group each)"
        )
    return RecordPath(
        record_id=record_id,
        name=name,
        record_label=record_label,
        label=entry["label"],
        when=MappingProxyType(dict(when)),
        error_class=entry["errorClass"],
        error_message=entry["errorMessage"],
        pattern=pattern,
        raises=entry["raises"],
        summary=entry["summary"],
        documentation=entry["documentation"],
        file_path=entry["filePath"],
        line_number=entry["lineNumber"],
        version=entry["version"],
    )


def load_paths(path: Path) -> tuple[dict[str, tuple[RecordPath, ...]], list[str]]:
    """The paths of paths.json by record id, and the problems of the entries left out.

    A file-level fault leaves every path out (the records still load and match their own messages);
    a faulty record entry leaves its paths out, a faulty path only itself.
    """
    problems: list[str] = []
    try:
        document = _read_json(path)
        if not isinstance(document, dict):
            raise RecordError(None, f"top level must be an object, got {_type_name(document)}")
        if "records" not in document:
            raise RecordError("records", "missing")
        if type(document["records"]) is not dict:
            raise RecordError("records", f"expected object, got {_type_name(document['records'])}")
    except RecordError as error:
        return {}, [_describe(path, error) + "; no other runtime paths are known"]
    found: dict[str, tuple[RecordPath, ...]] = {}
    for record_id, entry in document["records"].items():
        where = f"{path}: record '{record_id}'"
        if not isinstance(entry, dict) or type(entry.get("paths")) is not dict or type(entry.get("label")) is not str:
            problems.append(f"{where}: expected an object with 'label' (string) and 'paths' (object); left out")
            continue
        valid = []
        for name, raw in entry["paths"].items():
            try:
                valid.append(_validate_path(record_id, entry["label"], name, raw))
            except RecordError as error:
                field_part = f"field '{error.field_name}'" if error.field_name else "entry"
                problems.append(f"{path}: path '{record_id}/{name}': {field_part}: {error.reason}; left out")
        if valid:
            found[record_id] = tuple(valid)
    return found, problems


def _describe(path: Path, error: RecordError) -> str:
    where = f"field '{error.field_name}'" if error.field_name else "file"
    return f"{path}: {where}: {error.reason}"


def extension_files(dirs: Sequence[Path]) -> tuple[list[tuple[Path, list[Path]]], list[str]]:
    """Each record folder with the files of it that are read (record_files; MAX_RECORD_FILES in all,
    in the folders' order), and the problems of the folders and files left out."""
    found: list[tuple[Path, list[Path]]] = []
    problems: list[str] = []
    left = MAX_RECORD_FILES
    for directory in dirs:
        if not directory.is_dir():
            problems.append(f"{directory}: record directory not found")
            continue
        files, problem = record_files(directory)
        if problem:
            problems.append(problem)
        if len(files) > left:
            problems.append(f"{directory}: over {MAX_RECORD_FILES} record files in extend-records; "
                            f"{len(files) - left} of this folder left out")
            files = files[:left]
        left -= len(files)
        found.append((directory, files))
    return found, problems


def _load_dirs(
    dirs: Sequence[Path],
    base: Mapping[str, Record],
    paths: Mapping[str, tuple[RecordPath, ...]] | None = None,
    replace_builtin: bool = True,
    extension: bool = False,
) -> tuple[dict[str, Record], list[str], list[str]]:
    """The records of `dirs` added to `base`. `extension`: dirs come from a configuration (bounded
    in files and steps, outcomes kept per file: see the module's docstring)."""
    by_id = dict(base)
    folders, problems = extension_files(dirs)
    notices: list[str] = []
    steps = Steps(LOAD_STEPS) if extension else None
    spent: list[Path] = []
    for directory, files in folders:
        loaded_here: dict[str, Path] = {}
        for path in files:
            try:
                record = _load_file_once(path, paths, steps) if steps is not None else load_file(path, paths)
            except _LoadBudgetSpent:
                spent.append(path)
                continue
            except RecordError as error:
                problems.append(_describe(path, error))
                continue
            if record.id in loaded_here:
                problems.append(f"{path}: field 'id': duplicate of {loaded_here[record.id]}, left out")
                continue
            loaded_here[record.id] = path
            if record.id in base and not replace_builtin:
                notices.append(f"{path}: record {record.id} has the id of a built-in record; ignored, the built-in "
                               f"one is kept (set `replace-records = true` in the user config to allow replacing)")
                continue
            if record.id in by_id:
                notice = f"{path}: record {record.id} overrides the one from {by_id[record.id].source}"
                notices.append(notice)
                if record.id in base:
                    _logger.info("records: %s (replace-records = true in the user config)", notice)
            by_id[record.id] = record
    if spent:
        problems.append(f"{spent[0]}: left out with {len(spent) - 1} more record file(s): validating the "
                        f"extension records took more than {LOAD_STEPS} steps of the matcher (counted, not timed)")
    return by_id, problems, notices


def _order(by_id: Mapping[str, Record]) -> tuple[Record, ...]:
    """Rule records in rule order, then the others by id: a stable order for matching and listing."""
    rule_ids = [rule.record_id for rule in RULES]
    ranked = sorted(by_id.values(), key=lambda r: (rule_ids.index(r.id) if r.id in rule_ids else len(rule_ids), r.id))
    return tuple(ranked)


def _make_set(by_id: Mapping[str, Record], problems: Sequence[str], notices: Sequence[str]) -> RecordSet:
    records = _order(by_id)
    return RecordSet(records, tuple(problems), tuple(notices), MappingProxyType({r.id: r for r in records}))


_default: RecordSet | None = None
_default_paths: dict[str, tuple[RecordPath, ...]] = {}


def load_shipped(
    data_dir: Path = DATA_DIR, paths_file: Path = PATHS_FILE
) -> tuple[RecordSet, dict[str, tuple[RecordPath, ...]]]:
    """The records of `data_dir` with the paths of `paths_file` (default_records() caches the shipped ones)."""
    paths, problems = load_paths(paths_file)
    by_id, record_problems, notices = _load_dirs([data_dir], {}, paths)
    for record_id in paths:
        if record_id not in by_id:
            problems.append(f"{paths_file}: record '{record_id}': no such record is loaded; its paths are unused")
    return _make_set(by_id, [*record_problems, *problems], notices), paths


def default_records() -> RecordSet:
    """The shipped records, loaded once per process."""
    global _default, _default_paths
    if _default is None:
        _default, _default_paths = load_shipped()
    return _default


def load_records(extra_dirs: Sequence[str] = (), replace_builtin: bool | None = None) -> RecordSet:
    """The shipped records plus those of `extra_dirs` (later directories win on equal ids). A record with
    a shipped record's id replaces it only when `replace_builtin` (None: the user config's
    `replace-records`); it then keeps the shipped runtime paths of its id."""
    base = default_records()
    if not extra_dirs:
        return base
    if replace_builtin is None:
        from fabric_lsp.settings.user_config import load_user_config

        replace_builtin = load_user_config()[0].replace_records
    by_id, problems, notices = _load_dirs(
        [Path(d).expanduser() for d in extra_dirs], base._by_id, _default_paths, replace_builtin, extension=True
    )
    return _make_set(by_id, [*base.problems, *problems], [*base.notices, *notices])
