"""Python classes: MROs, attribute lookup on instances, classes and `super()`, construction,
dataclass fields.

A mixin of `flow.Solver`: the interpreter (flow.py) calls these methods; they read and write the
solver's tables through it."""

from __future__ import annotations

import ast
from typing import Iterable

from fabric_lsp.analysis import ir
from fabric_lsp.analysis.flow_state import (
    _Call,
    _chain,
    _Frame,
    _sort_key,
    ANY_KEY,
    class_key,
    MAX_MRO,
    MAX_PARTIAL_DEPTH,
)
from fabric_lsp.analysis.imports import FABRIC_CLASS_NAMES, normalize_torch_name
from fabric_lsp.analysis.libraries import models as library_models
from fabric_lsp.analysis.semantics.fabric import _FABRIC_API
from fabric_lsp.analysis.semantics.torch import _OUTPUT_DETACHING, self_freeze
from fabric_lsp.analysis.libraries.torch_facts import library_module_facts, nn_module_attributes
from fabric_lsp.analysis.values import (
    Choice,
    ConfigNode,
    Bound,
    Class,
    const,
    Container,
    FabricValue,
    Function,
    Instance,
    JUST_UNKNOWN,
    Lib,
    Module,
    NOTHING,
    Output,
    Special,
    Super,
    Tuple,
    UNKNOWN,
    Wrapped,
)


class PythonClasses:
    """Python classes: MROs, attribute lookup on instances, classes and `super()`, construction,
    dataclass fields."""

    def _self_values(self, class_scope: ir.Scope) -> frozenset:
        """`self` in a method of a class: instances of it and of its subclasses (Fabric subclasses:
        the Fabric objects made from it, which callers pass as receivers)."""
        key = class_key(class_scope)
        if self.is_fabric_class(key):
            if self._ask("is_entry", class_scope):
                return frozenset({FabricValue(None, None, key, f"a `{key.qualname}` made elsewhere")})
            return NOTHING
        return frozenset(Instance(sub) for sub in self._subclasses(key))

    def _subclasses(self, key: Class) -> list[Class]:
        """The program's classes whose MRO holds `key` (itself first, then in program order)."""
        members = self.read(("subclasses", key))
        return [key] + sorted((c for c in members if c != key), key=self._class_order.__getitem__)

    def _hierarchy_changed(self, changed: Class) -> None:
        """Keep ("mro", X) and ("subclasses", A) in step with a class statement's new bases: the
        MROs of the class and of its subclasses are computed again here, once per change, and only
        the scopes that read an entry that changed run again. Computed by each reader instead, a
        method's `self` (instances of every subclass) read every class's bases, so each of a test
        suite's hundreds of local class statements re-ran every method of the program, and each
        attribute lookup re-read the bases along its MRO. Not logged: a replayed class statement
        derives them again from its bases write."""
        with self._outside_runs():
            affected = [changed, *sorted(self._entry(("subclasses", changed)) or (), key=self._class_order.__getitem__)]
            for cls in dict.fromkeys(affected):
                mro = self._compute_mro(cls)
                key = ("mro", cls)
                if self._entry(key) != mro:
                    self._replace(key, mro)  # a tuple (the order matters), never merged
                for ancestor in mro:
                    if not isinstance(ancestor, Class):
                        continue
                    key = ("subclasses", ancestor)
                    old = self._entry(key) or NOTHING
                    if cls not in old:
                        self._replace(key, old | {cls})

    # -- classes -------------------------------------------------------------------------------------
    def mro(self, cls) -> tuple:
        """Depth-first, left to right, without repeats (C3 only differs on diamonds). A program
        class's MRO is one table entry (see _hierarchy_changed); a library class's is static."""
        if not isinstance(cls, Class):
            return (cls,)
        if cls.external:
            known = self._external_mros.get(cls)
            if known is None:
                with self._outside_runs():
                    known = self._external_mros[cls] = self._compute_mro(cls)
            return known
        return self.read(("mro", cls)) or (cls,)

    def _compute_mro(self, cls: Class) -> tuple:
        order: list = []
        seen: set = set()
        pending = [cls]
        while pending and len(order) < MAX_MRO:
            item = pending.pop(0)
            if item in seen:
                continue
            seen.add(item)
            order.append(item)
            if isinstance(item, Class):
                bases = self._bases(item)
                pending[0:0] = [b for b in bases if b not in seen]
        return tuple(order)

    def direct_bases(self, cls: Class) -> list:
        """The bases of a class statement as classes (after the solve)."""
        with self._outside_runs():
            return self._bases(cls)

    def _bases(self, cls: Class) -> list:
        if cls.external:
            found = []
            for values in self._ask("external_bases", cls):
                found.extend(sorted((v for v in values if isinstance(v, (Class, Lib))), key=_sort_key))
            return found
        entry = self.read(("bases", cls))
        found = []
        for value in sorted(entry, key=_sort_key):
            if isinstance(value, Tuple):
                for element in value.elements:
                    found.extend(sorted((v for v in element if isinstance(v, (Class, Lib))), key=_sort_key))
        return found

    def is_fabric_class(self, cls) -> bool:
        return any(isinstance(ref, Lib) and ref.qualified in FABRIC_CLASS_NAMES for ref in self.mro(cls))

    def lookup_class_attribute(self, cls: Class, name: str) -> tuple[Class | Lib | None, frozenset]:
        """(the class in the MRO that binds `name` in its body, the values bound); (None, {}) if none.
        Which class binds the name is read from the class statements, so it never changes as values grow."""
        mro = self.mro(cls)
        # Memoised per class and version of its MRO (the entry is a new tuple whenever a base
        # changes): the answer is static for a given MRO, and asking hashes the whole MRO each time.
        key = (cls, name)
        known = self._class_bindings.get(key)
        if known is not None and (known[0] is mro or known[0] == mro):
            answer = known[1]
            self._asked("class_binding", (mro, name), answer)
        else:
            answer = self._ask("class_binding", mro, name)
            self._class_bindings[key] = (mro, answer)
        owner, values = answer
        if isinstance(owner, Class) and not owner.external:
            return owner, self.read(("classattr", owner, name))
        return owner, values

    def _mro_complete(self, cls: Class) -> bool:
        """Are all bases along the MRO known (written by their class statements, each resolved)?"""
        for ref in self.mro(cls):
            if isinstance(ref, Class) and not ref.external:
                entry = self.read(("bases", ref))
                if self._ask("class_has_bases", ref):
                    if not entry or any(not element for value in entry if isinstance(value, Tuple) for element in value.elements):
                        return False
        return True

    # -- attributes ------------------------------------------------------------------------------------
    def attribute(self, objects: frozenset, name: str, node: ast.AST | None, frame: _Frame | None) -> frozenset:
        if len(objects) == 1:  # the common case: the lookup's own set (a memoised one is the same object each time)
            for obj in objects:
                found = self.attribute_of(obj, name, frame)
                return found if type(found) is frozenset else frozenset(found)
        found = set()
        for obj in objects:
            found.update(self.attribute_of(obj, name, frame))
        return frozenset(found)

    def attribute_of(self, obj, name: str, frame: _Frame | None) -> frozenset:
        if isinstance(obj, Lib):
            qualified = obj.qualified + "." + name
            if library_models.is_library_name(qualified) and library_models.known(qualified) is None \
                    and not library_models.is_class(obj.qualified):
                found = self._ask("library_fallback", qualified)  # a name the library tables do not know
                if found:
                    return found
            return frozenset({Lib(qualified)})
        if isinstance(obj, Module):
            if obj.external:
                return self._ask("external_attribute", obj, name) or JUST_UNKNOWN
            found = self.read(("global", obj.path, name))
            sub = self._ask("submodule", obj, name)
            if sub is not None:
                found = found | {sub}
            if not found and not self._ask("module_binds", obj.path, name):
                return JUST_UNKNOWN
            return found
        if isinstance(obj, Instance):
            if isinstance(obj.cls, Lib):
                return self._library_instance_attribute(obj, name)
            return self._memoised(self._attributes, (obj, name), self._instance_attribute, obj, name)
        if isinstance(obj, Class):
            return self._memoised(self._attributes, (obj, name), self._class_attribute, obj, name)
        if isinstance(obj, Wrapped):
            return self._wrapped_attribute(obj, name)
        if isinstance(obj, FabricValue):
            return self._fabric_attribute(obj, name)
        if isinstance(obj, Container):
            return frozenset({Special("container_method", obj, name)})
        if isinstance(obj, Super):
            return self._super_attribute(obj, name)
        if isinstance(obj, Function) and not obj.external and name == "__get__":
            return frozenset({Special("function_get", obj)})  # binds it: _bound_at_run_time
        if isinstance(obj, Special):
            found = self._run_choice_attribute(obj, name)
            if found is not None:
                return found
        if isinstance(obj, Choice):
            return self.choice_attribute(obj, name)
        if isinstance(obj, ConfigNode):
            return self.config_attribute(obj, name)
        if isinstance(obj, Output):
            if name == "backward":
                return frozenset({Special("output_backward", obj), UNKNOWN})
            if name in _OUTPUT_DETACHING:
                return JUST_UNKNOWN
            return frozenset({obj, UNKNOWN})  # `out.logits`, `out.sum` (called: see call_value)
        return JUST_UNKNOWN

    def _bind_class_value(self, value, owner_cls, receiver) -> Iterable:
        """A value found in a class body, seen through an instance (receiver) or the class."""
        if isinstance(value, Special) and value.kind == "dataclass_field":
            return tuple(self.read(("field_default", value.extra)))  # dataclasses sets the default on the class
        if isinstance(value, Function) and not value.external:
            scope = value.scope
            kind = scope.method_kind if scope.class_scope is not None else "method"
            if kind == "staticmethod":
                return (value,)
            if kind == "classmethod":
                cls = receiver.cls if isinstance(receiver, Instance) else receiver
                if isinstance(receiver, FabricValue):
                    cls = receiver.cls
                return (Bound(value, cls),)
            if kind == "property":
                if "setter" in scope.decorator_names or "deleter" in scope.decorator_names:
                    return ()  # read through its getter; a store runs it (_property_setter)
                if isinstance(receiver, Class):
                    return (UNKNOWN,)
                return tuple(self._call_function(scope, [(False, frozenset({receiver}))], [], None, None))
            if isinstance(receiver, Class):
                return (value,)
            return (Bound(value, receiver),)
        if isinstance(value, Function) and value.external:
            if isinstance(receiver, Class) or isinstance(receiver, Instance):
                return (Bound(value, receiver if isinstance(receiver, Class) else receiver),)
        return (value,)

    def _instance_attribute(self, inst: Instance, name: str) -> frozenset:
        cls = inst.cls
        if isinstance(cls, Lib):
            return self._library_instance_attribute(inst, name)
        owner, values = self.lookup_class_attribute(cls, name)
        found = set(self.read(("field", cls, name)))
        if isinstance(owner, Class):
            for value in values:
                found.update(self._bind_class_value(value, owner, inst))
        elif isinstance(owner, Lib):
            found.update(self._library_instance_attribute(inst, name))
        elif not found and not self._ask("attribute_assigned", name) and self._mro_complete(cls):
            found.add(UNKNOWN)  # nothing in the program binds it: not something we can know
        return frozenset(found)

    def _class_attribute(self, cls: Class, name: str) -> frozenset:
        owner, values = self.lookup_class_attribute(cls, name)
        if isinstance(owner, Class):
            found = set()
            for value in values:
                found.update(self._bind_class_value(value, owner, cls))
            return frozenset(found)
        if isinstance(owner, Lib) and library_models.is_class(owner.qualified):
            # `MyVAE.from_pretrained(...)` on a subclass of a library model: the tables say what it returns
            return frozenset({Special("library_classmethod", cls, owner.qualified + "." + name)})
        return JUST_UNKNOWN

    def _super_attribute(self, sup: Super, name: str) -> frozenset:
        mro = self.mro(sup.receiver.cls if isinstance(sup.receiver, Instance) else (
            sup.receiver.cls if isinstance(sup.receiver, FabricValue) and sup.receiver.cls else sup.cls))
        if sup.cls in mro:
            mro = mro[mro.index(sup.cls) + 1:]
        for ref in mro:
            if isinstance(ref, Class):
                if ref.external:
                    values = self._ask("external_attribute", ref, name)
                    if values:
                        return frozenset(v for value in values for v in self._bind_class_value(value, ref, sup.receiver))
                    continue
                if self._ask("class_binds", ref, name):
                    values = self.read(("classattr", ref, name))
                    return frozenset(v for value in values for v in self._bind_class_value(value, ref, sup.receiver))
            elif isinstance(ref, Lib):
                receiver = sup.receiver
                if isinstance(receiver, FabricValue):
                    return self._fabric_attribute(receiver, name, library_only=True)
                if isinstance(receiver, Instance):
                    return self._library_instance_attribute(receiver, name)
                return JUST_UNKNOWN
        return JUST_UNKNOWN

    def _construct(self, cls: Class, call: "_Call") -> frozenset:
        mro = self.mro(cls)
        frame = call.frame
        if self.is_fabric_class(cls):
            made = FabricValue(call.node, frame.scope.path, cls, variant=frame.variant)
            self._record_fabric_arguments(call)
            receiver = made
        else:
            meta = frame.meta or frame.default_meta
            made = Instance(cls, self._meta_for(meta, call) if meta is not None else None)
            receiver = made
            if meta is not None:
                self._event("meta_build", call, values=frozenset({made}))
        frame.constructed = call.node
        init = None
        for index, ref in enumerate(mro):
            if isinstance(ref, Class) and not ref.external:
                if self._ask("class_binds", ref, "__init__"):
                    init = [v for v in self.read(("classattr", ref, "__init__")) if isinstance(v, Function)]
                    break
                fields = self._inherited_fields(mro[index:])
                if fields is not None:
                    # the instance's fields (read on its class), the dataclass bases' fields first
                    self._dataclass_fields(cls, fields, call)
                    break
            elif isinstance(ref, Lib):
                break
        for function in init or ():
            if not function.external:
                self._call_function(function.scope, [(False, frozenset({receiver}))] + call.args, call.kwargs, call.node, frame)
        if isinstance(made, Instance) and init and len(init) == 1 and not init[0].external:
            freeze = self_freeze(init[0].scope)  # `self.requires_grad_(False)` last in `__init__`: built frozen
            if freeze is not None:
                made = self._frozen_variant(made, (init[0].scope.path, freeze))
        return frozenset({made})

    def _inherited_fields(self, mro) -> tuple[str, ...] | None:
        """The fields of the `__init__` a dataclass generates, from its MRO (it first): those of its
        dataclass bases first, each where it was first declared, then its own; None when it is no
        dataclass."""
        if self._ask("dataclass_fields", mro[0]) is None:
            return None
        found: dict[str, None] = {}
        for ref in reversed(mro):
            if isinstance(ref, Class) and not ref.external:
                for name in self._ask("dataclass_fields", ref) or ():
                    found.setdefault(name, None)
        return tuple(found)

    def _dataclass_fields(self, cls: Class, fields: tuple[str, ...], call: "_Call") -> None:
        """A dataclass built by `call`: its fields get the arguments, the rest their defaults (a config
        built without overrides holds its defaults: known values). `**overrides` gives the fields it
        names by literal keys; what it may hold otherwise may be in any field not named."""
        given: set[str] = set()
        anywhere = NOTHING  # values that may land in any field not named (`*args`, `**unknown`)
        for index, (starred, values) in enumerate(call.args):
            if starred:
                anywhere = anywhere | self.iter_values(values) | JUST_UNKNOWN
                break
            if index >= len(fields):
                break
            self.write(("field", cls, fields[index]), self._with_declared(cls, fields[index], values))
            given.add(fields[index])
        for name, values in call.kwargs:
            if name is None:
                for key, item in self._expand_kwargs(values, call.frame):
                    if key is None:
                        anywhere = anywhere | item
                    elif key in fields:
                        self.write(("field", cls, key), item)
                        given.add(key)
                continue
            if name in fields:
                self.write(("field", cls, name), self._with_declared(cls, name, values))
                given.add(name)
        for name in fields:
            if name not in given:
                self.write(("field", cls, name), self._field_default(cls, name, call) | anywhere)

    def _field_default(self, cls: Class, name: str, call: "_Call") -> frozenset:
        """What a dataclass field holds when its constructor is not given it: the class body's value,
        or what `field(default=...)` / `field(default_factory=...)` makes (the factory is called)."""
        found = set()
        for value in self.lookup_class_attribute(cls, name)[1]:
            if isinstance(value, Special) and value.kind == "dataclass_field":
                found.update(self.read(("field_default", value.extra)))
                factory_call = _Call(call.node, None, [], [], call.frame, call.depth + 1)
                for factory in self.ordered(self.read(("field_factory", value.extra))):
                    if call.depth < MAX_PARTIAL_DEPTH:
                        found.update(self.call_value(factory, factory_call))
            else:
                found.add(value)
        return frozenset(found)

    def _fields_as_dict(self, objects: frozenset, call: "_Call") -> frozenset:
        """`dataclasses.asdict(obj)`, `vars(obj)`: a dict of the fields of the project instances given
        (a dict keyed by each field name); anything else gives an unknown dict."""
        site = call.node
        container = Container(site, call.frame.scope.path)
        chain = _chain(call.arg_exprs[0]) if call.arg_exprs and call.arg_exprs[0][0] != "star" else None
        written = call.frame.written if chain is not None and len(objects) == 1 else {}
        for value in objects:
            if value == const(None):
                continue  # asdict(None) raises: nothing flows from it (a factory's falling off its end)
            cls = value.cls if isinstance(value, Instance) else None
            if not isinstance(cls, Class) or cls.external:
                self.write(("element", site, ANY_KEY), JUST_UNKNOWN)
                self.write(("elements", site), JUST_UNKNOWN)
                continue
            mro = self.mro(cls)
            for index, ref in enumerate(mro):
                if not isinstance(ref, Class) or ref.external:
                    continue
                fields = self._inherited_fields(mro[index:])
                if fields is None:
                    continue
                for field_name in fields:
                    # `cfg.devices = 1` just before `asdict(cfg)`: the field is what was written last
                    item = written.get(("path", chain[0], chain[1] + (field_name,))) if written else None
                    if item is None:
                        item = self.read(("field", cls, field_name))
                    self._store_element(container, frozenset({const(field_name)}), item)
                break
            else:
                self.write(("element", site, ANY_KEY), JUST_UNKNOWN)
                self.write(("elements", site), JUST_UNKNOWN)
        return frozenset({container})


def library_defines(qualified: str, name: str) -> bool:
    """Does a library base class define `name` (so the MRO search stops there)?"""
    if library_models.is_library_name(qualified) and library_models.is_class(qualified):
        return library_models.defines(qualified, name) or name.startswith("__")
    if qualified in FABRIC_CLASS_NAMES:
        return name in _FABRIC_API or name.startswith("__")
    if qualified.startswith("torch.nn.") or qualified.startswith("torchmetrics"):
        facts = library_module_facts(normalize_torch_name(qualified))
        attributes = facts.attributes if facts is not None else nn_module_attributes()
        return name in attributes or name.startswith("__")
    return name.startswith("__") or qualified.startswith("builtins.")


def _is_generic_class(qualified: str) -> bool:
    """A library name that subscripts into a generic alias of a class (`Generic[T]`, `dict[str, int]`,
    `nn.ModuleList`), not into an element (`os.environ["X"]`)."""
    module, _, name = qualified.rpartition(".")
    return module in ("typing", "typing_extensions", "collections.abc", "builtins") or name[:1].isupper()
