"""What every library's part of the generator shares: class facts, observations with forward hooks,
reading a method's source where no model could be built, public spellings, rendering.

Vocabulary (the `notes` of each JSON say the same to its readers):

- a class is named by its defining qualified name, ``f"{cls.__module__}.{cls.__qualname__}"``;
- an observation builds a model on the CPU, registers a forward hook on every module of its tree (the
  root included, as Lightning's ``_FabricModule`` does for a method called on a wrapped model) and calls
  the method: it *runs a module* when a hook fired;
- ownership is Lightning's test for materialization: a module owns tensors when
  ``module.parameters(recurse=False)`` or ``module.buffers(recurse=False)`` yields anything.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import itertools
import json
import sys
import textwrap
import types
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

OBJECT = "builtins.object"

NOTES: dict[str, str] = {
    "library": "the import name of the library these tables describe; version: its installed version",
    "torch_version": "the torch the models were built and observed with",
    "exports": (
        "public module -> defining module -> names: `from <public module> import <name>` gives the object "
        "defined as <defining module>.<name> (a class or a factory these tables describe). Public modules "
        "are the library's top package, the package holding the defining module and a few documented "
        "subpackages; each spelling was checked by importing it. A defining qualified name is not "
        "repeated: it is a key of classes or factories"
    ),
    "classes": (
        "defining qualified name (module + '.' + __qualname__) -> facts. Every class of the MRO of a "
        "described class is here, torch's and the standard library's too (builtins.object excepted), so "
        "a method's owner is found by walking the MRO within one table. bases: the direct bases in "
        "order (builtins.object left out). module: a torch.nn.Module subclass. attributes: kind -> "
        "names of the class's own __dict__ (dunders left out); kinds: method, property, "
        "property_method (a property that returned a bound method on a built instance: Lightning's "
        "mark_forward_method accepts it and _FabricModule guards it like a method), staticmethod, "
        "classmethod, attribute (any other value, including descriptors that give no bound method). "
        "Left out when false/null/empty: custom_getattr (the class itself defines __getattr__, other "
        "than torch.nn.Module's, so a name it lacks may still be found on an instance), "
        "has_reset_parameters (hasattr(cls, 'reset_parameters')), owns_tensors, runs_module, "
        "unresettable"
    ),
    "runs_module": (
        "method name -> verdict, stored under the class that defines the method (its owner in the "
        "MRO); a verdict stored under a subclass that does not define the method is specific to that "
        "subclass (the observations of the owner's method disagreed between subclasses). runs: while "
        "the method ran, a module of the model's tree (the root included) ran its forward, which is what "
        "makes Lightning's _FabricModule raise 'You are calling the method ... from outside the model' "
        "under a wrapping strategy (DDP, FSDP, DeepSpeed) when the method is not marked. how: "
        "'observed' (built and called, see observed_on and call) or 'read' (no model of that class "
        "was built: its source calls super() of a method that runs, self(...), or a submodule created "
        "in __init__, shown in call; a reading only ever concludes runs=true). Methods neither "
        "observed nor decided by reading are left out: unknown"
    ),
    "owns_tensors": (
        "over every instance built for these tables (recurse=False, as Lightning's "
        "_materialize_meta_tensors tests): 'always', 'never', or 'depends' (instances differ, e.g. by "
        "config); left out when no instance was built"
    ),
    "unresettable": (
        "for each model class built as the root of a model: the modules of that model (path from the "
        "root, '' is the root itself; class; tensors: the names of the parameters, then buffers, it "
        "owns directly) that own tensors directly and have no reset_parameters, in module order. "
        "Built on the meta device (fabric.init_module(empty_init=True) under FSDP, or "
        "torch.device('meta')), lightning.fabric.utilities.init._materialize_meta_tensors raises "
        "TypeError 'Materialization requires that the `X.reset_parameters` method is implemented' at "
        "the first of them; FSDP raises AttributeError on reset_parameters; ModelParallelStrategy warns "
        "'Parameter initialization incomplete' naming them and leaves their memory uninitialised. The "
        "list is for the config these tables built; other configs can differ"
    ),
    "factories": (
        "qualified callable -> what it returns. A classmethod is keyed '<class>.<method>' by the class "
        "that defines it, except where a subclass's result differs (the Auto classes); look a call "
        "C.m(...) up under C first, then under each class of C's MRO. Return specs: "
        "{'instance': Q} an instance of exactly Q; {'candidates': [Q...]} an instance of one of these; "
        "{'subclass_of': Q} an instance of Q or of a subclass these tables may not describe (a method "
        "found on Q may be overridden); {'receiver': true} an instance of the class the classmethod was "
        "called on (cls); {'unknown': true} the tables cannot tell; "
        "{'by_config': {config Q: model Q}, 'candidates': [...]} chosen by the class of the config "
        "passed as the first argument (for a config class mapped to several model classes, the first, "
        "which from_config picks unless config.architectures names another); for any other config, "
        "one of the by_config values or of the candidates (which list only the classes no config "
        "selects); {'by_argument': {position, keyword, values: {literal: Q}, attribute, "
        "tag_separator}, 'otherwise': spec} chosen by the literal value of that argument (attribute: "
        "the key is that attribute of the argument, e.g. a PeftConfig's task_type; tag_separator: the "
        "literal is cut at the first such character, e.g. timm's 'resnet18.a1_in1k'), 'otherwise' for "
        "any other value; {'tuple': {'0': spec}} a tuple whose listed elements are described; "
        "'keyword_overrides': {keyword: spec} the result instead when that keyword is passed with a "
        "value other than False/None (timm's features_only=True, transformers' trust_remote_code=True), "
        "{'keyword=False': spec} when it is passed as False (open_clip's return_transform=False)"
    ),
    "generated_by": (
        "the command that wrote this file; run it with the pinned libraries of requirements/libs.txt "
        "(make libs)"
    ),
}


def qualname(obj: Any) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def top_package(name: str) -> str:
    return name.split(".", 1)[0]


def attribute_kind(value: Any) -> str:
    if isinstance(value, staticmethod):
        return "staticmethod"
    if isinstance(value, classmethod):
        return "classmethod"
    if isinstance(value, (property, functools.cached_property)):
        return "property"
    if isinstance(value, types.FunctionType):
        return "method"
    return "attribute"


def owns_tensors(module: Any) -> bool:
    """Lightning's test (``_has_meta_device_parameters_or_buffers(module, recurse=False)``) without the
    device: any parameter or buffer held by the module itself."""
    return any(True for _ in itertools.chain(module.parameters(recurse=False), module.buffers(recurse=False)))


class LibraryTables:
    """The facts of one library, collected while its part of the generator runs."""

    def __init__(self, library: str, public_modules: Iterable[str] = ()) -> None:
        import torch

        self.library = library
        self._torch = torch
        self.public_modules = tuple(public_modules)
        self.classes: dict[str, type] = {}
        self._ownership: dict[str, set[bool]] = {}
        self._unresettable: dict[str, list[dict[str, str]]] = {}
        self._property_methods: dict[str, dict[str, bool]] = {}
        self._properties_checked: set[type] = set()
        # (owner, method) -> [(observed class, runs, call text)], in observation order
        self._observations: dict[tuple[str, str], list[tuple[str, bool, str]]] = {}
        self._to_read: dict[tuple[str, str], None] = {}
        self.factories: dict[str, dict[str, Any]] = {}
        self._exported_objects: dict[str, Any] = {}
        self.log: list[str] = []

    # --- classes ----------------------------------------------------------------------------------

    def add_class(self, cls: type) -> str:
        """Describe cls and every class of its MRO (builtins.object excepted); its qualified name."""
        for klass in cls.__mro__:
            if klass is object:
                continue
            name = qualname(klass)
            known = self.classes.get(name)
            if known is None:
                self.classes[name] = klass
            elif known is not klass:
                raise RuntimeError(f"two classes are named {name}")
        return qualname(cls)

    def owner(self, cls: type, method: str) -> type | None:
        return next((klass for klass in cls.__mro__ if method in klass.__dict__), None)

    # --- built models -----------------------------------------------------------------------------

    def record_built(self, model: Any, root: bool = True) -> None:
        """Ownership of every module of a freshly built model (before anything ran on it); with root, the
        model's unresettable modules. Classes of this library found in the tree are described."""
        unresettable = []
        for path, module in model.named_modules():
            cls = type(module)
            if top_package(cls.__module__) == self.library:
                self.add_class(cls)
            owns = owns_tensors(module)
            self._ownership.setdefault(qualname(cls), set()).add(owns)
            if owns and not hasattr(module, "reset_parameters"):
                tensors = [name for name, _ in module.named_parameters(recurse=False)]
                tensors += [name for name, _ in module.named_buffers(recurse=False)]
                unresettable.append({"path": path, "class": qualname(cls), "tensors": tensors})
            self._check_properties(module)
        if root:
            self.add_class(type(model))
            self._unresettable.setdefault(qualname(type(model)), unresettable)

    def _check_properties(self, module: Any) -> None:
        """Which properties of the module's classes return a bound method (evaluated once per class)."""
        cls = type(module)
        if cls in self._properties_checked:
            return
        self._properties_checked.add(cls)
        for klass in cls.__mro__:
            if top_package(klass.__module__) != self.library:
                continue
            for name, value in klass.__dict__.items():
                if is_dunder(name) or attribute_kind(value) != "property":
                    continue
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        result = getattr(module, name)
                except Exception:  # a property that needs state the tiny model lacks: left "property"
                    continue
                found = self._property_methods.setdefault(qualname(klass), {})
                found[name] = found.get(name, False) or inspect.ismethod(result)

    # --- observations -----------------------------------------------------------------------------

    def observe(
        self, model: Any, method: str, invoke: Callable[[Callable[..., Any]], Any], call: str, optional: bool = False
    ) -> bool | None:
        """Call ``invoke(model.<method>)`` with a forward hook on every module of the model; whether one fired.
        The verdict is recorded under the class that defines the method. A method that raises fails the
        generation, unless optional (then nothing is recorded: None; nor for a method the model lacks)."""
        cls = type(model)
        owner = self.owner(cls, method)
        if owner is None:
            if optional:
                return None
            raise RuntimeError(f"{qualname(cls)} has no attribute {method}")
        self.add_class(cls)
        fired = False

        def hook(*_: Any, **__: Any) -> None:
            nonlocal fired
            fired = True

        handles = [module.register_forward_hook(hook) for module in model.modules()]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                invoke(getattr(model, method))
        except Exception as error:
            if optional:
                self.log.append(f"{qualname(cls)}.{call} raised {type(error).__name__}: not recorded")
                return None
            raise RuntimeError(f"observing {qualname(cls)}.{call} failed: {type(error).__name__}: {error}") from error
        finally:
            for handle in handles:
                handle.remove()
        self._observations.setdefault((qualname(owner), method), []).append((qualname(cls), fired, call))
        return fired

    def read_later(self, cls: type, methods: Iterable[str]) -> None:
        """Decide these methods of cls by reading their source where no observation decides them."""
        self.add_class(cls)
        for method in methods:
            owner = self.owner(cls, method)
            if owner is not None and top_package(owner.__module__) == self.library:
                self._to_read[(qualname(owner), method)] = None

    # --- factories and exports ----------------------------------------------------------------------

    def add_factory(self, obj: Any, spec: dict[str, Any], key: str | None = None) -> None:
        """Record what calling obj (a function, or a classmethod under ``key``) returns."""
        name = key or qualname(obj)
        if name in self.factories and self.factories[name] != spec:
            raise RuntimeError(f"two return specs for {name}")
        self.factories[name] = spec
        if key is None:
            self.export(obj)

    def export(self, obj: Any) -> None:
        """Look for obj's public spellings (classes of this library are looked up anyway)."""
        self._exported_objects[qualname(obj)] = obj

    def _spellings(self, obj: Any, defining_modules: Iterable[str] = ()) -> list[str]:
        """The public modules that give obj under its own name: the library's top package, the package
        that holds obj's defining module, the library's listed public modules, and the modules that
        define the described classes (which import what they use: `from timm.models.vision_transformer
        import PatchEmbed` is how models reach a layer, and the analysis must know it without the library)."""
        name = getattr(obj, "__name__", None)
        if name is None or name != obj.__qualname__:  # nested or renamed: only its defining name
            return []
        parent = obj.__module__.rpartition(".")[0]
        modules = [self.library, parent, *self.public_modules, *defining_modules]
        spellings = []
        for module_name in dict.fromkeys(module for module in modules if module and module != obj.__module__):
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue
            try:
                found = getattr(module, name, None)
            except Exception:  # a lazy module that fails to import one of its names
                found = None
            if found is obj:
                spellings.append(module_name)
        return spellings

    # --- output -------------------------------------------------------------------------------------

    def _verdicts(self) -> dict[str, dict[str, dict[str, Any]]]:
        """class -> method -> verdict, from the observations, then from reading."""
        verdicts: dict[str, dict[str, dict[str, Any]]] = {}
        for (owner, method), seen in self._observations.items():
            outcomes = {runs for _, runs, _ in seen}
            if len(outcomes) == 1:
                observed_on, runs, call = seen[0]
                verdicts.setdefault(owner, {})[method] = {
                    "runs": runs, "how": "observed", "observed_on": observed_on, "call": call,
                }
                continue
            self.log.append(f"{owner}.{method}: observations disagree; recorded per observed class")
            for observed_on, runs, call in seen:
                verdicts.setdefault(observed_on, {}).setdefault(
                    method, {"runs": runs, "how": "observed", "observed_on": observed_on, "call": call}
                )
        # a reading may rest on another (super().generate of a class decided by reading): until nothing changes
        pending = [(owner, method) for owner, method in sorted(self._to_read) if method not in verdicts.get(owner, {})]
        while pending:
            undecided = []
            for owner, method in pending:
                found = read_runs(self.classes[owner], method, lambda cls, name: _verdict_at(verdicts, cls, name))
                if found is None:
                    undecided.append((owner, method))
                    continue
                verdicts.setdefault(owner, {})[method] = {
                    "runs": True, "how": "read", "observed_on": None, "call": found,
                }
            if len(undecided) == len(pending):
                break
            pending = undecided
        for owner, method in pending:
            self.log.append(f"{owner}.{method}: not observed and not decided by reading")
        return verdicts

    def build(self) -> dict[str, Any]:
        verdicts = self._verdicts()
        classes: dict[str, Any] = {}
        for name, cls in self.classes.items():
            property_methods = self._property_methods.get(name, {})
            attributes: dict[str, list[str]] = {}
            for attribute, value in cls.__dict__.items():
                if is_dunder(attribute):
                    continue
                kind = attribute_kind(value)
                if kind == "property" and property_methods.get(attribute):
                    kind = "property_method"
                attributes.setdefault(kind, []).append(attribute)
            entry: dict[str, Any] = {
                "bases": [qualname(base) for base in cls.__bases__ if base is not object],
                "module": issubclass(cls, self._torch.nn.Module),
                "attributes": {kind: sorted(names) for kind, names in attributes.items()},
            }
            # fields left out when they have their default (false, null, {})
            if "__getattr__" in cls.__dict__ and cls is not self._torch.nn.Module:
                entry["custom_getattr"] = True
            if hasattr(cls, "reset_parameters"):
                entry["has_reset_parameters"] = True
            ownership = self._ownership.get(name)
            if ownership is not None:
                owns = "always" if ownership == {True} else "never" if ownership == {False} else "depends"
                entry["owns_tensors"] = owns
            if verdicts.get(name):
                entry["runs_module"] = verdicts[name]
            if name in self._unresettable:
                entry["unresettable"] = self._unresettable[name]
            classes[name] = entry
        missing = {verdict_class for verdict_class in verdicts if verdict_class not in classes}
        if missing:
            raise RuntimeError(f"verdicts for classes not described: {sorted(missing)}")
        for spec in self.factories.values():
            for referenced in _referenced_classes(spec):
                if referenced not in classes:
                    raise RuntimeError(f"a factory returns {referenced}, which is not described")

        # public module -> defining module -> names it gives under their own name
        exports: dict[str, dict[str, list[str]]] = {}
        objects = {name: cls for name, cls in self.classes.items() if top_package(cls.__module__) == self.library}
        objects.update(self._exported_objects)
        defining_modules = sorted({obj.__module__ for obj in objects.values()
                                   if top_package(obj.__module__) == self.library and inspect.isclass(obj)})
        for defining, obj in sorted(objects.items()):
            for public_module in self._spellings(obj, defining_modules if inspect.isclass(obj) else ()):
                exports.setdefault(public_module, {}).setdefault(obj.__module__, []).append(obj.__name__)
        return {"classes": classes, "exports": exports, "factories": self.factories}


def _verdict_at(verdicts: Mapping[str, Mapping[str, Mapping[str, Any]]], cls: type, method: str) -> bool | None:
    """The recorded verdict for cls.method at its owner, for reading super() calls."""
    for klass in cls.__mro__:
        if method in klass.__dict__:
            verdict = verdicts.get(qualname(klass), {}).get(method)
            return None if verdict is None else verdict["runs"]
    return None


def _referenced_classes(spec: Mapping[str, Any]) -> Iterable[str]:
    for single in ("instance", "subclass_of"):
        if single in spec:
            yield spec[single]
    yield from spec.get("candidates", ())
    yield from spec.get("by_config", {}).values()
    if "by_argument" in spec:
        yield from spec["by_argument"]["values"].values()
    for nested in (spec.get("otherwise"), *spec.get("tuple", {}).values(), *spec.get("keyword_overrides", {}).values()):
        if nested:
            yield from _referenced_classes(nested)


# --- reading a method's source ----------------------------------------------------------------------


def _function_node(function: Any) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    function = inspect.unwrap(function)
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _resolve(expression: ast.expr, namespace: Mapping[str, Any]) -> Any:
    """The object a Name/Attribute chain names in a module's globals, else None."""
    if isinstance(expression, ast.Name):
        return namespace.get(expression.id)
    if isinstance(expression, ast.Attribute):
        base = _resolve(expression.value, namespace)
        return getattr(base, expression.attr, None) if base is not None else None
    return None


def _creates_module(value: ast.expr, namespace: Mapping[str, Any]) -> bool:
    """`Cls(...)` with Cls an nn.Module subclass, or `Cls.from_config(...)` / `Cls.from_pretrained(...)`."""
    import torch

    if not isinstance(value, ast.Call):
        return False
    callee = value.func
    if isinstance(callee, ast.Attribute) and callee.attr in ("from_config", "_from_config", "from_pretrained"):
        owner = _resolve(callee.value, namespace)
        return inspect.isclass(owner) and (
            issubclass(owner, torch.nn.Module) or owner.__name__.startswith("AutoModel")
        )
    target = _resolve(callee, namespace)
    return inspect.isclass(target) and issubclass(target, torch.nn.Module)


def _submodule_attributes(cls: type) -> set[str]:
    """Names ``self.X`` that an ``__init__`` of cls's MRO assigns a freshly created module to."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if not isinstance(init, types.FunctionType):
            continue
        node = _function_node(init)
        if node is None:
            continue
        namespace = vars(sys.modules[klass.__module__])
        for statement in ast.walk(node):
            if not isinstance(statement, ast.Assign) or not _creates_module(statement.value, namespace):
                continue
            for target in statement.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    names.add(target.attr)
    return names


def read_runs(
    cls: type, method: str, verdict_of: Callable[[type, str], bool | None], _visiting: frozenset[str] = frozenset()
) -> str | None:
    """Decide from the source of ``cls.<method>`` (defined by cls) that it runs a module: the call that
    shows it (e.g. ``super().generate(...)``), or None when reading cannot tell. Calls counted:
    ``self(...)``, ``self.forward(...)``, a local name bound to ``self.__call__``/``self.forward``,
    ``super().<method>(...)`` when the next owner's verdict is
    that it runs, ``self.<child>(...)`` / ``self.<child>.forward|generate(...)`` on a child that an
    ``__init__`` of the MRO creates as a module, and ``self.<other>(...)`` of a method of the MRO that
    runs (by its verdict, else by reading it the same way)."""
    node = _function_node(cls.__dict__[method])
    if node is None:
        return None
    visiting = _visiting | {method}
    submodules: set[str] | None = None
    # local names bound to the model's own call: `model_forward = compiled if ... else self.__call__`
    self_calls = {
        target.id
        for statement in ast.walk(node)
        if isinstance(statement, ast.Assign)
        and any(
            isinstance(part, ast.Attribute)
            and isinstance(part.value, ast.Name)
            and part.value.id == "self"
            and part.attr in ("__call__", "forward")
            for part in ast.walk(statement.value)
        )
        for target in statement.targets
        if isinstance(target, ast.Name)
    }
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        callee = call.func
        if isinstance(callee, ast.Name) and callee.id == "self":
            return "self(...)"
        if isinstance(callee, ast.Name) and callee.id in self_calls:
            return f"{callee.id}(...), bound to self.__call__/self.forward"
        if not isinstance(callee, ast.Attribute):
            continue
        receiver = callee.value
        # super().<method>(...) of a method whose verdict at the next owner is that it runs
        if (
            callee.attr == method
            and isinstance(receiver, ast.Call)
            and isinstance(receiver.func, ast.Name)
            and receiver.func.id == "super"
        ):
            following = next((k for k in cls.__mro__[1:] if method in k.__dict__), None)
            if following is not None and verdict_of(following, method):
                return f"super().{method}(...)"
            continue
        if isinstance(receiver, ast.Name) and receiver.id == "self" and callee.attr == "forward":
            return "self.forward(...)"
        # self.<child>(...) / self.<child>.forward(...) / self.<child>.generate(...) on a created child
        child = None
        if isinstance(receiver, ast.Name) and receiver.id == "self":
            child = callee.attr
        elif (
            callee.attr in ("forward", "generate")
            and isinstance(receiver, ast.Attribute)
            and isinstance(receiver.value, ast.Name)
            and receiver.value.id == "self"
        ):
            child = receiver.attr
        if child is None:
            continue
        if submodules is None:
            submodules = _submodule_attributes(cls)
        if child in submodules:
            return ast.unparse(callee) + "(...)"
        # self.<other method>(...): decided by its verdict, else by reading it
        if callee.value is receiver and isinstance(receiver, ast.Name) and child not in visiting:
            owner = next((k for k in cls.__mro__ if child in k.__dict__), None)
            if owner is None or not isinstance(owner.__dict__[child], types.FunctionType):
                continue
            verdict = verdict_of(owner, child)
            if verdict is None and top_package(owner.__module__) == top_package(cls.__module__):
                verdict = read_runs(owner, child, verdict_of, visiting) is not None
            if verdict:
                return f"self.{child}(...)"
    return None


# --- rendering ----------------------------------------------------------------------------------------


def render(tables: Mapping[str, Any]) -> str:
    """Sorted keys; one line per entry of each top-level mapping (so a change shows as a line of a
    diff), each entry compact."""
    lines = ["{"]
    items = sorted(tables.items())
    for index, (key, value) in enumerate(items):
        comma = "," if index < len(items) - 1 else ""
        if isinstance(value, dict) and value:
            lines.append(f"{json.dumps(key)}: {{")
            entries = sorted(value.items())
            for entry_index, (entry_key, entry_value) in enumerate(entries):
                entry_comma = "," if entry_index < len(entries) - 1 else ""
                text = json.dumps(entry_value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                lines.append(f"{json.dumps(entry_key, ensure_ascii=False)}: {text}{entry_comma}")
            lines.append(f"}}{comma}")
        else:
            text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            lines.append(f"{json.dumps(key)}: {text}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"
