"""What the analysis asks about the models of transformers, peft, timm, open_clip, torchvision,
diffusers and sentence-transformers, answered from the library tables (this package's loader).

The value flow (flow.py) builds `Lib` values for their classes and factories, exactly as for torch:
a name the tables know never costs a jedi question, and the answer is the same whether or not the
library is installed. A factory that may return one of several classes (`AutoModelForCausalLM.
from_pretrained("<a name from a config>")`, `timm.create_model(name)`) returns a *family*: one
value standing for all its candidates, whose facts are those every candidate shares (a method runs
a module only when it does so on every candidate), so a family never says more than each class.

    result_classes("transformers.AutoModelForCausalLM.from_config", arguments)  # ["...GPT2LMHeadModel"]
    method_kind(name, "generate")          # "method"
    method_verdict(name, "generate")       # LibraryVerdict(runs=True, reason="...")
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Callable

from fabric_lsp.analysis import libraries as tables
from fabric_lsp.analysis.libraries import ReturnSpec, UnresettableModule

# A family's name: "<library>.{one of N: <short hash>}" (library_of() still finds the library; no
# table spells a class this way).
_FAMILY_MARK = ".{one of "
_families: dict[str, "_Family"] = {}

# Distribution names whose folders (`<name>-<version>.dist-info`) tell the installed version.
_DISTRIBUTIONS = {
    "transformers": ("transformers",),
    "peft": ("peft",),
    "timm": ("timm",),
    "open_clip": ("open_clip_torch",),
    "torchvision": ("torchvision",),
    "diffusers": ("diffusers",),
    "sentence_transformers": ("sentence_transformers",),
}


@dataclass(frozen=True)
class _Family:
    library: str
    candidates: tuple[str, ...]
    display: str  # how messages name it ("AutoModelForCausalLM")
    open: bool  # classes the tables do not list may be returned too (subclass_of)


@dataclass(frozen=True)
class LibraryVerdict:
    """FAB001: does calling the method run a module of the model's tree? `runs` None: unknown."""

    runs: bool | None
    reason: str


@dataclass(frozen=True)
class CallArguments:
    """What the analysis knows of a call's arguments, asked by position and keyword."""

    literal: Callable[[int | None, str], str | None]  # the one string literal it holds, else None
    class_of: Callable[[int | None, str], str | None]  # the library class of the one instance it holds
    # a keyword argument: "absent", "false" (False or None), "set" (any other value), None: unknown
    keyword: Callable[[str], str | None]
    # the one string literal an attribute of the argument was built with (`task_type="CAUSAL_LM"`)
    attribute_literal: Callable[[int | None, str, str], str | None] = lambda position, keyword, attribute: None


NO_ARGUMENTS = CallArguments(lambda position, keyword: None, lambda position, keyword: None, lambda keyword: "absent")


def is_library_name(qualified: str | None) -> bool:
    """A dotted name of one of the libraries with tables (nothing is loaded)."""
    return bool(qualified) and tables.library_of(qualified) is not None


def known(qualified: str) -> str | None:
    """The defining name of a class, factory or class attribute the tables describe, or a family."""
    if _FAMILY_MARK in qualified:
        return qualified if qualified in _families else None
    return tables.canonical(qualified)


def is_class(qualified: str) -> bool:
    return qualified in _families or tables.library_class(qualified) is not None


def display_name(qualified: str) -> str:
    family = _families.get(qualified)
    if family is not None:
        return family.display
    return qualified.rsplit(".", 1)[-1]


def library(qualified: str) -> str | None:
    return tables.library_of(qualified)


def candidates(qualified: str) -> tuple[str, ...]:
    """The classes a value of this class or family may be an instance of."""
    family = _families.get(qualified)
    if family is not None:
        return family.candidates
    name = tables.canonical(qualified)
    return (name,) if name is not None and tables.library_class(name) is not None else ()


# -- what calls return -------------------------------------------------------------------------------------
def result_classes(qualified: str, arguments: CallArguments = NO_ARGUMENTS) -> list[str] | dict[int, list[str]] | None:
    """What calling `qualified` (a class or a factory) returns: the classes (or a family) of the
    instance, {index: classes} for a tuple, or None when the tables cannot tell."""
    name = tables.canonical(qualified)
    if name is None:
        return None
    facts = tables.library_class(name)
    if facts is not None:
        return [name]  # the constructor
    spec = tables.factory(name)
    if spec is None:
        # A class the tables only name (a config class a factory selects by): its instance.
        return [name] if name.rsplit(".", 1)[-1][:1].isupper() and not is_class(name.rpartition(".")[0]) else None
    owner = name.rpartition(".")[0]
    return _resolve(spec, arguments, owner, name)


def _resolve(spec: ReturnSpec, arguments: CallArguments, owner: str, factory: str):
    for keyword, override in sorted(spec.keyword_overrides.items()):
        wanted = "set"
        if keyword.endswith("=False"):  # the result when it is passed as False
            keyword, wanted = keyword[: -len("=False")], "false"
        given = arguments.keyword(keyword)
        if given is None and keyword == "trust_remote_code":
            # A value from a config: taken as not set. Remote code for an Auto class is a model of the
            # same kind (a PreTrainedModel with GenerationMixin for causal LMs); a literal True stays unknown.
            continue
        if given is None:
            return None  # it may be passed: the tables cannot tell which result
        if given == wanted:
            return _resolve(override, arguments, owner, factory)
    if spec.tuple_items:
        found = {}
        for index, item in spec.tuple_items.items():
            classes = _resolve(item, arguments, owner, factory)
            if isinstance(classes, list):
                found[index] = classes
        return found or None
    if spec.unknown:
        return None
    if spec.receiver:
        return [owner] if tables.library_class(owner) is not None else None
    if spec.instance is not None:
        return [spec.instance]
    if spec.by_argument is not None:
        choice = spec.by_argument
        if choice.attribute:
            literal = arguments.attribute_literal(choice.position, choice.keyword, choice.attribute)
        else:
            literal = arguments.literal(choice.position, choice.keyword)
        if literal is not None:
            selected = choice.select(literal)
            if selected is not None:
                return [selected]
            return _resolve(spec.otherwise, arguments, owner, factory) if spec.otherwise is not None else None
        # A value the analysis cannot see: any of the listed classes, or what any other value gives.
        every = list(dict.fromkeys(choice.values.values()))
        if spec.otherwise is not None:
            rest = _resolve(spec.otherwise, arguments, owner, factory)
            if not isinstance(rest, list):
                return None
            for name in rest:
                every.extend(candidates(name) if name in _families else [name])
                if name in _families and _families[name].open:
                    return [_family(factory, tuple(dict.fromkeys(every)), open=True)]
        every = tuple(dict.fromkeys(every))
        return [every[0]] if len(every) == 1 else [_family(factory, every, open=False)]
    if spec.by_config:
        config = arguments.class_of(0, "config")
        if config is not None:
            config = tables.canonical(config) or config
            if config in spec.by_config:
                return [spec.by_config[config]]
        every = tuple(dict.fromkeys([*spec.by_config.values(), *spec.candidates]))
        return [_family(factory, every, open=False)]
    if spec.candidates:
        if len(spec.candidates) == 1:
            return [spec.candidates[0]]
        return [_family(factory, spec.candidates, open=False)]
    if spec.subclass_of is not None:
        return [_family(factory, (spec.subclass_of,), open=True)]
    return None


def _family(factory: str, classes: tuple[str, ...], open: bool) -> str:
    library_name = tables.library_of(factory) or "library"
    digest = hashlib.sha1(("\0".join(classes) + ("+" if open else "")).encode()).hexdigest()[:12]
    name = f"{library_name}{_FAMILY_MARK}{len(classes)}: {digest}}}"
    if name not in _families:
        owner, _, method = factory.rpartition(".")
        display = owner.rsplit(".", 1)[-1] if method[:1].islower() and owner and tables.library_class(owner) \
            else factory.rsplit(".", 1)[-1] + "(...)"
        _families[name] = _Family(library_name, classes, display, open)
    return name


# -- classes -------------------------------------------------------------------------------------------------
def is_module(qualified: str) -> bool | None:
    classes = candidates(qualified)
    if not classes:
        return None
    verdicts = {bool(tables.library_class(cls) and tables.library_class(cls).module) for cls in classes}
    return verdicts.pop() if len(verdicts) == 1 else None


def method_kind(qualified: str, name: str) -> str | None:
    """"method", "property", "property_method", "staticmethod", "classmethod", "attribute", or
    "missing" (no class of the known MRO has it); None when the candidates disagree or an instance
    may answer it through `__getattr__`."""
    family = _families.get(qualified)
    kinds = set()
    for cls in candidates(qualified):
        found = tables.find_attribute(cls, name)
        if found is None:
            facts = tables.library_class(cls)
            if facts is None or any((tables.library_class(k) or facts).custom_getattr for k in tables.mro(cls)):
                return None
            kinds.add("missing")
        else:
            kinds.add(found[1])
    if len(kinds) != 1 or (family is not None and family.open and kinds == {"missing"}):
        return None
    return kinds.pop()


def lacks(qualified: str, name: str) -> bool:
    """No class the value may be (for an open family: its base, as the tables describe it) has `name`:
    using it fails with AttributeError, whatever else."""
    classes = candidates(qualified)
    return bool(classes) and all(tables.find_attribute(cls, name) is None and not any(
        (tables.library_class(k) or tables.library_class(cls)).custom_getattr for k in tables.mro(cls) if tables.library_class(k))
        for cls in classes)


def defines(qualified: str, name: str) -> bool:
    """Does the class (or a base the tables describe) bind `name`: the MRO search stops there."""
    return any(tables.find_attribute(cls, name) is not None for cls in candidates(qualified))


def method_verdict(qualified: str, name: str) -> LibraryVerdict:
    """Whether `name` runs a module of the model's tree, from the tables' observations; unknown when
    any candidate is undecided (a family is reported only when every candidate raises)."""
    classes = candidates(qualified)
    if not classes:
        return LibraryVerdict(None, f"`{display_name(qualified)}` is not described by the library tables")
    family = _families.get(qualified)
    reasons = []
    runs = set()
    for cls in classes:
        verdict = tables.runs_module(cls, name)
        if verdict is None:
            return LibraryVerdict(None, f"what `{display_name(cls)}.{name}` runs is not in the library tables")
        runs.add(verdict.runs)
        owner = tables.find_attribute(cls, name)
        where = (owner[0] if owner else verdict.stored_under).rsplit(".", 1)[-1]
        built = (verdict.observed_on or cls).rsplit(".", 1)[-1]
        if not verdict.runs:
            reasons.append(f"`{where}.{name}` runs no module (observed: `{verdict.call}` on a built `{built}`")
        elif verdict.how == "observed":
            reasons.append(f"`{where}.{name}` runs the model's forward (observed: `{verdict.call}` on a built `{built}`")
        else:
            reasons.append(f"`{where}.{name}` runs a module (its source calls `{verdict.call}`")
    if len(runs) != 1:
        return LibraryVerdict(None, f"`{name}` runs a module on some of the classes `{display_name(qualified)}` "
                                    "may be, not on others")
    verdict_runs = runs.pop()
    if family is not None and family.open and verdict_runs:
        return LibraryVerdict(None, f"`{display_name(qualified)}` may be a class the library tables do not describe")
    table = tables.library_of(qualified)
    suffix = f"; {table} {tables.version(table)} tables)" if table else ")"
    if family is not None:
        return LibraryVerdict(verdict_runs, f"{reasons[0]}; likewise on each of the {len(classes)} classes "
                                            f"`{family.display}` may return{suffix}")
    return LibraryVerdict(verdict_runs, reasons[0] + suffix)


def has_reset_parameters(qualified: str) -> bool | None:
    classes = candidates(qualified)
    verdicts = {bool(tables.library_class(cls).has_reset_parameters) for cls in classes if tables.library_class(cls)}
    return verdicts.pop() if len(verdicts) == 1 and len(classes) == 1 else None


def unresettable(qualified: str) -> tuple[UnresettableModule, ...] | None:
    """FAB002: the modules of a model of this class that own tensors and lack reset_parameters, as the
    tables built it; None when the tables did not build it as a model (or for a family)."""
    if qualified in _families:
        return None
    facts = tables.library_class(qualified)
    return None if facts is None else facts.unresettable


def owns_tensors(qualified: str) -> str | None:
    facts = tables.library_class(qualified)
    return None if facts is None else facts.owns_tensors


# -- version skew ------------------------------------------------------------------------------------------
def installed_version(library_name: str, library_path: tuple[str, ...] | None) -> str | None:
    """The version of the library installed on the analysis interpreter's path (from its
    `.dist-info` folder's name; nothing is imported), or None."""
    if not library_path:
        return None
    prefixes = tuple(f"{name.replace('-', '_').lower()}-" for name in _DISTRIBUTIONS.get(library_name, ()))
    for folder in library_path:
        if not os.path.isdir(os.path.join(folder, library_name)):
            continue
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for entry in sorted(names):
            lowered = entry.lower()
            if lowered.endswith(".dist-info") and lowered.startswith(prefixes):
                return entry[: -len(".dist-info")].split("-", 1)[1]
        return None
    return None


def table_version(library_name: str) -> str:
    return tables.version(library_name)
