// Compile the unit tests (they import only modules without `vscode`) and run them with the Node test runner.
import { spawnSync } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { build } from "esbuild";

rmSync("out/test", { recursive: true, force: true });
const tests = readdirSync("test").filter((name) => name.endsWith(".test.ts"));
await build({
  entryPoints: tests.map((name) => `test/${name}`),
  bundle: true,
  outdir: "out/test",
  external: ["vscode"],
  platform: "node",
  format: "cjs",
  target: "node20",
  sourcemap: "inline",
  logLevel: "warning",
});
const run = spawnSync(
  process.execPath,
  ["--enable-source-maps", "--test", "--test-reporter=spec", ...tests.map((name) => `out/test/${name.replace(/\.ts$/, ".js")}`)],
  { stdio: "inherit" },
);
process.exit(run.status ?? 1);
