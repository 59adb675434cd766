"""The configuration files a training program loads, read as data: `yaml.safe_load(open(...))`,
`OmegaConf.load(path)`, `json.load(...)`, YAML or JSON text written in the program, and what hydra
composes for an app (`@hydra.main(config_path=..., config_name=...)`, `initialize` + `compose`).

The default run's strategy, `_target_` class or `sample: true` often sit in such a file, and a value a
file sets is a run-time choice (DESIGN.md, Severity), so the analysis needs the values and where each
was set. Nothing is executed: hydra and omegaconf are never imported (they are only the tests'
reference), YAML is read with PyYAML's pure-Python safe loader, which only *composes* nodes here; the
data is built from the nodes by this module, so every cost is counted before anything is built
(MAX_DEPTH, MAX_NODES, MAX_ALIASES: a billion-laughs file is refused after MAX_ALIASES aliases, and the
expanded size of what the aliases share is computed without expanding it). A file is read only inside
the project root (real paths: a link or `..` leading out is not read), by the one safe reader
(`sources/files.py`: no FIFO wait, never past MAX_CONFIG_BYTES).

What the data is: dicts, lists, str, int, float, bool, None. A tag that is not a plain YAML scalar,
sequence or mapping (`!!python/object`, `!foo`, `!!binary`, `!!set`) makes the file unreadable (its
document has `problem` set); merge keys (`<<: *base`) are supported as PyYAML does; a timestamp is kept
as its text; duplicate keys: the last wins (as PyYAML), except in the OmegaConf dialect (hydra files,
`kind="omegaconf"`), which refuses them as OmegaConf does and reads `1e3` as a float.

Hydra: `compose_hydra` follows hydra 1.3 (`version_base=None`, what `@hydra.main(version_base=None)`
and any version_base >= "1.2" do): the defaults list with its packages, `_self_` (explicit, or implied
last), `override`, `optional`, `null`, absolute groups, nested defaults, the `# @package` header (always
absolute; `_group_` in a header is not special in 1.3, unlike version_base "1.1", whose header rules
are not followed; the implicit `_self_` is last under "1.1" too), and the simple command-line overrides
`group=option` / `group@pkg=option` / `a.b=value`. Interpolations (`${...}`) are left as text; `_target_` is a
string like any other. Where hydra would stop with an error (a missing option, a `???` group, two choices
for one group, an override that matches nothing), `problem` says so and the data holds what could be
composed. Not followed: interpolations in the defaults list, `+x=`/`~x`/sweep overrides, configs
registered in Python (the ConfigStore, which needs the program run) and `hydra.searchpath`.
"""

from __future__ import annotations

import json.decoder
import json.scanner
import math
import os
import re
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import yaml

from fabric_lsp.sources.files import read_bytes, reason
from fabric_lsp.sources.files import resolves_inside as _inside

MAX_CONFIG_BYTES = 1 << 20  # bigger files are not read
MAX_DEPTH = 32  # containers nested in one another
MAX_NODES = 20_000  # values (scalars and containers; keys are not counted) per file, and per composed hydra config
MAX_ALIASES = 100  # YAML aliases per file (billion-laughs guard); more: the file is unreadable
MAX_HYDRA_FILES = 200  # files read for one hydra composition

# One hydra composition, all its files together: a folder of MAX_HYDRA_FILES files of MAX_CONFIG_BYTES each
# would take minutes to parse (pure-Python YAML reads about 1 MiB a second).
_MAX_HYDRA_BYTES = 4 * MAX_CONFIG_BYTES  # bytes of the files read
_MAX_HYDRA_VALUES = 3 * MAX_NODES  # values of the files read, and values merged
_MAX_LISTED = 2_000  # folder entries looked at per hydra group folder
_MAX_PROBLEMS = 5  # problems named in one document's `problem`


@dataclass(frozen=True)
class ConfigEntry:
    value: object  # the data at that key path
    file: str  # absolute path of the file the value comes from ("" when a command-line override set it)
    # 1-based line of the key (of the value for a list item; of the document's first value for the root and
    # for the key a hydra package makes), 0 when unknown
    line: int


@dataclass(frozen=True)
class ConfigDocument:
    data: object  # the whole document as plain data (dict for a mapping); None when unreadable
    # every file read to make it (absolute), for cache keys; for hydra also the config folder, the group folders
    # listed and the folders where a file looked for was absent (their contents change the composition)
    files: tuple[str, ...]
    origins: Mapping[tuple, ConfigEntry]  # key path (tuple of str/int) -> where that value was set last
    groups: Mapping[str, GroupChoice] = field(default_factory=dict)  # hydra only: override key -> its choice
    problem: str | None = None  # why part of it could not be read, else None


@dataclass(frozen=True)
class GroupChoice:
    group: str  # "model", "trainer/strategy"
    package: str  # where it is merged, dotted ("model"; "" for _global_)
    default: str | None  # the option the defaults list chose (None: `null`, `???`, or an optional option that is absent)
    options: tuple[str, ...]  # the option names that exist as files in the group folder (sorted)


class _Unreadable(Exception):
    """Why a text is not read: a bound, a tag, bad syntax (at `line` of the file, when known)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line

    def where(self, file: str) -> str:
        """The document's problem: `file:line: message`."""
        return f"{file}:{self.line}: {self}" if self.line is not None else f"{file}: {self}"


# --- files -----------------------------------------------------------------------------------------


def _real_root(root: str) -> str:
    return os.path.realpath(os.path.abspath(root))


def _kind_of(path: str) -> str:
    return "json" if path.lower().endswith(".json") else "yaml"


def load_data_file(path: str, root: str, *, kind: str | None = None) -> ConfigDocument | None:
    """The data of a YAML (.yaml/.yml, anything else too) or JSON (.json) file. `kind` says how the
    program reads it when the extension does not: "yaml" (`yaml.safe_load`), "omegaconf"
    (`OmegaConf.load`), "json".

    None when there is nothing to say about it: `path` is outside `root` (links and `..` resolved),
    missing, or not a regular file. A file inside the root that cannot be read (too big, too deep, too
    many aliases or values, a custom tag, bad syntax) gives a document with data None and `problem`:
    the caller can then say why the value is unknown."""
    if kind not in (None, "yaml", "omegaconf", "json") or "\x00" in path or "\x00" in root:
        return None
    return _read_file(os.path.abspath(path), _real_root(root), kind)[0]


def _read_file(absolute: str, real_root: str, kind: str | None) -> tuple[ConfigDocument | None, str]:
    """load_data_file's document, and the text read ("" when none)."""
    if not _inside(absolute, real_root):
        return None, ""
    try:
        raw = read_bytes(absolute, MAX_CONFIG_BYTES)
    except OSError as error:
        message = reason(error)
        if message.startswith("larger than"):
            return _unreadable((absolute,), f"{absolute}: {message}: not read"), ""
        return None, ""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return _unreadable((absolute,), f"{absolute}: not UTF-8 ({error.reason} at byte {error.start})"), ""
    try:
        data, lines = _parse(text, kind or _kind_of(absolute), 1)
    except _Unreadable as error:
        return _unreadable((absolute,), error.where(absolute)), text
    return _document(data, (absolute,), {path: (absolute, line) for path, line in lines.items()}), text


def load_text(text: str, kind: str, origin_file: str, first_line: int) -> ConfigDocument | None:
    """The data of YAML or JSON text written in the program (`yaml.safe_load(\"\"\"...\"\"\")`,
    `json.loads('...')`): `kind` "yaml", "omegaconf" or "json" (None for another kind). Lines count from
    `first_line`, the line of the literal in `origin_file`, where the text's first line is (a literal
    whose escapes hold newlines, `"a: 1\\nb: 2"`, is counted as the text it makes)."""
    if kind not in ("yaml", "omegaconf", "json"):
        return None
    origin_file = os.path.abspath(origin_file)
    if len(text) > MAX_CONFIG_BYTES or len(text.encode("utf-8", "replace")) > MAX_CONFIG_BYTES:
        return _unreadable((origin_file,), f"{origin_file}:{first_line}: text larger than {MAX_CONFIG_BYTES} bytes: not read")
    try:
        data, lines = _parse(text, kind, first_line)
    except _Unreadable as error:
        return _unreadable((origin_file,), error.where(origin_file))
    return _document(data, (origin_file,), {path: (origin_file, line) for path, line in lines.items()})


def _unreadable(files: tuple[str, ...], problem: str) -> ConfigDocument:
    return ConfigDocument(data=None, files=files, origins={}, groups={}, problem=problem)


def _document(data: object, files: tuple[str, ...], places: dict[tuple, tuple[str, int]],
              groups: Mapping[str, GroupChoice] | None = None, problem: str | None = None) -> ConfigDocument:
    """A document whose origins are the paths of `data` (a place recorded for a path no longer in the
    data, replaced by a later merge, is dropped)."""
    origins: dict[tuple, ConfigEntry] = {}

    def walk(value: object, path: tuple) -> None:
        file, line = places.get(path, ("", 0))
        origins[path] = ConfigEntry(value, file, line)
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, path + (key,))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, path + (index,))

    walk(data, ())
    return ConfigDocument(data=data, files=files, origins=origins, groups=groups or {}, problem=problem)


def _parse(text: str, kind: str, first_line: int) -> tuple[object, dict[tuple, int]]:
    """(data, key path -> line) of `text`; _Unreadable when it cannot be read within the bounds."""
    if kind == "json":
        return _parse_json(text, first_line)
    return _parse_yaml(text, kind == "omegaconf", first_line)


# --- YAML ------------------------------------------------------------------------------------------

_TAG = "tag:yaml.org,2002:"
_MAP, _SEQ, _STR = _TAG + "map", _TAG + "seq", _TAG + "str"
_MERGE, _VALUE, _TIMESTAMP = _TAG + "merge", _TAG + "value", _TAG + "timestamp"
_SCALARS = {
    _STR: "construct_yaml_str",
    _TAG + "int": "construct_yaml_int",
    _TAG + "float": "construct_yaml_float",
    _TAG + "bool": "construct_yaml_bool",
    _TAG + "null": "construct_yaml_null",
}


class _Composer(yaml.SafeLoader):
    """PyYAML's pure-Python safe loader, used to compose nodes only, counting while it composes: the
    nesting (composition is recursive: a file of 100,000 `[` would overflow the stack), the values and
    the aliases. An alias inside its own anchor (a recursive structure) is refused."""

    def __init__(self, stream: str, offset: int) -> None:
        super().__init__(stream)
        self.offset = offset  # the line number of the text's first line
        self.aliases = 0
        self.values = 0
        self.depth = 0
        self.open_anchors: list[str] = []

    def compose_node(self, parent, index):  # type: ignore[override]
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise _Unreadable(f"more than {MAX_ALIASES} aliases", event.start_mark.line + self.offset)
            if event.anchor in self.open_anchors:
                raise _Unreadable(f"alias *{event.anchor} inside its own anchor", event.start_mark.line + self.offset)
            return super().compose_node(parent, index)
        if not (isinstance(parent, yaml.MappingNode) and index is None):  # a key is not a value
            self.values += 1
            if self.values > MAX_NODES:
                raise _Unreadable(f"more than {MAX_NODES} values")
        collection = isinstance(event, yaml.CollectionStartEvent)
        anchor = getattr(event, "anchor", None) if collection else None
        if collection:
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise _Unreadable(f"nested deeper than {MAX_DEPTH}", event.start_mark.line + self.offset)
        if anchor is not None:
            self.open_anchors.append(anchor)
        try:
            return super().compose_node(parent, index)
        finally:
            if collection:
                self.depth -= 1
            if anchor is not None:
                self.open_anchors.pop()


class _OmegaConfComposer(_Composer):
    """OmegaConf.load's dialect: `1e3` is a float, a date stays a string (its loader drops the
    timestamp resolver), and a repeated key is an error."""


_OmegaConfComposer.add_implicit_resolver(
    _TAG + "float",
    re.compile(
        r"""^(?:
         [-+]?[0-9]+(?:_[0-9]+)*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?[0-9]+(?:_[0-9]+)*(?:[eE][-+]?[0-9]+)
        |\.[0-9]+(?:_[0-9]+)*(?:[eE][-+][0-9]+)?
        |[-+]?[0-9]+(?:_[0-9]+)*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)
_OmegaConfComposer.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
    for first, resolvers in _OmegaConfComposer.yaml_implicit_resolvers.items()
}


def _parse_yaml(text: str, omegaconf: bool, first_line: int) -> tuple[object, dict[tuple, int]]:
    composer = None
    try:
        composer = (_OmegaConfComposer if omegaconf else _Composer)(text, first_line)
        root = composer.get_single_node()
        if root is None:  # an empty document
            return None, {(): first_line}
        return _Builder(composer, omegaconf, first_line).build(root)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        raise _Unreadable(f"not valid YAML ({error.problem or error.context})",
                          mark.line + first_line if mark is not None else None) from None
    except yaml.reader.ReaderError as error:  # a character YAML refuses
        raise _Unreadable(f"not valid YAML ({str(error).splitlines()[0]})",
                          text.count("\n", 0, error.position) + first_line) from None
    except yaml.YAMLError as error:
        raise _Unreadable(f"not valid YAML ({str(error).splitlines()[0]})") from None
    except RecursionError:  # not expected within MAX_DEPTH; kept as a last guard
        raise _Unreadable(f"nested deeper than {MAX_DEPTH}") from None
    finally:
        if composer is not None:
            composer.dispose()


class _Builder:
    """Plain data from composed nodes. First the tags, the nesting and the size of the data the
    aliases and merge keys make are checked, over the node graph (each shared node once): only then is
    anything built, so the data never outgrows MAX_NODES."""

    def __init__(self, composer: _Composer, omegaconf: bool, first_line: int) -> None:
        self.composer = composer
        self.omegaconf = omegaconf
        self.offset = first_line
        self.pairs_of: dict[int, list] = {}  # id(mapping node) -> its (key, value) pairs, merge keys flattened
        self.sizes: dict[int, int] = {}
        self.heights: dict[int, int] = {}
        self.lines: dict[tuple, int] = {}

    def build(self, root: yaml.Node) -> tuple[object, dict[tuple, int]]:
        self.height(root, 0)
        self.size(root)
        data = self.value(root, (), root.start_mark.line)
        return data, self.lines

    def line(self, node: yaml.Node) -> int:
        return node.start_mark.line + self.offset

    def pairs(self, node: yaml.MappingNode) -> list:
        """The pairs as PyYAML's flatten_mapping makes them: merged mappings first (of a list of
        them, the first wins), then the node's own."""
        known = self.pairs_of.get(id(node))
        if known is not None:
            return known
        if node.tag != _MAP:
            raise _Unreadable(f"tag {node.tag} is not read", self.line(node))
        merged: list = []
        own: list = []
        seen: set[str] = set()
        for key, value in node.value:
            if key.tag == _MERGE:
                if isinstance(value, yaml.MappingNode):
                    merged.extend(self.pairs(value))
                elif isinstance(value, yaml.SequenceNode):
                    parts = []
                    for part in value.value:
                        if not isinstance(part, yaml.MappingNode):
                            raise _Unreadable("a merge key (<<) takes mappings", self.line(part))
                        parts.append(self.pairs(part))
                    for part in reversed(parts):
                        merged.extend(part)
                else:
                    raise _Unreadable("a merge key (<<) takes mappings", self.line(value))
            else:
                if not isinstance(key, yaml.ScalarNode):
                    raise _Unreadable("a key that is a list or a mapping", self.line(key))
                if self.omegaconf and key.tag == _STR:
                    if key.value in seen:
                        raise _Unreadable(f"duplicate key {key.value}", self.line(key))
                    seen.add(key.value)
                own.append((key, value))
            if len(merged) + len(own) > MAX_NODES:
                raise _Unreadable(f"more than {MAX_NODES} values")
        found = merged + own
        self.pairs_of[id(node)] = found
        return found

    def children(self, node: yaml.Node) -> list[yaml.Node]:
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _SEQ:
                raise _Unreadable(f"tag {node.tag} is not read", self.line(node))
            return node.value
        if isinstance(node, yaml.MappingNode):
            return [value for _key, value in self.pairs(node)]
        return []

    def height(self, node: yaml.Node, above: int) -> int:
        """Containers nested in `node` and itself (0 for a scalar), with `above` containers around
        it; _Unreadable past MAX_DEPTH. Aliases are followed, each shared node measured once."""
        if isinstance(node, yaml.ScalarNode):
            if node.tag not in _SCALARS and node.tag != _TIMESTAMP:
                raise _Unreadable(f"tag {node.tag} is not read", self.line(node))
            return 0
        if above + 1 > MAX_DEPTH:
            raise _Unreadable(f"nested deeper than {MAX_DEPTH}", self.line(node))
        known = self.heights.get(id(node))
        if known is None:
            known = 1 + max((self.height(child, above + 1) for child in self.children(node)), default=0)
            self.heights[id(node)] = known
        if above + known > MAX_DEPTH:
            raise _Unreadable(f"nested deeper than {MAX_DEPTH}", self.line(node))
        return known

    def size(self, node: yaml.Node) -> int:
        """Values in `node` once the aliases are expanded (counted, not expanded)."""
        if isinstance(node, yaml.ScalarNode):
            return 1
        known = self.sizes.get(id(node))
        if known is None:
            known = 1
            for child in self.children(node):
                known += self.size(child)
                if known > MAX_NODES:
                    raise _Unreadable(f"more than {MAX_NODES} values once its aliases are expanded")
            self.sizes[id(node)] = known
        return known

    def scalar(self, node: yaml.ScalarNode) -> object:
        if node.tag == _TIMESTAMP:
            return node.value
        if node.tag == _VALUE:  # `=` as a key (height() refuses it as a value, as PyYAML does): a string
            return node.value
        method = _SCALARS.get(node.tag)
        if method is None:
            raise _Unreadable(f"tag {node.tag} is not read", self.line(node))
        return getattr(self.composer, method)(node)

    def value(self, node: yaml.Node, path: tuple, line0: int) -> object:
        self.lines[path] = line0 + self.offset
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node)
        if isinstance(node, yaml.SequenceNode):
            return [self.value(item, path + (index,), item.start_mark.line) for index, item in enumerate(node.value)]
        last: dict[object, tuple[yaml.Node, yaml.Node]] = {}
        for key, item in self.pairs(node):
            last[self.scalar(key)] = (key, item)  # a repeated key: the last value, at the first place (a dict's rule)
        return {name: self.value(item, path + (name,), key.start_mark.line) for name, (key, item) in last.items()}


# --- JSON ------------------------------------------------------------------------------------------

_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_JSON_NUMBER = json.scanner.NUMBER_RE
_JSON_WORDS = (("true", True), ("false", False), ("null", None), ("NaN", math.nan), ("Infinity", math.inf),
               ("-Infinity", -math.inf))


def _parse_json(text: str, first_line: int) -> tuple[object, dict[tuple, int]]:
    """What `json.loads` gives (NaN and Infinity too; the last of repeated keys wins), parsed without
    recursion so that the nesting and the values are counted as they come, and each value's line is
    known."""
    newlines = [match.start() for match in re.finditer("\n", text)]

    def line_at(position: int) -> int:
        return bisect_left(newlines, position) + first_line

    def fail(position: int, what: str) -> _Unreadable:
        return _Unreadable(f"not valid JSON ({what})", line_at(position))

    count = 0
    places: dict[int, dict | list] = {}  # id(container) -> the line of each key (dict) or item (list)

    def value_at(position: int) -> tuple[object, int, bool]:
        nonlocal count
        count += 1
        if count > MAX_NODES:
            raise _Unreadable(f"more than {MAX_NODES} values")
        char = text[position:position + 1]
        if char == '"':
            try:
                string, end = json.decoder.scanstring(text, position + 1, True)
            except ValueError as error:
                raise fail(position, str(error).split(":")[0]) from None
            return string, end, False
        if char == "{":
            return {}, position + 1, True
        if char == "[":
            return [], position + 1, True
        match = _JSON_NUMBER.match(text, position)
        if match is not None:
            integer, fraction, exponent = match.groups()
            try:
                number = float(integer + (fraction or "") + (exponent or "")) if fraction or exponent else int(integer)
            except ValueError:
                raise fail(position, "a number too long") from None
            return number, match.end(), False
        for word, constant in _JSON_WORDS:
            if text.startswith(word, position):
                return constant, position + len(word), False
        raise fail(position, "expected a value")

    text_start = _JSON_SPACE.match(text, 0).end()
    if text_start == len(text):
        raise fail(text_start, "no value")
    root, position, opened = value_at(text_start)
    stack: list[list] = []  # [container, state]: "start" (after the opening), "comma" (after a comma), "item"
    if opened:
        stack.append([root, "start"])
        places[id(root)] = {} if isinstance(root, dict) else []
    while stack:
        frame = stack[-1]
        container, state = frame
        position = _JSON_SPACE.match(text, position).end()
        char = text[position:position + 1]
        closer = "}" if isinstance(container, dict) else "]"
        if char == closer and state != "comma":
            position += 1
            stack.pop()
            continue
        if state == "item":
            if char != ",":
                raise fail(position, f"expected ',' or '{closer}'")
            frame[1] = "comma"
            position += 1
            continue
        item_line = line_at(position)
        if isinstance(container, dict):
            if char != '"':
                raise fail(position, "expected a key in double quotes")
            try:
                key, position = json.decoder.scanstring(text, position + 1, True)
            except ValueError as error:
                raise fail(position, str(error).split(":")[0]) from None
            position = _JSON_SPACE.match(text, position).end()
            if text[position:position + 1] != ":":
                raise fail(position, "expected ':'")
            position = _JSON_SPACE.match(text, position + 1).end()
            value, position, opened = value_at(position)
            container[key] = value
            places[id(container)][key] = item_line  # type: ignore[index]
        else:
            value, position, opened = value_at(position)
            container.append(value)
            places[id(container)].append(item_line)  # type: ignore[union-attr]
        frame[1] = "item"
        if opened:
            if len(stack) >= MAX_DEPTH:
                raise _Unreadable(f"nested deeper than {MAX_DEPTH}", item_line)
            stack.append([value, "start"])
            places[id(value)] = {} if isinstance(value, dict) else []
    if _JSON_SPACE.match(text, position).end() != len(text):
        raise fail(position, "extra data after the value")

    lines: dict[tuple, int] = {(): line_at(text_start)}

    def walk(value: object, path: tuple) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                lines[path + (key,)] = places[id(value)][key]  # type: ignore[index]
                walk(item, path + (key,))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                lines[path + (index,)] = places[id(value)][index]  # type: ignore[index]
                walk(item, path + (index,))

    walk(root, ())
    return root, lines


# --- hydra -----------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Default:
    """One element of a defaults list, as hydra 1.3's ConfigDefault (`path` set) or GroupDefault
    (`group` set) with the same rules for paths and packages (hydra/core/default_element.py)."""

    path: str | None = None  # a config default as written ("_self_", "other", "/abs/other")
    group: str | None = None  # a group default's group as written ("model", "/abs/group")
    value: object = None  # a group default's option: str, None, or a list of str
    package: str | None = None  # `@pkg` as written ("" for _here_)
    optional: bool = False
    override: bool = False
    primary: bool = False
    written: str = ""  # "file:line" where the element is, for problems
    parent_base_dir: str | None = None
    parent_package: str | None = None
    header: str | None = None  # the file's `# @package`, made absolute

    def is_self(self) -> bool:
        return self.path == "_self_"

    def name(self) -> str | None:
        if self.group is not None:
            return self.value if isinstance(self.value, str) else None
        assert self.path is not None
        return self.path.rpartition("/")[2]

    def _relative_group(self) -> str:
        if self.group is not None:
            return self.group.lstrip("/")
        assert self.path is not None
        return self.path.lstrip("/").rpartition("/")[0]

    def group_path(self) -> str:
        assert self.parent_base_dir is not None
        written = self.group if self.group is not None else self.path.rpartition("/")[0]  # type: ignore[union-attr]
        absolute = (self.group if self.group is not None else self.path).startswith("/")  # type: ignore[union-attr]
        relative = written.lstrip("/")
        if absolute or self.parent_base_dir == "":
            return relative
        return f"{self.parent_base_dir}/{relative}" if relative else self.parent_base_dir

    def config_path(self) -> str:
        if self.group is not None:
            return f"{self.group_path()}/{self.name()}"
        assert self.path is not None and self.parent_base_dir is not None
        path = self.path.lstrip("/")
        if self.path.startswith("/") or self.parent_base_dir == "":
            return path
        return f"{self.parent_base_dir}/{path}"

    def default_package(self) -> str:
        return self.group_path().replace("/", ".")

    def own_package(self, use_header: bool = True) -> str | None:
        if self.package is None and use_header:
            return self.header
        return self.package

    def final_package(self, use_header: bool = True) -> str:
        parent = self.parent_package
        assert parent is not None
        package = self.own_package(use_header)
        if package is None:
            package = self._relative_group().replace("/", ".")
        if parent == "":
            found = package
        elif package == "":
            found = parent
        else:
            found = f"{parent}.{package}"
        last = found.rfind("_global_")
        return found if last == -1 else found[last + len("_global_") + 1:]

    def override_key(self) -> str:
        key = self.group_path()
        final = self.final_package(use_header=False)
        if self.default_package() != final:
            key = f"{key}@{final or '_global_'}"
        return key

    def update_parent(self, base_dir: str, package: str) -> None:
        self.parent_base_dir = base_dir
        self.parent_package = package
        if self.package is not None and "_group_" in self.package:
            self.package = "_global_." + self.package.replace("_group_", self.default_package())

    def set_header(self, header: str | None) -> None:
        if header is None:
            return
        if header != "_global_" and not header.startswith("_global_."):
            header = "_global_" if header == "" else f"_global_.{header}"
        self.header = header

    def is_interpolation(self) -> bool:
        text = self.value if self.group is not None else self.path
        return isinstance(text, str) and "${" in text


@dataclass
class _HydraFile:
    path: str  # absolute
    data: object  # the file's data, its top-level `defaults` taken out
    lines: dict[tuple, int]
    header: str | None  # `# @package` as written
    defaults: list[tuple[object, int]]  # the defaults list's elements as data, with their lines


@dataclass
class _Result:
    """A config of the final defaults list: merged in this order at this package."""

    config_path: str
    package: str
    primary: bool
    override_key: str | None


_HEADER_LINE = re.compile(r"^\s*#\s*@")
_OVERRIDE_KEY = re.compile(r"^(?P<key>[A-Za-z0-9_$][A-Za-z0-9_$./-]*)(?:@(?P<package>[A-Za-z0-9_$.:-]*))?$")
_OVERRIDE_INT = re.compile(r"^[+-]?(?:0|[1-9](?:_?[0-9])*)$")
_OVERRIDE_FLOAT = re.compile(
    r"^[+-]?(?:(?:(?:0|[1-9](?:_?[0-9])*)?\.[0-9](?:_?[0-9])*|(?:0|[1-9](?:_?[0-9])*)\.)"
    r"|(?:(?:0|[1-9](?:_?[0-9])*)|(?:(?:0|[1-9](?:_?[0-9])*)?\.[0-9](?:_?[0-9])*|(?:0|[1-9](?:_?[0-9])*)\.))"
    r"[eE][+-]?[0-9](?:_?[0-9])*|[Ii][Nn][Ff]|[Nn][Aa][Nn])$")
_OVERRIDE_PLAIN = re.compile(r"^[A-Za-z0-9_/+.$%*@?| \t-]*$")  # hydra's unquoted string, no escapes


def _header_package(text: str) -> str | None:
    """`# @package x` among the first lines (hydra reads the first 512 characters, skips blank lines,
    and stops at the first line that is not a `# @key value` line)."""
    package = None
    for line in text[:512].splitlines():
        line = line.strip()
        if not line:
            continue
        if not _HEADER_LINE.match(line):
            break
        parts = line.lstrip("#").strip().split()
        if len(parts) != 2:
            raise _Unreadable(f"a header line that is not `# @key value`: {line!r}")
        if parts[0] == "@package":
            package = parts[1]
    return package


def _override_value(text: str) -> tuple[bool, object]:
    """(understood, value) of an override's value as hydra's grammar reads a primitive."""
    text = text.strip(" \t")
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" and text[0] not in text[1:-1] and "\\" not in text:
        return True, text[1:-1]
    if text.startswith("${") and text.endswith("}") and "}" not in text[2:-1]:
        return True, text
    if _OVERRIDE_INT.match(text):
        return True, int(text.replace("_", ""))
    if _OVERRIDE_FLOAT.match(text):
        return True, float(text.replace("_", ""))
    if text.lower() in ("true", "false"):
        return True, text.lower() == "true"
    if text.lower() == "null":
        return True, None
    if _OVERRIDE_PLAIN.match(text) and "," not in text:
        return True, text
    return False, None  # a list, a dict, a sweep, a function: not followed


class _Composition:
    """One hydra composition (hydra/_internal/defaults_list.py and config_loader_impl.py, 1.3): the
    defaults tree, then the configs merged in its order, then the command-line overrides."""

    def __init__(self, config_dir: str, root: str) -> None:
        self.config_dir = config_dir
        self.real_root = _real_root(root)
        self.loaded: dict[str, _HydraFile | None] = {}
        self.files: list[str] = []
        self.problems: list[str] = []
        self.choices: dict[str, object] = {}  # override key -> option, `override` elements and the command line
        self.choice_source: dict[str, tuple[str, bool]] = {}  # override key -> (where, used)
        self.known: dict[str, str | None] = {}
        self.groups: dict[str, GroupChoice] = {}
        self.options_of: dict[str, tuple[str, ...]] = {}
        self.nodes = 0  # defaults elements expanded
        self.bytes_read = 0
        self.values_read = 0
        self.placed: dict[tuple, tuple[str, int]] = {}  # key path -> (file, line) where it was set last

    # reading

    def note(self, message: str) -> None:
        if message not in self.problems:
            self.problems.append(message)

    def seen(self, path: str) -> None:
        if path not in self.files:
            self.files.append(path)

    def exists(self, config_path: str) -> bool:
        full = os.path.join(self.config_dir, _normalized(config_path))
        return os.path.isfile(os.path.realpath(full))

    def load(self, config_path: str) -> _HydraFile | None:
        """The file of `config_path`, None when absent or not read (a problem says why, but for an
        absent file, which the caller judges: an optional one is no problem)."""
        normalized = _normalized(config_path)
        if normalized in self.loaded:
            return self.loaded[normalized]
        self.loaded[normalized] = None
        full = os.path.normpath(os.path.join(self.config_dir, normalized))
        if not os.path.isfile(os.path.realpath(full)):
            self.seen(os.path.dirname(full))  # a file created there later changes the composition
            return None
        if not _inside(full, self.real_root):
            self.note(f"{full}: outside the project: not read")
            return None
        if len(self.loaded) > MAX_HYDRA_FILES:
            self.note(f"more than {MAX_HYDRA_FILES} files: {full} and the next ones not read")
            return None
        try:
            self.bytes_read += os.stat(full).st_size
        except OSError:
            return None
        if self.bytes_read > _MAX_HYDRA_BYTES:
            self.note(f"more than {_MAX_HYDRA_BYTES} bytes of files: {full} and the next ones not read")
            return None
        self.seen(full)
        document, text = _read_file(full, self.real_root, "omegaconf")
        if document is None:
            self.note(f"{full}: not read")
            return None
        if document.problem is not None:
            self.note(document.problem)
            return None
        try:
            header = _header_package(text)
        except _Unreadable as error:
            self.note(error.where(full))
            header = None
        data = {} if document.data is None else document.data
        lines = {path: entry.line for path, entry in document.origins.items()}
        self.values_read += len(lines)
        if self.values_read > _MAX_HYDRA_VALUES:
            self.note(f"more than {_MAX_HYDRA_VALUES} values in the files: {full} and the next ones not read")
            return None
        defaults: list[tuple[object, int]] = []
        if isinstance(data, dict) and "defaults" in data:
            listed = data.pop("defaults")
            if isinstance(listed, list):
                defaults = [(item, lines.get(("defaults", index), 0)) for index, item in enumerate(listed)]
            else:
                self.note(f"{full}:{lines.get(('defaults',), 0)}: `defaults` is not a list: not followed")
            lines = {path: line for path, line in lines.items() if path[:1] != ("defaults",)}
        elif not isinstance(data, (dict, list)):
            self.note(f"{full}: not a mapping: not merged")
            data = {}
        found = _HydraFile(full, data, lines, header, defaults)
        self.loaded[normalized] = found
        return found

    def options(self, group: str) -> tuple[str, ...]:
        """The options hydra lists for a group: the names of the `.yaml` files in its folder."""
        known = self.options_of.get(group)
        if known is not None:
            return known
        folder = os.path.normpath(os.path.join(self.config_dir, group))
        found: set[str] = set()
        real = os.path.realpath(folder)
        if os.path.isdir(real):
            if not _inside(folder, self.real_root):
                self.note(f"{folder}: outside the project: its options are not listed")
            else:
                self.seen(folder)
                try:
                    names = sorted(os.listdir(real))[:_MAX_LISTED]
                except OSError:
                    names = []
                for name in names:
                    if name in ("__pycache__", "__init__.py"):
                        continue
                    if os.path.isfile(os.path.realpath(os.path.join(real, _normalized(name)))):
                        found.add(name.rpartition(".")[0] if "." in name else name)
        options = tuple(sorted(found))
        self.options_of[group] = options
        return options

    def parse_default(self, item: object, line: int, file: str) -> _Default | None:
        written = f"{file}:{line}"
        if isinstance(item, str):
            path, _, package = item.partition("@")
            package_or_none = package.partition(":")[0] if "@" in item else None
            if path == "_self_" and package_or_none is not None:
                self.note(f"{written}: _self_@PACKAGE is not supported by hydra")
                return None
            return _Default(path=path, package="" if package_or_none == "_here_" else package_or_none, written=written)
        if isinstance(item, dict) and len(item) == 1:
            (key, value), = item.items()
            if not isinstance(key, str):
                self.note(f"{written}: a defaults element whose group is not a string")
                return None
            words = key.split(" ")
            group_key, optional, override = words[-1], False, False
            for word in words[:-1]:
                if word == "optional":
                    optional = True
                elif word == "override":
                    override = True
                else:
                    break
            group, _, package = group_key.partition("@")
            package_or_none = package.partition(":")[0] if "@" in group_key else None
            if not group:
                self.note(f"{written}: a defaults element without a group")
                return None
            if value is not None and not isinstance(value, str):
                if not (isinstance(value, list) and all(isinstance(option, str) for option in value)):
                    self.note(f"{written}: a defaults element whose option is not a string or a list of strings")
                    return None
            return _Default(group=group, value=value, package="" if package_or_none == "_here_" else package_or_none,
                            optional=optional, override=override, written=written)
        self.note(f"{written}: a defaults element that is neither a name nor `group: option`")
        return None

    # the defaults tree

    def expand(self, node: _Default, depth: int) -> list[_Result]:
        """The configs `node` contributes, in merge order (hydra's _create_defaults_tree_impl, then its
        depth-first walk): its defaults, each expanded, with its own content at `_self_`; or itself
        alone when it has no defaults."""
        self.nodes += 1
        if depth > MAX_DEPTH or self.nodes > MAX_NODES:
            self.note(f"{node.written}: defaults nested deeper than {MAX_DEPTH} or too many: not followed")
            return []
        hydra_own = node.group is not None and _hydra_group(node.group_path())
        if hydra_own:  # hydra's own groups (hydra/launcher, ...) configure the `hydra` node, which the app never sees
            return []
        name = node.name()
        loaded = None
        if name is not None and name != "???" and not node.is_interpolation():
            loaded = self.load(node.config_path())
            if loaded is not None:
                node.set_header(loaded.header)
        if node.group is not None:
            self.record_choice(node, name if loaded is not None else None)
        if name is None:
            return []
        if name == "???":
            self.note(f"{node.written}: `{node.override_key()}` has no default (???): it must be chosen at run time")
            return []
        if loaded is None:
            if not node.optional:
                self.note(f"{node.written}: could not find {_normalized(node.config_path())}")
            return []
        defaults = [element for element in (self.parse_default(item, line, loaded.path) for item, line in loaded.defaults)
                    if element is not None]
        if defaults:
            selves = [element for element in defaults if element.is_self()]
            if len(selves) > 1:
                self.note(f"{loaded.path}: _self_ is listed twice")
                for extra in selves[1:]:
                    defaults.remove(extra)
            if not selves and any(not element.override for element in defaults):
                defaults.append(_Default(path="_self_", written=f"{loaded.path}:0"))
        group_path, package = node.group_path(), node.final_package()
        seen_override: _Default | None = None
        for element in defaults:
            if element.is_self():
                continue
            element.update_parent(group_path, package)
            if element.override:
                seen_override = element
                if element.group is not None:
                    key = element.override_key()
                    if key not in self.choices:
                        self.choices[key] = element.value
                        self.choice_source[key] = (element.written, False)
            elif seen_override is not None:
                self.note(f"{element.written}: an element after the override at {seen_override.written}: "
                          "hydra wants overrides at the end of the defaults list")
        children: list[list[_Result]] = []
        for element in reversed(defaults):
            if element.is_self():  # the node's own content, at its own package
                children.append([_Result(node.config_path(), node.final_package(), node.primary, None)])
                continue
            if element.override:
                continue
            if element.group is not None:
                key = element.override_key()
                if key in self.choices:
                    element.value = self.choices[key]
                    where, _used = self.choice_source[key]
                    self.choice_source[key] = (where, True)
            if element.is_interpolation():
                self.note(f"{element.written}: an interpolation in the defaults list is not followed")
                continue
            if element.group is not None and isinstance(element.value, list):
                for option in reversed(element.value):
                    each = _Default(path=f"{element.group}/{option}", package=element.package,
                                    optional=element.optional, written=element.written)
                    each.update_parent(group_path, package)
                    children.append(self.expand(each, depth + 1))
                continue
            children.append(self.expand(element, depth + 1))
        if not children:
            return [_Result(node.config_path(), node.final_package(), node.primary,
                            node.override_key() if node.group is not None else None)]
        return [result for child in reversed(children) for result in child]

    def record_choice(self, node: _Default, chosen: str | None) -> None:
        key = node.override_key()
        name = node.name()
        if key in self.known:
            if self.known[key] != name:
                self.note(f"{node.written}: a second choice for {key} ({name}; first {self.known[key]}): "
                          f"hydra wants `override {key}: ...`")
            return
        self.known[key] = name
        self.groups[key] = GroupChoice(group=node.group_path(), package=node.final_package(), default=chosen,
                                       options=self.options(node.group_path()))

    # composition

    def compose(self, config_name: str | None, overrides: Sequence[str]) -> ConfigDocument:
        self.seen(self.config_dir)  # a group folder made there turns `x=...` into a group override
        values: list[tuple[str, tuple, object]] = []
        for override in overrides:
            self.command_line(override, values)
        data: dict = {}
        if config_name is not None:
            primary = _Default(path=config_name, primary=True, written="config_name")
            primary.update_parent("", "")
            if not self.exists(primary.config_path()):
                where = os.path.join(self.config_dir, _normalized(primary.config_path()))
                self.seen(os.path.dirname(os.path.normpath(where)))
                return self.document(None, f"cannot find the primary config {_normalized(config_name)}")
            results = self.expand(primary, 0)
            if self.loaded.get(_normalized(primary.config_path())) is None:
                return self.document(None)
            self.check_results(results)
            merged = 0
            for result in results:
                loaded = self.load(result.config_path)
                if loaded is None:
                    continue
                if result.primary and not isinstance(loaded.data, dict):
                    return self.document(None, f"{loaded.path}: the primary config is not a mapping")
                merged += len(loaded.lines)
                if merged > _MAX_HYDRA_VALUES:
                    self.note(f"more than {_MAX_HYDRA_VALUES} values merged: {loaded.path} and the next ones not merged")
                    break
                if result.primary:
                    self.placed[()] = (loaded.path, loaded.lines.get((), 0))
                self.merge_file(data, loaded, result.package)
        for key in self.choices:
            where, used = self.choice_source[key]
            if not used and not _hydra_group(key.partition("@")[0]):
                self.note(f"{where}: could not override {key}: no match in the defaults list")
        for text, path, value in values:
            self.apply(data, text, path, value)
        data.pop("hydra", None)  # hydra's own node: compose() and the app never see it
        count = _count(data)
        if count > MAX_NODES:
            return self.document(None, f"the composed config has more than {MAX_NODES} values")
        return self.document(data)

    def document(self, data: object, problem: str | None = None) -> ConfigDocument:
        if problem is not None:
            self.note(problem)
        shown = self.problems[:_MAX_PROBLEMS]
        if len(self.problems) > _MAX_PROBLEMS:
            shown.append(f"and {len(self.problems) - _MAX_PROBLEMS} more")
        message = "; ".join(shown) or None
        if data is None:
            return ConfigDocument(None, tuple(self.files), {}, dict(self.groups), message)
        return _document(data, tuple(self.files), self.placed, dict(self.groups), message)

    def check_results(self, results: list[_Result]) -> None:
        keys: set[str] = set()
        for result in results:
            if result.override_key is not None:
                if result.override_key in keys:
                    self.note(f"{result.override_key} appears more than once in the final defaults list")
                keys.add(result.override_key)

    def command_line(self, override: str, values: list) -> None:
        """A `group=option` override becomes a choice; a `key=value` one is applied after the merge.
        Others (`+x=1`, `~x`, sweeps, lists) are ignored, as are those about hydra itself."""
        key_text, equal, value_text = override.partition("=")
        match = _OVERRIDE_KEY.match(key_text.strip())
        if not equal or match is None:
            return
        key, package = match.group("key"), match.group("package")
        if key == "hydra" or key.startswith(("hydra.", "hydra/")):
            return
        understood, value = _override_value(value_text)
        if not understood:
            return
        folder = os.path.join(self.config_dir, key)
        if os.path.isdir(os.path.realpath(folder)):
            if not isinstance(value, str):
                self.note(f"override {override}: a group's option must be a name")
                return
            choice_key = key if package is None else f"{key}@{package}"
            self.choices[choice_key] = value
            self.choice_source[choice_key] = (f"override {override}", False)
            return
        if package is not None:
            return
        values.append((override, tuple(key.split(".")), value))

    def merge_file(self, data: dict, loaded: _HydraFile, package: str) -> None:
        """Merge the file's data at `package` (hydra puts it there, then merges the whole)."""
        content: object = loaded.data
        prefix: tuple = tuple(package.split(".")) if package else ()
        for key in reversed(prefix):
            content = {key: content}
        if not isinstance(content, dict):
            self.note(f"{loaded.path}: a list merged at the top: not merged")
            return
        origin = {prefix + path: (loaded.path, line) for path, line in loaded.lines.items()}
        self.merge(data, content, (), origin, loaded.path)

    def merge(self, into: dict, source: dict, path: tuple, origin: dict, file: str) -> None:
        """OmegaConf's merge of `source` into `into`: dicts merge key by key; a list, a scalar or None
        replaces; `???` never replaces a value; a dict and a list do not merge (hydra stops there; here
        the later one wins and the problem is noted). `origin` holds the lines of `source`'s values. The
        place of a value replaced later stays in `placed` until _document drops it (a path still in the
        data was written last by whoever wrote it last: a replacement rewrites every path below it)."""
        for key, value in source.items():
            where = path + (key,)
            if key not in into:
                into[key] = value = _copy(value)
                self.record(origin, where, value, file)
                continue
            current = into[key]
            if value == "???":
                continue
            if isinstance(value, dict) and isinstance(current, dict):
                self.placed[where] = origin.get(where, (file, 0))
                self.merge(current, value, where, origin, file)
                continue
            if isinstance(value, dict) != isinstance(current, dict) and isinstance(value, (dict, list)) \
                    and isinstance(current, (dict, list)):
                self.note(f"{file}: {'.'.join(map(str, where))}: a mapping and a list do not merge")
            into[key] = value = _copy(value)
            self.record(origin, where, value, file)

    def record(self, origin: dict, path: tuple, value: object, file: str) -> None:
        self.placed[path] = origin.get(path, (file, 0))
        if isinstance(value, dict):
            for key, item in value.items():
                self.record(origin, path + (key,), item, file)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self.record(origin, path + (index,), item, file)

    def apply(self, data: dict, text: str, path: tuple[str, ...], value: object) -> None:
        """`a.b=value`: hydra sets a key that exists (the config is in struct mode then); a number is a
        list's index, and a string key only (hydra does not reach a YAML `7:` key by `x.7`)."""
        container: object = data
        keys: list = []
        for index, part in enumerate(path):
            if isinstance(container, dict):
                key = part if part in container else None
            elif isinstance(container, list) and part.isdigit() and int(part) < len(container):
                key = int(part)
            else:
                key = None
            if key is None:
                self.note(f"override {text}: no such key: not applied")
                return
            keys.append(key)
            if index < len(path) - 1:
                container = container[key]  # type: ignore[index]
        container[keys[-1]] = value  # type: ignore[index]
        self.placed[tuple(keys)] = ("", 0)


def _copy(value: object) -> object:
    """A copy of plain data: a file's data is merged into the composition, which merges later files
    into it, and the same file may be merged again (one option at two packages)."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def _count(value: object) -> int:
    if isinstance(value, dict):
        return 1 + sum(_count(item) for item in value.values())
    if isinstance(value, list):
        return 1 + sum(_count(item) for item in value)
    return 1


def _normalized(config_path: str) -> str:
    return config_path if config_path.endswith(".yaml") else config_path + ".yaml"


def _hydra_group(group: str) -> bool:
    return group == "hydra" or group.startswith("hydra/")


def compose_hydra(config_dir: str, config_name: str | None, root: str,
                  overrides: Sequence[str] = ()) -> ConfigDocument | None:
    """What hydra 1.3 composes for the app whose config folder is `config_dir` (absolute, resolved by
    the caller as hydra does: relative to the script's folder) and primary config `config_name` (with
    or without ".yaml"; None: an empty primary config), with `overrides` from a command line (only
    `group=option`, `group@pkg=option` and `a.b=value`; the others are ignored).

    None when `config_dir` is not a folder inside `root`. Otherwise a document; `problem` says what
    was not read (a file outside the root, a missing option, a bound) or what hydra would refuse (a
    second choice for a group, an override that matches nothing): the data then holds the rest, as
    far as it could be composed (None when the primary config is not read)."""
    if "\x00" in config_dir + root + (config_name or "") or any("\x00" in override for override in overrides):
        return None  # no file has such a name (and os functions raise ValueError for one)
    folder = os.path.abspath(config_dir)
    real_root = _real_root(root)
    if not os.path.isdir(folder) or not _inside(folder, real_root):
        return None
    return _Composition(folder, real_root).compose(config_name, overrides)
