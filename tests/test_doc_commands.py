"""Every code block of README.md and docs/*.md works as written (issue 29, item 10; issue 37), or says here
why it cannot run on this machine. A block nobody classified fails `test_every_block_is_run_or_has_a_reason`.

Run here, as a new user would: the install block (the wheel built as written in a copy of the tree,
installed with pip into a new virtual environment, `fabric-lsp --version`); then, with that copy alone on
PATH, every `console` block of the README and of the getting-started page (each `$ command` run in a new
folder holding the files the document's ```python title="NAME" blocks give, its output compared with the
lines shown: `…` stands for any text, a line of `…` alone for any lines); `make demo` and `make docs` in a
copy of the repository's files (`make test` is what runs this test); the Python API examples (in a folder
holding the files they name); the `repo: local` pre-commit recipes (real `pre-commit run` with an installed
`fabric-lsp` on PATH); the TOML and JSON settings (parsed); the command-line synopses (every option they
list is one `--help` lists); and the `.vsix` recipe's paths (the file `code --install-extension` is given
is the one `npm run package` writes, from the folder the block's `cd` leaves you in). Elsewhere:
docs/ci.md's YAML by tests/test_ci_docs.py, the editors' snippets by tests/editors/.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from support.cli_runs import PROGRAM
from support.precommit import git

ROOT = Path(__file__).resolve().parent.parent
SERVER_DIR = ROOT / "server"
PRE_COMMIT = Path(sys.executable).with_name("pre-commit")
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Block:
    document: str
    line: int
    language: str
    text: str
    section: str
    title: str = ""  # ```python title="train.py": a file of the document's examples

    def __str__(self) -> str:
        return f"{self.document}:{self.line} ({self.language or 'plain'}, section {self.section!r})"


def blocks() -> list[Block]:
    found = []
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"^ *```(\w*)([^\n]*)\n(.*?)^ *```$", text, flags=re.S | re.M):
            before = text[: match.start()]
            sections = re.findall(r"^## (.+)$", before, flags=re.M)
            body = "\n".join(line[len(match.group(0)) - len(match.group(0).lstrip(" ")):]
                             for line in match.group(3).splitlines())
            title = re.search(r'title="([^"]+)"', match.group(2))
            found.append(Block(path.relative_to(ROOT).as_posix(), before.count("\n") + 1, match.group(1), body,
                               sections[-1] if sections else "", title[1] if title else ""))
    return found


def _first_word(block: Block) -> str:
    return block.text.split(None, 1)[0] if block.text.strip() else ""


# How each kind of block is exercised: a test of this file, another test, or why it cannot run here.
def classify(block: Block) -> tuple[str, str]:
    if block.language == "yaml" and "repo: local" in block.text:
        return "run", "pre-commit"
    if block.document == "docs/ci.md" and block.language == "yaml":
        return "elsewhere", "tests/test_ci_docs.py parses it and runs its install line and fabric-lsp commands"
    if (block.document == "docs/editors.md" and block.section != "VS Code") or block.language in ("lua", "elisp"):
        return "elsewhere", ("an editor's configuration: tests/editors/test_readme_editors.py parses those of "
                             "docs/editors.md, tests/editors/test_neovim.py runs its Neovim snippets in Neovim "
                             "0.11; Helix, Zed and Emacs are not installed here")
    if block.language == "console":
        return "run", "console"
    if block.language == "python" and block.title:
        return "run", "file"
    if block.language == "text" and block.document == "docs/index.md":
        return "not run", "an excerpt of the README's finding, whose full output test_console_blocks compares"
    if block.language == "toml":
        return "run", "parsed"
    if block.language == "json":
        return "run", "parsed"
    if block.language == "python":
        return "run", "python"
    if block.language == "yaml" and "repos:" in block.text:
        return "not run", ("names the fabric-lsp repository's address, which it does not have yet; "
                           "tests/test_precommit.py runs this hook definition with `pre-commit try-repo`")
    if block.language == "":
        first = _first_word(block)
        if "pip wheel" in block.text:
            return "run", "install"
        if first == "pipx":
            return "not run", ("pipx installs into the user's own pipx home; the README's install block is run "
                               "with pip into a new virtual environment")
        if first == "make":
            return "run", "make"
        if first == "fabric-lsp" and "[PATH" in block.text:
            return "run", "synopsis"
        if first == "cd" and ".vsix" in block.text:
            return "not run", ("`npm ci` and `vsce package` need minutes and the npm registry and `code` is not "
                               "installed (tests/editors/test_vscode.py builds and loads the .vsix); its paths "
                               "are checked by test_vsix_recipe_paths")
        if first not in COMMANDS:
            return "not run", "output shown as an example (what a command prints), not commands"
    return "unclassified", ""


# The first words of a block of commands; a plain block starting otherwise shows output.
COMMANDS = {"python", "python3", "pip", "pipx", "uv", "make", "cd", "fabric-lsp", "npm", "code", "git", "pre-commit",
            "ruff", "nvim", "export", "source", "sudo", "apt-get"}


def test_every_block_is_run_or_has_a_reason():
    found = blocks()
    assert len(found) >= 20
    unclassified = [str(block) for block in found if classify(block)[0] == "unclassified"]
    assert unclassified == [], "classify these blocks in tests/test_doc_commands.py"


def _of(kind: str) -> list[Block]:
    return [block for block in blocks() if classify(block) == ("run", kind)]


def test_settings_blocks_parse():
    tomllib = pytest.importorskip("tomllib", reason="Python 3.10 has no tomllib")
    for block in _of("parsed"):
        if block.language == "toml":
            tomllib.loads(block.text)
        else:
            text = block.text.strip()
            json.loads(text if text.startswith(("{", "[")) else "{" + text + "}")
    assert any("external" in block.text for block in _of("parsed"))  # ruff users keep the FAB codes


def _help(*argv: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(SERVER_DIR)}
    return subprocess.run([sys.executable, "-m", "fabric_lsp", *argv, "--help"], env=env, capture_output=True,
                          text=True, timeout=120).stdout


def test_synopses_list_only_real_options():
    helps = {command: _help(command) for command in ("check", "explain", "rules", "serve")}
    synopses = _of("synopsis")
    assert synopses
    for block in synopses:
        command = None
        for line in block.text.splitlines():
            if line.startswith("fabric-lsp "):
                command = line.split()[1]
            for option in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", line):
                assert option in helps[command] or option == "--stdio" and command == "serve", (block, option)


def _sandbox(tmp_path: Path) -> Path:
    """A project with the files the examples name: train.py (a FAB001), src/model.py."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (project / "train.py").write_text(PROGRAM)
    (project / "src" / "model.py").write_text(PROGRAM.split("fabric = ")[0] + "model = LM()\n")
    return project


@pytest.mark.parametrize("block", _of("python"), ids=str)
def test_python_examples_run(block, tmp_path):
    project = _sandbox(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(SERVER_DIR)}
    result = subprocess.run([sys.executable, "-c", block.text], cwd=project, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "FAB001" in result.stdout  # the example prints the findings of train.py


@pytest.mark.parametrize("block", _of("pre-commit"), ids=str)
def test_local_pre_commit_recipes_run(block, tmp_path):
    """The recipe as written, in a repository, with `fabric-lsp` installed on PATH (a launcher of this
    tree's package, as pipx's is of the installed one): the commit of a FAB001 fails, the fixed file passes."""
    project = _sandbox(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "fabric-lsp"
    launcher.write_text(f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(SERVER_DIR))} exec "
                        f"{shlex.quote(sys.executable)} -m fabric_lsp \"$@\"\n")
    launcher.chmod(0o755)
    (project / ".pre-commit-config.yaml").write_text(block.text)
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
               GIT_CONFIG_GLOBAL=os.devnull)
    failed = subprocess.run([str(PRE_COMMIT), "run", "--all-files"], cwd=project, env=env, capture_output=True,
                            text=True, timeout=300)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "FAB001" in failed.stdout and "train.py" in failed.stdout
    fixed = subprocess.run([str(launcher), "check", "--fix", "--no-cache", "."], cwd=project, env=env,
                           capture_output=True, text=True, timeout=300)
    assert fixed.returncode in (0, 1), fixed.stderr
    for path in (project / "train.py", project / "src" / "model.py"):
        path.write_text(path.read_text().replace("model.mark_forward_method(model.generate)",
                                                 'model.mark_forward_method("generate")'))
    git(project, "add", "-A")
    passed = subprocess.run([str(PRE_COMMIT), "run", "--all-files"], cwd=project, env=env, capture_output=True,
                            text=True, timeout=300)
    assert passed.returncode == 0, passed.stdout + passed.stderr


def test_vsix_recipe_paths():
    (block,) = [b for b in blocks() if b.language == "" and _first_word(b) == "cd" and ".vsix" in b.text]
    folder = ROOT
    installed = None
    for line in block.text.splitlines():
        command = line.split("#", 1)[0]
        for part in command.split("&&"):
            argv = shlex.split(part)
            if argv[:1] == ["cd"]:
                folder = (folder / argv[1]).resolve()
            elif argv[:2] == ["npm", "run"]:
                scripts = json.loads((folder / "package.json").read_text())["scripts"]
                assert argv[2] in scripts, argv
                package_script = (folder / scripts[argv[2]].split()[-1]).read_text()
                assert '"fabric-lsp.vsix"' in package_script or "fabric-lsp.vsix" in package_script
            elif argv[:2] == ["code", "--install-extension"]:
                installed = folder / argv[2]
    assert installed == ROOT / "vscode-client" / "fabric-lsp.vsix", installed


def _install_block() -> Block:
    """The install block: the README's and the getting-started page's are the same text (run once)."""
    found = _of("install")
    assert {block.document for block in found} >= {"README.md", "docs/getting-started.md"}, found
    assert len({block.text for block in found}) == 1, "README.md and docs/getting-started.md install differently"
    return found[0]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """The install block, line by line: the wheel built in a copy of the tree as written, then
    `python -m pip install dist/<wheel>` into a new virtual environment (the active one) and
    `fabric-lsp --version` with that copy alone. pipx and uv lines: not installed here (said below)."""
    block = _install_block()
    tmp_path = tmp_path_factory.mktemp("install")
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "LICENSE", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "docs", source / "docs")
    shutil.copytree(ROOT / "server", source / "server", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH",)}
    env.update(VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}")
    ran, versions = [], []
    for line in block.text.splitlines():
        command = line.split("#", 1)[0].strip()
        if not command:
            continue
        argv = shlex.split(command)
        if argv[0] in ("pipx", "uv") and shutil.which(argv[0]) is None:
            continue  # not installed on this machine
        if argv[0] in ("pipx", "uv"):
            continue  # would install into the user's own tool folder
        if argv[0] == "python":
            argv[0] = str(venv / "bin" / "python")  # `python` of the active environment
        if argv[:3] == [str(venv / "bin" / "python"), "-m", "pip"]:
            argv.append("--quiet")
        result = subprocess.run(argv, cwd=source, env=env, capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, (command, result.stderr[-2000:])
        ran.append(command)
        if argv[0] == "fabric-lsp":
            versions.append(result.stdout.strip())
    return {"venv": venv, "env": env, "ran": ran, "versions": versions}


def test_install_block_builds_and_installs_the_wheel(installed):
    ran = installed["ran"]
    assert [c.split()[0] for c in ran][-1] == "fabric-lsp" and any("pip install dist/" in c for c in ran), ran
    assert installed["versions"] == ["fabric-lsp 0.1.0"]


def _files(document: str, tmp_path: Path) -> Path:
    """A new folder holding the files the document's ```python title="NAME" blocks give."""
    folder = tmp_path / "project"
    folder.mkdir()
    for block in _of("file"):
        if block.document == document:
            (folder / block.title).write_text(block.text + "\n", encoding="utf-8")
    return folder


def _commands(block: Block) -> list[tuple[str, list[str]]]:
    """(command, the output lines shown after it) for each `$ command` of a console block."""
    steps: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"{block}: output before the first `$ ` command"
            steps[-1][1].append(line)
    return steps


def _matches(shown: list[str], actual: list[str]) -> bool:
    """The lines shown equal the actual lines; `…` in a line stands for any text, a line `…` for any lines."""
    pattern = "".join(r"(?:.*\n)*" if line == "…" else ".*".join(map(re.escape, line.split("…"))) + r"\n"
                      for line in shown)
    return re.fullmatch(pattern, "".join(line + "\n" for line in actual)) is not None


CONSOLE_DOCUMENTS = ["README.md", "docs/getting-started.md"]


@pytest.mark.parametrize("document", CONSOLE_DOCUMENTS)
def test_console_blocks(document, installed, tmp_path):
    """Each `$ command` of the document's console blocks, in order, in one folder (a fix changes what the next
    command sees), with the installed copy on PATH: its output is what the document shows."""
    consoles = [block for block in _of("console") if block.document == document]
    assert consoles, document
    project = _files(document, tmp_path)
    assert any(project.iterdir()), f"{document} gives no file for its commands"
    env = {**installed["env"], "NO_COLOR": "1", "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "FABRIC_LSP_USER_CONFIG": os.devnull, "HOME": str(tmp_path / "home")}
    env.pop("FORCE_COLOR", None)
    for block in consoles:
        for command, shown in _commands(block):
            assert shlex.split(command)[0] == "fabric-lsp", command  # the installed copy, found on PATH
            result = subprocess.run(["bash", "-c", command], cwd=project, env=env, capture_output=True, text=True,
                                    timeout=300)
            assert result.returncode in (0, 1), (command, result.stderr[-2000:])
            actual = (result.stdout + result.stderr).rstrip("\n").splitlines()
            assert _matches(shown, actual), f"{block}: `{command}` printed:\n" + "\n".join(actual)


def test_console_blocks_cover_the_fix():
    """The README's finding is shown with its fix, and the getting-started page ends clean."""
    readme = " ".join(block.text for block in _of("console") if block.document == "README.md")
    assert "FAB001" in readme and "--fix" in readme and "mark_forward_method" in readme
    started = [block.text for block in _of("console") if block.document == "docs/getting-started.md"]
    assert any("All checks passed!" in text for text in started)


def _repository_copy(tmp_path: Path) -> Path:
    """The repository's files (tracked, and new ones not ignored) in a new folder: what a clone holds."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    copy = tmp_path / "clone"
    for name in filter(None, listed):
        source = ROOT / name
        if not os.path.lexists(source):
            continue  # deleted in the work tree
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        elif source.is_file():
            shutil.copy2(source, target)
    return copy


def test_make_blocks_run_in_a_fresh_copy(tmp_path):
    """The README's `make demo` in a copy of the repository, as a newcomer runs it after cloning (it makes its
    own .venv), then `make docs` there: the site builds with `mkdocs build --strict` and says no warning.
    `make test` is what runs this test; it is not run again here."""
    (block,) = _of("make")
    targets = [shlex.split(line.split("#", 1)[0])[1:] for line in block.text.splitlines() if line.strip()]
    assert targets == [["demo"], ["test"]], targets
    copy = _repository_copy(tmp_path)
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV", "MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    demo = subprocess.run(["make", "demo"], cwd=copy, env=env, capture_output=True, text=True, timeout=900)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert "FAB001" in demo.stdout and "== fabric-lsp explain FAB001" in demo.stdout
    docs = subprocess.run(["make", "docs"], cwd=copy, env=env, capture_output=True, text=True, timeout=900)
    assert docs.returncode == 0, docs.stdout[-2000:] + docs.stderr[-2000:]
    log = docs.stdout + docs.stderr
    # MkDocs' own lines (pip's set-up lines before them are not the site's).
    warnings = [line for line in log.splitlines() if re.match(r"^(WARNING|ERROR)\s+-", line)]
    assert warnings == [] and "Documentation built" in log, log[-3000:]
    assert (copy / "site" / "index.html").is_file() and (copy / "site" / "rules" / "FAB001" / "index.html").is_file()
