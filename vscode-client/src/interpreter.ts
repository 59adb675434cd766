// Which process runs the language server: `fabric-lsp.path`, else the bundled server under a Python found
// in this order: `fabric-lsp.interpreter`, the Python extension's selected interpreter, `python3` on PATH.
// No `vscode` import here: unit-tested under plain Node with real interpreters.

import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export const MIN_PYTHON: readonly [number, number] = [3, 10];

export type ImportStrategy = "bundled" | "fromEnvironment";

export interface ProbeResult {
  ok: boolean;
  /** "3.11.7" when the interpreter ran. */
  version?: string;
  /** sys.executable as the interpreter reports it. */
  executable?: string;
  /** Why it cannot run the server, as a verb phrase ("does not exist", "is Python 3.8.18; ..."). */
  reason?: string;
}

export type Probe = (command: string) => Promise<ProbeResult>;

const PROBE_SCRIPT = "import sys; print(sys.version.split()[0]); print(sys.executable)";

/** Run the interpreter once (isolated, nothing imported) and check it is Python >= 3.10. */
export function probePython(command: string, timeoutMs = 15000): Promise<ProbeResult> {
  return new Promise((resolve) => {
    execFile(command, ["-I", "-c", PROBE_SCRIPT], { timeout: timeoutMs, windowsHide: true }, (error, stdout) => {
      if (error) {
        const code = (error as NodeJS.ErrnoException).code;
        const reason =
          code === "ENOENT"
            ? "does not exist"
            : code === "EACCES"
              ? "is not executable"
              : error.killed
                ? `did not answer within ${timeoutMs / 1000} s`
                : `failed to run (${error.message.split("\n")[0]})`;
        resolve({ ok: false, reason });
        return;
      }
      const [version = "", executable = ""] = stdout.trim().split(/\r?\n/);
      const match = /^(\d+)\.(\d+)/.exec(version);
      if (!match) {
        resolve({ ok: false, reason: `is not a Python interpreter (printed ${JSON.stringify(stdout.slice(0, 80))})` });
        return;
      }
      const major = Number(match[1]);
      const minor = Number(match[2]);
      if (major < MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor < MIN_PYTHON[1])) {
        resolve({ ok: false, version, executable, reason: `is Python ${version}; fabric-lsp needs ${MIN_PYTHON.join(".")} or newer` });
        return;
      }
      resolve({ ok: true, version, executable });
    });
  });
}

export interface ExpandContext {
  workspaceFolder?: string;
  env: NodeJS.ProcessEnv;
  home?: string;
}

/** Expand `~`, `${userHome}`, `${workspaceFolder}`, `${env:NAME}`; a relative path is taken from the workspace folder. */
export function expandPath(value: string, context: ExpandContext): string {
  const home = context.home ?? os.homedir();
  let result = value.trim();
  if (!result) return result;
  result = result.replace(/\$\{env:([^}]+)\}/g, (_, name: string) => context.env[name] ?? "");
  result = result.replace(/\$\{userHome\}/g, home);
  if (context.workspaceFolder) result = result.replace(/\$\{workspaceFolder\}/g, context.workspaceFolder);
  if (result === "~") result = home;
  else if (result.startsWith("~/")) result = path.join(home, result.slice(2));
  const looksLikePath = result.includes("/") || result.includes(path.sep);
  if (looksLikePath && !path.isAbsolute(result) && context.workspaceFolder) {
    result = path.resolve(context.workspaceFolder, result);
  }
  return result;
}

/**
 * The first executable file called `name` in PATH, like `which`, as an absolute path (a relative PATH entry
 * is taken from this process's folder, where it was checked, not from the server's working folder).
 * `passOver` skips a candidate (and says why in `passedOver`).
 */
export function findOnPath(
  name: string,
  env: NodeJS.ProcessEnv,
  passOver?: (candidate: string) => string | undefined,
  passedOver?: string[],
): string | undefined {
  if (name.includes("/") || name.includes(path.sep)) return isExecutable(name) ? name : undefined;
  const dirs = (env.PATH ?? env.Path ?? "").split(path.delimiter).filter(Boolean);
  const exts = process.platform === "win32" ? (env.PATHEXT ?? ".EXE;.CMD;.BAT").split(";") : [""];
  for (const dir of dirs) {
    for (const ext of exts) {
      const candidate = path.resolve(dir, name + ext);
      if (!isExecutable(candidate)) continue;
      const why = passOver?.(candidate);
      if (!why) return candidate;
      passedOver?.push(`${candidate} (on PATH): ${why}`);
    }
  }
  return undefined;
}

const CASE_INSENSITIVE_FS = process.platform === "win32" || process.platform === "darwin";

function realOrSelf(file: string): string {
  try {
    return fs.realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}

function isWithin(file: string, folder: string): boolean {
  const norm = (p: string) => (CASE_INSENSITIVE_FS ? path.resolve(p).toLowerCase() : path.resolve(p));
  const relative = path.relative(norm(folder), norm(file));
  return relative === "" || (relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative));
}

/**
 * The workspace folder a program lies in, as written or once its links are followed (either way the
 * workspace decides what runs), or undefined.
 */
export function folderHolding(program: string, folders: readonly string[]): string | undefined {
  const real = realOrSelf(program);
  return folders.find((folder) => {
    const realFolder = realOrSelf(folder);
    return [program, real].some((file) => isWithin(file, folder) || isWithin(file, realFolder));
  });
}

const WORKSPACE_VARIABLE = /\$\{workspaceFolder(?::[^}]*)?\}/;

/**
 * Why an untrusted workspace may not run the program a `fabric-lsp.path`/`interpreter` value names, or
 * undefined when it may: the workspace decides what a `${workspaceFolder}` or relative path (taken from the
 * workspace folder) runs, and what lies inside its folders. Absolute paths, `~`, `${userHome}`, `${env:NAME}`
 * and bare names looked up on PATH are the user's.
 * `program`: the file the value resolves to (undefined when not found).
 */
export function untrustedProgramRefusal(
  value: string,
  program: string | undefined,
  context: ExpandContext & { folders: readonly string[] },
): string | undefined {
  const userExpanded = expandPath(value, { env: context.env, home: context.home });
  if (WORKSPACE_VARIABLE.test(value) || WORKSPACE_VARIABLE.test(userExpanded)) return "it names the workspace folder";
  const looksLikePath = userExpanded.includes("/") || userExpanded.includes(path.sep);
  if (looksLikePath && !path.isAbsolute(userExpanded)) return "a relative path is taken from the workspace folder";
  const holding = program && folderHolding(program, context.folders);
  return holding ? `${program} lies inside the workspace folder ${holding}` : undefined;
}

function isExecutable(file: string): boolean {
  try {
    if (!fs.statSync(file).isFile()) return false;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The Python a script's `#!` line runs (`#!/venv/bin/python3`, `#!/usr/bin/env python3`), read as text:
 * the interpreter of a pip-installed `fabric-lsp`. Undefined when the file is not a Python script.
 */
export function shebangPython(file: string, env: NodeJS.ProcessEnv): string | undefined {
  let head: string;
  try {
    const fd = fs.openSync(file, "r");
    try {
      const buffer = Buffer.alloc(512);
      head = buffer.subarray(0, fs.readSync(fd, buffer, 0, buffer.length, 0)).toString("utf8");
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return undefined;
  }
  if (!head.startsWith("#!")) return undefined;
  const words = head.slice(2).split(/\r?\n/)[0].trim().split(/\s+/);
  const isPython = (name: string) => /^python[0-9.]*$/.test(path.basename(name));
  if (words[0] && path.basename(words[0]) === "env") {
    const name = words.slice(1).find((word) => !word.startsWith("-"));
    return name && isPython(name) ? findOnPath(name, env) : undefined;
  }
  return words[0] && path.isAbsolute(words[0]) && isPython(words[0]) ? words[0] : undefined;
}

export type LaunchSource = "path" | "interpreter setting" | "Python extension" | "python3 on PATH";

export interface LaunchPlan {
  ok: true;
  source: LaunchSource;
  command: string;
  args: string[];
  /** Extra environment for the server process. */
  env: Record<string, string>;
  /** The Python that runs the bundled server (absent for `fabric-lsp.path`). */
  serverPython?: string;
  /**
   * What an untrusted workspace is analysed against: the server's own Python; for `fabric-lsp.path` the
   * Python its `#!` line names, else python3 on PATH. Never one the workspace chose: with none, the server
   * would fall back to the workspace's `.venv`.
   */
  untrustedAnalysisPython?: string;
  pythonVersion?: string;
  /** Interpreters looked at and passed over, with the reason (for the log). */
  skipped: string[];
  /** Settings not applied because the workspace is untrusted, one line each (for the log). */
  ignored: string[];
}

export interface LaunchFailure {
  ok: false;
  /** One sentence for the notification: what is wrong and how to fix it. */
  message: string;
  /** Every candidate and why it was not usable (for the log). */
  details: string[];
  /** Settings not applied because the workspace is untrusted, one line each (for the log). */
  ignored: string[];
}

export interface LaunchInputs {
  /** `fabric-lsp.path` (unexpanded). */
  path: string;
  /** `fabric-lsp.interpreter` (unexpanded). */
  interpreter: string;
  importStrategy: ImportStrategy;
  /**
   * Workspace trust: an untrusted workspace never picks the interpreter, and nothing inside it is run, even
   * when a user setting names it.
   */
  trusted: boolean;
  /** The folder `${workspaceFolder}` and relative paths stand for (the first one). */
  workspaceFolder?: string;
  /** Every folder of the workspace (default: `workspaceFolder`): untrusted, none of their programs runs. */
  workspaceFolders?: readonly string[];
  env: NodeJS.ProcessEnv;
  home?: string;
  /** bundled/tool/launch.py inside the installed extension. */
  launcher: string;
  /** The Python extension's selected interpreter; undefined when the extension is absent or has none. */
  pythonExtensionInterpreter: () => Promise<string | undefined>;
  probe?: Probe;
}

const HOW_TO_FIX =
  'Install Python 3.10 or newer, then select it with "Python: Select Interpreter" or set "fabric-lsp.interpreter" to its path.';

export async function resolveLaunch(inputs: LaunchInputs): Promise<LaunchPlan | LaunchFailure> {
  const probe = inputs.probe ?? ((command: string) => probePython(command));
  const expand = (value: string) => expandPath(value, { workspaceFolder: inputs.workspaceFolder, env: inputs.env, home: inputs.home });
  const skipped: string[] = [];
  const ignored: string[] = [];
  const folders = inputs.workspaceFolders ?? (inputs.workspaceFolder ? [inputs.workspaceFolder] : []);
  // Untrusted: a program inside a workspace folder is never run, wherever its name comes from.
  const outsideWorkspace = (candidate: string) => {
    if (inputs.trusted) return undefined;
    const holding = folderHolding(candidate, folders);
    return holding && `lies inside the untrusted workspace folder ${holding}`;
  };
  const onPath = (name: string) => findOnPath(name, inputs.env, outsideWorkspace, skipped);

  /**
   * The program a path/interpreter setting names (`resolve` finds it from the expanded value), or undefined
   * when unset, or ignored: untrusted, a program the workspace decides is treated as unset, in one log line.
   */
  const programSetting = (key: "path" | "interpreter", resolve: (wanted: string) => string | undefined) => {
    const value = inputs[key];
    if (!value.trim()) return undefined;
    const wanted = expand(value);
    const program = resolve(wanted);
    if (inputs.trusted) return { wanted, program };
    const refusal = untrustedProgramRefusal(value, program, { env: inputs.env, home: inputs.home, folders });
    if (!refusal) return { wanted, program };
    ignored.push(
      `fabric-lsp.${key} (${JSON.stringify(value)}) is ignored: the workspace is untrusted (Restricted Mode) and ` +
        `${refusal}; going on as if it were unset. Trust the workspace to use it.`,
    );
    return undefined;
  };

  const pathSetting = programSetting("path", (wanted) => findOnPath(wanted, inputs.env));
  if (pathSetting) {
    const { wanted, program: found } = pathSetting;
    if (!found) {
      return {
        ok: false,
        message: `fabric-lsp.path is set to "${wanted}", which is not an executable file. Fix the path or clear the setting to use the bundled server.`,
        details: [`fabric-lsp.path ${wanted}: not found or not executable`],
        ignored,
      };
    }
    const shebang = shebangPython(found, inputs.env);
    const ownPython = (shebang && !outsideWorkspace(shebang) ? shebang : undefined) ?? onPath("python3") ?? onPath("python");
    return { ok: true, source: "path", command: found, args: ["serve"], env: {}, untrustedAnalysisPython: ownPython, skipped, ignored };
  }

  const strategy: ImportStrategy = inputs.trusted ? inputs.importStrategy : "bundled";
  const plan = (source: LaunchSource, python: string, result: ProbeResult): LaunchPlan => ({
    ok: true,
    source,
    command: python,
    // -I keeps the user's PYTHONPATH and user site from shadowing the bundled packages.
    args: strategy === "bundled" ? ["-I", inputs.launcher] : [inputs.launcher],
    env: { FABRIC_LSP_IMPORT_STRATEGY: strategy, PYTHONUNBUFFERED: "1" },
    serverPython: python,
    untrustedAnalysisPython: python,
    pythonVersion: result.version,
    skipped,
    ignored,
  });

  // An interpreter named in the settings is what the user asked for: no silent fallback when it is unusable.
  const interpreterSetting = programSetting("interpreter", (wanted) =>
    findOnPath(wanted, inputs.env) ?? (path.isAbsolute(wanted) ? wanted : undefined),
  );
  if (interpreterSetting) {
    const { wanted } = interpreterSetting;
    const found = interpreterSetting.program ?? wanted;
    const result = await probe(found);
    if (result.ok) return plan("interpreter setting", found, result);
    return {
      ok: false,
      message: `fabric-lsp.interpreter is set to "${wanted}", which ${result.reason}. ${HOW_TO_FIX}`,
      details: [`fabric-lsp.interpreter ${wanted}: ${result.reason}`],
      ignored,
    };
  }

  if (inputs.trusted) {
    let selected: string | undefined;
    try {
      selected = await inputs.pythonExtensionInterpreter();
    } catch (error) {
      skipped.push(`Python extension: could not ask for the selected interpreter (${String(error)})`);
    }
    if (selected) {
      const result = await probe(selected);
      if (result.ok) return plan("Python extension", selected, result);
      skipped.push(`Python extension's interpreter ${selected}: ${result.reason}`);
    }
  } else {
    skipped.push("Python extension's interpreter: not used in an untrusted workspace");
  }

  const python3 = onPath("python3") ?? onPath("python");
  if (python3) {
    const result = await probe(python3);
    if (result.ok) return plan("python3 on PATH", python3, result);
    skipped.push(`${python3} (on PATH): ${result.reason}`);
  } else {
    skipped.push("python3 on PATH: not found");
  }
  return {
    ok: false,
    message: `Fabric LSP found no usable Python to run its server. ${HOW_TO_FIX}`,
    details: skipped,
    ignored,
  };
}

/**
 * The interpreter the server analyses against (its `python` setting): the workspace's selected Python.
 * In an untrusted workspace the server's own interpreter, so that nothing the workspace names is run.
 */
export function analysisInterpreter(
  trusted: boolean,
  selected: string | undefined,
  serverPython: string | undefined,
): string | null {
  if (!trusted) return serverPython ?? null;
  return selected ?? null;
}
