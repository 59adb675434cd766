#!/usr/bin/env python
"""Generate the library tables: what fabric-lsp knows about transformers, peft, timm, open_clip,
torchvision, diffusers and sentence-transformers without importing them.

The analysis never imports a library. For the methods it cannot follow by reading (transformers
dispatches ``generate`` through ``getattr(type(self), ...)``) and for answers without the library
installed, it reads ``server/fabric_lsp/analysis/libraries/data/<library>.json``, which this script
derives from the real libraries: each library's models are built on the CPU from small configs with
random weights (nothing is downloaded), a forward hook on every module tells which methods run a
module (FAB001), ownership of parameters/buffers without ``reset_parameters`` is read from the built
modules (FAB002), attribute kinds from the classes (FAB003/FAB004), what the factories return from
their registries; every public spelling is checked by importing it. See the ``notes`` of each JSON.

Run it with the interpreter that has the pinned libraries (``make .venv-libs``):

    .venv-libs/bin/python scripts/generate_library_tables.py                # (re)write every table
    .venv-libs/bin/python scripts/generate_library_tables.py --library timm # one table
    .venv-libs/bin/python scripts/generate_library_tables.py --check        # exit 1 if a table differs

Each library is described in a process of its own (two at a time by default); the same library
versions give the same bytes.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
REPO_ROOT = SCRIPTS.parent
DATA_DIR = REPO_ROOT / "server" / "fabric_lsp" / "analysis" / "libraries" / "data"
GENERATION_COMMAND = ".venv-libs/bin/python scripts/generate_library_tables.py"

sys.path.insert(0, str(SCRIPTS))
from library_tables import DISTRIBUTIONS, LIBRARIES  # noqa: E402

# The environment of each describing process: nothing from a hub (and no cache of the user's: a
# fresh HF_HOME), no GPU, one thread per process.
WORKER_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "CUDA_VISIBLE_DEVICES": "",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONWARNINGS": "ignore",
    "TRANSFORMERS_VERBOSITY": "error",
    "DIFFUSERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
}


# Most CPU time first (about 14, 13, 9, 7, 6, 5 and 5 s on this project's 2-core machine).
SCHEDULE = ["timm", "transformers", "diffusers", "sentence_transformers", "peft", "torchvision", "open_clip"]


def build_table(library: str) -> dict:
    """Describe one library (in this process: it imports the library and torch)."""
    import logging
    import warnings

    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)  # the libraries' advice and deprecation notices
    import torch

    torch.set_num_threads(1)
    from library_tables.common import NOTES, LibraryTables

    tables = LibraryTables(library)
    importlib.import_module(f"library_tables.{LIBRARIES[library]}").describe(tables)
    document = tables.build()
    for line in tables.log:
        print(f"{library}: {line}", file=sys.stderr)
    document.update(
        library=library,
        version=importlib.metadata.version(DISTRIBUTIONS[library]),
        torch_version=torch.__version__,
        generated_by=GENERATION_COMMAND,
        notes=NOTES,
    )
    return document


def _run_worker(library: str, output: Path) -> tuple[str, int, str, float]:
    env = dict(os.environ, **WORKER_ENV)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fabric-lsp-hf-home-") as home:
        env["HF_HOME"] = home
        env["TORCH_HOME"] = home
        result = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--worker", library, "--output", str(output)],
            capture_output=True,
            text=True,
            env=env,
        )
    return library, result.returncode, result.stderr, time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if a committed table differs")
    parser.add_argument(
        "--library", action="append", choices=sorted(LIBRARIES), help="only this library (repeatable)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="libraries described at once (default: %(default)s)")
    parser.add_argument("--output-dir", type=Path, default=DATA_DIR, help="where the tables are (default: %(default)s)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        from library_tables.common import render

        args.output.write_text(render(build_table(args.worker)), encoding="utf-8")
        return 0

    libraries = list(dict.fromkeys(args.library or LIBRARIES))
    # the longest first, so that two process slots finish together
    libraries.sort(key=lambda library: (SCHEDULE.index(library), library))
    failed = False
    stale = []
    with tempfile.TemporaryDirectory(prefix="fabric-lsp-tables-") as scratch:
        outputs = {library: Path(scratch) / f"{library}.json" for library in libraries}
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            runs = list(pool.map(lambda library: _run_worker(library, outputs[library]), libraries))
        for library, returncode, stderr, seconds in runs:
            if stderr.strip():
                print(stderr.rstrip(), file=sys.stderr)
            if returncode != 0:
                print(f"{library}: describing failed (exit {returncode})", file=sys.stderr)
                failed = True
                continue
            text = outputs[library].read_text(encoding="utf-8")
            document = json.loads(text)
            target = args.output_dir / f"{library}.json"
            print(
                f"{library} {document['version']}: {len(document['classes'])} classes, "
                f"{len(document['exports'])} exports, {len(document['factories'])} factories, "
                f"{len(text) // 1024} KiB, {seconds:.1f} s",
                file=sys.stderr,
            )
            if args.check:
                current = target.read_text(encoding="utf-8") if target.exists() else None
                if current != text:
                    stale.append(library)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    if failed:
        return 2
    if stale:
        print(f"out of date: {', '.join(stale)}; run: {GENERATION_COMMAND}", file=sys.stderr)
        return 1
    if args.check:
        print("library tables are up to date", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
