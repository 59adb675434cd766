// Drive the real VS Code workbench (code-server) in headless Chromium with playwright-core, the way a
// user would: open a file from the explorer, look at the squiggle, the Problems panel, the hover, apply
// the quick fix from the lightbulb menu, restart the server, explain an error, fix all on save. With
// --notebook: open a Jupyter notebook, find the squiggle in its cell, hover, change a setting, apply the
// quick fix, save; fix all on save in more notebooks (--notebook-save, --notebook-cell-save).
// With --untrusted: a folder in Restricted Mode whose user settings name a program in it; records whether
// that program left its marker (--marker) before and after the user trusts the folder.
// Writes what it saw to <artifacts>/result.json and a screenshot per step; tests/editors/test_vscode.py
// starts code-server, runs this script and asserts on the result.
//
// Usage: node workbench.mjs --url URL --workspace DIR --artifacts DIR --report FILE --file NAME --save-file NAME
//        node workbench.mjs --url URL --workspace DIR --artifacts DIR --report FILE --notebook NAME
//                           [--notebook-save NAME] [--notebook-cell-save NAME]
//        node workbench.mjs --url URL --workspace DIR --artifacts DIR --report FILE --untrusted --file NAME --marker FILE
//        --skip STEP,STEP: steps not to run (recorded as { ok: true, skipped: true })
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";

const { values: opt } = parseArgs({
  options: {
    url: { type: "string" },
    workspace: { type: "string" },
    artifacts: { type: "string" },
    report: { type: "string" },
    file: { type: "string", default: "train.py" },
    "save-file": { type: "string", default: "train_on_save.py" },
    // With --notebook the notebook steps run instead of the file steps.
    notebook: { type: "string" },
    "notebook-save": { type: "string" },
    "notebook-cell-save": { type: "string" },
    // With --untrusted the Restricted Mode steps run instead of the file steps.
    untrusted: { type: "boolean", default: false },
    marker: { type: "string" },
    chromium: { type: "string", default: process.env.CHROMIUM || "/usr/lib/chromium/chromium" },
    "diagnostics-timeout": { type: "string", default: "120" },
    skip: { type: "string", default: "" },
  },
});
const SKIP = new Set(opt.skip.split(",").filter(Boolean));
const DIAG_TIMEOUT = Number(opt["diagnostics-timeout"]) * 1000;
mkdirSync(opt.artifacts, { recursive: true });

const result = { steps: {}, screenshots: [], errors: [], timings: {} };
const t0 = Date.now();
let shot = 0;

function save() {
  writeFileSync(join(opt.artifacts, "result.json"), JSON.stringify(result, null, 2));
}

function hookReport() {
  try {
    return JSON.parse(readFileSync(opt.report, "utf8"));
  } catch {
    return undefined;
  }
}

async function waitFor(predicate, timeout, what) {
  const end = Date.now() + timeout;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeout / 1000} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function fileReport(name) {
  const report = hookReport();
  if (!report) return undefined;
  const entry = Object.entries(report.files ?? {}).find(([uri]) => uri.endsWith(`/${name}`));
  return entry ? { report, file: entry[1] } : undefined;
}

async function screenshot(page, name) {
  shot += 1;
  const file = `${String(shot).padStart(2, "0")}-${name}.png`;
  await page.screenshot({ path: join(opt.artifacts, file) });
  result.screenshots.push(file);
  return file;
}

/** A small picture of one region (for the documentation, docs/images/): the union of the boxes, padded, inside the page. */
async function clipShot(page, name, locators, pad = 12) {
  const boxes = (await Promise.all(locators.map((l) => l.boundingBox()))).filter(Boolean);
  // From the editor's left edge, so that the line numbers show.
  const editor = await page.locator(".editor-instance .monaco-editor").first().boundingBox();
  const x = Math.max(0, Math.min(editor?.x ?? Infinity, ...boxes.map((b) => b.x)) - pad);
  const y = Math.max(0, Math.min(...boxes.map((b) => b.y)) - pad);
  const right = Math.min(page.viewportSize().width, Math.max(...boxes.map((b) => b.x + b.width)) + pad);
  const bottom = Math.min(page.viewportSize().height, Math.max(...boxes.map((b) => b.y + b.height)) + pad);
  const file = `readme-${name}.png`;
  await page.screenshot({ path: join(opt.artifacts, file), clip: { x, y, width: right - x, height: bottom - y } });
  result.screenshots.push(file);
  return file;
}

async function step(name, page, body) {
  if (SKIP.has(name)) {
    result.steps[name] = { ok: true, skipped: true };
    save();
    return true;
  }
  const start = Date.now();
  try {
    result.steps[name] = { ok: false };
    const observed = await body();
    result.steps[name] = { ok: true, ...observed };
  } catch (error) {
    result.steps[name] = { ...result.steps[name], ok: false, error: String(error?.stack ?? error) };
    result.errors.push(`${name}: ${String(error?.message ?? error)}`);
    try {
      await screenshot(page, `${name}-failed`);
    } catch {}
  } finally {
    result.timings[name] = (Date.now() - start) / 1000;
    save();
  }
  if (!result.steps[name].ok) throw new StepFailed(name);
  return true;
}

class StepFailed extends Error {}

async function runCommand(page, title) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible", timeout: 10000 });
  await input.fill(`>${title}`);
  const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: title }).first();
  await row.waitFor({ state: "visible", timeout: 10000 });
  await row.click();
}

async function goToLine(page, line) {
  await page.keyboard.press("Control+G");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible", timeout: 10000 });
  await input.fill(`:${line}`);
  await page.keyboard.press("Enter");
  await input.waitFor({ state: "hidden", timeout: 10000 });
}

async function openFromExplorer(page, name) {
  const row = page.locator(`.explorer-folders-view .monaco-list-row[aria-label="${name}"]`).first();
  await row.waitFor({ state: "visible", timeout: 60000 });
  await row.click();
  await page.locator(`.tabs-container .tab.active[aria-label*="${name}"]`).waitFor({ timeout: 30000 });
  await page.locator(".editor-instance .monaco-editor .view-lines").first().waitFor({ timeout: 30000 });
}

// Settings are edited the way a user edits .vscode/settings.json; VS Code picks the file change up.
const settingsFile = join(opt.workspace, ".vscode", "settings.json");
const originalSettings = readFileSync(settingsFile, "utf8");
const writeSettings = (extra) =>
  writeFileSync(settingsFile, JSON.stringify({ ...JSON.parse(originalSettings), ...extra }, null, 2));

const editorText = (page) =>
  page.evaluate(() => {
    // Only the rendered lines; the full text comes from the test hook.
    return Array.from(document.querySelectorAll(".editor-instance .monaco-editor .view-line"))
      .map((line) => line.textContent)
      .join("\n");
  });

const browser = await chromium.launch({
  executablePath: opt.chromium,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
const page = await context.newPage();
page.on("pageerror", (error) => result.errors.push(`page error: ${error.message}`));

async function fileSteps() {
  await step("open", page, async () => {
    await page.goto(`${opt.url}/?folder=${encodeURIComponent(opt.workspace)}`, { waitUntil: "domcontentloaded" });
    await page.locator(".monaco-workbench").waitFor({ timeout: 60000 });
    await openFromExplorer(page, opt.file);
    return { title: await page.title() };
  });

  await step("squiggle", page, async () => {
    const seen = await waitFor(() => {
      const r = fileReport(opt.file);
      return r && r.file.diagnostics.length && r.file.diagnostics.every((d) => d.hover.length && d.codeActions.length) ? r : undefined;
    }, DIAG_TIMEOUT, "the test hook's report of the diagnostics");
    // Scroll the flagged line into view (only visible lines are rendered), the way a user would: Go to Line.
    await goToLine(page, seen.file.diagnostics[0].range[0] + 1);
    const squiggle = page.locator(".editor-instance .monaco-editor .squiggly-error").first();
    await squiggle.waitFor({ state: "attached", timeout: 20000 });
    const box = await squiggle.boundingBox();
    const file = await screenshot(page, "squiggle");
    return {
      count: await page.locator(".editor-instance .monaco-editor .squiggly-error").count(),
      box,
      screenshot: file,
      diagnostics: seen.file.diagnostics,
      serverVersion: seen.report.serverVersion,
      launchSource: seen.report.launchSource,
      serverCommand: seen.report.serverCommand,
      analysisPython: seen.report.analysisPython,
      state: seen.report.state,
    };
  });

  await step("problems", page, async () => {
    await page.keyboard.press("Control+Shift+M");
    const rows = page.locator(".markers-panel .monaco-list-row");
    await rows.filter({ hasText: "FAB001" }).first().waitFor({ timeout: 20000 });
    const texts = await rows.evaluateAll((els) => els.map((el) => ({ text: el.textContent, label: el.getAttribute("aria-label") })));
    const file = await screenshot(page, "problems");
    // The documentation's picture of a diagnostic: the squiggled line and its row in the Problems panel.
    const line = page.locator(".editor-instance .monaco-editor .view-line", { hasText: "model.generate(" }).first();
    const small = await clipShot(page, "diagnostic", [line, rows.filter({ hasText: "FAB001" }).first()]);
    return { rows: texts, screenshot: file, readme: small };
  });

  await step("languageStatus", page, async () => {
    // The {} item next to "Python" in the status bar; its hover lists the Fabric LSP item.
    await page.locator('[id="status.languageStatus"]').click();
    const hover = page.locator(".monaco-hover", { hasText: "Open logs" }).first();
    await hover.waitFor({ state: "visible", timeout: 10000 });
    await waitFor(async () => /Fabric LSP \d/.test(await hover.innerText()), 30000, "the status item to say the server runs");
    const statusText = await hover.innerText();
    const statusShot = await screenshot(page, "language-status");
    await hover.getByText("Open logs").click();
    const output = page.locator(".panel .monaco-editor .view-lines").first();
    const outputText = async () => (await output.innerText().catch(() => "")).replace(/\u00a0/g, " ");
    await waitFor(async () => (await outputText()).includes("server running"), 20000, "the Fabric LSP log in the Output panel");
    const logText = await outputText();
    const channel = await page.locator(".panel .monaco-select-box, .panel select").evaluateAll((els) => els.map((el) => el.value ?? el.textContent));
    const logShot = await screenshot(page, "logs");
    await page.keyboard.press("Control+Shift+M"); // back to the Problems panel for the next steps
    return { statusText, logText, channel, screenshots: [statusShot, logShot] };
  });

  await step("hover", page, async () => {
    // Hide the bottom panel for the pictures of the hover and the quick fix menu; the restart step reopens it.
    await page.keyboard.press("Control+J");
    await page.locator(".part.panel").waitFor({ state: "hidden", timeout: 5000 }).catch(() => undefined);
    const squiggle = page.locator(".editor-instance .monaco-editor .squiggly-error").first();
    const box = await squiggle.boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    const hover = page.locator(".monaco-hover-content").filter({ hasText: "FAB001" }).first();
    await hover.waitFor({ state: "visible", timeout: 20000 });
    await page.waitForTimeout(500); // the hover grows as its parts render
    const text = await page.locator(".monaco-hover-content").evaluateAll((els) => els.map((el) => el.innerText).join("\n"));
    const headings = await page.locator(".monaco-hover-content h3").allInnerTexts();
    const file = await screenshot(page, "hover");
    const line = page.locator(".editor-instance .monaco-editor .view-line", { hasText: "model.generate(" }).first();
    const small = await clipShot(page, "hover", [line, page.locator(".monaco-hover").filter({ hasText: "FAB001" }).first()]);
    await page.mouse.move(5, 5);
    await page.keyboard.press("Escape");
    return { text, headings, screenshot: file, readme: small };
  });

  await step("quickfix", page, async () => {
    const squiggle = page.locator(".editor-instance .monaco-editor .squiggly-error").first();
    const box = await squiggle.boundingBox();
    // Put the cursor in the flagged name, then open the lightbulb menu by clicking the lightbulb.
    await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    const bulb = page.locator(".editor-instance .lightBulbWidget").first();
    let opened = "lightbulb";
    try {
      await bulb.waitFor({ state: "visible", timeout: 30000 });
      await bulb.click();
    } catch {
      opened = "Ctrl+.";
      await page.keyboard.press("Control+.");
    }
    const menu = page.locator(".action-widget:not(.action-list-submenu-panel)").first();
    await menu.waitFor({ state: "visible", timeout: 15000 });
    const items = await page.locator(".action-widget .monaco-list-row").evaluateAll((els) =>
      els.map((el) => ({ text: el.textContent, role: el.getAttribute("role"), label: el.getAttribute("aria-label") })),
    );
    const menuShot = await screenshot(page, "quickfix-menu");
    const line = page.locator(".editor-instance .monaco-editor .view-line", { hasText: "model.generate(" }).first();
    const gutter = page.locator(".editor-instance .lightBulbWidget").first();
    const small = await clipShot(page, "quickfix", [line, gutter, menu]);
    const chosen = page.locator(".action-widget .monaco-list-row.action", { hasText: "as a forward method" }).first();
    const chosenText = await chosen.textContent();
    await chosen.click();
    await waitFor(async () => (await page.locator(".editor-instance .monaco-editor .squiggly-error").count()) === 0, DIAG_TIMEOUT, "the squiggle to go away");
    const after = await waitFor(() => {
      const r = fileReport(opt.file);
      return r && r.file.diagnostics.length === 0 && r.file.text?.includes("mark_forward_method") ? r : undefined;
    }, 30000, "the test hook to see the fixed text and no diagnostics");
    const fixedShot = await screenshot(page, "fixed");
    return {
      openedWith: opened,
      items,
      chosen: chosenText,
      textAfter: after.file.text,
      diagnosticsAfter: after.file.diagnostics,
      visibleText: await editorText(page),
      screenshots: [menuShot, fixedShot],
      readme: small,
    };
  });

  await step("restart", page, async () => {
    // Bring the finding back (undo the fix), then restart the server and watch diagnostics return.
    await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+Z");
    await page.locator(".editor-instance .monaco-editor .squiggly-error").first().waitFor({ state: "attached", timeout: DIAG_TIMEOUT });
    const before = hookReport();
    await page.keyboard.press("Control+Shift+M");
    await runCommand(page, "Fabric LSP: Restart Server");
    const restarted = await waitFor(() => {
      const r = fileReport(opt.file);
      return r && r.report.starts > before.starts && r.report.state === "Running" && r.file.diagnostics.length ? r : undefined;
    }, DIAG_TIMEOUT, "a new server start with diagnostics");
    await page.locator(".editor-instance .monaco-editor .squiggly-error").first().waitFor({ state: "attached", timeout: DIAG_TIMEOUT });
    const problems = await page.locator(".markers-panel .monaco-list-row").filter({ hasText: "FAB001" }).count();
    const file = await screenshot(page, "after-restart");
    return {
      startsBefore: before.starts,
      startsAfter: restarted.report.starts,
      diagnostics: restarted.file.diagnostics,
      squiggles: await page.locator(".editor-instance .monaco-editor .squiggly-error").count(),
      problemRows: problems,
      screenshot: file,
    };
  });

  await step("explain", page, async () => {
    await runCommand(page, "Fabric LSP: Explain Error Message");
    const input = page.locator(".quick-input-widget input");
    await input.waitFor({ state: "visible", timeout: 10000 });
    await input.fill("TypeError: Expected a method or a string, but got: function");
    await page.keyboard.press("Enter");
    const tab = page.locator(".tabs-container .tab", { hasText: "Explanation 1" }).first();
    await tab.waitFor({ timeout: 30000 });
    // The Markdown preview renders in nested webview iframes.
    let text = "";
    await waitFor(async () => {
      for (const frame of page.frames()) {
        if (frame === page.mainFrame()) continue; // the workbench itself (its notifications mention FAB003 too)
        try {
          const body = await frame.locator("body").innerText({ timeout: 1000 });
          if (body.includes("FAB003")) {
            text = body;
            return true;
          }
        } catch {}
      }
      return false;
    }, 30000, "the rendered explanation");
    const file = await screenshot(page, "explain");
    return { tab: await tab.textContent(), text, screenshot: file };
  });

  await step("fixAllOnSave", page, async () => {
    await openFromExplorer(page, opt["save-file"]);
    const seen = await waitFor(() => {
      const r = fileReport(opt["save-file"]);
      return r && r.file.diagnostics.length ? r : undefined;
    }, DIAG_TIMEOUT, "diagnostics for the second file");
    await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("\n# edited\n");
    await page.keyboard.press("Control+S");
    const onDisk = await waitFor(() => {
      const text = readFileSync(join(opt.workspace, opt["save-file"]), "utf8");
      return text.includes("# edited") ? text : undefined;
    }, 30000, "the file to be saved");
    await waitFor(async () => (await page.locator(".editor-instance .monaco-editor .squiggly-error").count()) === 0, DIAG_TIMEOUT, "the squiggle to go away after saving");
    await goToLine(page, seen.file.diagnostics[0].range[0] + 1);
    const file = await screenshot(page, "fix-all-on-save");
    return { diagnosticsBefore: seen.file.diagnostics, onDisk, screenshot: file };
  });

  await step("liveSettings", page, async () => {
    await openFromExplorer(page, opt.file);
    const before = await waitFor(() => {
      const r = fileReport(opt.file);
      return r && r.file.diagnostics.length ? r : undefined;
    }, DIAG_TIMEOUT, "the diagnostic in the first file");
    writeSettings({ "fabric-lsp.severity": { FAB001: "warning" } });
    const after = await waitFor(() => {
      const r = fileReport(opt.file);
      return r && r.file.diagnostics.length && r.file.diagnostics.every((d) => d.severity === "Warning") ? r : undefined;
    }, DIAG_TIMEOUT, "the diagnostic to become a warning");
    await goToLine(page, after.file.diagnostics[0].range[0] + 1);
    await page.locator(".editor-instance .monaco-editor .squiggly-warning").first().waitFor({ state: "attached", timeout: 20000 });
    const file = await screenshot(page, "severity-warning");
    writeSettings({});
    const restored = await waitFor(() => {
      const r = fileReport(opt.file);
      return r && r.file.diagnostics.length && r.file.diagnostics.every((d) => d.severity === "Error") ? r : undefined;
    }, DIAG_TIMEOUT, "the diagnostic to be an error again");
    return {
      severityBefore: before.file.diagnostics.map((d) => d.severity),
      severityWithSetting: after.file.diagnostics.map((d) => d.severity),
      severityRestored: restored.file.diagnostics.map((d) => d.severity),
      startsBefore: before.report.starts,
      startsAfter: restored.report.starts,
      screenshot: file,
    };
  });

  await step("noPython", page, async () => {
    const before = hookReport();
    writeSettings({ "fabric-lsp.interpreter": "/nonexistent/bin/python3" });
    const toast = page.locator(".notifications-toasts .notification-toast", { hasText: "fabric-lsp.interpreter" }).first();
    await toast.waitFor({ state: "visible", timeout: 30000 });
    const notification = await toast.innerText();
    const buttons = await toast.locator(".monaco-button").allInnerTexts();
    const stateWithout = await waitFor(() => {
      const r = hookReport();
      return r && r.state !== "Running" ? r.state : undefined;
    }, 10000, "the server to be stopped");
    const file = await screenshot(page, "no-usable-python");
    writeSettings({});
    const back = await waitFor(() => {
      const r = fileReport(opt.file);
      return r && r.report.state === "Running" && r.report.starts > before.starts && r.file.diagnostics.length ? r : undefined;
    }, DIAG_TIMEOUT, "the server to start again with the setting cleared");
    const toasts = await page.locator(".notifications-toasts .notification-toast").allInnerTexts();
    return {
      notification,
      buttons,
      stateWithout,
      toastsAfter: toasts.filter((t) => t.includes("Python")),
      startsBefore: before.starts,
      startsAfter: back.report.starts,
      screenshot: file,
    };
  });
}

// -- notebooks ----------------------------------------------------------------------------------

function notebookReport(name) {
  const report = hookReport();
  if (!report) return undefined;
  const entry = Object.entries(report.notebooks ?? {}).find(([uri]) => uri.endsWith(`/${name}`));
  return entry ? { report, uri: entry[0], notebook: entry[1] } : undefined;
}

const cellDiagnostics = (notebook) => notebook.cells.flatMap((cell) => cell.diagnostics.map((d) => ({ cell: cell.index, ...d })));
const NOTEBOOK = ".notebook-editor";
const cellRow = (index) => page.locator(`${NOTEBOOK} .monaco-list-row[data-index="${index}"]`);
const notebookSquiggles = (kind = "error") => page.locator(`${NOTEBOOK} .cell-editor-container .squiggly-${kind}`);

/** Open a notebook from the explorer. Clicked before the workbench has registered the built-in ipynb
 * extension's notebook type, VS Code opens the JSON as text: then close that editor and click again. */
async function openNotebook(name) {
  const row = page.locator(`.explorer-folders-view .monaco-list-row[aria-label="${name}"]`).first();
  await row.waitFor({ state: "visible", timeout: 60000 });
  const cells = page.locator(`${NOTEBOOK} .cell-editor-container .monaco-editor`).first();
  const json = page.locator(".editor-instance .monaco-editor .view-lines", { hasText: '"cells": [' }).first();
  for (let attempt = 1; ; attempt++) {
    await row.click();
    await page.locator(`.tabs-container .tab.active[aria-label*="${name}"]`).waitFor({ timeout: 30000 });
    await cells.or(json).first().waitFor({ timeout: 30000 });
    if (await cells.isVisible()) return attempt;
    if (attempt >= 3) throw new Error(`${name} opened as text ${attempt} times`);
    await screenshot(page, `notebook-opened-as-text-${attempt}`);
    await runCommand(page, "View: Close Editor");
    await page.waitForTimeout(2000);
  }
}

/** Scroll the notebook (mouse wheel over it, as a user does) until a cell's squiggle is well inside it. */
async function revealSquiggleInCell(index, kind = "error") {
  const notebook = await page.locator(NOTEBOOK).first().boundingBox();
  const top = notebook.y + 60;
  const bottom = Math.min(page.viewportSize().height, notebook.y + notebook.height) - 60;
  const squiggle = cellRow(index).locator(`.cell-editor-container .squiggly-${kind}`).first();
  for (let i = 0; i < 40; i++) {
    let delta = 0;
    if (await cellRow(index).count()) {
      const box = (await squiggle.count()) ? await squiggle.boundingBox() : null;
      if (box && box.y > top && box.y + box.height < bottom) return box;
      if (box) delta = box.y <= top ? -150 : 150;
      else if (i % 5 === 4) delta = 150; // the row is there but not its squiggle: may be below the fold
    } else {
      const rendered = await page.locator(`${NOTEBOOK} .monaco-list-row[data-index]`).evaluateAll((rows) =>
        rows.map((r) => Number(r.getAttribute("data-index"))),
      );
      delta = rendered.every((n) => n < index) ? 250 : -250;
    }
    if (delta) {
      // Over the notebook's left margin: no hover pops up there.
      await page.mouse.move(notebook.x + 12, notebook.y + notebook.height / 2);
      await page.mouse.wheel(0, delta);
    }
    await page.waitForTimeout(300);
  }
  throw new Error(`no ${kind} squiggle of cell ${index} came into view`);
}

/** Per rendered squiggle: the index of the cell row holding it and that cell's rendered text. */
const squiggleCells = (kind = "error") =>
  page.locator(`${NOTEBOOK} .monaco-list-row[data-index]`).evaluateAll(
    (rows, kind) =>
      rows.flatMap((row) =>
        Array.from(row.querySelectorAll(`.cell-editor-container .squiggly-${kind}`)).map(() => ({
          cell: Number(row.getAttribute("data-index")),
          text: Array.from(row.querySelectorAll(".cell-editor-container .view-line")).map((l) => l.textContent.replace(/\u00a0/g, " ")).join("\n"),
        })),
      ),
    kind,
  );

/** Fix all on save in a notebook, configured in `notebook.codeActionsOnSave` as a user would. */
async function fixAllOnSave(stepName, name, kind) {
  await step(stepName, page, async () => {
    writeSettings({ "notebook.codeActionsOnSave": { [kind]: "explicit" } });
    // The previous notebook's editor would stay in the page, hidden and inert.
    await runCommand(page, "View: Close All Editors");
    const attempts = await openNotebook(name);
    const seen = await waitFor(() => {
      const r = notebookReport(name);
      return r && cellDiagnostics(r.notebook).length ? r : undefined;
    }, DIAG_TIMEOUT, `diagnostics in ${name}`);
    const last = seen.notebook.cells.filter((c) => c.kind === "code").at(-1).index;
    // An edit in the last cell makes the notebook dirty, as a user's would.
    const editor = cellRow(last).locator(".cell-editor-container .monaco-editor .view-lines").first();
    await waitFor(async () => {
      if ((await editor.count()) && (await editor.boundingBox())) return true;
      const box = await page.locator(NOTEBOOK).first().boundingBox();
      await page.mouse.move(box.x + 12, box.y + box.height / 2);
      await page.mouse.wheel(0, 250);
      return false;
    }, 20000, "the last cell's editor to come into view");
    // Typed only once the cell's editor holds the focus, and checked: on a loaded machine a click whose focus
    // arrived late put "# edited" before the call ("# editedmodel.generate(...)", which comments it out and
    // leaves nothing to fix). A wrong edit is undone and typed again.
    const original = seen.notebook.cells[last].text;
    const lastText = () => notebookReport(name)?.notebook.cells[last]?.text;
    for (let attempt = 1; ; attempt++) {
      await editor.click();
      const focused = await waitFor(() => page.evaluate(() => Boolean(document.activeElement?.closest(".monaco-editor"))),
        10000, "").catch(() => false);
      if (!focused) {
        const where = await page.evaluate(() => {
          const e = document.activeElement;
          return e ? `${e.tagName}.${e.className} in ${e.parentElement?.className ?? "?"}` : "nothing";
        });
        throw new Error(`the last cell's editor did not take the focus (focused: ${where})`);
      }
      await page.keyboard.press("Control+End");
      await page.keyboard.type("\n# edited");
      const typed = await waitFor(() => (lastText() !== original ? lastText() : undefined), 10000, "the edit to reach the last cell");
      if (typed === `${original}\n# edited`) break;
      if (attempt === 3) throw new Error(`the last cell reads ${JSON.stringify(typed)} after typing, three times`);
      await waitFor(async () => {
        if (lastText() === original) return true;
        await page.keyboard.press("Control+Z");
        return false;
      }, 20000, "the wrong edit to be undone");
    }
    const path = join(opt.workspace, name);
    await page.keyboard.press("Control+S");
    const onDisk = await waitFor(() => {
      const text = readFileSync(path, "utf8");
      return text.includes("# edited") ? text : undefined;
    }, 30000, "the notebook to be saved");
    // What VS Code holds once the save has settled (a fixed notebook has no diagnostics left).
    const after = await waitFor(() => {
      const r = notebookReport(name);
      return r && r.notebook.saved && !r.notebook.dirty ? r : undefined;
    }, 30000, "the test hook to see the save");
    // Diagnostics settle after the save's edits; the test asserts on them, so a timeout here is not fatal.
    await waitFor(() => cellDiagnostics(notebookReport(name).notebook).length === 0, 20000, "").catch(() => undefined);
    const settled = notebookReport(name);
    const file = await screenshot(page, `notebook-${stepName}`);
    writeSettings({});
    return {
      kind,
      attempts,
      diagnosticsBefore: cellDiagnostics(seen.notebook),
      onDisk,
      cellsAfter: settled.notebook.cells,
      diagnosticsAfter: cellDiagnostics(settled.notebook),
      squigglesAfter: await notebookSquiggles().count(),
      saves: after.notebook.saved.count,
      screenshot: file,
    };
  });
}

async function notebookSteps() {
  await step("open", page, async () => {
    await page.goto(`${opt.url}/?folder=${encodeURIComponent(opt.workspace)}`, { waitUntil: "domcontentloaded" });
    await page.locator(".monaco-workbench").waitFor({ timeout: 60000 });
    const attempts = await openNotebook(opt.notebook);
    const file = await screenshot(page, "notebook-open");
    return { attempts, cellRows: await page.locator(`${NOTEBOOK} .monaco-list-row[data-index]`).count(), screenshot: file };
  });

  let flagged; // the cell index and range of the finding, as the test hook reports it
  await step("squiggle", page, async () => {
    const seen = await waitFor(() => {
      const r = notebookReport(opt.notebook);
      const diagnostics = r ? cellDiagnostics(r.notebook) : [];
      return diagnostics.length && diagnostics.every((d) => d.hover.length) ? r : undefined;
    }, DIAG_TIMEOUT, "the test hook's report of the notebook's diagnostics");
    flagged = cellDiagnostics(seen.notebook)[0];
    const box = await revealSquiggleInCell(flagged.cell);
    // Code actions of a cell can be asked for once its editor has been shown.
    const withActions = await waitFor(() => {
      const r = notebookReport(opt.notebook);
      const diagnostics = r ? cellDiagnostics(r.notebook) : [];
      return diagnostics.length && diagnostics.every((d) => d.hover.length && d.codeActions.length) ? r : undefined;
    }, 30000, "the test hook's report of the cells' code actions");
    const file = await screenshot(page, "notebook-squiggle");
    const report = withActions.report;
    return {
      box,
      squiggles: await squiggleCells(),
      screenshot: file,
      notebookUri: withActions.uri,
      notebookType: withActions.notebook.notebookType,
      cells: withActions.notebook.cells,
      // Diagnostics VS Code holds for anything but the cells (the .ipynb's own URI would be wrong).
      otherFiles: Object.fromEntries(Object.entries(report.files).filter(([, f]) => f.diagnostics.length)),
      serverVersion: report.serverVersion,
      state: report.state,
    };
  });

  await step("problems", page, async () => {
    await page.keyboard.press("Control+Shift+M");
    const rows = page.locator(".markers-panel .monaco-list-row");
    await rows.filter({ hasText: "FAB001" }).first().waitFor({ timeout: 20000 });
    const texts = await rows.evaluateAll((els) => els.map((el) => ({ text: el.textContent, label: el.getAttribute("aria-label") })));
    const file = await screenshot(page, "notebook-problems");
    // Hide the panel again: the notebook gets its height back for the steps after this one.
    await page.keyboard.press("Control+J");
    await page.locator(".part.panel").waitFor({ state: "hidden", timeout: 5000 }).catch(() => undefined);
    return { rows: texts, screenshot: file };
  });

  await step("hover", page, async () => {
    await revealSquiggleInCell(flagged.cell);
    const squiggle = cellRow(flagged.cell).locator(".cell-editor-container .squiggly-error").first();
    const box = await squiggle.boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    const hover = page.locator(".monaco-hover-content").filter({ hasText: "FAB001" }).first();
    await hover.waitFor({ state: "visible", timeout: 20000 });
    await page.waitForTimeout(500); // the hover grows as its parts render
    const text = await page.locator(".monaco-hover-content").evaluateAll((els) => els.map((el) => el.innerText).join("\n"));
    const headings = await page.locator(".monaco-hover-content h3").allInnerTexts();
    const file = await screenshot(page, "notebook-hover");
    await page.mouse.move(5, 5);
    await page.keyboard.press("Escape");
    return { text, headings, screenshot: file };
  });

  await step("liveSettings", page, async () => {
    // A rule setting reaches the cells: FAB001 as a warning, then back to an error.
    const severities = () => cellDiagnostics(notebookReport(opt.notebook).notebook).map((d) => d.severity);
    const before = severities();
    writeSettings({ "fabric-lsp.severity": { FAB001: "warning" } });
    await waitFor(() => {
      const s = severities();
      return s.length && s.every((v) => v === "Warning");
    }, DIAG_TIMEOUT, "the cell's diagnostic to become a warning");
    const withSetting = severities();
    await revealSquiggleInCell(flagged.cell, "warning");
    const warningCells = await squiggleCells("warning");
    const file = await screenshot(page, "notebook-severity-warning");
    writeSettings({});
    await waitFor(() => {
      const s = severities();
      return s.length && s.every((v) => v === "Error");
    }, DIAG_TIMEOUT, "the cell's diagnostic to be an error again");
    await revealSquiggleInCell(flagged.cell);
    return { before, withSetting, restored: severities(), warningCells, screenshot: file };
  });

  await step("quickfix", page, async () => {
    const squiggle = cellRow(flagged.cell).locator(".cell-editor-container .squiggly-error").first();
    const box = await squiggle.boundingBox();
    // The cursor in the flagged name, in that cell's editor; then Quick Fix (Ctrl+.).
    await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    const focused = await page.evaluate(() => {
      const row = document.activeElement?.closest(".monaco-list-row[data-index]");
      return row ? Number(row.getAttribute("data-index")) : null;
    });
    await page.keyboard.press("Control+.");
    const menu = page.locator(".action-widget:not(.action-list-submenu-panel)").first();
    await menu.waitFor({ state: "visible", timeout: 15000 });
    const items = await page.locator(".action-widget .monaco-list-row").evaluateAll((els) =>
      els.map((el) => ({ text: el.textContent, role: el.getAttribute("role"), label: el.getAttribute("aria-label") })),
    );
    const menuShot = await screenshot(page, "notebook-quickfix-menu");
    const chosen = page.locator(".action-widget .monaco-list-row.action", { hasText: "as a forward method" }).first();
    const chosenText = await chosen.textContent();
    await chosen.click();
    await waitFor(async () => (await notebookSquiggles().count()) === 0, DIAG_TIMEOUT, "the squiggle to go away");
    const after = await waitFor(() => {
      const r = notebookReport(opt.notebook);
      return r && r.notebook.dirty && cellDiagnostics(r.notebook).length === 0 &&
        r.notebook.cells.some((c) => c.text.includes("mark_forward_method")) ? r : undefined;
    }, 30000, "the test hook to see the fixed cells and no diagnostics");
    const fixedShot = await screenshot(page, "notebook-fixed");
    return {
      focusedCell: focused,
      items,
      chosen: chosenText,
      cellsAfter: after.notebook.cells,
      dirtyAfter: after.notebook.dirty,
      squigglesAfter: await notebookSquiggles().count(),
      screenshots: [menuShot, fixedShot],
    };
  });

  await step("save", page, async () => {
    const path = join(opt.workspace, opt.notebook);
    const original = readFileSync(path, "utf8");
    // Focus is still in the cell editor the fix was chosen from.
    await page.keyboard.press("Control+S");
    const onDisk = await waitFor(() => {
      const text = readFileSync(path, "utf8");
      return text !== original ? text : undefined;
    }, 30000, "the notebook to be saved");
    const saved = await waitFor(() => {
      const r = notebookReport(opt.notebook);
      return r && r.notebook.saved && !r.notebook.dirty ? r : undefined;
    }, 30000, "the test hook to see the save");
    const file = await screenshot(page, "notebook-saved");
    return {
      onDisk,
      hookSaved: saved.notebook.saved,
      dirtyAfter: saved.notebook.dirty,
      diagnosticsAfter: cellDiagnostics(saved.notebook),
      screenshot: file,
    };
  });

  if (opt["notebook-save"]) {
    // The kind VS Code runs once for the whole notebook (what the README recommends).
    await fixAllOnSave("fixAllOnSave", opt["notebook-save"], "notebook.source.fixAll");
  }
  if (opt["notebook-cell-save"]) {
    // A cell-level kind: VS Code asks every cell at once and lets each edit only its own cell.
    await fixAllOnSave("cellFixAllOnSave", opt["notebook-cell-save"], "source.fixAll.fabric-lsp");
  }
}

const markerText = () => (existsSync(opt.marker) ? readFileSync(opt.marker, "utf8") : null);

async function untrustedSteps() {
  await step("open", page, async () => {
    await page.goto(`${opt.url}/?folder=${encodeURIComponent(opt.workspace)}`, { waitUntil: "domcontentloaded" });
    await page.locator(".monaco-workbench").waitFor({ timeout: 60000 });
    // VS Code's own word that the folder is in Restricted Mode: the status bar item.
    const indicator = page.locator('[id="status.workspaceTrust"]').first();
    await indicator.waitFor({ state: "visible", timeout: 30000 });
    await openFromExplorer(page, opt.file);
    return { indicator: await indicator.innerText(), screenshot: await screenshot(page, "restricted-open") };
  });

  await step("restricted", page, async () => {
    // Started and analysing: every launch decision has been taken (and any program it chose has run).
    const seen = await waitFor(() => {
      const r = fileReport(opt.file);
      return r && r.report.state === "Running" && r.file.diagnostics.length ? r : undefined;
    }, DIAG_TIMEOUT, "the server to run and report the file's diagnostics");
    const file = await screenshot(page, "restricted-running");
    return {
      marker: markerText(),
      trusted: seen.report.trusted,
      state: seen.report.state,
      launchSource: seen.report.launchSource,
      serverCommand: seen.report.serverCommand,
      analysisPython: seen.report.analysisPython,
      ignoredSettings: seen.report.ignoredSettings,
      starts: seen.report.starts,
      diagnostics: seen.file.diagnostics,
      screenshot: file,
    };
  });

  await step("trust", page, async () => {
    // The user trusts the folder (Workspace Trust editor, "Trust"): the setting applies from then on.
    const before = hookReport();
    await runCommand(page, "Workspaces: Manage Workspace Trust");
    const trust = page.locator(".workspace-trust-editor .monaco-button", { hasText: /^Trust$/ }).first();
    await trust.waitFor({ state: "visible", timeout: 20000 });
    const editorShot = await screenshot(page, "trust-editor");
    await trust.click();
    const after = await waitFor(() => {
      const r = hookReport();
      return r && r.trusted && r.starts > before.starts && r.state === "Running" ? r : undefined;
    }, DIAG_TIMEOUT, "the server to restart in the trusted workspace");
    return {
      marker: markerText(),
      trusted: after.trusted,
      state: after.state,
      launchSource: after.launchSource,
      serverCommand: after.serverCommand,
      ignoredSettings: after.ignoredSettings,
      startsBefore: before.starts,
      startsAfter: after.starts,
      screenshots: [editorShot, await screenshot(page, "trusted")],
    };
  });
}

try {
  await (opt.untrusted ? untrustedSteps() : opt.notebook ? notebookSteps() : fileSteps());
} catch (error) {
  // A failed step is in result.json already; the steps after it depend on it.
  if (!(error instanceof StepFailed)) result.errors.push(String(error?.stack ?? error));
} finally {
  result.timings.total = (Date.now() - t0) / 1000;
  result.finalReport = hookReport();
  save();
  await browser.close();
}
process.exit(result.errors.length ? 1 : 0);
