"""The CLI on hostile trees, beyond tests/test_cli.py (which covers undecodable, binary, NUL, a
file over a small max-file-size, self-links, directory loops and unreadable files): a 100k-line
file, a 50 MB file, special files that block when opened (a FIFO named *.py, as a checked file and
as an imported module), deep directory trees and link farms. Each gives a notice or a result, the
other files' findings stay intact, and the exit status follows the contract.

Every run is a child process with a timeout: a hang is a failure, not a stalled suite.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from robustness_support import CASES_DIR, SERVER_DIR, record_figure

CASE = CASES_DIR / "fab001_generate_ddp_literal.py"


def cli(argv, cwd: Path, timeout: float = 120) -> tuple[int, str, str, float]:
    env = {**os.environ, "PYTHONPATH": str(SERVER_DIR)}
    env.pop("VIRTUAL_ENV", None)
    started = time.perf_counter()
    completed = subprocess.run([sys.executable, "-m", "fabric_lsp", *map(str, argv)], cwd=cwd, env=env,
                               capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return completed.returncode, completed.stdout, completed.stderr, time.perf_counter() - started


def findings(out: str) -> list[tuple[str, str, int]]:
    return [(Path(i["filename"]).name, i["code"], i["location"]["row"]) for i in json.loads(out)]


def _case_finding() -> tuple[str, str, int]:
    line = next(i for i, text in enumerate(CASE.read_text(encoding="utf-8").splitlines(), 1) if "# expect: FAB001" in text)
    return ("case.py", "FAB001", line)


def test_100k_line_file_and_50mb_file(tmp_path):
    shutil.copy(CASE, tmp_path / "case.py")
    lines = CASE.read_text(encoding="utf-8") + "".join(f"value_{i} = {i}\n" for i in range(100_000))
    (tmp_path / "long.py").write_text(lines, encoding="utf-8")
    with open(tmp_path / "huge.py", "wb") as out:  # 50 MB; the size check must come before reading
        out.write(b"fabric.setup(model)\n" * (50 * 1024 * 1024 // 20))
    code, out, err, seconds = cli(["check", "--format", "json", "."], tmp_path, timeout=180)
    record_figure("cli_100k_lines_plus_50mb", round(seconds, 2))
    assert code == 1, err
    long_row = len(CASE.read_text(encoding="utf-8").splitlines()[: _case_finding()[2]])
    assert sorted(findings(out)) == sorted([_case_finding(), ("long.py", "FAB001", long_row)])
    assert err.splitlines() == [
        f"fabric-lsp: notice: huge.py: file is larger than max-file-size ({50 * 1024 * 1024} > {2 * 1024 * 1024} bytes)"
    ]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_named_like_a_python_file_gives_a_notice_instead_of_blocking(tmp_path):
    shutil.copy(CASE, tmp_path / "case.py")
    os.mkfifo(tmp_path / "pipe.py")
    code, out, err, _ = cli(["check", "--format", "json", "."], tmp_path, timeout=60)
    assert code == 1, err
    assert findings(out) == [_case_finding()]
    assert err.splitlines() == ["fabric-lsp: notice: pipe.py: not a regular file"]
    # named explicitly too
    code, out, err, _ = cli(["check", "--format", "json", "pipe.py", "case.py"], tmp_path, timeout=60)
    assert (code, findings(out)) == (1, [_case_finding()]), err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_as_an_imported_module_does_not_block_the_analysis(tmp_path):
    (tmp_path / "main.py").write_text(
        "import lightning as L\nfrom models import Net\n\nfabric = L.Fabric(strategy='ddp')\n"
        "model = fabric.setup(Net())\nmodel.generate(1)\n", encoding="utf-8")
    os.mkfifo(tmp_path / "models.py")
    code, out, err, _ = cli(["check", "--format", "json", "main.py"], tmp_path, timeout=60)
    assert code in (0, 1), err
    assert "Traceback" not in err
    # The class is unknown, so at most an uncertain finding.
    assert all(item["severity"] != "error" for item in json.loads(out))


def test_deep_directory_tree_and_a_farm_of_links(tmp_path):
    deep = tmp_path
    for level in range(200):  # deeper than any recursive walk's comfort, within PATH_MAX
        deep = deep / "d"
    deep.mkdir(parents=True)
    shutil.copy(CASE, deep / "case.py")
    farm = tmp_path / "farm"
    farm.mkdir()
    for i in range(300):  # many links to the same directory: walked once
        (farm / f"link{i}").symlink_to(tmp_path / "d", target_is_directory=True)
    code, out, err, seconds = cli(["check", "--format", "json", "."], tmp_path, timeout=120)
    record_figure("cli_deep_tree_and_link_farm", round(seconds, 2))
    assert code == 1, err
    assert findings(out) == [_case_finding()]
    assert "Traceback" not in err
