// Install fabric-lsp and its pure-Python dependencies (pygls, lsprotocol, jedi, ...) into bundled/libs
// with `pip install --target`, for Python 3.10 and newer. The Python that runs pip:
// $FABRIC_LSP_PACKAGING_PYTHON, else python3.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const client = resolve(here, "..");
const repo = resolve(client, "..");
const libs = join(client, "bundled", "libs");
const python = process.env.FABRIC_LSP_PACKAGING_PYTHON || "python3";
const BACKPORTS_FOR_3_10 = ["exceptiongroup>=1.1.1", "tomli>=1.1"];

function run(args, options = {}) {
  console.log(`$ ${python} ${args.join(" ")}`);
  const result = spawnSync(python, args, { stdio: "inherit", ...options });
  if (result.status !== 0) {
    console.error(`bundle-python: ${python} ${args[0]} ${args[1] ?? ""} failed (exit ${result.status ?? result.signal})`);
    process.exit(1);
  }
}

// Build the wheel from a copy of the sources: an in-tree setuptools build leaves build/ and stale files behind.
const work = mkdtempSync(join(tmpdir(), "fabric-lsp-bundle-"));
try {
  const source = join(work, "src");
  for (const name of ["pyproject.toml", "README.md", "LICENSE"]) cpSync(join(repo, name), join(source, name));
  cpSync(join(repo, "server", "fabric_lsp"), join(source, "server", "fabric_lsp"), {
    recursive: true,
    dereference: true, // fabric_lsp/rule_pages links to docs/rules: the pages themselves are copied
    filter: (path) => !path.includes("__pycache__") && !path.endsWith(".pyc"),
  });
  const wheels = join(work, "wheels");
  run(["-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", wheels, source]);
  const wheel = readdirSync(wheels).find((name) => name.endsWith(".whl"));
  if (!wheel) throw new Error("no wheel was built");

  // PyYAML (the config-file reader) publishes no pure-Python wheel: build one from its source without the
  // libyaml extension (PYYAML_FORCE_LIBYAML=0: its pure-Python safe loader, all the server uses).
  run(["-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps", "--no-binary", "pyyaml",
    "--wheel-dir", wheels, "pyyaml>=6"], { env: { ...process.env, PYYAML_FORCE_LIBYAML: "0" } });
  if (!readdirSync(wheels).some((name) => /^pyyaml-.*-py3-none-any\.whl$/i.test(name))) {
    throw new Error("no pure-Python PyYAML wheel was built");
  }

  rmSync(libs, { recursive: true, force: true });
  // --python-version 3.10 checks Requires-Python against the oldest Python the server supports, but pip
  // evaluates dependency markers for the Python running it: the 3.10 backports are named here (cattrs needs
  // exceptiongroup, the config reader tomli). They are unused on newer Pythons. --platform any with --only-binary: pure-Python wheels only.
  run([
    "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
    "--target", libs, "--python-version", "3.10", "--platform", "any", "--implementation", "py", "--abi", "none", "--only-binary=:all:", "--upgrade",
    "--find-links", wheels, join(wheels, wheel), ...BACKPORTS_FOR_3_10,
  ]);
  rmSync(join(libs, "bin"), { recursive: true, force: true });
} finally {
  rmSync(work, { recursive: true, force: true });
}

// Every bundled file must be pure Python: a compiled extension would tie the .vsix to one platform.
const compiled = [];
(function walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) walk(full);
    else if (/\.(so|pyd|dylib)$/.test(entry.name)) compiled.push(full);
  }
})(libs);
if (compiled.length) {
  console.error(`bundle-python: compiled files in the bundle:\n${compiled.join("\n")}`);
  process.exit(1);
}
run(["-I", "-B", "-c", `import sys; sys.path.insert(0, ${JSON.stringify(libs)}); import fabric_lsp.cli, pygls, lsprotocol, jedi, yaml; print("bundled:", fabric_lsp.__version__, "from", fabric_lsp.__file__)`]);
if (!existsSync(join(libs, "fabric_lsp", "records", "data"))) {
  console.error("bundle-python: the records (package data) are missing from the bundle");
  process.exit(1);
}
if (!existsSync(join(libs, "fabric_lsp", "rule_pages", "FAB001.md"))) {
  console.error("bundle-python: the rule pages (package data, fabric_lsp/rule_pages) are missing from the bundle");
  process.exit(1);
}
