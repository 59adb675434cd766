"""FAB005 and how the project says its scripts are started: a README or shell script that starts a
script with `fabric run` / `lightning run model` (TinyLlama-style pretraining repositories) makes its
missing `launch()` right; a project that starts other scripts so gets a hint, not a warning."""
import json
import os
import subprocess
import sys
from pathlib import Path

from fabric_lsp.analysis.launch_docs import MAX_DOCUMENTS, launch_documents, scripts_in

SCRIPT = """import torch
import lightning as L

fabric = L.Fabric(accelerator="cuda", devices=8, strategy="fsdp")
model = fabric.setup(torch.nn.Linear(2, 2))
"""


def _check(folder: Path, *files: str) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "server"))
    done = subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--no-cache", "--hints", "--select", "FAB005",
                           "--output-format", "json", *files], cwd=folder, capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def _project(tmp_path: Path, readme: str | None) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pretrain").mkdir()
    (tmp_path / "pretrain" / "train.py").write_text(SCRIPT)
    if readme is not None:
        (tmp_path / "scripts").mkdir()
        (tmp_path / "scripts" / "pretrain.sh").write_text(readme)
    return tmp_path


def test_a_script_the_project_starts_with_fabric_run_needs_no_launch(tmp_path):
    folder = _project(tmp_path, "lightning run model \\\n    --devices=8 \\\n    pretrain/train.py --lr 1e-3\n")
    assert _check(folder, "pretrain/train.py") == []


def test_without_documents_the_missing_launch_is_a_warning(tmp_path):
    folder = _project(tmp_path, None)
    (finding,) = _check(folder, "pretrain/train.py")
    assert finding["code"] == "FAB005" and finding["severity"] == "warning"


def test_a_project_that_starts_other_scripts_with_fabric_run_gets_a_hint(tmp_path):
    folder = _project(tmp_path, "fabric run --devices=8 pretrain/other.py\n")
    (folder / "pretrain" / "other.py").write_text("print('other')\n")
    (finding,) = _check(folder, "pretrain/train.py")
    assert finding["severity"] == "hint" and "fabric run" in finding["message"]


def test_commands_of_a_repository_beside_ours_are_not_ours(tmp_path):
    """A folder without markers reads its parent's folders (a script folder of a repository whose README is
    one level up), but a folder there that is its own repository (`.git`) documents its own scripts.
    Found by CI at stop 32: a test's README beside another test's folder turned that test's warning into a hint."""
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.mkdir()
    (mine / "train.py").write_text(SCRIPT)
    theirs.mkdir()
    (theirs / "README.md").write_text("Start it with `fabric run --devices 2 other.py`.\n")
    (theirs / "other.py").write_text("print('other')\n")
    (finding,) = _check(mine, "train.py")
    assert finding["severity"] == "hint"  # one project: its README starts another of its scripts with the CLI
    (theirs / ".git").mkdir()
    (finding,) = _check(mine, "train.py")
    assert finding["severity"] == "warning"


def test_an_edited_readme_is_seen_by_the_cached_check(tmp_path):
    folder = _project(tmp_path, None)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "server"))
    command = [sys.executable, "-m", "fabric_lsp", "check", "--select", "FAB005", "--output-format", "json",
               "pretrain/train.py"]
    first = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=env, timeout=120)
    assert len(json.loads(first.stdout)) == 1
    (folder / "README.md").write_text("Start it with `fabric run --devices 8 pretrain/train.py`.\n")
    second = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=env, timeout=120)
    assert json.loads(second.stdout) == []


def test_commands_and_their_continued_lines():
    assert scripts_in("fabric run model --devices 2 \\\n  --num-nodes 1 \\\n  src/x/train_lm.py --a b\n") == {"src/x/train_lm.py"}
    assert scripts_in("Use `fabric run --devices 2 train.py`.\n") == {"train.py"}
    assert scripts_in("A file naming its `fabric run ... x.py` command\n") == {"x.py"}  # kept only if x.py exists
    assert scripts_in("the CLI: fabric run train.py in prose\n") == set()
    assert scripts_in("PL_DISABLE_UPGRADE_MESSAGE=1 lightning run model --devices=8 pretrain/a.py\n") == {"pretrain/a.py"}
    assert scripts_in("python train.py\n") == set()
    assert scripts_in("fabric run --devices 2\nthen python other.py\n") == set()


def test_the_documents_read_are_bounded(tmp_path, monkeypatch):
    # A hostile clone: thousands of folders and documents, some huge; the scan reads a bounded amount,
    # counted (not timed): at most MAX_DOCUMENTS documents, each read up to MAX_DOCUMENT_BYTES.
    from fabric_lsp.analysis import launch_docs

    reads = []
    read_text = launch_docs.read_text

    def counted(path, limit, *args, **kwargs):
        text = read_text(path, limit, *args, **kwargs)
        reads.append((limit, len(text or "")))
        return text

    monkeypatch.setattr(launch_docs, "read_text", counted)
    for index in range(60):
        sub = tmp_path / f"d{index:03}"
        sub.mkdir()
        for inner in range(40):
            (sub / f"r{inner:03}.md").write_text("x")
    (tmp_path / "README.md").write_bytes(b"fabric run " * 2_000_000)  # 22 MB
    found = launch_documents(str(tmp_path))
    assert len([p for p, _ in found.read if p.endswith(".md")]) <= MAX_DOCUMENTS
    assert 0 < len(reads) <= MAX_DOCUMENTS, len(reads)
    assert all(limit <= launch_docs.MAX_DOCUMENT_BYTES and size <= limit for limit, size in reads), reads[:5]


def test_a_huge_folder_is_listed_only_up_to_the_budget(tmp_path):
    from fabric_lsp.analysis import launch_docs

    for index in range(launch_docs.MAX_ENTRIES * 3):
        (tmp_path / f"n{index:05}.txt").write_text("")
    calls = []
    real = launch_docs.read_text
    launch_docs._cache.clear()
    try:
        launch_docs.read_text = lambda *a, **k: calls.append(a[0]) or real(*a, **k)
        launch_documents(str(tmp_path))
    finally:
        launch_docs.read_text = real
    assert len(calls) <= launch_docs.MAX_DOCUMENTS
