"""Calls of library names (torch, lightning, the standard library, the model libraries): what
they return, answered from the generated tables.

A mixin of `flow.Solver`: the interpreter (flow.py) calls these methods; they read and write the
solver's tables through it."""

from __future__ import annotations

from fabric_lsp.analysis.choice_reach import joined_phrase
from fabric_lsp.analysis.flow_state import _Call, _site_key, MetaTag
from fabric_lsp.analysis.imports import FABRIC_CLASS_NAMES, normalize_torch_name
from fabric_lsp.analysis.libraries import models as library_models
from fabric_lsp.analysis.semantics.torch import _compiled, _FSDP_CLASSES, _NO_GRAD_FUNCTIONS, _RETURNS_SELF
from fabric_lsp.analysis.libraries.torch_facts import nn_module_attributes
from fabric_lsp.analysis.libraries.torch_tables import tables
from fabric_lsp.analysis.values import (
    Bound,
    Const,
    const,
    Container,
    FabricValue,
    Function,
    Instance,
    JUST_UNKNOWN,
    Lib,
    NOTHING,
    Partial,
    Special,
    StrategyObject,
    UNKNOWN,
    Wrapped,
)


_GRAD_SCALERS = frozenset((
    "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler", "torch.cuda.amp.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler", "torch.cpu.amp.GradScaler", "torch.cpu.amp.grad_scaler.GradScaler",
))


class LibraryCalls:
    """Calls of library names (torch, lightning, the standard library, the model libraries): what
    they return, answered from the generated tables."""

    def _library_instance_attribute(self, inst: Instance, name: str) -> frozenset:
        if name == "requires_grad_":
            return frozenset({Special("requires_grad", inst)})  # semantics/torch.py: frozen or not
        if inst.cls == Lib("torch.amp.GradScaler"):
            # `scaler.scale(loss)` is the loss times the scale: its `.backward()` meets the wrapped model's hook
            return frozenset({Special("scaled_loss", inst)}) if name == "scale" else JUST_UNKNOWN
        if name in _RETURNS_SELF:
            return frozenset({Special("returns_receiver", inst)})
        if isinstance(inst.cls, Lib) and library_models.is_class(inst.cls.qualified):
            kind = library_models.method_kind(inst.cls.qualified, name)
            if kind in ("method", "classmethod"):
                return frozenset({Special("lib_method", inst, name)})
        return frozenset({Special("lib_method", inst, name)}) if name in nn_module_attributes() else JUST_UNKNOWN

    # -- library semantics -----------------------------------------------------------------------------------
    def _library_call(self, qualified: str, call: "_Call") -> frozenset:
        name = normalize_torch_name(qualified)
        frame = call.frame
        chosen = self._run_choice_call(name, call)
        if chosen is None:
            chosen = self._config_call(name, call)
        if chosen is not None:
            return chosen
        if name in FABRIC_CLASS_NAMES:
            self._record_fabric_arguments(call)
            return frozenset({FabricValue(call.node, frame.scope.path, variant=frame.variant)})
        if name in _GRAD_SCALERS:
            return frozenset({Instance(Lib("torch.amp.GradScaler"))})
        if name == "torch.compile":
            # Compiled under a run-time choice (`if args.compile:`): the choice travels with the model, so a
            # finding that only the compile makes certain names it (Instance.compiled holds its phrase).
            how = joined_phrase(frame.guards) or True
            return frozenset(_compiled(value, how) for value in call.positional(0))
        if name == "dataclasses.field":  # its default (or factory) is the field's value: _field_default
            self.write(("field_default", call.node), call.keyword("default"))
            self.write(("field_factory", call.node), call.keyword("default_factory"))
            return frozenset({Special("dataclass_field", None, call.node)})
        if name in ("dataclasses.asdict", "builtins.vars"):
            return self._fields_as_dict(call.positional(0), call)
        if name in ("copy.deepcopy", "copy.copy"):
            return call.positional(0)  # the same values (what is written into the copy joins them)
        if name == "types.MethodType":
            return self._bound_at_run_time(call.positional(0), call.positional(1), call)
        if name == "functools.partial":
            site = call.node
            self.write(("partial_function", site), call.positional(0))
            arguments = [values for starred, values in call.args[1:] if not starred]
            self.write(("arity", site), frozenset({const(len(arguments))}))
            for index, values in enumerate(arguments):
                self.write(("element", site, const(index)), values)
            for name_, values in call.kwargs:
                if name_ is not None:
                    self.write(("partial_keyword", site, name_), values)
            return frozenset({Partial(site, frame.scope.path)})
        if name == "torch.device":
            kinds = call.positional(0) | call.keyword("type")
            if const("meta") in kinds:
                return frozenset({Special("meta_device")})
            return JUST_UNKNOWN
        if name == "torch.set_default_device":
            kinds = call.positional(0) | call.keyword("device")
            if const("meta") in kinds or any(isinstance(v, Special) and v.kind == "meta_device" for v in kinds):
                frame.default_meta = MetaTag(("default_device", call.node, None, frame.scope.path, frozenset(), None,
                                              frame.variant))
            elif kinds and UNKNOWN not in kinds:
                frame.default_meta = None
            return frozenset({const(None)})
        if tables().is_materialize_function(name) or name.rsplit(".", 1)[-1] in (
            "_materialize_meta_tensors", "_materialize_distributed_module"
        ):
            self._event("materialize", call, values=call.positional(0), how=name.rsplit(".", 1)[-1])
            return frozenset({const(None)})
        if name in _FSDP_CLASSES or name.endswith(".FullyShardedDataParallel"):
            self._event("materialize", call, values=call.positional(0) | call.keyword("module"), how="fsdp")
            return JUST_UNKNOWN
        if name.startswith("lightning") and name.rsplit(".", 1)[-1] == "_unwrap_objects":
            found = set()
            for value in call.positional(0):
                if isinstance(value, Wrapped):
                    found.update(self.read(("setup_module", _site_key(value.site, value.variant))))
                else:
                    found.add(value)
            return frozenset(found)  # nothing yet is nothing, not unknown (see _record_fabric_arguments)
        short = name.rsplit(".", 1)[-1]
        if name.startswith("lightning") and tables().strategy(short) is not None and short[:1].isupper():
            return frozenset({StrategyObject(short)})
        if name.startswith("torch.nn.") and short[:1].isupper():
            meta = frame.meta or frame.default_meta
            made = Instance(Lib(name), self._meta_for(meta, call) if meta is not None else None)
            if meta is not None:
                self._event("meta_build", call, values=frozenset({made}))
            return frozenset({made})
        if name.startswith("torchmetrics") and short[:1].isupper():
            return frozenset({Instance(Lib(name))})
        if library_models.is_library_name(name):
            return self._library_results(library_models.result_classes(name, self._library_arguments(call)), call)
        if name.startswith("builtins."):
            return self._builtin_call(short, call)
        if name.startswith("torch.") and short not in _NO_GRAD_FUNCTIONS:
            return self._derived_output(call)  # `F.cross_entropy(out, y)`, `torch.stack([...])`
        return JUST_UNKNOWN

    def _bound_at_run_time(self, functions: frozenset, receivers: frozenset, call: "_Call") -> frozenset:
        """`types.MethodType(f, obj)`, `f.__get__(obj)`: a method of `obj` whose body runs with `self` =
        obj (Lightning's `inspect.ismethod` holds, as for a method of its class); where it was bound is
        kept for the finding that calls it on the wrapped model. `f.__get__(None, cls)` is `f` itself."""
        found = set()
        for function in functions:
            if not isinstance(function, Function) or function.external:
                found.add(UNKNOWN)
                continue
            for receiver in receivers:
                if receiver == const(None):
                    found.add(function)
                    continue
                bound = Bound(function, receiver)
                found.add(bound)
                self.write(("bound_at", bound), frozenset({Special("bound_at", call.node, call.frame.scope.path)}))
        return frozenset(found)  # nothing yet is nothing, not unknown

    def _library_results(self, classes, call: "_Call") -> frozenset:
        """Instances of the library classes (or families) a library call returns; a tuple of them for
        {index: classes}; unknown for None. Built under a meta-device context, they are meta models."""
        if classes is None:
            return JUST_UNKNOWN
        frame = call.frame
        meta = frame.meta or frame.default_meta

        def made(names) -> frozenset:
            found = set()
            for name in names:
                module = library_models.is_module(name)
                if not library_models.is_class(name):  # a config: its literal keywords may choose a factory's result
                    found.add(Instance(Lib(name), keywords=self._literal_keywords(call)))
                    continue
                instance = Instance(Lib(name), self._meta_for(meta, call) if meta is not None else None)
                if meta is not None and module:
                    self._event("meta_build", call, values=frozenset({instance}))
                found.add(instance)
            return frozenset(found)

        if isinstance(classes, dict):  # a tuple: a container whose elements are known by position
            site = call.node
            everything = NOTHING
            for index, names in sorted(classes.items()):
                values = made(names)
                self.write(("element", site, const(index)), values)
                everything = everything | values
            self.write(("elements", site), everything | JUST_UNKNOWN)
            return frozenset({Container(site, frame.scope.path)})
        return made(classes)

    @staticmethod
    def _literal_keywords(call: "_Call") -> tuple:
        found = []
        for name, values in call.kwargs:
            if name is not None and len(values) == 1:
                value = next(iter(values))
                if isinstance(value, Const) and value.kind == "str":
                    found.append((name, value.value))
        return tuple(sorted(found))

    def _library_arguments(self, call: "_Call") -> "library_models.CallArguments":
        """What a library factory may ask of its call's arguments (libraries/models.py)."""

        def values(position, keyword) -> frozenset:
            found = call.keyword(keyword) if keyword else NOTHING
            if position is not None and position < len(call.args) and not any(starred for starred, _ in call.args[:position + 1]):
                found = found | call.positional(position)
            return found

        def literal(position, keyword):
            found = values(position, keyword)
            if len(found) == 1:
                value = next(iter(found))
                if isinstance(value, Const) and value.kind == "str":
                    return value.value
            return None

        def attribute_literal(position, keyword, attribute):
            found = values(position, keyword)
            literals = set()
            for value in found:
                if not isinstance(value, Instance) or not isinstance(value.cls, Lib):
                    return None
                literals.add(dict(value.keywords).get(attribute))
            return literals.pop() if len(literals) == 1 else None

        def class_of(position, keyword):
            found = values(position, keyword)
            if len(found) == 1:
                value = next(iter(found))
                if isinstance(value, Instance) and isinstance(value.cls, Lib):
                    return value.cls.qualified
            return None

        def keyword(name):
            if any(key is None for key, _ in call.kwargs):
                return None  # **kwargs may hold it
            found = call.keyword(name)
            if not found:
                return "absent"
            if all(isinstance(v, Const) and v.value in (False, None) for v in found):
                return "false"
            if any(isinstance(v, Const) and v.value in (False, None) for v in found) or UNKNOWN in found:
                return None
            return "set"

        return library_models.CallArguments(literal, class_of, keyword, attribute_literal)
