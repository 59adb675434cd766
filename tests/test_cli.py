"""`fabric-lsp` on the command line: options, exit status, file discovery and reading, fixes.

Tests marked "needs the engine" in their docstring check real findings on fixtures/cases; they
fail while `fabric_lsp.engine.check_source` is the placeholder that returns [].
"""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import fabric_lsp
from fabric_lsp.checking import check_files
from fabric_lsp.cli import main
from fabric_lsp.cli.fixing import fix_findings
from fabric_lsp.cli.output import exit_status
from fabric_lsp.settings.config import Config
from fabric_lsp.findings import Applicability, Finding, Fix, Position, Severity, Span, TextEdit
from fabric_lsp.records import RULES, default_records
from fabric_lsp.records.pages import page_url
from fabric_lsp.sources.walk import decode_source, discover, read_source

from support.cases import discover_cases

ROOT = Path(__file__).resolve().parent.parent
CASES_DIR = ROOT / "fixtures" / "cases"
SERVER_DIR = ROOT / "server"

CLEAN_SOURCE = "from lightning.fabric import Fabric\n\nfabric = Fabric(accelerator='cpu')\n"


def run(argv, cwd: Path, monkeypatch, capsys) -> tuple[int, str, str]:
    """`fabric-lsp ARGV` in-process, in `cwd`."""
    monkeypatch.chdir(cwd)
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_process(argv, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    """`python -m fabric_lsp ARGV` as a separate process, as users run it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SERVER_DIR), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "fabric_lsp", *map(str, argv)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120, **kwargs,
    )


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# --- the command and its usage errors --------------------------------------------------------


def test_version(tmp_path):
    result = run_process(["--version"], tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == f"fabric-lsp {fabric_lsp.__version__}"


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "a command is required"),
        (["lint"], "unknown command 'lint'"),
        (["check", "--format", "xml"], "invalid choice: 'xml'"),
        (["check", "--bogus"], "unrecognized arguments: --bogus"),
        (["check", "--select", "FAB001,FAB123"], "--select: unknown rule code 'FAB123'"),
        (["check", "--ignore", "E501"], "--ignore: unknown rule code 'E501'"),
        (["check", "--python", "no/such/python"], "--python: no interpreter at"),
        (["check", "--config", "nope.toml"], "--config: nope.toml: no such file"),
        (["check", "--jobs", "-1"], "--jobs: expected 0 (automatic) or a positive number"),
    ],
)
def test_usage_errors_exit_2(tmp_path, monkeypatch, capsys, argv, message):
    write(tmp_path / "ok.py", CLEAN_SOURCE)
    code, out, err = run(argv, tmp_path, monkeypatch, capsys)
    assert code == 2
    assert message in err
    assert out == ""


def test_usage_error_even_with_exit_zero(tmp_path, monkeypatch, capsys):
    code, _, err = run(["check", "--exit-zero", "--select", "NOPE"], tmp_path, monkeypatch, capsys)
    assert code == 2 and "unknown rule code 'NOPE'" in err


def test_clean_tree_passes_in_every_format(tmp_path, monkeypatch, capsys):
    write(tmp_path / "train.py", CLEAN_SOURCE)
    write(tmp_path / "pkg" / "util.py", "def helper():\n    return 1\n")
    assert run(["check"], tmp_path, monkeypatch, capsys) == (0, "All checks passed!\n", "")
    code, out, _ = run(["check", "--format", "json"], tmp_path, monkeypatch, capsys)
    assert code == 0 and json.loads(out) == []
    code, out, _ = run(["check", "--format", "sarif", "."], tmp_path, monkeypatch, capsys)
    assert code == 0 and json.loads(out)["runs"][0]["results"] == []
    assert run(["check", "--format", "github", "train.py"], tmp_path, monkeypatch, capsys) == (0, "", "")


# --- exit status ------------------------------------------------------------------------------


def finding(path: str, severity: Severity, code: str = "FAB001", fix: Fix | None = None, line: int = 0) -> Finding:
    return Finding(code, severity, Span(path, Position(line, 0), Position(line, 1)), "message", "af391673c4dd180e", fix=fix)


def test_exit_status_contract():
    error, warning = finding("/a.py", Severity.ERROR), finding("/a.py", Severity.WARNING)
    information, hint = finding("/a.py", Severity.INFORMATION), finding("/a.py", Severity.HINT)
    assert exit_status([], failed=False, exit_zero=False) == 0
    assert exit_status([hint, information], failed=False, exit_zero=False) == 0
    assert exit_status([warning], failed=False, exit_zero=False) == 1
    assert exit_status([hint, error], failed=False, exit_zero=False) == 1
    assert exit_status([error], failed=False, exit_zero=True) == 0
    assert exit_status([], failed=True, exit_zero=True) == 2
    assert exit_status([error], failed=True, exit_zero=False) == 2


# --- discovery ----------------------------------------------------------------------------------


def test_discovery_skips_environments_builds_and_hidden_folders(tmp_path):
    keep = [write(tmp_path / "train.py", ""), write(tmp_path / "pkg" / "model.py", "")]
    for skipped in (".venv", "venv", "site-packages", "node_modules", "build", "dist", "__pycache__", ".git", ".tox"):
        write(tmp_path / skipped / "x.py", "")
        write(tmp_path / "pkg" / skipped / "y.py", "")
    write(tmp_path / "notes.txt", "")
    write(tmp_path / "stub.pyi", "")
    files, notices = discover([str(tmp_path)])
    assert files == sorted(str(p) for p in keep)
    assert notices == []


def test_explicit_arguments_are_always_checked(tmp_path):
    venv_file = write(tmp_path / ".venv" / "x.py", "")
    script = write(tmp_path / "bin" / "run-training", "")
    excluded = write(tmp_path / "legacy" / "old.py", "")
    files, _ = discover([str(venv_file), str(script), str(excluded)], exclude=["legacy/"], root=str(tmp_path))
    assert files == sorted(map(str, [venv_file, script, excluded]))
    # An explicitly named skipped directory is walked too (its own subfolders are still filtered).
    write(tmp_path / "build" / "gen.py", "")
    files, _ = discover([str(tmp_path / "build")])
    assert files == [str(tmp_path / "build" / "gen.py")]


@pytest.mark.parametrize(
    "pattern, excluded",
    [
        ("legacy/", {"legacy/a.py", "legacy/sub/b.py", "src/legacy/c.py"}),
        ("*_generated.py", {"src/x_generated.py"}),
        ("/src/legacy", {"src/legacy/c.py"}),
        ("src/**/deep.py", {"src/deep.py", "src/one/two/deep.py"}),
        ("src/*.py", {"src/x_generated.py", "src/deep.py", "src/main.py"}),
        ("tests/test_?.py", {"tests/test_a.py"}),
    ],
)
def test_exclude_globs(tmp_path, pattern, excluded):
    everything = {"legacy/a.py", "legacy/sub/b.py", "src/legacy/c.py", "src/x_generated.py", "src/deep.py",
                  "src/one/two/deep.py", "src/main.py", "tests/test_a.py", "tests/test_ab.py"}
    for name in everything:
        write(tmp_path / name, "")
    files, _ = discover([str(tmp_path)], exclude=[pattern], root=str(tmp_path))
    assert {Path(f).relative_to(tmp_path).as_posix() for f in files} == everything - excluded


def test_links_to_folders_are_not_followed_but_a_named_one_is(tmp_path):
    # As ruff: a link to a folder met in the walk is not followed, inside the tree or out of it
    # (so a loop cannot start); a link to a file is checked; a linked folder named by the user is walked.
    write(tmp_path / "real" / "a.py", "")
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    (tmp_path / "real" / "loop").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "b.py").symlink_to(tmp_path / "real" / "a.py")
    files, notices = discover([str(tmp_path)])
    assert files == [str(tmp_path / "b.py")]  # a.py once (found as b.py first: its real path is the same)
    assert notices == []
    files, notices = discover([str(tmp_path / "alias")])
    assert files == [str(tmp_path / "alias" / "a.py")] and notices == []


def test_nonexistent_path_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        discover([str(tmp_path / "nope")])


# --- reading ------------------------------------------------------------------------------------


def test_pep263_cookie_bom_and_utf8(tmp_path):
    latin = write(tmp_path / "latin.py", "# -*- coding: latin-1 -*-\nname = 'Fabric café'\n".encode("latin-1"))
    source, notice = read_source(str(latin), 10_000)
    assert notice is None and source.encoding == "iso-8859-1" and "Fabric café" in source.text
    bom = write(tmp_path / "bom.py", "\ufeffx = 'fabric ✓'\r\n".encode("utf-8"))
    source, notice = read_source(str(bom), 10_000)
    assert notice is None and source.encoding == "utf-8-sig" and source.text == "x = 'fabric ✓'\r\n"


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"fabric = '\xff\xfe'\n", "cannot decode as utf-8: invalid byte 0xff at offset 10"),
        (b"\x00\x01fabric\x00", "binary file (contains NUL bytes)"),
        (b"# coding: klingon\nfabric = 1\n", "cannot decode: unknown encoding: klingon"),
    ],
)
def test_undecodable_sources_give_a_reason(data, reason):
    source, notice = decode_source("/x.py", data)
    assert source is None and notice.reason == reason


def _hostile_tree(root: Path) -> dict[str, str]:
    """Files that cannot be checked, each with the notice it must produce (path relative to root)."""
    write(root / "pyproject.toml", "[tool.fabric-lsp]\nmax-file-size = 4096\n")
    write(root / "clean.py", CLEAN_SOURCE)
    write(root / "latin1_no_cookie.py", b"fabric = 'caf\xe9'\n")
    write(root / "binary.py", b"fabric\x00\x00\x01\x02")
    write(root / "big.py", "# fabric\n" + "x = 1\n" * 2000)
    (root / "loop.py").symlink_to("loop.py")  # a link to itself
    (root / "pkg").mkdir()
    (root / "pkg" / "up").symlink_to("..", target_is_directory=True)  # a directory loop: not followed, no notice
    expected = {
        "latin1_no_cookie.py": "cannot decode as utf-8: invalid byte 0xe9 at offset 13",
        "binary.py": "binary file (contains NUL bytes)",
        "big.py": "file is larger than max-file-size (12009 > 4096 bytes)",
        "loop.py": "cannot read: symbolic link loop",
    }
    if sys.platform.startswith("linux") and os.path.exists("/proc/self/mem"):
        # Reading /proc/self/mem at offset 0 fails with EIO: an unreadable file even for root.
        (root / "unreadable_proc.py").symlink_to("/proc/self/mem")
        expected["unreadable_proc.py"] = "cannot read: Input/output error"
    if os.geteuid() != 0:  # root reads files whatever their mode
        locked = write(root / "locked.py", CLEAN_SOURCE)
        locked.chmod(0)
        expected["locked.py"] = "cannot read: permission denied"
    return expected


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_hostile_files_each_give_one_notice_and_the_run_goes_on(tmp_path, monkeypatch, capsys, jobs):
    expected = _hostile_tree(tmp_path)
    code, out, err = run(["check", "--jobs", jobs], tmp_path, monkeypatch, capsys)
    assert code == 0
    assert out == "All checks passed!\n"
    assert sorted(err.splitlines()) == sorted(f"fabric-lsp: notice: {path}: {reason}" for path, reason in expected.items())


@pytest.fixture
def shared_tmp():
    """A temporary folder other users can enter (pytest's tmp_path is private to its owner)."""
    folder = Path(tempfile.mkdtemp(prefix="fabric-lsp-test-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_unreadable_file_for_a_normal_user(shared_tmp):
    """chmod 000 only bites a user who is not root: when we are root, run the CLI as `nobody`."""
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: cannot drop privileges to make chmod 000 bite")
    tree = Path(os.path.realpath(shared_tmp))
    write(tree / "clean.py", CLEAN_SOURCE)
    locked = write(tree / "locked.py", CLEAN_SOURCE)
    locked.chmod(0)
    argv = [sys.executable, "-m", "fabric_lsp", "check", "."]
    if os.geteuid() == 0:
        # nobody must be able to enter the tree, the package and the interpreter's folders.
        interpreter = Path(sys.executable).parent
        for folder in {tree, *tree.parents, SERVER_DIR, *SERVER_DIR.parents, interpreter, *interpreter.parents}:
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                pytest.skip(f"{folder} is not enterable by other users")
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    # The user config that `nobody` can reach (none): the session's lives in a folder only we can enter.
    # Likewise the cache secret: a folder of `nobody`'s own (the session's is private to us).
    secret_dir = tree / "cache-secret"
    secret_dir.mkdir(mode=0o700)
    if os.geteuid() == 0:
        os.chown(secret_dir, 65534, 65534)
    env = {**os.environ, "PYTHONPATH": str(SERVER_DIR), "HOME": str(tree),
           "FABRIC_LSP_USER_CONFIG": str(tree / "no-user-config.toml"), "FABRIC_LSP_CACHE_SECRET_DIR": str(secret_dir)}
    result = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "All checks passed!\n"
    assert result.stderr == "fabric-lsp: notice: locked.py: cannot read: permission denied\n"


# --- configuration through the command line ------------------------------------------------------


@pytest.mark.parametrize("settings, line, problem", [
    ('[tool.fabric-lsp]\nselect = ["FAB404"]\nexclude = ["skipme.py"]\n', 2,
     "select: unknown rule code 'FAB404' (did you mean 'FAB004'?)"),
    ('[tool.fabric-lsp]\nexclude = ["skipme.py"]\nselect = ["FAB002", "FAB01"]\n', 3,
     "select: unknown rule code 'FAB01' (did you mean 'FAB001'?)"),
    ('[tool.fabric-lsp]\nexclude = ["skipme.py"]\nspeed = 3\n', 3, "speed: unknown key (known keys: select, "
     "ignore, severity, python, exclude, extend-records, hints, max-file-size, include, extend-include, notebooks, "
     "extend-select, per-file-ignores, extend-exclude, respect-gitignore, docs-url)"),
    ('[tool.fabric-lsp]\nexclude = ["skipme.py"]\nselct = ["FAB003"]\n', 3,
     'selct: unknown key (did you mean "select"?)'),
    ('[project]\nname = "p"\n[tool.fabric_lsp]\nselect = ["FAB003"]\n', 3,
     '[tool.fabric_lsp]: unknown table (did you mean "[tool.fabric-lsp]"?); its settings are not used'),
    ('[tool.fabric-lsp]\nselect = ["FAB003"\nhints = true\n', 3, "invalid TOML: Unclosed array (at line 3, column 1)"),
], ids=["unknown-code", "one-bad-entry", "unknown-key", "misspelt-key", "misspelt-table", "broken-toml"])
def test_config_mistakes_stop_the_run_with_status_2(tmp_path, settings, line, problem):
    """Issue 29 item 2, as ruff: a mistake in a settings file is status 2 with the file, line, key and a
    "did you mean", and nothing is checked with settings other than those written (no default widening
    the run, no "All checks passed!")."""
    write(tmp_path / "pyproject.toml", settings)
    write(tmp_path / "skipme.py", b"fabric\x00")  # excluded: would give a notice if read
    write(tmp_path / "train.py", (CASES_DIR / "fab001_generate_ddp_literal.py").read_text())
    for argv in (["check", "--no-cache"], ["check", "--no-cache", "--format", "sarif", "train.py"],
                 ["check", "--no-cache", "--stdin-filename", "train.py", "-"]):
        result = run_process(argv, tmp_path, input="x = 1\n")
        assert result.returncode == 2 and result.stdout == "", (argv, result.stdout)
        assert result.stderr.splitlines() == [f"fabric-lsp: config error: {tmp_path / 'pyproject.toml'}:{line}: {problem}"]


def test_explicit_config_file_replaces_pyproject(tmp_path, monkeypatch, capsys):
    write(tmp_path / "pyproject.toml", "[tool.fabric-lsp]\nmax-file-size = 10\n")
    write(tmp_path / "ci.toml", "max-file-size = 100000\n")
    write(tmp_path / "ok.py", CLEAN_SOURCE)
    code, _, err = run(["check"], tmp_path, monkeypatch, capsys)
    assert code == 0 and "file is larger than max-file-size" in err
    code, _, err = run(["check", "--config", "ci.toml"], tmp_path, monkeypatch, capsys)
    assert code == 0 and err == ""


# --- parallel checking ----------------------------------------------------------------------------


def test_parallel_and_serial_results_agree_and_keep_order(tmp_path):
    paths = []
    for index in range(6):
        paths.append(str(write(tmp_path / f"m{index}.py", CLEAN_SOURCE)))
    paths.insert(3, str(write(tmp_path / "bin.py", b"fabric\x00")))
    serial = check_files(paths, Config(), jobs=1)
    parallel = check_files(paths, Config(), jobs=2)
    assert [r.path for r in serial] == paths == [r.path for r in parallel]
    assert serial == parallel
    assert [r.notice.reason for r in parallel if r.notice] == ["binary file (contains NUL bytes)"]


# --- fixes on real files (findings built by hand) ---------------------------------------------------


def insert_fix(path: Path, line: int, column: int, text: str, applicability=Applicability.SAFE) -> Fix:
    return Fix("insert", applicability, (TextEdit(str(path), Position(line, column), Position(line, column), text),))


def test_fix_writes_files_keeping_encoding_bom_line_endings_and_mode(tmp_path):
    crlf = write(tmp_path / "crlf.py", b"model = fabric.setup(model)\r\nout = model.generate(x)\r\n")
    crlf.chmod(0o751)
    bom = write(tmp_path / "bom.py", "\ufeffmodel = fabric.setup(model)\n".encode("utf-8"))
    latin = write(tmp_path / "latin.py", "# coding: latin-1\n# café\nfabric = 1\n".encode("latin-1"))
    findings = [
        finding(str(crlf), Severity.ERROR, fix=insert_fix(crlf, 0, 27, '\nmodel.mark_forward_method("generate")')),
        finding(str(bom), Severity.ERROR, fix=insert_fix(bom, 0, 27, "\nx = 1")),
        finding(str(latin), Severity.ERROR, fix=insert_fix(latin, 2, 0, "# déjà\n")),
    ]
    outcome = fix_findings(findings, unsafe_fixes=False, write=True, max_file_size=10_000, cwd=str(tmp_path))
    assert (outcome.fixed, outcome.skipped, outcome.failed, outcome.messages) == (3, 0, False, [])
    assert crlf.read_bytes() == b'model = fabric.setup(model)\r\nmodel.mark_forward_method("generate")\r\nout = model.generate(x)\r\n'
    assert stat.S_IMODE(crlf.stat().st_mode) == 0o751
    assert bom.read_bytes() == "\ufeffmodel = fabric.setup(model)\nx = 1\n".encode("utf-8")
    assert latin.read_bytes() == "# coding: latin-1\n# café\n# déjà\nfabric = 1\n".encode("latin-1")
    assert sorted(outcome.written) == sorted(map(str, [crlf, bom, latin]))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".fabric-lsp-")]  # no temporary left


def test_fix_through_a_symlink_writes_the_target(tmp_path):
    target = write(tmp_path / "real" / "train.py", "a = 1\n")
    link = tmp_path / "train.py"
    link.symlink_to(target)
    outcome = fix_findings([finding(str(link), Severity.ERROR, fix=insert_fix(link, 1, 0, "b = 2\n"))],
                           unsafe_fixes=False, write=True, max_file_size=10_000, cwd=str(tmp_path))
    assert outcome.fixed == 1
    assert link.is_symlink() and target.read_text() == "a = 1\nb = 2\n"


def test_unsafe_fixes_need_the_option_and_overlaps_are_skipped(tmp_path):
    source = write(tmp_path / "t.py", "out = model.generate(x)\n")
    rename = Fix("unwrap", Applicability.SAFE, (TextEdit(str(source), Position(0, 6), Position(0, 11), "model.module"),))
    clash = Fix("other", Applicability.SAFE, (TextEdit(str(source), Position(0, 6), Position(0, 20), "z"),))
    unsafe = insert_fix(source, 0, 0, "# unsafe\n", Applicability.UNSAFE)
    findings = [finding(str(source), Severity.ERROR, fix=f) for f in (rename, clash, unsafe)]

    dry = fix_findings(findings, unsafe_fixes=False, write=False, max_file_size=10_000, cwd=str(tmp_path))
    assert (dry.fixed, dry.skipped, dry.written) == (1, 1, [])
    assert dry.texts == {str(source): "out = model.module.generate(x)\n"}
    assert source.read_text() == "out = model.generate(x)\n"  # write=False leaves the file alone
    assert dry.messages == ["fabric-lsp: notice: 1 fix skipped because it overlaps another fix; run again to apply"]

    done = fix_findings(findings, unsafe_fixes=True, write=True, max_file_size=10_000, cwd=str(tmp_path))
    assert (done.fixed, done.skipped) == (2, 1)
    assert source.read_text() == "# unsafe\nout = model.module.generate(x)\n"


def test_fix_in_a_file_that_cannot_be_read_is_not_applied(tmp_path):
    good = write(tmp_path / "good.py", "a = 1\n")
    binary = write(tmp_path / "models.py", b"\x00\x00")
    both = Fix("two files", Applicability.SAFE, (
        TextEdit(str(good), Position(0, 0), Position(0, 0), "# x\n"),
        TextEdit(str(binary), Position(0, 0), Position(0, 0), "# y\n"),
    ))
    outcome = fix_findings([finding(str(good), Severity.ERROR, fix=both)], unsafe_fixes=False, write=True,
                           max_file_size=10_000, cwd=str(tmp_path))
    assert outcome.fixed == 0 and outcome.written == []
    assert good.read_text() == "a = 1\n"
    assert outcome.messages == [
        "fabric-lsp: notice: models.py: binary file (contains NUL bytes)",
        f"fabric-lsp: notice: good.py:1:1: FAB001 fix not applied: cannot read {binary}",
    ]


def test_fix_that_the_files_encoding_cannot_hold_fails_cleanly(tmp_path):
    latin = write(tmp_path / "latin.py", "# coding: latin-1\nx = 1\n".encode("latin-1"))
    outcome = fix_findings([finding(str(latin), Severity.ERROR, fix=insert_fix(latin, 1, 0, "# 😀\n"))],
                           unsafe_fixes=False, write=True, max_file_size=10_000, cwd=str(tmp_path))
    assert outcome.failed and outcome.fixed == 0 and outcome.written == []
    assert outcome.messages[0].startswith("fabric-lsp: error: latin.py: cannot write the fix:")
    assert latin.read_bytes() == "# coding: latin-1\nx = 1\n".encode("latin-1")


def test_fix_and_diff_with_nothing_to_fix(tmp_path, monkeypatch, capsys):
    write(tmp_path / "ok.py", CLEAN_SOURCE)
    assert run(["check", "--diff"], tmp_path, monkeypatch, capsys) == (0, "", "No findings would be fixed.\n")
    assert run(["check", "--fix"], tmp_path, monkeypatch, capsys) == (0, "All checks passed!\n", "")


# --- explain and rules ------------------------------------------------------------------------------


def test_rules_lists_every_rule(tmp_path, monkeypatch, capsys):
    code, out, _ = run(["rules"], tmp_path, monkeypatch, capsys)
    assert code == 0
    lines = out.splitlines()
    assert [line.split()[:3] for line in lines] == [[r.code, r.name, r.record_id] for r in RULES]
    assert [line.split()[0] for line in lines] == ["FAB001", "FAB002", "FAB003", "FAB004", "FAB005", "FAB006", "FAB007",
                                                   "FAB008", "FAB009"]
    assert lines[3].split()[1:3] == ["mark-forward-method-invalid-name", "5cc4a68dd37501f7"]
    code, out, _ = run(["rules", "--format", "json"], tmp_path, monkeypatch, capsys)
    assert code == 0
    assert json.loads(out) == [
        {"code": r.code, "name": r.name, "record": r.record_id, "summary": r.summary,
         "url": page_url(r.code), "source": default_records().by_id(r.record_id).github_url}
        for r in RULES
    ]


@pytest.mark.parametrize("query", ["FAB001", "fab001", "unmarked-forward-method", "af391673c4dd180e"])
def test_explain_by_code_name_or_record(tmp_path, monkeypatch, capsys, query):
    code, out, err = run(["explain", query], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert out.startswith("FAB001 unmarked-forward-method\n")
    assert "mark_forward_method" in out
    assert default_records().by_id("af391673c4dd180e").github_url in out


def test_explain_a_pasted_runtime_error_fills_in_its_names(tmp_path, monkeypatch, capsys):
    message = (
        "RuntimeError: You are calling the method `CharLM.generate()` from outside the model. To avoid issues "
        "with the currently selected strategy, explicitly mark it as a forward method with "
        "`fabric_model.mark_forward_method('generate')` after `fabric.setup()`."
    )
    code, out, _ = run(["explain", *message.split()], tmp_path, monkeypatch, capsys)  # unquoted words work
    assert code == 0
    assert out.startswith("FAB001 unmarked-forward-method\n")
    assert "`CharLM.generate()`" in out
    # From stdin, as Markdown.
    pasted = "Traceback ...\nTypeError: Expected a method or a string, but got: function\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(pasted))
    code, out, _ = run(["explain", "-", "--format", "markdown"], tmp_path, monkeypatch, capsys)
    assert code == 0 and out.startswith("### FAB003 mark-forward-method-bound\n")


@pytest.mark.parametrize("query", ["FAB004", "mark-forward-method-invalid-name", "5cc4a68dd37501f7"])
def test_explain_fab004_by_code_name_or_record(tmp_path, monkeypatch, capsys, query):
    code, out, err = run(["explain", query], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert out.startswith("FAB004 mark-forward-method-invalid-name\n")
    assert "AttributeError: You marked '<method>' as a forward method, but `<class>.<method>` does not exist" in out
    assert "For `\"forward\"`: ValueError: You cannot mark the forward method itself" in " ".join(out.split())


# (pasted message, heading, the message line explain shows first, more text of that path)
PASTED = [
    ("TypeError: Expected a method or a string, but got: function", "FAB003 mark-forward-method-bound",
     "TypeError: Expected a method or a string, but got: function", "`Model.generate`"),
    ("AttributeError: You marked 'genrate' as a forward method, but `TinyLM.genrate` does not exist or is not a "
     "method.", "FAB004 mark-forward-method-invalid-name",
     "AttributeError: You marked 'genrate' as a forward method, but `TinyLM.genrate` does not exist or is not a "
     "method.", "does not depend on the strategy"),
    ("ValueError: You cannot mark the forward method itself as a forward method.",
     "FAB004 mark-forward-method-invalid-name",
     "ValueError: You cannot mark the forward method itself as a forward method.",
     "raises ValueError on every strategy"),
    ("TypeError: Materialization requires that the `Block.reset_parameters` method is implemented. This method is "
     "used to initialize any children parameters or buffers in this module.", "FAB002 missing-reset-parameters",
     "TypeError: Materialization requires that the `Block.reset_parameters` method is implemented. This method is "
     "used to initialize any children parameters or buffers in this module.",
     "Under torch FSDP (`strategy=\"fsdp\"`): AttributeError: 'Block' object has no attribute 'reset_parameters'"),
    ("AttributeError: 'Block' object has no attribute 'reset_parameters'", "FAB002 missing-reset-parameters",
     "AttributeError: 'Block' object has no attribute 'reset_parameters'",
     "calls `Block.reset_parameters()` without checking that it exists"),
    ("UserWarning: Parameter initialization incomplete. The following modules have parameters or buffers with "
     "uninitialized memory because they don't define a `reset_parameters()` method for re-initialization: Block",
     "FAB002 missing-reset-parameters",
     "UserWarning: Parameter initialization incomplete. The following modules have parameters or buffers with "
     "uninitialized memory because they don't define a `reset_parameters()` method for re-initialization: Block\n"
     "(a warning, not an exception: the run goes on)",
     "No exception: Lightning only warns, and the parameters and buffers of `Block` keep the uninitialised memory"),
]


@pytest.mark.parametrize(("message", "heading", "first", "more"), PASTED, ids=[
    "fab003", "fab004", "fab004-forward", "fab002-materialize", "fab002-fsdp", "fab002-model-parallel"])
def test_explain_each_runtime_message_shows_that_paths_wording(tmp_path, monkeypatch, capsys, message, heading,
                                                               first, more):
    code, out, err = run(["explain", message], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    sections = out.split("\n\n")
    assert sections[0] == f"{heading}\n{'=' * len(heading)}"
    assert sections[1] == first
    assert more in " ".join(out.split())
    code, markdown, _ = run(["explain", "--format", "markdown", message], tmp_path, monkeypatch, capsys)
    assert code == 0 and markdown.split("\n\n")[1] == f"```text\n{first}\n```"


def test_explain_unknown_exits_2(tmp_path, monkeypatch, capsys):
    code, out, err = run(["explain", "FAB999"], tmp_path, monkeypatch, capsys)
    assert code == 2 and out == ""
    assert "no rule or record matches 'FAB999'" in err


# --- end to end on the labelled fixture cases (needs the engine) --------------------------------------


def _case(name: str):
    return next(case for case in discover_cases(CASES_DIR) if case.name == name)


def _label_column(path: Path, line: int, word: str) -> int:
    return path.read_text(encoding="utf-8").splitlines()[line - 1].index(word) + 1


def test_check_reports_exactly_the_labels_of_every_case():
    """Needs the engine. One run over fixtures/cases (parallel: many files): findings == labels."""
    result = run_process(["check", "--format", "json", "--hints", "--exit-zero", "."], CASES_DIR)
    assert result.returncode == 0, result.stderr
    reported = json.loads(result.stdout)
    keys = [(Path(item["filename"]).relative_to(CASES_DIR).as_posix(), item["location"]["row"],
             item["location"]["column"], item["code"]) for item in reported]
    assert keys == sorted(keys)  # stable order: path, row, column, code
    expected = set()
    for case in discover_cases(CASES_DIR):
        for label in case.labels:
            if label.severity == "after":
                continue  # a site an earlier certain error stops: no finding of its own (fixtures/README.md)
            file = case.path if case.path.is_file() else case.path / label.file
            expected.add((file.relative_to(CASES_DIR).as_posix(), label.line, label.code, label.severity))
    got = {(Path(i["filename"]).relative_to(CASES_DIR).as_posix(), i["location"]["row"], i["code"], i["severity"])
           for i in reported}
    assert got == expected


def test_text_output_and_exit_status_on_a_case(tmp_path, monkeypatch, capsys):
    """Needs the engine."""
    case = _case("fab001_generate_ddp_literal")
    label = case.labels[0]
    copy = Path(shutil.copy(case.path, tmp_path / case.path.name))
    column = _label_column(copy, label.line, "generate")
    code, out, _ = run(["check", copy.name], tmp_path, monkeypatch, capsys)
    assert code == 1
    first = out.splitlines()[0]
    assert first.startswith(f"{copy.name}:{label.line}:{column}: FAB001 ")
    assert " error: " in first
    assert out.endswith("\n\nFound 1 finding: 1 error (1 fixable).\n")  # FAB001's fix is safe
    assert run(["check", "--exit-zero", copy.name], tmp_path, monkeypatch, capsys)[0] == 0
    assert run(["check", "--ignore", "FAB001", copy.name], tmp_path, monkeypatch, capsys)[:2] == (0, "All checks passed!\n")
    assert run(["check", "--select", "FAB002,FAB003", copy.name], tmp_path, monkeypatch, capsys)[0] == 0
    code, out, _ = run(["check", "--format", "github", copy.name], tmp_path, monkeypatch, capsys)
    assert code == 1
    assert out.startswith(f"::error file={copy.name},line={label.line},col={column},")


def test_noqa_silences_a_case(tmp_path, monkeypatch, capsys):
    """Needs the engine (the engine applies noqa; the CLI must not undo it)."""
    case = _case("fab001_generate_ddp_literal")
    label = case.labels[0]
    lines = case.path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[label.line - 1] = lines[label.line - 1].rstrip("\n") + "  # noqa: FAB001\n"
    copy = write(tmp_path / "case.py", "".join(lines))
    assert run(["check", copy.name], tmp_path, monkeypatch, capsys)[:2] == (0, "All checks passed!\n")
    assert run(["check", "--hints", copy.name], tmp_path, monkeypatch, capsys)[:2] == (0, "All checks passed!\n")


def test_diff_then_fix_then_clean_on_a_case(tmp_path, monkeypatch, capsys):
    """Needs the engine. --diff shows and exits 1 without writing; --fix writes and re-checks."""
    case = _case("fab001_generate_ddp_literal")
    copy = Path(shutil.copy(case.path, tmp_path / case.path.name))
    original = copy.read_text(encoding="utf-8")
    code, out, err = run(["check", "--diff", copy.name], tmp_path, monkeypatch, capsys)
    assert code == 1
    assert out.startswith(f"--- a/{copy.name}\n+++ b/{copy.name}\n@@")
    assert err == "Would fix 1 finding.\n"
    assert copy.read_text(encoding="utf-8") == original
    code, out, err = run(["check", "--fix", copy.name], tmp_path, monkeypatch, capsys)
    assert (code, out) == (0, "Found 1 finding (1 fixed, 0 remaining).\n"), err
    assert copy.read_text(encoding="utf-8") != original
    assert run(["check", "--diff", copy.name], tmp_path, monkeypatch, capsys) == (0, "", "No findings would be fixed.\n")
    assert run(["check", "--hints", copy.name], tmp_path, monkeypatch, capsys)[:2] == (0, "All checks passed!\n")


def test_fix_fixes_what_the_first_fix_uncovers_as_ruff(tmp_path, monkeypatch, capsys):
    """Needs the engine. The first error on a path masks the call after it (the frozen EMA copy's setup
    that DDP refuses; `model.sample` after it is not reported). --fix moves the copy with to_device, checks
    again and marks `sample` in a second pass; from standard input the same. --diff shows the first pass."""
    case = _case("fab009_ema_copy_frozen")
    copy = Path(shutil.copy(case.path, tmp_path / case.path.name))
    original = copy.read_text(encoding="utf-8")
    code, out, err = run(["check", "--diff", "--unsafe-fixes", copy.name], tmp_path, monkeypatch, capsys)
    assert (code, err) == (1, "Would fix 1 finding.\n") and "fabric.to_device(ema)" in out and "mark_forward" not in out
    code, out, err = run(["check", "--fix", "--unsafe-fixes", copy.name], tmp_path, monkeypatch, capsys)
    assert (code, out) == (0, "Found 2 findings (2 fixed, 0 remaining).\n"), err
    fixed = copy.read_text(encoding="utf-8")
    assert "ema = fabric.to_device(ema)" in fixed and fixed.count('model.mark_forward_method("sample")') == 1
    assert run(["check", "--hints", copy.name], tmp_path, monkeypatch, capsys)[:2] == (0, "All checks passed!\n")
    from_stdin = run_process(["check", "--fix", "--unsafe-fixes", "--stdin-filename", copy.name, "-"], tmp_path,
                             input=original)
    assert (from_stdin.returncode, from_stdin.stdout) == (0, fixed), from_stdin.stderr
    assert from_stdin.stderr == "Found 2 findings (2 fixed, 0 remaining).\n"


def test_hostile_files_leave_other_findings_intact(tmp_path, monkeypatch, capsys):
    """Needs the engine."""
    expected = _hostile_tree(tmp_path)
    case = _case("fab001_generate_ddp_literal")
    shutil.copy(case.path, tmp_path / "case.py")
    code, out, err = run(["check", "--format", "json"], tmp_path, monkeypatch, capsys)
    assert code == 1
    assert [(Path(i["filename"]).name, i["code"], i["location"]["row"]) for i in json.loads(out)] == [
        ("case.py", "FAB001", case.labels[0].line)
    ]
    assert len(err.splitlines()) == len(expected)


def test_fix_in_another_module_is_applied_and_its_finding_rechecked(tmp_path, monkeypatch, capsys):
    """Needs the engine. The FAB002 finding is in main.py, its fix edits model.py: after --fix,
    main.py (not written) must be re-checked too, or its stale finding would be reported."""
    case = _case("fab002_block_in_other_module")
    project = Path(shutil.copytree(case.path, tmp_path / case.name))
    main_before = (project / "main.py").read_text(encoding="utf-8")
    model_before = (project / "model.py").read_text(encoding="utf-8")
    code, out, err = run(["check", "--format", "json", "--unsafe-fixes", "."], project, monkeypatch, capsys)
    [item] = json.loads(out)
    assert (item["code"], Path(item["filename"]).name) == ("FAB002", "main.py")
    assert [Path(e.get("filename", item["filename"])).name for e in item["fix"]["edits"]] == ["model.py"]
    code, out, err = run(["check", "--fix", "--unsafe-fixes", "."], project, monkeypatch, capsys)
    assert (code, out) == (0, "Found 1 finding (1 fixed, 0 remaining).\n"), err
    assert (project / "main.py").read_text(encoding="utf-8") == main_before
    assert "def reset_parameters" in (project / "model.py").read_text(encoding="utf-8") != model_before


def test_a_folder_without_project_marker_is_rooted_at_the_working_directory(tmp_path, monkeypatch, capsys):
    """Needs the engine. No pyproject.toml/setup.py/setup.cfg/.git above the files: the working
    directory is the project root (as ruff takes it), so a helper module next to the script and a
    src/ package are one program with it, whichever folder is checked from there."""
    assert not any((parent / marker).exists() for parent in tmp_path.parents
                   for marker in ("pyproject.toml", "setup.py", "setup.cfg", ".git")), "tmp_path has a marker above it"
    case = _case("fab001_flow_src_layout")
    project = Path(shutil.copytree(case.path, tmp_path / "cases" / case.name))
    [label] = case.labels
    for cwd, target in ((tmp_path, project), (project, "."), (project / "src", "mypkg")):
        code, out, err = run(["check", "--format", "json", target], cwd, monkeypatch, capsys)
        found = [(os.path.relpath(i["filename"], project), i["code"], i["location"]["row"]) for i in json.loads(out)]
        if cwd == project / "src":
            # From inside src/ the script that wraps the model is outside the root: nothing to follow.
            assert (code, found) == (0, []), err
        else:
            assert (code, found) == (1, [(label.file, "FAB001", label.line)]), err


def test_fix_of_a_factory_that_returns_setup_binds_marks_and_returns(tmp_path, monkeypatch, capsys):
    """Needs the engine. `return fabric.setup(policy, optimizer)` has no line after it: the fix binds
    the result to the same names, marks, and returns them; a `global` name is left alone."""
    write(tmp_path / "nets.py", (
        "import torch\nfrom torch import nn\n\n\n"
        "class Policy(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.body = nn.Linear(4, 2)\n\n"
        "    def act(self, obs):\n        return self.body(obs).argmax(-1)\n"
    ))
    write(tmp_path / "build.py", (
        "import torch\nfrom lightning.fabric import Fabric\n\nfrom nets import Policy\n\n\n"
        "def build(fabric: Fabric):\n    policy = Policy()\n    optimizer = torch.optim.SGD(policy.parameters(), lr=0.1)\n"
        "    return fabric.setup(policy, optimizer)  # wrapped here\n"
    ))
    write(tmp_path / "train.py", (
        "from lightning.fabric import Fabric\n\nfrom build import build\n\n"
        "fabric = Fabric(accelerator='cpu', devices=1, strategy='ddp')\nfabric.launch()\n"
        "policy, optimizer = build(fabric)\npolicy.act(None)\n"
    ))
    code, out, err = run(["check", "--fix", "."], tmp_path, monkeypatch, capsys)
    assert (code, out) == (0, "Found 1 finding (1 fixed, 0 remaining).\n"), err
    assert (tmp_path / "build.py").read_text(encoding="utf-8").endswith(
        "    policy, optimizer = fabric.setup(policy, optimizer)\n"
        "    policy.mark_forward_method(\"act\")\n"
        "    return policy, optimizer  # wrapped here\n"
    )
    text = (tmp_path / "build.py").read_text(encoding="utf-8")
    # (`global` before the name's first assignment: after it, Python refuses the file, an invalid-syntax entry.)
    write(tmp_path / "build.py", text.replace("def build(fabric: Fabric):\n", "def build(fabric: Fabric):\n    global optimizer\n").replace(
        "    policy, optimizer = fabric.setup(policy, optimizer)\n    policy.mark_forward_method(\"act\")\n"
        "    return policy, optimizer", "    return fabric.setup(policy, optimizer)"))
    code, out, err = run(["check", "--format", "json", "."], tmp_path, monkeypatch, capsys)
    [item] = json.loads(out)
    assert (item["code"], item["fix"]) == ("FAB001", None)


def test_fab004_removal_fix_keeps_the_block_valid(tmp_path, monkeypatch, capsys):
    """Needs the engine. Marking "forward" is removed by a safe fix (a `pass` when it is the whole
    block); a mark sharing its line with another statement has no fix."""
    header = (
        "from torch import nn\nfrom lightning.fabric import Fabric\n\n\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(2, 2)\n\n"
        "    def forward(self, x):\n        return self.fc(x)\n\n\n"
        "fabric = Fabric(accelerator='cpu', devices=1)\nmodel = fabric.setup(Net())\n"
    )
    write(tmp_path / "alone.py", header + "if True:\n    model.mark_forward_method(\"forward\")  # routed\nprint('ok')\n")
    write(tmp_path / "shared.py", header + "x = 1; model.mark_forward_method(\"forward\")\n")
    code, out, err = run(["check", "--fix", "alone.py"], tmp_path, monkeypatch, capsys)
    assert (code, out) == (0, "Found 1 finding (1 fixed, 0 remaining).\n"), err
    assert (tmp_path / "alone.py").read_text(encoding="utf-8").endswith("if True:\n    pass  # routed\nprint('ok')\n")
    code, out, err = run(["check", "--format", "json", "shared.py"], tmp_path, monkeypatch, capsys)
    [item] = json.loads(out)
    assert (item["code"], item["fix"]) == ("FAB004", None)


# --- --python: what uv accepts (issue 29 item 7) ------------------------------------------------

MODEL_IN_VENV = '''from torch import nn


class CharLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)

    def forward(self, x):
        return self.head(x)

    def generate(self, x):
        return self(x)
'''
TRAIN_WITH_VENV_MODEL = '''from lightning.fabric import Fabric
from venvmodels import CharLM

fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
model = fabric.setup(CharLM())
model.generate(None)
'''


def venv_with_model(folder: Path) -> Path:
    """A virtual environment (python -m venv) whose site-packages holds the model class."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, capture_output=True,
                   timeout=120)
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    write(folder / "lib" / version / "site-packages" / "venvmodels" / "__init__.py", MODEL_IN_VENV)
    return folder


def test_python_accepts_a_path_a_venv_folder_and_a_name_on_path(tmp_path):
    """As uv's --python: a path, a virtual environment's folder (absolute or relative, `env` alone), or
    a name looked up on PATH; the interpreter chosen is the one analysed (the model in its packages)."""
    project = tmp_path / "project"
    venv = venv_with_model(project / "env")
    write(project / "train.py", TRAIN_WITH_VENV_MODEL)
    tools = tmp_path / "tools"
    tools.mkdir()
    write(tools / "fabric-test-python", f'#!/bin/sh\nexec {venv / "bin" / "python"} "$@"\n').chmod(0o755)
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    env.pop("VIRTUAL_ENV", None)
    for value in (venv / "bin" / "python", venv, "env", "./env", "fabric-test-python"):
        result = subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--no-cache", "--python", str(value),
                                 "train.py"], cwd=project, env={**env, "PYTHONPATH": str(SERVER_DIR)},
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 1 and "train.py:6:7: FAB001" in result.stdout, (value, result.stdout, result.stderr)
        assert result.stderr == "", (value, result.stderr)
    # A bare name is a name on PATH, never a file of the current folder (a repository could plant one).
    write(project / "python9", "#!/bin/sh\nexit 0\n").chmod(0o755)
    planted = run_process(["check", "--no-cache", "--python", "python9", "train.py"], project)
    assert planted.returncode == 2
    assert planted.stderr == "fabric-lsp: error: --python: no interpreter named 'python9' on PATH\n", planted.stderr


@pytest.mark.parametrize("script, problem", [
    ("#!/bin/sh\necho 'boom: no such module' >&2\nexit 3\n", "it exited with status 3: boom: no such module"),
    ("#!/bin/sh\necho hello\n", "it is not a Python interpreter (it printed no sys.path)"),
    (None, "cannot run it: Permission denied"),
], ids=["fails", "not-python", "not-executable"])
def test_a_broken_interpreter_is_a_one_line_error(tmp_path, script, problem):
    write(tmp_path / "ok.py", CLEAN_SOURCE)
    python = write(tmp_path / "bin" / "python", script or "not a program\n")
    python.chmod(0o755 if script else 0o644)
    result = run_process(["check", "--no-cache", "--python", python, "ok.py"], tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == f"fabric-lsp: error: --python: {python}: {problem}\n", result.stderr


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="this Python parses PEP 695 itself: no notice at all")
def test_files_of_newer_syntax_are_one_notice_and_verbose_lists_each(tmp_path, monkeypatch, caplog):
    """Trial 12-07 (a PEP 695 project checked on 3.11): one notice per file, 20 lines on stderr. Now one
    line says how many, names the first two and all that was left out; `-v` says each file; the JSON
    on stdout is the same either way (notices are never part of a machine format)."""
    write(tmp_path / "pyproject.toml", '[project]\nname = "p"\nrequires-python = ">=3.12"\n')
    fabric = "from lightning.fabric import Fabric\n\n"  # each file analysed: a Fabric program's
    write(tmp_path / "a00.py", fabric + 'names = {"a": 1}\nline = f"{names["a"]}"\n\n\nclass Box[T]:\n    pass\n')
    for number in range(1, 25):
        write(tmp_path / f"a{number:02}.py", fabric + "def first[T](items: list[T]) -> T:\n    return items[0]\n")
    write(tmp_path / "broken.py", "def broken(:\n")  # reported as invalid-syntax, not a notice
    quiet = run_process(["check", "--no-cache", "--output-format", "json", "."], tmp_path)
    verbose = run_process(["check", "--no-cache", "--output-format", "json", "-v", "."], tmp_path)
    assert "Traceback" not in quiet.stderr + verbose.stderr
    assert quiet.stdout == verbose.stdout and [f["code"] for f in json.loads(quiet.stdout)] == ["invalid-syntax"]
    newer = [line for line in quiet.stderr.splitlines() if "newer than Python" in line]
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert newer == [(f"fabric-lsp: notice: 25 files (a00.py, a01.py and 23 more) use syntax newer than Python "
                      f"{running}, which runs fabric-lsp: analysed with the f-string contents and type parameter "
                      f"lists left out; --verbose lists them")], quiet.stderr
    each = [line for line in verbose.stderr.splitlines() if "newer than Python" in line]
    assert len(each) == 25 and each[1] == (f"fabric-lsp: notice: a01.py: uses syntax newer than Python {running}, "
                                           "which runs fabric-lsp: analysed with the type parameter lists left out")
    # The Python API logs what the command says: the same one line.
    from fabric_lsp import api

    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.py").unlink()
    with caplog.at_level("WARNING", logger="fabric_lsp"):
        api.check_paths(["."])
    assert [r.getMessage() for r in caplog.records if "newer than Python" in r.getMessage()] == newer
    # Two files: both named, nothing to list.
    for number in range(2, 25):
        (tmp_path / f"a{number:02}.py").unlink()
    two = run_process(["check", "--no-cache", "."], tmp_path)
    assert [line for line in two.stderr.splitlines() if "newer than Python" in line] == [(
        f"fabric-lsp: notice: 2 files (a00.py, a01.py) use syntax newer than Python {running}, which runs "
        "fabric-lsp: analysed with the f-string contents and type parameter lists left out")], two.stderr
