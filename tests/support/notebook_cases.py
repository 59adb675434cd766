"""Notebook fixtures (fixtures/notebooks/) for the ground-truth harness of support/cases.py.

A notebook case is `fixtures/notebooks/<name>.ipynb`, or a folder `<name>/` holding one notebook and
the `.py` modules it imports. Labels (`# expect: CODE SEVERITY [class=NAME]`) sit in code cells and
in the modules, as in fixtures/cases. The kernel runs the code cells in order, so the harness runs
them as one script: `main.py` is the notebook's joined code cells exactly as the checker analyses
them (fabric_lsp.sources.notebook: magics neutralised without moving a character), next to the modules. A
label's line in `main.py` maps back to its cell and line, which is what `check` must report.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from fabric_lsp.findings import Position
from fabric_lsp.sources.notebook import JoinedCells, read_notebook

from support.cases import Case, _parse_labels, discover_cases

NOTEBOOKS_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "notebooks"
# The workbench test's notebook (tests/editors/test_vscode.py asserts its finding there).
NOT_CASES = {"vscode"}


@dataclass(frozen=True)
class NotebookCase:
    name: str
    notebook: Path  # the .ipynb
    modules: tuple[Path, ...]  # .py files beside it (folder cases)

    @property
    def root(self) -> Path:
        return self.notebook.parent

    def joined(self, notebook: Path | None = None) -> JoinedCells:
        path = notebook or self.notebook
        return read_notebook(str(path), path.read_bytes()).joined()


def discover_notebook_cases(root: Path = NOTEBOOKS_DIR) -> list[NotebookCase]:
    cases = []
    for entry in sorted(root.iterdir()):
        if entry.name in NOT_CASES or entry.name.startswith((".", "_")):
            continue
        if entry.is_file() and entry.suffix == ".ipynb":
            cases.append(NotebookCase(entry.stem, entry, ()))
        elif entry.is_dir():
            notebooks = sorted(entry.glob("*.ipynb"))
            assert len(notebooks) == 1, f"{entry}: a notebook case folder holds exactly one notebook"
            cases.append(NotebookCase(entry.name, notebooks[0], tuple(sorted(entry.glob("*.py")))))
    return cases


def script_case(case: NotebookCase, workdir: Path, notebook: Path | None = None) -> Case:
    """The case as the ground-truth harness runs it: `<workdir>/<name>/main.py` (the joined cells of
    `notebook`, by default the case's own) beside copies of its modules (from `notebook`'s folder)."""
    folder = workdir / case.name
    folder.mkdir(parents=True)
    source = notebook or case.notebook
    (folder / "main.py").write_text(case.joined(source).text, encoding="utf-8")
    for module in sorted(source.parent.glob("*.py")) if case.modules else ():
        shutil.copy(module, folder / module.name)
    [found] = [c for c in discover_cases(workdir) if c.name == case.name]
    return found


def expected_findings(case: NotebookCase, script: Case) -> set[tuple]:
    """(file name, cell or None, row, code, severity) of every label: a label of main.py at the
    cell and cell line its joined line comes from."""
    joined = case.joined()
    expected = set()
    for label in script.labels:
        if label.file == "main.py":
            cell, inside = joined.to_cell(Position(label.line - 1, 0))
            expected.add((case.notebook.name, cell.number, inside.line + 1, label.code, label.severity))
        else:
            expected.add((label.file, None, label.line, label.code, label.severity))
    return expected


def label_view(case: NotebookCase) -> Case:
    """The case's labels without writing the script (for choosing its modes at collection time)."""
    labels, errors = _parse_labels("main.py", case.joined().text)
    for module in case.modules:
        more, more_errors = _parse_labels(module.name, module.read_text(encoding="utf-8"))
        labels += more
        errors += more_errors
    return Case(case.name, case.notebook, case.notebook, (), tuple(labels), None, tuple(errors))
