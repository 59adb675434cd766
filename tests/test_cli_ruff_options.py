"""What ruff users expect of `fabric-lsp` (issue 29, item 11): --add-noqa, --exit-non-zero-on-fix,
--isolated, --cache-dir / FABRIC_LSP_CACHE_DIR, --watch, the json-lines and rdjson formats,
`explain FAB001 FAB003`, a misspelt command, and `# noqa` comments of other tools. Each runs the real
CLI in a temporary folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from support.cli_runs import FAB001_LINE, FAB003_LINE, PROGRAM, SERVER_DIR, run_check, write


def _fabric_lsp(argv, cwd, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SERVER_DIR), os.environ.get("PYTHONPATH", "")])}
    env.update(kwargs.pop("env", {}))
    return subprocess.run([sys.executable, "-m", "fabric_lsp", *map(str, argv)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=180, **kwargs)


def test_add_noqa_suppresses_every_finding_and_keeps_other_codes(tmp_path):
    lines = PROGRAM.splitlines(keepends=True)
    lines[FAB003_LINE - 1] = lines[FAB003_LINE - 1].rstrip("\n") + "  # noqa: E501\n"
    write(tmp_path / "train.py", "".join(lines))
    added = run_check(["--add-noqa", "train.py"], tmp_path)
    assert added.returncode == 0, added.stderr
    assert "Added 2 noqa directives." in added.stderr
    text = (tmp_path / "train.py").read_text().splitlines()
    assert text[FAB003_LINE - 1].endswith("model.mark_forward_method(model.generate)  # noqa: E501, FAB003")
    assert text[FAB001_LINE - 1].endswith("model.encode(None)  # noqa: FAB001")
    after = run_check(["train.py"], tmp_path)
    assert after.returncode == 0, after.stdout
    again = run_check(["--add-noqa", "train.py"], tmp_path)
    assert "Added 0 noqa directives." in again.stderr
    assert run_check(["--add-noqa", "--fix", "train.py"], tmp_path).returncode == 2


def test_exit_non_zero_on_fix(tmp_path):
    program = PROGRAM.replace("model.mark_forward_method(model.generate)\n", "")  # only FAB001, safely fixable
    write(tmp_path / "train.py", program)
    plain = run_check(["--fix", "train.py"], tmp_path)
    assert plain.returncode == 0, plain.stdout + plain.stderr  # fixed, nothing left: success, as ruff
    write(tmp_path / "train.py", program)
    strict = run_check(["--fix", "--exit-non-zero-on-fix", "train.py"], tmp_path)
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert 'mark_forward_method("encode")' in (tmp_path / "train.py").read_text()
    clean = run_check(["--fix", "--exit-non-zero-on-fix", "train.py"], tmp_path)
    assert clean.returncode == 0  # nothing changed this time
    write(tmp_path / "stdin.py", "")
    piped = run_check(["--fix", "--exit-non-zero-on-fix", "--stdin-filename", "stdin.py", "-"], tmp_path,
                      stdin=program)
    assert piped.returncode == 1 and 'mark_forward_method("encode")' in piped.stdout


def test_isolated_reads_no_settings_file(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.fabric-lsp]\nignore = ["FAB001", "FAB003"]\n')
    write(tmp_path / "train.py", PROGRAM)
    configured = run_check(["--output-format", "json", "train.py"], tmp_path)
    assert json.loads(configured.stdout) == []
    isolated = run_check(["--isolated", "--output-format", "json", "train.py"], tmp_path)
    assert {entry["code"] for entry in json.loads(isolated.stdout)} == {"FAB001", "FAB003"}
    selected = run_check(["--isolated", "--select", "FAB003", "--output-format", "json", "train.py"], tmp_path)
    assert {entry["code"] for entry in json.loads(selected.stdout)} == {"FAB003"}
    refused = run_check(["--isolated", "--config", "pyproject.toml", "train.py"], tmp_path)
    assert refused.returncode == 2 and "--isolated" in refused.stderr


def test_cache_dir_from_the_command_line_and_the_environment(tmp_path):
    project = tmp_path / "project"
    write(project / "pyproject.toml", "[project]\nname = 'p'\n")
    write(project / "train.py", PROGRAM)
    first = run_check(["--cache-dir", tmp_path / "cli-cache", "train.py"], project, cache=True)
    assert first.returncode == 1
    assert not (project / ".fabric-lsp-cache").exists()
    assert list((tmp_path / "cli-cache").rglob("check-*.json"))
    from_env = run_check(["train.py"], project, cache=True, env={"FABRIC_LSP_CACHE_DIR": str(tmp_path / "env-cache")})
    assert from_env.returncode == 1 and from_env.stdout == first.stdout
    assert not (project / ".fabric-lsp-cache").exists()
    stored = list((tmp_path / "env-cache").rglob("check-*.json"))
    assert stored
    # A cache file is signed: one altered in the shared folder is not believed.
    signed = stored[0].read_text()
    assert '"FAB001"' in signed
    stored[0].write_text(signed.replace('"FAB001"', '"FAB004"'))
    again = run_check(["train.py"], project, cache=True, env={"FABRIC_LSP_CACHE_DIR": str(tmp_path / "env-cache")})
    assert again.returncode == 1 and again.stdout == first.stdout


def test_cache_dir_is_the_users_choice_not_the_hooks(tmp_path):
    """Under pre-commit the options come from the repository's .pre-commit-config.yaml: `--cache-dir`
    there would let a repository choose a folder of the machine to write to. The environment variable,
    the user's own, still applies."""
    write(tmp_path / "train.py", PROGRAM)
    target = tmp_path / "chosen-by-the-repository"
    refused = run_check(["--cache-dir", target, "train.py"], tmp_path, cache=True, env={"PRE_COMMIT": "1"})
    assert refused.returncode == 2 and "--cache-dir: refused in a pre-commit hook" in refused.stderr
    assert not target.exists()
    users = tmp_path / "users-cache"
    allowed = run_check(["train.py"], tmp_path, cache=True, env={"PRE_COMMIT": "1", "FABRIC_LSP_CACHE_DIR": str(users)})
    assert allowed.returncode == 1 and list(users.rglob("check-*.json"))
    watching = run_check(["--watch", "train.py"], tmp_path, env={"PRE_COMMIT": "1"})
    assert watching.returncode == 2 and "--watch: not in a pre-commit hook" in watching.stderr


def test_json_lines_and_rdjson(tmp_path):
    write(tmp_path / "train.py", PROGRAM.replace("model.encode(None)", "model.encode('é')"))
    as_json = json.loads(run_check(["--output-format", "json", "train.py"], tmp_path).stdout)
    lines = run_check(["--output-format", "json-lines", "train.py"], tmp_path)
    assert lines.returncode == 1
    assert [json.loads(line) for line in lines.stdout.splitlines()] == as_json
    rdjson = run_check(["--output-format", "rdjson", "train.py"], tmp_path)
    assert rdjson.returncode == 1
    document = json.loads(rdjson.stdout)
    assert document["source"]["name"] == "fabric-lsp"
    by_code = {d["code"]["value"]: d for d in document["diagnostics"]}
    assert set(by_code) == {"FAB001", "FAB003"}
    fab001 = by_code["FAB001"]
    assert fab001["severity"] == "ERROR" and fab001["location"]["path"] == "train.py"
    assert fab001["location"]["range"]["start"]["line"] == FAB001_LINE
    assert fab001["suggestions"] and "mark_forward_method" in fab001["suggestions"][0]["text"]
    assert fab001["related_locations"]
    clean = tmp_path / "clean"
    write(clean / "ok.py", "x = 1\n")
    assert json.loads(run_check(["--output-format", "rdjson", "ok.py"], clean).stdout)["diagnostics"] == []
    assert run_check(["--output-format", "json-lines", "ok.py"], clean).stdout == ""


def test_rdjson_columns_are_utf8_bytes(tmp_path):
    # reviewdog's Position.column counts UTF-8 bytes: `é` before the finding is two.
    program = PROGRAM.replace("model.encode(None)", "é = 1; model.encode(None)")
    write(tmp_path / "train.py", program)
    document = json.loads(run_check(["--output-format", "rdjson", "train.py"], tmp_path).stdout)
    fab001 = next(d for d in document["diagnostics"] if d["code"]["value"] == "FAB001")
    as_json = json.loads(run_check(["--output-format", "json", "train.py"], tmp_path).stdout)
    characters = next(e for e in as_json if e["code"] == "FAB001")["location"]["column"]
    assert fab001["location"]["range"]["start"]["column"] == characters + 1


def test_explain_several_codes(tmp_path):
    both = _fabric_lsp(["explain", "FAB001", "FAB003"], tmp_path)
    assert both.returncode == 0, both.stderr
    assert both.stdout.startswith("FAB001 unmarked-forward-method")
    assert "\nFAB003 mark-forward-method-bound" in both.stdout
    unknown = _fabric_lsp(["explain", "FAB001", "FAB999"], tmp_path)
    assert unknown.returncode == 2 and "FAB999" in unknown.stderr
    assert unknown.stdout.startswith("FAB001 unmarked-forward-method")
    message = _fabric_lsp(["explain", "You", "are", "calling", "the", "method"], tmp_path)
    assert message.returncode == 0 and message.stdout.startswith("FAB001")


def test_a_misspelt_command_names_the_closest(tmp_path):
    server = _fabric_lsp(["server"], tmp_path)
    assert server.returncode == 2
    assert "unknown command 'server'; did you mean `fabric-lsp serve`?" in server.stderr
    assert "Traceback" not in server.stderr
    other = _fabric_lsp(["frobnicate"], tmp_path)
    assert other.returncode == 2 and "commands: check, explain, rules, serve" in other.stderr


def test_other_tools_noqa_comments_in_files_without_fabric(tmp_path):
    other = "x = 1  # noqa: docstring_linter\ny = []  # noqa: RUF012: mutable default\n"
    write(tmp_path / "utils.py", other)
    quiet = run_check(["utils.py"], tmp_path)
    assert quiet.returncode == 0 and "noqa" not in quiet.stderr
    write(tmp_path / "train.py", PROGRAM + other)
    ours = run_check(["train.py"], tmp_path)
    assert "train.py:17: invalid # noqa directive" in ours.stderr
    assert "train.py:18: invalid # noqa directive" in ours.stderr
    write(tmp_path / "typo.py", "x = 1  # noqa: fab-1\n")  # our code, mistyped: still said
    assert "typo.py:1: invalid # noqa directive" in run_check(["typo.py"], tmp_path).stderr


def test_watch_checks_again_when_a_file_changes(tmp_path):
    write(tmp_path / "train.py", PROGRAM.replace("model.mark_forward_method(model.generate)\n", ""))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SERVER_DIR), os.environ.get("PYTHONPATH", "")])}
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    process = subprocess.Popen([sys.executable, "-m", "fabric_lsp", "check", "--no-cache", "--watch",
                                "--output-format", "json-lines", "train.py"],
                               cwd=tmp_path, env=env, stdout=out.open("wb"), stderr=err.open("wb"))
    try:
        deadline = time.monotonic() + 120
        while "FAB001" not in out.read_text() and time.monotonic() < deadline:
            assert process.poll() is None, err.read_text()
            time.sleep(0.1)
        assert out.read_text().count('"code"') == 1
        # The user marks the method: the next report has no finding; then a FAB003 appears.
        write(tmp_path / "train.py", PROGRAM.replace("model.mark_forward_method(model.generate)",
                                                     'model.mark_forward_method("encode")'))
        while "checking again" not in err.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        write(tmp_path / "train.py", PROGRAM.replace("model.encode(None)", ""))
        while "FAB003" not in out.read_text() and time.monotonic() < deadline:
            assert process.poll() is None, err.read_text()
            time.sleep(0.1)
        assert "FAB003" in out.read_text(), err.read_text()
        assert err.read_text().count("checking again") >= 1
        assert process.poll() is None  # still watching
    finally:
        process.kill()
        process.wait()
