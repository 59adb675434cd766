// Bundle the extension into dist/extension.js (vscode stays external: the editor provides it).
import { build } from "esbuild";

await build({
  entryPoints: ["src/extension.ts"],
  bundle: true,
  outfile: "dist/extension.js",
  external: ["vscode"],
  platform: "node",
  format: "cjs",
  target: "node20",
  sourcemap: true,
  minify: process.argv.includes("--minify"),
  logLevel: "info",
});
