"""What fabric-lsp knows about transformers, peft, timm, open_clip, torchvision, diffusers and
sentence-transformers without importing them (or torch).

The facts live in ``data/<library>.json``, generated from the real libraries by
``scripts/generate_library_tables.py`` (models built from small configs and observed with forward
hooks; the ``notes`` of each file say what every field means). This module only reads those files:
a library's file is read, validated and cached on the first question about a name of that library,
so nothing is loaded while no library name is asked about.

    library_of("transformers.GPT2LMHeadModel")                      # "transformers" (nothing loaded)
    canonical("transformers.GPT2LMHeadModel")        # "transformers.models.gpt2.modeling_gpt2.GPT2LMHeadModel"
    runs_module("transformers.GPT2LMHeadModel", "generate").runs    # True (owner: GenerationMixin)
    find_attribute("timm.models.resnet.ResNet", "forward_features") # ("timm.models.resnet.ResNet", "method")
    factory("timm.create_model").by_argument.select("resnet18.a1_in1k")  # "timm.models.resnet.ResNet"

Classes are named by their defining qualified name (module + "." + __qualname__). Every function
accepts the public spellings too (``transformers.AutoModelForCausalLM``). A table that does not
have the expected shape raises `LibraryTableError` on first use.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType
from typing import Any, Literal

# Import name of each library that has a table (the first component of its dotted names).
LIBRARIES: tuple[str, ...] = (
    "transformers", "peft", "timm", "open_clip", "torchvision", "diffusers", "sentence_transformers",
)

AttributeKind = Literal["method", "property", "property_method", "staticmethod", "classmethod", "attribute"]
ATTRIBUTE_KINDS: frozenset[str] = frozenset(
    ("method", "property", "property_method", "staticmethod", "classmethod", "attribute")
)
OwnsTensors = Literal["always", "never", "depends"]
_OWNS_TENSORS = frozenset(("always", "never", "depends"))
_EMPTY: Mapping[Any, Any] = MappingProxyType({})


class LibraryTableError(ValueError):
    """A shipped table is missing or does not have the shape this module reads."""


@dataclass(frozen=True)
class MethodVerdict:
    """Whether calling the method runs a module of the model's tree (FAB001's condition)."""

    runs: bool
    how: Literal["observed", "read"]
    observed_on: str | None  # the concrete class built and called ("observed"); None when read
    call: str  # the call made ("generate(input_ids, max_new_tokens=2, ...)"), or the call read in the source
    stored_under: str  # the class the verdict is recorded for (the method's owner, or a subclass)


@dataclass(frozen=True)
class UnresettableModule:
    """A module of a built model that owns tensors directly and has no reset_parameters (FAB002)."""

    path: str  # from the root, "" is the root itself ("model.rotary_emb")
    cls: str
    tensors: tuple[str, ...]  # the parameters, then buffers, it owns directly ("inv_freq", ...)


@dataclass(frozen=True)
class LibraryClassFacts:
    qualname: str
    library: str  # the table it was read from
    bases: tuple[str, ...]  # direct bases, in order (builtins.object left out)
    module: bool  # a torch.nn.Module subclass
    attributes: Mapping[str, AttributeKind]  # the class's own __dict__ without dunders
    runs_module: Mapping[str, MethodVerdict]  # verdicts recorded for this class
    owns_tensors: OwnsTensors | None  # over the instances built (recurse=False); None: never built
    has_reset_parameters: bool
    custom_getattr: bool  # defines __getattr__ itself (other than torch.nn.Module's)
    unresettable: tuple[UnresettableModule, ...] | None  # None: not built as the root of a model


@dataclass(frozen=True)
class ArgumentChoice:
    """A result chosen by the literal value of one argument."""

    position: int | None
    keyword: str
    values: Mapping[str, str]  # literal -> class
    attribute: str | None = None  # the key is this attribute of the argument (PeftConfig.task_type)
    tag_separator: str | None = None  # the literal is cut at its first such character (timm's pretrained tags)

    def select(self, literal: str) -> str | None:
        """The class for this literal value, or None when the table does not list it."""
        if self.tag_separator is not None:
            literal = literal.split(self.tag_separator, 1)[0]
        return self.values.get(literal)


@dataclass(frozen=True)
class ReturnSpec:
    """What a factory returns (see the `factories` note of the tables for the vocabulary)."""

    instance: str | None = None  # exactly this class
    candidates: tuple[str, ...] = ()  # one of these
    subclass_of: str | None = None  # this class or a subclass the tables may not describe
    receiver: bool = False  # an instance of the class the classmethod is called on
    unknown: bool = False
    by_config: Mapping[str, str] = field(default_factory=lambda: _EMPTY)  # config class -> model class
    by_argument: ArgumentChoice | None = None
    otherwise: ReturnSpec | None = None  # with by_argument: any other value
    tuple_items: Mapping[int, ReturnSpec] = field(default_factory=lambda: _EMPTY)  # elements of a returned tuple
    # keyword -> the result instead when it is passed with a value other than False/None;
    # "keyword=False": when it is passed as False
    keyword_overrides: Mapping[str, ReturnSpec] = field(default_factory=lambda: _EMPTY)

    def possible_classes(self) -> tuple[str, ...]:
        """Every class an instance returned directly (not in a tuple) may have, as far as the table
        lists them; subclass_of/receiver/unknown add nothing here."""
        found: dict[str, None] = {}
        if self.instance is not None:
            found[self.instance] = None
        found.update(dict.fromkeys(self.candidates))
        found.update(dict.fromkeys(self.by_config.values()))
        if self.by_argument is not None:
            found.update(dict.fromkeys(self.by_argument.values.values()))
        if self.otherwise is not None:
            found.update(dict.fromkeys(self.otherwise.possible_classes()))
        return tuple(found)


# --- public API -----------------------------------------------------------------------------------


def library_of(qualified: str) -> str | None:
    """The table library a dotted name belongs to, by its first component (nothing is loaded)."""
    first = qualified.split(".", 1)[0]
    return first if first in LIBRARIES else None


def canonical(qualified: str) -> str | None:
    """The defining qualified name of a class or factory (or of ``<class>.<attribute>``), from any
    public spelling the table knows; None when the table does not know the name."""
    table = _table_for(qualified)
    return table.canonical(qualified) if table is not None else None


def library_class(qualname: str) -> LibraryClassFacts | None:
    table = _table_for(qualname)
    if table is None:
        return None
    name = table.canonical(qualname)
    return table.class_facts(name) if name is not None else None


def mro(qualname: str) -> tuple[str, ...]:
    """The C3 linearization of a class over the table's classes, builtins.object left out. A class the
    table does not describe ends it (returned as the last element); () for an unknown class."""
    table = _table_for(qualname)
    if table is None:
        return ()
    name = table.canonical(qualname)
    return table.mro(name) if name is not None and name in table.classes else ()


def find_attribute(qualname: str, name: str) -> tuple[str, AttributeKind] | None:
    """(owner, kind) of the first class of the MRO whose own __dict__ has ``name``; None when no class
    of the known MRO has it (a class with custom_getattr may still answer it on an instance)."""
    table = _table_for(qualname)
    if table is None:
        return None
    cls = table.canonical(qualname)
    return table.find_attribute(cls, name) if cls is not None else None


def runs_module(qualname: str, name: str) -> MethodVerdict | None:
    """The verdict for ``name`` called on an instance of the class: the first verdict found walking the
    MRO from the class to the method's owner (inclusive); None when undecided or not a known attribute."""
    table = _table_for(qualname)
    if table is None:
        return None
    cls = table.canonical(qualname)
    return table.runs_module(cls, name) if cls is not None else None


def factory(qualified: str) -> ReturnSpec | None:
    """What calling ``qualified`` returns: a factory function, or ``<class>.<classmethod>`` looked up
    under the class and then under each class of its MRO."""
    table = _table_for(qualified)
    return table.factory(qualified) if table is not None else None


def version(library: str) -> str:
    """The library version the table was generated from (KeyError for a library without a table)."""
    if library not in LIBRARIES:
        raise KeyError(library)
    return _load(library).version


def torch_version(library: str) -> str:
    """The torch version the library's table was generated with."""
    if library not in LIBRARIES:
        raise KeyError(library)
    return _load(library).torch_version


# --- loading --------------------------------------------------------------------------------------

_tables: dict[str, _Table] = {}
_lock = threading.Lock()


def _table_for(qualified: str) -> _Table | None:
    library = library_of(qualified)
    return _load(library) if library is not None else None


def _load(library: str) -> _Table:
    table = _tables.get(library)
    if table is not None:
        return table
    with _lock:
        table = _tables.get(library)
        if table is None:
            table = _Table.from_raw(library, _read_raw(library))
            _tables[library] = table
    return table


def _read_raw(library: str) -> dict[str, Any]:
    path = resources.files(__name__) / "data" / f"{library}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise LibraryTableError(f"cannot read the {library} table: {error}") from error


def loaded_libraries() -> tuple[str, ...]:
    """The libraries whose table has been read in this process (for tests and diagnostics)."""
    return tuple(sorted(_tables))


# --- one table ------------------------------------------------------------------------------------


def _require(condition: bool, library: str, where: str) -> None:
    if not condition:
        raise LibraryTableError(f"the {library} table is malformed at {where}")


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


class _Table:
    def __init__(
        self,
        library: str,
        version: str,
        torch_version: str,
        classes: Mapping[str, Mapping[str, Any]],
        exports: Mapping[str, str],
        factories: Mapping[str, ReturnSpec],
    ) -> None:
        self.library = library
        self.version = version
        self.torch_version = torch_version
        self.classes = classes  # raw entries (validated); facts are built on demand
        self.exports = exports  # public dotted name -> defining name
        self.factories = factories
        self._defining = frozenset(exports.values())
        self._facts: dict[str, LibraryClassFacts] = {}
        self._mro: dict[str, tuple[str, ...]] = {}

    # -- reading and validation

    @classmethod
    def from_raw(cls, library: str, raw: Any) -> _Table:
        _require(isinstance(raw, dict), library, "the top level")
        for key in ("library", "version", "torch_version"):
            _require(isinstance(raw.get(key), str), library, key)
        _require(raw["library"] == library, library, "library")
        classes = raw.get("classes")
        _require(isinstance(classes, dict), library, "classes")
        for name, entry in classes.items():
            _validate_class(library, name, entry)
        raw_exports = raw.get("exports")
        _require(isinstance(raw_exports, dict), library, "exports")
        exports: dict[str, str] = {}
        for public_module, by_module in raw_exports.items():
            _require(isinstance(by_module, dict), library, f"exports.{public_module}")
            for defining_module, names in by_module.items():
                _require(_is_str_list(names), library, f"exports.{public_module}.{defining_module}")
                for attribute in names:
                    exports[f"{public_module}.{attribute}"] = f"{defining_module}.{attribute}"
        raw_factories = raw.get("factories")
        _require(isinstance(raw_factories, dict), library, "factories")
        factories = {
            name: _return_spec(library, f"factories.{name}", spec) for name, spec in raw_factories.items()
        }
        return cls(library, raw["version"], raw["torch_version"], classes, exports, factories)

    # -- names

    def canonical(self, qualified: str) -> str | None:
        if qualified in self.classes or qualified in self.factories or qualified in self._defining:
            return qualified
        found = self.exports.get(qualified)
        if found is not None:
            return found
        owner, _, attribute = qualified.rpartition(".")
        if owner:
            owner_name = self.exports.get(owner, owner)
            if owner_name in self.classes:
                return f"{owner_name}.{attribute}"
            # A re-export the tables do not list (`timm.models.vision_transformer.PatchEmbed`): the one
            # class of the library with that name, if there is exactly one.
            if attribute[:1].isupper():
                found = self._short_names().get(attribute)
                if found is not None and len(found) == 1:
                    return found[0]
        return None

    def _short_names(self) -> dict[str, tuple[str, ...]]:
        index = self.__dict__.get("_short_name_index")
        if index is None:
            grouped: dict[str, list[str]] = {}
            for name in sorted(set(self.classes) | self._defining):
                if name.split(".", 1)[0] == self.library:
                    grouped.setdefault(name.rsplit(".", 1)[-1], []).append(name)
            index = self.__dict__["_short_name_index"] = {key: tuple(value) for key, value in grouped.items()}
        return index

    # -- classes

    def class_facts(self, name: str) -> LibraryClassFacts | None:
        facts = self._facts.get(name)
        if facts is None:
            entry = self.classes.get(name)
            if entry is None:
                return None
            facts = _class_facts(self.library, name, entry)
            self._facts[name] = facts
        return facts

    def mro(self, name: str, _visiting: frozenset[str] = frozenset()) -> tuple[str, ...]:
        found = self._mro.get(name)
        if found is not None:
            return found
        entry = self.classes.get(name)
        if entry is None or name in _visiting:  # not described (or a cycle): the walk ends here
            return (name,)
        found = self._linearize(name, entry["bases"], _visiting | {name})
        self._mro[name] = found
        return found

    def _linearize(self, name: str, bases: list[str], visiting: frozenset[str]) -> tuple[str, ...]:
        """C3: the class, then the merge of its bases' linearizations and of its bases."""
        sequences = [list(self.mro(base, visiting)) for base in bases]
        sequences.append(list(bases))
        result = [name]
        while True:
            sequences = [sequence for sequence in sequences if sequence]
            if not sequences:
                break
            head = next(
                (
                    sequence[0]
                    for sequence in sequences
                    if not any(sequence[0] in other[1:] for other in sequences)
                ),
                None,
            )
            if head is None:  # no consistent order (Python would refuse the class): stop here
                break
            result.append(head)
            for sequence in sequences:
                if sequence[0] == head:
                    del sequence[0]
        # a class the table does not describe ends the walk
        for index, klass in enumerate(result):
            if klass not in self.classes:
                return tuple(result[: index + 1])
        return tuple(result)

    def find_attribute(self, cls: str, name: str) -> tuple[str, AttributeKind] | None:
        if cls not in self.classes:
            return None
        for klass in self.mro(cls):
            facts = self.class_facts(klass)
            if facts is None:
                return None
            kind = facts.attributes.get(name)
            if kind is not None:
                return klass, kind
        return None

    def runs_module(self, cls: str, name: str) -> MethodVerdict | None:
        if cls not in self.classes:
            return None
        for klass in self.mro(cls):
            facts = self.class_facts(klass)
            if facts is None:
                return None
            verdict = facts.runs_module.get(name)
            if verdict is not None:
                return verdict
            if name in facts.attributes:  # the owner: it has no verdict
                return None
        return None

    # -- factories

    def factory(self, qualified: str) -> ReturnSpec | None:
        name = self.canonical(qualified) or qualified
        spec = self.factories.get(name)
        if spec is not None:
            return spec
        owner, _, method = name.rpartition(".")
        if owner in self.classes:
            for klass in self.mro(owner):
                spec = self.factories.get(f"{klass}.{method}")
                if spec is not None:
                    return spec
        return None


def _validate_class(library: str, name: str, entry: Any) -> None:
    where = f"classes.{name}"
    _require(isinstance(entry, dict), library, where)
    _require(_is_str_list(entry.get("bases")), library, f"{where}.bases")
    _require(isinstance(entry.get("module"), bool), library, f"{where}.module")
    attributes = entry.get("attributes")
    _require(isinstance(attributes, dict), library, f"{where}.attributes")
    for kind, names in attributes.items():
        _require(kind in ATTRIBUTE_KINDS and _is_str_list(names), library, f"{where}.attributes.{kind}")
    for flag in ("custom_getattr", "has_reset_parameters"):
        _require(isinstance(entry.get(flag, False), bool), library, f"{where}.{flag}")
    _require(entry.get("owns_tensors") in (None, *_OWNS_TENSORS), library, f"{where}.owns_tensors")
    verdicts = entry.get("runs_module", {})
    _require(isinstance(verdicts, dict), library, f"{where}.runs_module")
    for method, verdict in verdicts.items():
        _require(
            isinstance(verdict, dict)
            and isinstance(verdict.get("runs"), bool)
            and verdict.get("how") in ("observed", "read")
            and isinstance(verdict.get("call"), str)
            and (verdict.get("observed_on") is None or isinstance(verdict.get("observed_on"), str)),
            library,
            f"{where}.runs_module.{method}",
        )
    unresettable = entry.get("unresettable", [])
    _require(
        isinstance(unresettable, list)
        and all(
            isinstance(item, dict)
            and isinstance(item.get("path"), str)
            and isinstance(item.get("class"), str)
            and _is_str_list(item.get("tensors"))
            for item in unresettable
        ),
        library,
        f"{where}.unresettable",
    )


def _class_facts(library: str, name: str, entry: Mapping[str, Any]) -> LibraryClassFacts:
    attributes: dict[str, AttributeKind] = {}
    for kind, names in entry["attributes"].items():
        for attribute in names:
            attributes[attribute] = kind
    verdicts = {
        method: MethodVerdict(
            runs=verdict["runs"],
            how=verdict["how"],
            observed_on=verdict.get("observed_on"),
            call=verdict["call"],
            stored_under=name,
        )
        for method, verdict in entry.get("runs_module", {}).items()
    }
    unresettable = entry.get("unresettable")
    return LibraryClassFacts(
        qualname=name,
        library=library,
        bases=tuple(entry["bases"]),
        module=entry["module"],
        attributes=MappingProxyType(attributes),
        runs_module=MappingProxyType(verdicts),
        owns_tensors=entry.get("owns_tensors"),
        has_reset_parameters=entry.get("has_reset_parameters", False),
        custom_getattr=entry.get("custom_getattr", False),
        unresettable=None
        if unresettable is None
        else tuple(
            UnresettableModule(path=item["path"], cls=item["class"], tensors=tuple(item["tensors"]))
            for item in unresettable
        ),
    )


_SPEC_KEYS = frozenset(
    ("instance", "candidates", "subclass_of", "receiver", "unknown", "by_config", "by_argument", "otherwise",
     "tuple", "keyword_overrides")
)


def _return_spec(library: str, where: str, raw: Any) -> ReturnSpec:
    _require(isinstance(raw, dict) and set(raw) <= _SPEC_KEYS and bool(raw), library, where)
    for key in ("instance", "subclass_of"):
        _require(raw.get(key) is None or isinstance(raw.get(key), str), library, f"{where}.{key}")
    for key in ("receiver", "unknown"):
        _require(isinstance(raw.get(key, False), bool), library, f"{where}.{key}")
    _require(_is_str_list(raw.get("candidates", [])), library, f"{where}.candidates")
    by_config = raw.get("by_config", {})
    _require(
        isinstance(by_config, dict) and all(isinstance(value, str) for value in by_config.values()),
        library,
        f"{where}.by_config",
    )
    by_argument = None
    if "by_argument" in raw:
        choice = raw["by_argument"]
        _require(
            isinstance(choice, dict)
            and (choice.get("position") is None or isinstance(choice.get("position"), int))
            and isinstance(choice.get("keyword"), str)
            and isinstance(choice.get("values"), dict)
            and all(isinstance(value, str) for value in choice["values"].values())
            and (choice.get("attribute") is None or isinstance(choice.get("attribute"), str))
            and (choice.get("tag_separator") is None or isinstance(choice.get("tag_separator"), str)),
            library,
            f"{where}.by_argument",
        )
        by_argument = ArgumentChoice(
            position=choice.get("position"),
            keyword=choice["keyword"],
            values=MappingProxyType(dict(choice["values"])),
            attribute=choice.get("attribute"),
            tag_separator=choice.get("tag_separator"),
        )
    tuple_items = raw.get("tuple", {})
    _require(isinstance(tuple_items, dict) and all(key.isdigit() for key in tuple_items), library, f"{where}.tuple")
    overrides = raw.get("keyword_overrides", {})
    _require(isinstance(overrides, dict), library, f"{where}.keyword_overrides")
    return ReturnSpec(
        instance=raw.get("instance"),
        candidates=tuple(raw.get("candidates", ())),
        subclass_of=raw.get("subclass_of"),
        receiver=raw.get("receiver", False),
        unknown=raw.get("unknown", False),
        by_config=MappingProxyType(dict(by_config)),
        by_argument=by_argument,
        otherwise=_return_spec(library, f"{where}.otherwise", raw["otherwise"]) if "otherwise" in raw else None,
        tuple_items=MappingProxyType(
            {int(key): _return_spec(library, f"{where}.tuple.{key}", value) for key, value in tuple_items.items()}
        ),
        keyword_overrides=MappingProxyType(
            {
                keyword: _return_spec(library, f"{where}.keyword_overrides.{keyword}", value)
                for keyword, value in overrides.items()
            }
        ),
    )


__all__ = [
    "ATTRIBUTE_KINDS",
    "LIBRARIES",
    "ArgumentChoice",
    "LibraryClassFacts",
    "LibraryTableError",
    "MethodVerdict",
    "ReturnSpec",
    "UnresettableModule",
    "canonical",
    "factory",
    "find_attribute",
    "library_class",
    "library_of",
    "loaded_libraries",
    "mro",
    "runs_module",
    "torch_version",
    "version",
]
