"""The classes in a meta-device model's module tree that own tensors without `reset_parameters`
(FAB002). Where models are created on the meta device and where they are materialized is found by
the value-flow analysis (flow.py, facts.py); this walks the tree built by one
constructor call."""

from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass, replace

from fabric_lsp.analysis.classes import ClassInfo, ClassRef, ClassResolver, LibraryClass
from fabric_lsp.analysis.imports import ImportTable, normalize_torch_name
from fabric_lsp.analysis.libraries import models as library_models
from fabric_lsp.analysis.modules import ModuleAnalyzer, OwnedTensor, _constructor_calls
from fabric_lsp.analysis.source import SourceFile
from fabric_lsp.analysis.libraries.torch_facts import library_module_facts

_MAX_TREE_DEPTH = 12


@dataclass(frozen=True)
class Offender:
    cls: ClassRef  # ClassInfo or LibraryClass
    name: str
    source: SourceFile  # where the offender's constructor call is
    call: ast.Call  # the offender's constructor call (in its parent's __init__ or the meta context)
    owned: tuple[OwnedTensor, ...]  # for ClassInfo offenders: what reset_parameters must re-create
    path: tuple[str, ...] = ()  # attribute path from the root: ("blocks[0]", "attn")
    # In a library model (the tables): the other modules without reset_parameters, after this first
    # one (the one materialization names): the model is reported once, its classes cannot be edited.
    others: tuple[str, ...] = ()
    # The branches of `__init__`s on the way to it that the program's values may take or not (a flag
    # read from the command line, a config chosen at run time): it is built only when they are taken.
    chosen_when: tuple[str, ...] = ()


def patched_classes(sources) -> set[str]:
    """Classes given a reset_parameters by assignment, e.g. Lightning's demo's
    `nn.MultiheadAttention.reset_parameters = nn.MultiheadAttention._reset_parameters` (which
    `import lightning.pytorch.demos` does for the whole process)."""
    patched: set[str] = set()
    for source in sources:
        if "reset_parameters" not in source.text and "demos" not in source.text:
            continue
        imports = ImportTable(source.tree)
        if any(q.startswith(_DEMOS) for q in imports.names.values()) or "lightning.pytorch.demos" in source.text:
            patched.add("torch.nn.MultiheadAttention")
        lines = None
        for statement in source.tree.body:
            cached = statement.__dict__.get("_fabric_lsp_patched")
            if cached is None:
                if lines is None:
                    lines = _lines_naming(source.text, "reset_parameters")
                cached = statement.__dict__["_fabric_lsp_patched"] = _patched_in(statement, imports, source, lines)
            patched |= cached
    return patched


_DEMOS = ("lightning.pytorch.demos", "pytorch_lightning.demos")


def _lines_naming(text: str, word: str) -> list[int]:
    """The (1-based, ascending) lines of `text` where `word` occurs, as Python numbers lines."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    found: list[int] = []
    at = text.find(word)
    line, counted = 1, 0
    while at != -1:
        line += text.count("\n", counted, at)
        counted = at
        if not found or found[-1] != line:
            found.append(line)
        at = text.find(word, at + len(word))
    return found


def _patched_in(statement: ast.stmt, imports: ImportTable, source: SourceFile, lines: list[int]) -> frozenset[str]:
    """The `X.reset_parameters = ...` in `statement`: only the nodes spanning a line that names
    reset_parameters are entered (a model file's classes are not walked whole)."""
    found = set()
    pending = [statement]
    while pending:
        node = pending.pop()
        first = getattr(node, "lineno", None)
        if first is not None:
            at = bisect.bisect_left(lines, first)
            if at == len(lines) or lines[at] > (node.end_lineno or first):
                continue  # no line of its span names reset_parameters
        pending.extend(ast.iter_child_nodes(node))
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr == "reset_parameters":
                qualified = imports.qualify(target.value)
                found.add(normalize_torch_name(qualified) if qualified else source.segment(target.value))
    return frozenset(found)


class MetaAnalyzer:
    def __init__(self, resolver: ClassResolver, modules: ModuleAnalyzer) -> None:
        self.modules = modules
        self.resolver = resolver

    # -- the module tree ------------------------------------------------------------------------------
    def offenders(self, cls: ClassRef, call: ast.Call, source: SourceFile, depth: int = 0, seen: set | None = None,
                  path: tuple[str, ...] = (), chosen_when: tuple[str, ...] = ()) -> list[Offender]:
        """Classes in the tree built by `call` that own tensors but lack reset_parameters, each with the
        attribute path from the root (`blocks[...]`, `attn`) and the run-time choices it is built under."""
        found = self._offenders(cls, call, source, depth, seen, path)
        if chosen_when:
            found = [replace(offender, chosen_when=chosen_when + offender.chosen_when) for offender in found]
        return found

    def _offenders(self, cls: ClassRef, call: ast.Call, source: SourceFile, depth: int, seen: set | None,
                   path: tuple[str, ...]) -> list[Offender]:
        seen = set() if seen is None else seen
        if cls is None or depth > _MAX_TREE_DEPTH:
            return []
        found: list[Offender] = []
        if isinstance(cls, LibraryClass) and cls.in_tables:
            # A model of transformers, timm, ...: the modules the tables saw without reset_parameters,
            # reported as one offender: the first in module order (the one Lightning's TypeError names).
            modules = library_models.unresettable(cls.qualified)
            if modules is None and library_models.owns_tensors(cls.qualified) == "always" \
                    and library_models.has_reset_parameters(cls.qualified) is False:
                # a library layer built as a child of a project module (the tables built it inside a model)
                found.append(Offender(cls, cls.name, source, call, (), path))
                return found
            modules = modules or ()
            if modules:
                first = modules[0]
                owned = tuple(OwnedTensor(tensor, "tensor", None, None) for tensor in first.tensors)
                parts = tuple(first.path.split(".")) if first.path else ()
                name = first.cls.rsplit(".", 1)[-1]
                others = tuple(dict.fromkeys(m.cls.rsplit(".", 1)[-1] for m in modules[1:] if not m.cls.endswith("." + name)))
                found.append(Offender(LibraryClass(first.cls), name, source, call, owned, path + parts, others))
            return found
        if isinstance(cls, LibraryClass):
            if cls.qualified in ("torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.ModuleDict"):
                for inner in _constructor_calls(call)[1:]:
                    inner_cls = self.resolver.resolve(source, inner.func)
                    if inner_cls is not None and self.resolver.is_module(inner_cls):
                        found.extend(self.offenders(inner_cls, inner, source, depth + 1, seen, path + ("[...]",)))
                return found
            facts = library_module_facts(cls.qualified)
            if facts is not None and not facts.has_reset_parameters and self.modules.library_owns_tensors(cls, call):
                found.append(Offender(cls, cls.name, source, call, (), path))
            if facts is not None and facts.table is not None:
                for name in facts.table.unresettable_descendants:
                    found.append(Offender(LibraryClass(f"torch.nn.{name}"), name, source, call, (), path + ("...",)))
            return found
        key = id(cls.node)
        if key in seen:
            return []
        seen.add(key)
        module_facts = self.modules.module_facts(cls)
        # What `__init__` builds only in a branch the program's values never take (a flag whose
        # default is off and that no config sets) is not in the tree: DESIGN.md, "Hint at most".
        owned = tuple(tensor for tensor in module_facts.owned if self.modules.taken(tensor.guards))
        owns = bool(owned) or self._library_base_owns(cls)
        if owns and self.resolver.has_reset_parameters(cls) is False:
            own_choice: tuple[str, ...] = ()
            if owned and not self._library_base_owns(cls) and all(self.modules.chosen_at_run_time(t.guards) for t in owned):
                # every tensor it owns is made in a branch chosen at run time
                own_choice = (f"`self.{owned[0].attribute}` is created (a branch of `__init__` chosen at run time)",)
            found.append(Offender(cls, cls.name, source, call, owned, path, chosen_when=own_choice))
        for child in module_facts.children:
            if not self.modules.taken(child.guards):
                continue
            found.extend(self.offenders(child.cls, child.call, child.source, depth + 1, seen, path + (child.attribute,),
                                        self.modules.choices(child.guards, child.source)))
        for parametrized in module_facts.parametrizations:
            found.append(Offender(LibraryClass("torch.nn.utils.parametrize.ParametrizationList"), "ParametrizationList",
                                  cls.source, parametrized.call, (), path + (parametrized.attribute, "parametrizations")))
        seen.discard(key)  # the same class elsewhere in the tree is reported once by the caller
        return found

    def _library_base_owns(self, cls: ClassInfo) -> bool:
        for ref in self.resolver.mro(cls):
            if isinstance(ref, LibraryClass):
                facts = library_module_facts(ref.qualified)
                if facts is not None and facts.always_owns_tensors:
                    return True
        return False
