"""Qualified names from import statements (TorchFix-style), so library names resolve without jedi."""

from __future__ import annotations

import ast

from fabric_lsp.analysis.nodes import statements_breadth_first

# Packages we answer for from our own tables: their names never need jedi.
LIBRARY_ROOTS = ("torch", "lightning", "lightning_fabric", "torchmetrics", "pytorch_lightning")

FABRIC_CLASS_NAMES = frozenset(
    {
        "lightning.Fabric",
        "lightning.fabric.Fabric",
        "lightning.fabric.fabric.Fabric",
        "lightning_fabric.Fabric",
        "lightning_fabric.fabric.Fabric",
    }
)


class ImportTable:
    """Maps a local name to the dotted name it was imported as, for one module."""

    def __init__(self, tree: ast.Module | None) -> None:
        self.names: dict[str, str] = {}
        if tree is None:
            return
        known = tree.__dict__.get("_import_names")  # one table per tree: several callers ask
        if known is not None:
            self.names = dict(known)
            return
        # Imports are statements: walking statements only meets them in ast.walk's order, faster.
        for node in statements_breadth_first(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.names[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.names[top] = top
            elif isinstance(node, ast.ImportFrom):
                module = ("." * node.level) + (node.module or "")
                for alias in node.names:
                    if alias.name == "*":
                        continue
                    prefix = module if module.endswith(".") else module + "."
                    self.names[alias.asname or alias.name] = prefix + alias.name
        tree.__dict__["_import_names"] = dict(self.names)

    def qualify(self, node: ast.AST) -> str | None:
        """`nn.Linear` -> `torch.nn.Linear` when `from torch import nn`; None when the root is not imported."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        root = self.names.get(node.id)
        if root is None:
            return None
        return ".".join([root, *reversed(parts)])

    def is_library(self, qualified: str | None) -> bool:
        return bool(qualified) and qualified.split(".")[0] in LIBRARY_ROOTS

    def alias_for(self, module: str) -> str | None:
        """The local name bound to `module` itself (e.g. 'torch'), if any."""
        for local, qualified in self.names.items():
            if qualified == module:
                return local
        return None


def normalize_torch_name(qualified: str) -> str:
    """`torch.nn.modules.linear.Linear` / `torch.nn.Linear` -> `torch.nn.Linear`."""
    parts = qualified.split(".")
    if len(parts) >= 3 and parts[0] == "torch" and parts[1] == "nn" and parts[-1][:1].isupper():
        return "torch.nn." + parts[-1]
    return qualified
