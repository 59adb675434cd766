"""Configurations the program loads, read as data: YAML or JSON files (`yaml.safe_load(open(path))`,
`json.load(f)`, `OmegaConf.load(path)`), text written in the program (`yaml.safe_load(\"\"\"...\"\"\")`,
`json.loads('...')`) and hydra apps (`@hydra.main(config_path=..., config_name=...)`), with
`hydra.utils.instantiate(cfg.model)` building the `_target_` class the configuration names.

The documents themselves are read by analysis/config_files.py (bounded, safe loader, inside the project
only), through the program (`config_document`), so a run's log records the answer and the findings cache
checks the files. A mapping or list of a document is a `ConfigNode`; a scalar is a constant when the
text is written in the program (nothing can change it at run time: a known value) and a run-time choice
(`Choice`, the file's value being the default run's) when it comes from a file or from hydra, whose
command line can override any value (DESIGN.md, Severity).

A mixin of `flow.Solver`: the interpreter (flow.py) calls these methods; they read and write the
solver's tables through it."""

from __future__ import annotations

import ast
import os

from fabric_lsp.analysis.flow_state import _Call
from fabric_lsp.analysis.imports import FABRIC_CLASS_NAMES
from fabric_lsp.analysis.values import (
    Choice, Class, ConfigNode, Const, const, FabricValue, JUST_UNKNOWN, Lib, Module, NOTHING, Special, UNKNOWN,
)

# Library calls that read a configuration: name -> (the kind of text, where the text is: "path" (a file
# path), "stream" (an open file), "text" (a string)).
_LOADERS = {
    "yaml.safe_load": ("yaml", "stream_or_text"),
    "yaml.load": ("yaml", "stream_or_text"),
    "yaml.full_load": ("yaml", "stream_or_text"),
    "yaml.unsafe_load": ("yaml", "stream_or_text"),
    "json.load": ("json", "stream"),
    "json.loads": ("json", "text"),
    "omegaconf.OmegaConf.load": ("omegaconf", "path_or_stream"),
    "omegaconf.omegaconf.OmegaConf.load": ("omegaconf", "path_or_stream"),
    "omegaconf.OmegaConf.create": ("omegaconf", "text_or_node"),
}
_PASS_THROUGH = frozenset((
    "omegaconf.OmegaConf.to_container", "omegaconf.OmegaConf.to_object", "omegaconf.OmegaConf.structured",
    "omegaconf.DictConfig", "copy.deepcopy", "copy.copy", "builtins.dict", "easydict.EasyDict", "addict.Dict",
    "munch.Munch", "munch.munchify", "ml_collections.ConfigDict", "types.SimpleNamespace",
))
_INSTANTIATE = frozenset(("hydra.utils.instantiate", "hydra.utils.call", "hydra._internal.instantiate._instantiate2.instantiate"))
_HYDRA_MAIN = frozenset(("hydra.main", "hydra.main.main"))
_MAPPING_METHODS = frozenset(("get", "items", "keys", "values", "copy", "pop", "setdefault", "update", "to_dict"))
_PATH_CONSTRUCTORS = frozenset(("os.path.join",))


class ConfigValues:
    """Configurations read as data; `instantiate` of a `_target_`; hydra's `cfg`."""

    # -- calls -------------------------------------------------------------------------------------------
    def _config_call(self, name: str, call: _Call) -> frozenset | None:
        """What a library call returns when it opens, loads or instantiates a configuration; None otherwise."""
        if name == "builtins.open" or name == "io.open":
            paths = call.positional(0) | call.keyword("file")
            return frozenset({Special("open_file", None, paths)}) | JUST_UNKNOWN if paths else None
        if name in _PATH_CONSTRUCTORS:
            return self._path_value(name, call)
        loader = _LOADERS.get(name)
        if loader is not None:
            return self._loaded(loader, call) or JUST_UNKNOWN
        if name in _PASS_THROUGH and len(call.args) == 1:
            nodes = frozenset(v for v in call.positional(0) if isinstance(v, ConfigNode))
            return nodes | JUST_UNKNOWN if nodes else None
        if name in _INSTANTIATE:
            return self._instantiated(call)
        if name in _HYDRA_MAIN:
            return frozenset({Special("hydra_main", None, (tuple(self.ordered(call.keyword("config_path") | call.positional(0))),
                                                            tuple(self.ordered(call.keyword("config_name") | call.positional(1))),
                                                            call.frame.scope.path))})
        return None

    def _path_value(self, name: str, call: _Call) -> frozenset | None:
        """`Path("configs") / "train.yaml"`, `os.path.join("configs", name)`: the literal path it makes."""
        parts = [call.positional(i) for i in range(len(call.args))]
        if not parts or any(len(p) != 1 for p in parts):
            return None
        texts = []
        for (value,) in parts:
            text = _text(value)
            if text is None:
                return None
            texts.append(text)
        return frozenset({const(os.path.join(*texts))})

    def _loaded(self, loader: tuple, call: _Call) -> frozenset:
        kind, where = loader
        found = set()
        for value in call.positional(0) | call.keyword("stream") | call.keyword("s") | call.keyword("fp"):
            if isinstance(value, ConfigNode):
                found.add(value)  # OmegaConf.create(cfg)
                continue
            if isinstance(value, Special) and value.kind == "open_file" and "stream" in where:
                for path in value.extra:
                    document = self._file_document(path, kind, call)
                    if document is not None:
                        found.add(document)
                continue
            text = _text(value)
            if text is None:
                continue
            if "text" in where:
                node = call.node
                line = getattr(node.args[0], "lineno", 0) if isinstance(node, ast.Call) and node.args else 0
                found.add(ConfigNode(("text", kind, text, call.frame.scope.path, line), (), True))
            elif "path" in where:
                document = self._file_document(value, kind, call)
                if document is not None:
                    found.add(document)
        return frozenset(found) | (JUST_UNKNOWN if not found else NOTHING)

    def _file_document(self, path_value, kind: str, call: _Call) -> ConfigNode | None:
        """The document of a file the program opens: a literal path, or an option whose default is one
        (the default run's file), looked for from the script's folder, then from the project root."""
        text = _text(path_value)
        if text is None and isinstance(path_value, Choice) and path_value.default is not None and not path_value.ops:
            text = _text(path_value.default)
        if not text:
            return None
        found = self._ask("config_file", call.frame.scope.path, text, kind)
        if found is None:
            return None
        return ConfigNode(("file", kind, found), (), False)

    # -- reading a document ---------------------------------------------------------------------------------
    def config_document_of(self, node: ConfigNode):
        return self._ask("config_document", node.document)

    def config_data(self, node: ConfigNode):
        """The data at the node's key path, or _MISSING."""
        document = self.config_document_of(node)
        data = document.data if document is not None else None
        for key in node.keys:
            if isinstance(data, dict) and key in data:
                data = data[key]
            elif isinstance(data, list) and isinstance(key, int) and -len(data) <= key < len(data):
                data = data[key]
            else:
                return _MISSING
        return data if document is not None and document.data is not None else _MISSING

    def config_child(self, node: ConfigNode, key) -> frozenset:
        """`cfg["model"]`, `cfg.model`, `cfg.get("model")`: a node, a constant or a choice."""
        data = self.config_data(node)
        if data is _MISSING:
            return JUST_UNKNOWN
        if isinstance(data, dict):
            if key not in data:
                return JUST_UNKNOWN  # a key the file lacks (hydra's `+key=...` may add it): unknown
            value = data[key]
        elif isinstance(data, list) and isinstance(key, int) and -len(data) <= key < len(data):
            value = data[key]
        else:
            return JUST_UNKNOWN
        keys = node.keys + (key,)
        if isinstance(value, (dict, list)):
            return frozenset({ConfigNode(node.document, keys, node.known)})
        if isinstance(value, str) and "${" in value:
            return JUST_UNKNOWN  # an interpolation: resolved when the program runs
        if node.known:
            return frozenset({const(value)})
        return frozenset({self._config_choice(node, keys, value)}) | JUST_UNKNOWN

    def _config_choice(self, node: ConfigNode, keys: tuple, value) -> Choice:
        document = self.config_document_of(node)
        entry = document.origins.get(keys) if document is not None else None
        where = ""
        if entry is not None and entry.file:
            root = getattr(self.program, "root", "") or ""
            where = os.path.relpath(entry.file, root) if root and entry.file.startswith(root) else os.path.basename(entry.file)
        name = ".".join(str(k) for k in keys)
        return Choice("hydra" if node.document[0] == "hydra" else "config", name, const(value), where)

    def config_subscript(self, node: ConfigNode, keys: frozenset) -> frozenset:
        found = set()
        for key in keys:
            if isinstance(key, Const) and isinstance(key.value, (str, int)) and not isinstance(key.value, bool):
                found.update(self.config_child(node, key.value))
            else:
                found.add(UNKNOWN)
        return frozenset(found)

    def config_attribute(self, node: ConfigNode, name: str) -> frozenset:
        if name in _MAPPING_METHODS:
            return frozenset({Special("config_method", node, name)})
        return self.config_child(node, name)

    def _config_method_call(self, special: Special, call: _Call) -> frozenset:
        node, method = special.receiver, special.extra
        if method == "get":
            found = self.config_subscript(node, call.positional(0))
            data = self.config_data(node)
            keys = [k.value for k in call.positional(0) if isinstance(k, Const)]
            if isinstance(data, dict) and any(k not in data for k in keys):
                found = (found - JUST_UNKNOWN) | (call.positional(1) if len(call.args) > 1 else frozenset({const(None)}))
            return found
        if method in ("copy", "to_dict"):
            return frozenset({node})
        return JUST_UNKNOWN

    def config_truth(self, node: ConfigNode) -> bool | None:
        """`if cfg.optim:`: a mapping or list of a file is true when it has items (a run-time choice still:
        only for a known text is it decided)."""
        if not node.known:
            return None
        data = self.config_data(node)
        return None if data is _MISSING else bool(data)

    def config_keys(self, node: ConfigNode) -> tuple | None:
        """The keys of a mapping node (for `Fabric(**cfg.fabric)`), or None."""
        data = self.config_data(node)
        return tuple(k for k in data if isinstance(k, str)) if isinstance(data, dict) else None

    # -- hydra ------------------------------------------------------------------------------------------------
    def hydra_config(self, decorator: Special, scope_path: str) -> frozenset:
        """The `cfg` hydra gives the function `@hydra.main(config_path=..., config_name=...)` decorates: the
        composition of the default run (config_path is relative to the file that declares the app)."""
        paths, names, path = decorator.extra
        found = set()
        for folder in paths or (const(None),):
            for name in names or (const(None),):
                folder_text, name_text = _text(folder), _text(name)
                if folder_text is None and folder != const(None) or name_text is None and name != const(None):
                    found.add(UNKNOWN)
                    continue
                base = os.path.dirname(path)
                directory = os.path.normpath(os.path.join(base, folder_text)) if folder_text else None
                if directory is None:
                    found.add(UNKNOWN)
                    continue
                found.add(ConfigNode(("hydra", directory, name_text or ""), (), False))
        return frozenset(found) or JUST_UNKNOWN

    def _instantiated(self, call: _Call) -> frozenset:
        """`instantiate(cfg.model)`: an instance of the `_target_` class of the default run's configuration,
        built with the other keys as keyword arguments (the program's own classes; others are unknown)."""
        found = set()
        for node in call.positional(0) | call.keyword("config"):
            if not isinstance(node, ConfigNode):
                found.add(UNKNOWN)
                continue
            data = self.config_data(node)
            target = data.get("_target_") if isinstance(data, dict) else None
            if not isinstance(target, str) or "${" in target:
                found.add(UNKNOWN)
                continue
            keywords = [(key, self.config_child(node, key)) for key in data if isinstance(key, str) and not key.startswith("_")]
            keywords += [(name, values) for name, values in call.kwargs if name != "config"]
            if target in FABRIC_CLASS_NAMES:
                # `_target_: lightning.fabric.Fabric`: a Fabric made with the configuration's keys (a
                # command-line override of them is a run-time choice, as for any value of the file).
                self._record_configured_fabric(call, keywords)
                found.add(FabricValue(call.node, call.frame.scope.path, variant=call.frame.variant))
                continue
            cls = self._target_class(target, call.frame.scope.path)
            if not isinstance(cls, Class) or cls.external:
                found.add(UNKNOWN)
                continue
            built = _Call(call.node, call.func_expr, [], keywords, call.frame, call.depth + 1)
            found.update(self._construct(cls, built))
        return frozenset(found)

    def _target_class(self, target: str, from_path: str):
        """The class a dotted `_target_` names (`models.vae.VAE`): its module resolved as an import from the
        file that instantiates it, then the name looked up there."""
        module_name, _, attribute = target.rpartition(".")
        if not module_name or not attribute:
            return None
        module = self._ask("resolve_import", module_name, from_path, 0)
        if not isinstance(module, Module) or module.external:
            return None
        values = self.attribute_of(module, attribute, None)
        classes = [v for v in values if isinstance(v, Class)]
        return classes[0] if len(classes) == 1 else None


_MISSING = object()


def _text(value) -> str | None:
    if isinstance(value, Const) and isinstance(value.value, str):
        return value.value
    return None


def is_config_loader(name: str) -> bool:
    return name in _LOADERS or name in _INSTANTIATE or name in _HYDRA_MAIN


def config_library(value) -> bool:
    return isinstance(value, Lib) and value.qualified in _LOADERS
