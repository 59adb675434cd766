// Interpreter resolution against real executables: the Python on this machine and small stand-in
// programs (an "old Python" script that prints what Python 3.8 would, a non-Python program).
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import {
  analysisInterpreter,
  expandPath,
  findOnPath,
  folderHolding,

  type LaunchFailure,
  type LaunchInputs,
  type LaunchPlan,
  probePython,
  resolveLaunch,
  shebangPython,
} from "../src/interpreter";
import { mapSettings } from "../src/settings";

const realPython = findOnPath("python3", process.env);
let dir: string;
/** The default workspace folder: beside the stand-in programs, not around them. */
let workspace: string;
let oldPython: string;
let notPython: string;
let fakeServer: string;
let pathWithRealPython: string;
let pathWithOldPythonOnly: string;

function script(name: string, body: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

before(() => {
  assert.ok(realPython, "these tests need python3 (3.10 or newer) on PATH");
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "fabric-lsp-interp-"));
  workspace = path.join(dir, "workspace");
  fs.mkdirSync(workspace);
  // Answers the probe the way Python 3.8 does.
  oldPython = script("python3.8", 'echo "3.8.18"; echo "$0"');
  notPython = script("not-python", 'echo "hello"');
  fakeServer = script("fabric-lsp", "exit 0");
  const onlyReal = path.join(dir, "real-bin");
  fs.mkdirSync(onlyReal);
  fs.symlinkSync(realPython!, path.join(onlyReal, "python3"));
  pathWithRealPython = onlyReal;
  const onlyOld = path.join(dir, "old-bin");
  fs.mkdirSync(onlyOld);
  fs.symlinkSync(oldPython, path.join(onlyOld, "python3"));
  pathWithOldPythonOnly = onlyOld;
});

after(() => fs.rmSync(dir, { recursive: true, force: true }));

function inputs(overrides: Partial<LaunchInputs>): LaunchInputs {
  return {
    path: "",
    interpreter: "",
    importStrategy: "bundled",
    trusted: true,
    workspaceFolder: workspace,
    env: { PATH: pathWithRealPython },
    home: dir,
    launcher: "/ext/bundled/tool/launch.py",
    pythonExtensionInterpreter: async () => undefined,
    ...overrides,
  };
}

function ok(result: LaunchPlan | LaunchFailure): LaunchPlan {
  assert.ok(result.ok, `expected a launch plan, got: ${!result.ok ? `${result.message} ${result.details.join("; ")}` : ""}`);
  return result;
}

function failed(result: LaunchPlan | LaunchFailure): LaunchFailure {
  assert.ok(!result.ok, `expected no usable interpreter, got ${result.ok ? result.command : ""}`);
  return result;
}

describe("probePython", () => {
  it("accepts this machine's python3 and reports its version and executable", async () => {
    const result = await probePython(realPython!);
    assert.equal(result.ok, true, result.reason);
    assert.match(result.version!, /^3\.\d+/);
    assert.ok(result.executable && path.isAbsolute(result.executable));
  });

  it("rejects a Python older than 3.10, saying so", async () => {
    const result = await probePython(oldPython);
    assert.equal(result.ok, false);
    assert.equal(result.reason, "is Python 3.8.18; fabric-lsp needs 3.10 or newer");
  });

  it("rejects a program that is not Python, and a missing file", async () => {
    assert.match((await probePython(notPython)).reason!, /is not a Python interpreter/);
    assert.equal((await probePython(path.join(dir, "missing"))).reason, "does not exist");
  });
});

describe("resolveLaunch order", () => {
  it("uses fabric-lsp.interpreter first", async () => {
    let asked = false;
    const plan = ok(
      await resolveLaunch(
        inputs({
          interpreter: realPython!,
          pythonExtensionInterpreter: async () => {
            asked = true;
            return oldPython;
          },
        }),
      ),
    );
    assert.equal(plan.source, "interpreter setting");
    assert.equal(plan.command, realPython);
    assert.deepEqual(plan.args, ["-I", "/ext/bundled/tool/launch.py"]);
    assert.deepEqual(plan.env, { FABRIC_LSP_IMPORT_STRATEGY: "bundled", PYTHONUNBUFFERED: "1" });
    assert.equal(asked, false, "the Python extension is not asked when the setting names an interpreter");
  });

  it("expands ${workspaceFolder} in fabric-lsp.interpreter", async () => {
    fs.mkdirSync(path.join(workspace, ".venv", "bin"), { recursive: true });
    const venvPython = path.join(workspace, ".venv", "bin", "python");
    if (!fs.existsSync(venvPython)) fs.symlinkSync(realPython!, venvPython);
    const plan = ok(await resolveLaunch(inputs({ interpreter: "${workspaceFolder}/.venv/bin/python" })));
    assert.equal(plan.command, venvPython);
  });

  it("says a missing interpreter does not exist", async () => {
    const failure = failed(await resolveLaunch(inputs({ interpreter: "/nonexistent/bin/python3" })));
    assert.match(failure.message, /^fabric-lsp\.interpreter is set to "\/nonexistent\/bin\/python3", which does not exist\. Install Python 3\.10/);
  });

  it("does not fall back when fabric-lsp.interpreter is unusable: the notification names the setting", async () => {
    const failure = failed(await resolveLaunch(inputs({ interpreter: oldPython })));
    assert.match(failure.message, /^fabric-lsp\.interpreter is set to ".*python3\.8", which is Python 3\.8\.18; fabric-lsp needs 3\.10 or newer\./);
    assert.match(failure.message, /Python: Select Interpreter/);
  });

  it("uses the Python extension's interpreter next", async () => {
    const plan = ok(await resolveLaunch(inputs({ pythonExtensionInterpreter: async () => realPython })));
    assert.equal(plan.source, "Python extension");
    assert.equal(plan.command, realPython);
  });

  it("passes over a Python extension interpreter that is too old and takes python3 on PATH", async () => {
    const plan = ok(await resolveLaunch(inputs({ pythonExtensionInterpreter: async () => oldPython })));
    assert.equal(plan.source, "python3 on PATH");
    assert.equal(plan.command, path.join(pathWithRealPython, "python3"));
    assert.deepEqual(plan.skipped, [`Python extension's interpreter ${oldPython}: is Python 3.8.18; fabric-lsp needs 3.10 or newer`]);
  });

  it("goes on to PATH when the Python extension's API throws", async () => {
    const plan = ok(
      await resolveLaunch(
        inputs({
          pythonExtensionInterpreter: async () => {
            throw new Error("extension failed to activate");
          },
        }),
      ),
    );
    assert.equal(plan.source, "python3 on PATH");
    assert.match(plan.skipped[0], /extension failed to activate/);
  });

  it("fails with one sentence that says how to fix it when nothing usable is found", async () => {
    const failure = failed(await resolveLaunch(inputs({ env: { PATH: pathWithOldPythonOnly } })));
    assert.equal(
      failure.message,
      "Fabric LSP found no usable Python to run its server. Install Python 3.10 or newer, then select it with " +
        '"Python: Select Interpreter" or set "fabric-lsp.interpreter" to its path.',
    );
    assert.deepEqual(failure.details, [`${path.join(pathWithOldPythonOnly, "python3")} (on PATH): is Python 3.8.18; fabric-lsp needs 3.10 or newer`]);
    const empty = failed(await resolveLaunch(inputs({ env: { PATH: path.join(dir, "nowhere") } })));
    assert.deepEqual(empty.details, ["python3 on PATH: not found"]);
  });
});

describe("resolveLaunch settings", () => {
  it("fabric-lsp.path runs the installed executable with `serve`", async () => {
    const plan = ok(await resolveLaunch(inputs({ path: fakeServer, interpreter: oldPython })));
    assert.equal(plan.source, "path");
    assert.equal(plan.command, fakeServer);
    assert.deepEqual(plan.args, ["serve"]);
    assert.equal(plan.serverPython, undefined);
  });

  it("fabric-lsp.path is looked up on PATH when it is a bare name, and reported when missing", async () => {
    const plan = ok(await resolveLaunch(inputs({ path: "fabric-lsp", env: { PATH: dir } })));
    assert.equal(plan.command, fakeServer);
    const failure = failed(await resolveLaunch(inputs({ path: "~/bin/fabric-lsp" })));
    assert.match(failure.message, new RegExp(`fabric-lsp\\.path is set to "${path.join(dir, "bin", "fabric-lsp")}", which is not an executable file`));
  });

  it("fromEnvironment lets the interpreter's own packages in (no -I)", async () => {
    const plan = ok(await resolveLaunch(inputs({ importStrategy: "fromEnvironment" })));
    assert.deepEqual(plan.args, ["/ext/bundled/tool/launch.py"]);
    assert.equal(plan.env.FABRIC_LSP_IMPORT_STRATEGY, "fromEnvironment");
  });

  it("an untrusted workspace never asks the Python extension and always runs the bundled server", async () => {
    let asked = false;
    const plan = ok(
      await resolveLaunch(
        inputs({
          trusted: false,
          importStrategy: "fromEnvironment",
          pythonExtensionInterpreter: async () => {
            asked = true;
            return realPython;
          },
        }),
      ),
    );
    assert.equal(asked, false);
    assert.equal(plan.source, "python3 on PATH");
    assert.deepEqual(plan.args, ["-I", "/ext/bundled/tool/launch.py"]);
    assert.equal(plan.env.FABRIC_LSP_IMPORT_STRATEGY, "bundled");
  });
});

describe("analysisInterpreter", () => {
  it("is the workspace's selected Python when trusted, else the server's own", () => {
    assert.equal(analysisInterpreter(true, "/proj/.venv/bin/python", "/usr/bin/python3"), "/proj/.venv/bin/python");
    assert.equal(analysisInterpreter(true, undefined, "/usr/bin/python3"), null);
    assert.equal(analysisInterpreter(false, "/proj/.venv/bin/python", "/usr/bin/python3"), "/usr/bin/python3");
  });
});

describe("untrusted workspace with fabric-lsp.path", () => {
  // The workspace has its own .venv; with no python setting the server would fall back to it.
  function workspaceWithVenv(): { folder: string; venvPython: string } {
    const folder = fs.mkdtempSync(path.join(dir, "untrusted-"));
    const venvPython = path.join(folder, ".venv", "bin", "python");
    fs.mkdirSync(path.dirname(venvPython), { recursive: true });
    fs.writeFileSync(path.join(folder, ".venv", "pyvenv.cfg"), "home = /usr/bin\n");
    fs.symlinkSync(realPython!, venvPython);
    return { folder, venvPython };
  }

  function analysedAgainst(plan: LaunchPlan, venvPython: string): string | null {
    const python = analysisInterpreter(false, venvPython, plan.untrustedAnalysisPython);
    return mapSettings(() => ({}), python).settings.python;
  }

  it("analyses against the Python named by the installed script's #! line", async () => {
    const { folder, venvPython } = workspaceWithVenv();
    const userPython = path.join(dir, "user-venv", "bin", "python3");
    fs.mkdirSync(path.dirname(userPython), { recursive: true });
    if (!fs.existsSync(userPython)) fs.symlinkSync(realPython!, userPython);
    const installed = path.join(dir, "installed-fabric-lsp");
    fs.writeFileSync(installed, `#!${userPython}\nimport sys\n`, { mode: 0o755 });
    const plan = ok(await resolveLaunch(inputs({ path: installed, trusted: false, workspaceFolder: folder })));
    assert.equal(plan.source, "path");
    assert.equal(plan.command, installed);
    assert.equal(analysedAgainst(plan, venvPython), userPython);
  });

  it("without a Python #! line, analyses against python3 on PATH, never null (the workspace's .venv)", async () => {
    const { folder, venvPython } = workspaceWithVenv();
    const plan = ok(
      await resolveLaunch(
        inputs({
          path: fakeServer, // a /bin/sh wrapper
          interpreter: venvPython,
          trusted: false,
          workspaceFolder: folder,
          pythonExtensionInterpreter: async () => venvPython,
        }),
      ),
    );
    const python = analysedAgainst(plan, venvPython);
    assert.equal(python, path.join(pathWithRealPython, "python3"));
    assert.ok(!python!.startsWith(folder), python!);
  });

  it("control: a trusted workspace analyses against its selected Python", async () => {
    const { folder, venvPython } = workspaceWithVenv();
    const plan = ok(await resolveLaunch(inputs({ path: fakeServer, workspaceFolder: folder })));
    assert.equal(analysisInterpreter(true, venvPython, plan.untrustedAnalysisPython), venvPython);
  });

  it("shebangPython reads `env python3` through PATH and ignores non-Python scripts", () => {
    const viaEnv = path.join(dir, "via-env");
    fs.writeFileSync(viaEnv, "#!/usr/bin/env python3\n", { mode: 0o755 });
    assert.equal(shebangPython(viaEnv, { PATH: pathWithRealPython }), path.join(pathWithRealPython, "python3"));
    assert.equal(shebangPython(fakeServer, { PATH: pathWithRealPython }), undefined);
    assert.equal(shebangPython(path.join(dir, "missing"), { PATH: pathWithRealPython }), undefined);
  });
});

describe("expandPath", () => {
  const context = { workspaceFolder: "/work/proj", env: { VENV: "/opt/venv" }, home: "/home/me" };
  it("expands variables, ~ and paths relative to the workspace folder", () => {
    assert.equal(expandPath("${workspaceFolder}/.venv/bin/python", context), "/work/proj/.venv/bin/python");
    assert.equal(expandPath("${env:VENV}/bin/python", context), "/opt/venv/bin/python");
    assert.equal(expandPath("~/py/bin/python3", context), "/home/me/py/bin/python3");
    assert.equal(expandPath("${userHome}/x", context), "/home/me/x");
    assert.equal(expandPath(".venv/bin/python", context), "/work/proj/.venv/bin/python");
    assert.equal(expandPath("python3.12", context), "python3.12");
  });
});

describe("untrusted workspace: program settings that name the workspace (issue 24, item 10)", () => {
  // A hostile workspace: its .venv/bin/python and bin/fabric-lsp leave a marker when run, then run the real
  // Python (so that, where they do run, the server would start and nothing looks wrong).
  function hostileWorkspace(): { folder: string; marker: string; venvPython: string; server: string } {
    const folder = fs.mkdtempSync(path.join(dir, "hostile-"));
    const marker = path.join(folder, "..", `${path.basename(folder)}.marker`);
    const program = (relative: string) => {
      const file = path.join(folder, relative);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, `#!/bin/sh\necho ${relative} >> '${marker}'\nexec '${realPython}' "$@"\n`, { mode: 0o755 });
      return file;
    };
    return { folder, marker, venvPython: program(".venv/bin/python"), server: program("bin/fabric-lsp") };
  }

  function untrusted(folder: string, overrides: Partial<LaunchInputs>): LaunchInputs {
    return inputs({ trusted: false, workspaceFolder: folder, ...overrides });
  }

  /** The fallback of an unset setting, one log line naming the setting, the marker never written. */
  async function ignoredAsUnset(key: "path" | "interpreter", value: string, folder: string, marker: string, more: Partial<LaunchInputs> = {}) {
    const plan = ok(await resolveLaunch(untrusted(folder, { [key]: value, ...more })));
    assert.equal(plan.source, "python3 on PATH");
    assert.equal(plan.command, path.join(pathWithRealPython, "python3"));
    assert.equal(plan.ignored.length, 1, plan.ignored.join("\n"));
    assert.ok(plan.ignored[0].startsWith(`fabric-lsp.${key} (${JSON.stringify(value)}) is ignored: the workspace is untrusted`), plan.ignored[0]);
    assert.ok(!plan.command.startsWith(folder) && !plan.untrustedAnalysisPython!.startsWith(folder));
    assert.equal(fs.existsSync(marker), false, `a workspace program ran: ${fs.existsSync(marker) ? fs.readFileSync(marker, "utf8") : ""}`);
    return plan;
  }

  it("fabric-lsp.interpreter = ${workspaceFolder}/.venv/bin/python is not run; control: trusted, it is", async () => {
    const { folder, marker, venvPython } = hostileWorkspace();
    const plan = await ignoredAsUnset("interpreter", "${workspaceFolder}/.venv/bin/python", folder, marker);
    assert.match(plan.ignored[0], /it names the workspace folder; going on as if it were unset\. Trust the workspace to use it\.$/);
    const trusted = ok(await resolveLaunch(inputs({ workspaceFolder: folder, interpreter: "${workspaceFolder}/.venv/bin/python" })));
    assert.equal(trusted.command, venvPython);
    assert.deepEqual(trusted.ignored, []);
    assert.equal(fs.readFileSync(marker, "utf8"), ".venv/bin/python\n", "the control: the probe runs the setting's program");
  });

  it("fabric-lsp.path = ${workspaceFolder}/bin/fabric-lsp is not run; control: trusted, it is the server", async () => {
    const { folder, marker, server } = hostileWorkspace();
    // The interpreter setting still applies when it is the user's own: path ignored, then the next setting.
    const plan = ok(await resolveLaunch(untrusted(folder, { path: "${workspaceFolder}/bin/fabric-lsp", interpreter: realPython! })));
    assert.equal(plan.source, "interpreter setting");
    assert.equal(plan.command, realPython);
    assert.match(plan.ignored[0], /^fabric-lsp\.path \("\$\{workspaceFolder\}\/bin\/fabric-lsp"\) is ignored: /);
    await ignoredAsUnset("path", "${workspaceFolder}/bin/fabric-lsp", folder, marker);
    const trusted = ok(await resolveLaunch(inputs({ workspaceFolder: folder, path: "${workspaceFolder}/bin/fabric-lsp" })));
    assert.equal(trusted.source, "path");
    assert.equal(trusted.command, server);
  });

  it("relative paths (taken from the workspace folder) are ignored, in both settings", async () => {
    const { folder, marker } = hostileWorkspace();
    for (const value of ["./.venv/bin/python", ".venv/bin/python", "../" + path.basename(folder) + "/.venv/bin/python"]) {
      const plan = await ignoredAsUnset("interpreter", value, folder, marker);
      assert.match(plan.ignored[0], /a relative path is taken from the workspace folder/);
    }
    await ignoredAsUnset("path", "bin/fabric-lsp", folder, marker);
    // ${workspaceFolder:name} (multi-root) and a relative path hidden in an environment variable.
    await ignoredAsUnset("interpreter", "${workspaceFolder:hostile}/.venv/bin/python", folder, marker);
    await ignoredAsUnset("interpreter", "${env:VENV}/bin/python", folder, marker, { env: { PATH: pathWithRealPython, VENV: ".venv" } });
  });

  it("an absolute path into the workspace is ignored, and so is one whose links lead there or that is a link there", async () => {
    const { folder, marker, venvPython } = hostileWorkspace();
    let plan = await ignoredAsUnset("interpreter", venvPython, folder, marker);
    assert.match(plan.ignored[0], new RegExp(`${venvPython.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} lies inside the workspace folder`));
    // A user-owned path that is a link into the workspace.
    const home = fs.mkdtempSync(path.join(dir, "home-"));
    fs.symlinkSync(venvPython, path.join(home, "python"));
    await ignoredAsUnset("interpreter", "~/python", folder, marker, { home });
    // A link inside the workspace to a real Python: the workspace chose where it leads.
    fs.symlinkSync(realPython!, path.join(folder, "python-link"));
    await ignoredAsUnset("interpreter", path.join(folder, "python-link"), folder, marker);
    // Any folder of a multi-root workspace.
    const other = fs.mkdtempSync(path.join(dir, "first-"));
    await ignoredAsUnset("path", path.join(folder, "bin", "fabric-lsp"), other, marker, { workspaceFolders: [other, folder] });
    plan = ok(await resolveLaunch(untrusted(other, { interpreter: venvPython })));
    assert.equal(plan.source, "interpreter setting", "a program outside every workspace folder is the user's");
    assert.equal(fs.readFileSync(marker, "utf8"), ".venv/bin/python\n");
  });

  it("the user's own programs stay allowed: absolute, ~, ${userHome}, ${env:NAME}, bare names on PATH", async () => {
    const { folder, marker } = hostileWorkspace();
    const home = fs.mkdtempSync(path.join(dir, "home-"));
    fs.mkdirSync(path.join(home, "py", "bin"), { recursive: true });
    fs.symlinkSync(realPython!, path.join(home, "py", "bin", "python3"));
    const env = { PATH: pathWithRealPython, VENV: path.join(home, "py") };
    for (const value of [realPython!, "~/py/bin/python3", "${userHome}/py/bin/python3", "${env:VENV}/bin/python3", "python3"]) {
      const plan = ok(await resolveLaunch(untrusted(folder, { interpreter: value, home, env })));
      assert.equal(plan.source, "interpreter setting", value);
      assert.deepEqual(plan.ignored, [], value);
    }
    const plan = ok(await resolveLaunch(untrusted(folder, { path: fakeServer, home, env })));
    assert.equal(plan.command, fakeServer);
    assert.equal(fs.existsSync(marker), false);
  });

  it("python3 on PATH skips a PATH entry inside the workspace (an activated workspace venv)", async () => {
    const { folder, marker, venvPython } = hostileWorkspace();
    fs.symlinkSync(venvPython, path.join(folder, ".venv", "bin", "python3"));
    const env = { PATH: [path.join(folder, ".venv", "bin"), pathWithRealPython].join(path.delimiter) };
    const plan = ok(await resolveLaunch(untrusted(folder, { env })));
    assert.equal(plan.command, path.join(pathWithRealPython, "python3"));
    assert.ok(plan.skipped.includes(`${path.join(folder, ".venv", "bin", "python3")} (on PATH): lies inside the untrusted workspace folder ${folder}`), plan.skipped.join("\n"));
    // A bare interpreter name found there first is ignored as a whole (as if unset), and the fallback skips it too.
    await ignoredAsUnset("interpreter", "python3", folder, marker, { env });
    assert.equal(fs.existsSync(marker), false);
    // Trusted, the workspace's venv on PATH is what the user activated.
    const trusted = ok(await resolveLaunch(inputs({ workspaceFolder: folder, env })));
    assert.equal(trusted.command, path.join(folder, ".venv", "bin", "python3"));
  });

  it("fabric-lsp.path from the user: its #! Python inside the workspace is not the analysis interpreter", async () => {
    const { folder, venvPython } = hostileWorkspace();
    const installed = path.join(dir, `installed-${path.basename(folder)}`);
    fs.writeFileSync(installed, `#!${venvPython}\nimport sys\n`, { mode: 0o755 });
    const plan = ok(await resolveLaunch(untrusted(folder, { path: installed })));
    assert.equal(plan.command, installed);
    assert.equal(plan.untrustedAnalysisPython, path.join(pathWithRealPython, "python3"));
  });

  it("a failure keeps the ignored line for the log", async () => {
    const { folder, marker } = hostileWorkspace();
    const failure = failed(await resolveLaunch(untrusted(folder, { interpreter: "${workspaceFolder}/.venv/bin/python", env: { PATH: pathWithOldPythonOnly } })));
    assert.match(failure.ignored[0], /^fabric-lsp\.interpreter /);
    assert.equal(fs.existsSync(marker), false);
  });
});

describe("folderHolding", () => {
  it("is the folder a path lies in, not a sibling sharing its prefix", () => {
    assert.equal(folderHolding("/work/proj/.venv/bin/python", ["/work/other", "/work/proj"]), "/work/proj");
    assert.equal(folderHolding("/work/proj", ["/work/proj"]), "/work/proj");
    assert.equal(folderHolding("/work/proj-2/python", ["/work/proj"]), undefined);
    assert.equal(folderHolding("/work/..proj/python", ["/work"]), "/work");
    assert.equal(folderHolding("/usr/bin/python3", ["/work/proj"]), undefined);
  });
});
