"""The package's imports keep DESIGN.md's one-way flow: no import circle, and no module imports a
module of a higher layer (issue 28).

Every module of server/fabric_lsp is read with `ast`; every import counts, those inside functions and
under `if TYPE_CHECKING:` too (a circle a function-level import hides is still a circle for whoever
reads or moves the code). An import of a package counts as an edge to its `__init__`.

The layers, lowest first (a module may import its own layer and those below):

  0 text      what is read and written as text: `sources/` (walk, gitignore, globs, files, upward,
              notebook, project_root, toml_reader), `fixes/` (edits, confinement, noqa), `findings`
              (the plain data every layer passes on), `version`, and `analysis/compat.py`, which
              reads text only (stdlib) and says which syntax a text uses: the notebook reader asks it
              whether a cell parses; `timing` (`check -v`'s measure of the phases, stdlib only: the
              analysis times its jedi questions with it).
  1 settings  `settings/` (config, user_config) and `records/` (the knowledge base: its loader reads
              the user config's record folders; the settings check codes and docs-url against its
              rules table).
  2 analysis  `analysis/` (source -> facts).
  3 rules     `rules/` (facts -> findings).
  4 engine    `engine`, `checking` (many files: plans, workers, the findings cache), `cache`, and
              `report/` (findings -> the output formats, the rule pages, which run the engine).
  5 api       `api` and the package's face (`fabric_lsp/__init__.py`, which loads the API lazily).
  6 front     `cli/` and `lsp/` (arguments and the protocol: presentation over the API and engine),
              `__main__`.

A module not placed here fails the test: a new module's layer is a decision to write down.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "server" / "fabric_lsp"

# Longest prefix wins.
LAYERS = {
    "fabric_lsp.version": 0,
    "fabric_lsp.findings": 0,
    "fabric_lsp.sources": 0,
    "fabric_lsp.fixes": 0,
    "fabric_lsp.analysis.compat": 0,
    "fabric_lsp.timing": 0,
    "fabric_lsp.settings": 1,
    "fabric_lsp.records": 1,
    "fabric_lsp.analysis": 2,
    "fabric_lsp.rules": 3,
    "fabric_lsp.engine": 4,
    "fabric_lsp.checking": 4,
    "fabric_lsp.cache": 4,
    "fabric_lsp.report": 4,
    "fabric_lsp.api": 5,
    "fabric_lsp": 5,  # the package's __init__ only
    "fabric_lsp.cli": 6,
    "fabric_lsp.lsp": 6,
    "fabric_lsp.__main__": 6,
    "fabric_lsp.cli.output_file": 6,
}
NAMES = ["text", "settings", "analysis", "rules", "engine", "api", "front"]


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _target(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported module of the package: line of the first such import}."""
    modules = _modules()
    graph: dict[str, dict[str, int]] = {}
    for module, path in modules.items():
        edges = graph.setdefault(module, {})
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module if is_package else module.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        base = base.rpartition(".")[0]
                    source = base + ("." + node.module if node.module else "")
                else:
                    source = node.module or ""
                # `from fabric_lsp.x import y`: the submodule y when there is one, else x.
                names = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                         for alias in node.names]
            for name in names:
                if name == "fabric_lsp" or name.startswith("fabric_lsp."):
                    target = _target(name, modules)
                    if target is not None and target != module:
                        edges.setdefault(target, node.lineno)
    return graph


def layer_of(module: str) -> int | None:
    if module == "fabric_lsp":
        return LAYERS[module]
    best = max((prefix for prefix in LAYERS if prefix != "fabric_lsp" and (module == prefix or module.startswith(prefix + "."))),
               key=len, default=None)
    return LAYERS[best] if best is not None else None


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = counter
                    counter += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(graph[successor])))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_module_has_a_layer():
    unplaced = [module for module in import_graph() if layer_of(module) is None]
    assert not unplaced, f"modules without a layer (add them to LAYERS, with the reason): {unplaced}"


def test_no_import_circle():
    graph = import_graph()
    found = circles(graph)
    lines = []
    for component in found:
        lines.append(" <-> ".join(component))
        lines += [f"    {a} -> {b} (line {line})" for a in component for b, line in graph[a].items() if b in component]
    assert not found, "import circles:\n" + "\n".join(lines)


def test_no_import_from_a_lower_layer_to_a_higher_one():
    upward = []
    for module, edges in sorted(import_graph().items()):
        mine = layer_of(module)
        for target, line in sorted(edges.items()):
            theirs = layer_of(target)
            if mine is not None and theirs is not None and theirs > mine:
                upward.append(f"{module} ({NAMES[mine]}) -> {target} ({NAMES[theirs]}), line {line}")
    assert not upward, "imports against DESIGN.md's order:\n" + "\n".join(upward)


def test_the_walker_sees_function_level_and_type_checking_imports(tmp_path):
    # The test's own reading: an import inside a function and one under TYPE_CHECKING are edges.
    graph = import_graph()
    assert "fabric_lsp.sources.notebook" in graph["fabric_lsp.sources.walk"]  # inside _read_notebook
    assert "fabric_lsp.analysis.compat" in graph["fabric_lsp.sources.notebook"]  # inside _syntax_problem
    assert circles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]
