"""The real-code corpus of `make bench` (issue 12), built from the package index only.

    ~/.cache/fabric-lsp-bench/real/lightning-litgpt/   lightning 2.6.6 and litgpt 0.5.13 as they
                                    install (the packages of the two wheels, without .dist-info)
    ~/.cache/fabric-lsp-bench/real/torch/   the .py files of the torch package installed in the
                                    interpreter running the bench (a large tree with almost no
                                    Fabric code)

($XDG_CACHE_HOME instead of ~/.cache when it is set.) Not under the repository: there the trees
would belong to fabric-lsp's own project (the folder of the nearest pyproject.toml or .git).

The wheels are downloaded by pip (`pip download --no-deps`), which checks each file against the
sha256 the index publishes for it; nothing else is fetched. Built once; `--rebuild` starts over.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

# Outside the repository: a tree inside it would be part of fabric-lsp's own project (the nearest
# pyproject.toml or .git above a file is its project root), not a tree as it installs.
REAL = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fabric-lsp-bench" / "real"
WHEELS = {"lightning": "2.6.6", "litgpt": "0.5.13"}


def lightning_litgpt(rebuild: bool = False) -> Path:
    tree = REAL / "lightning-litgpt"
    if tree.exists() and not rebuild:
        return tree
    wheels = REAL / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    wanted = [f"{name}=={version}" for name, version in WHEELS.items()]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "--dest", str(wheels),
         *wanted],
        check=True,
    )
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    for name, version in WHEELS.items():
        [wheel] = wheels.glob(f"{name}-{version}-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                top = member.split("/", 1)[0]
                if top == name:  # the package itself, not its .dist-info
                    archive.extract(member, tree)
    return tree


def torch_tree(rebuild: bool = False) -> Path:
    tree = REAL / "torch"
    if tree.exists() and not rebuild:
        return tree
    spec = importlib.util.find_spec("torch")  # located, not imported
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("torch is not installed in this interpreter (make bench installs the test dependencies)")
    package = Path(list(spec.submodule_search_locations)[0])
    if tree.exists():
        shutil.rmtree(tree)
    for source in sorted(package.rglob("*.py")):
        target = tree / "torch" / source.relative_to(package)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return tree


def python_files(tree: Path) -> list[Path]:
    return sorted(tree.rglob("*.py"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args(argv)
    for tree in (lightning_litgpt(args.rebuild), torch_tree(args.rebuild)):
        print(f"{tree}: {len(python_files(tree))} Python files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
