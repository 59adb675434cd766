// Drive the real VS Code workbench (code-server) in headless Chromium with playwright-core, the way a
// user would: open a file from the explorer, look at the squiggle, the Problems panel, the hover, apply
// the quick fix from the lightbulb menu, restart the server, explain an error, fix all on save.
// Writes what it saw to <artifacts>/result.json and a screenshot per step; tests/editors/test_vscode.py
// starts code-server, runs this script and asserts on the result.
//
// Usage: node workbench.mjs --url URL --workspace DIR --artifacts DIR --report FILE --file NAME --save-file NAME
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
    chromium: { type: "string", default: process.env.CHROMIUM || "/usr/lib/chromium/chromium" },
    "diagnostics-timeout": { type: "string", default: "120" },
  },
});
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

/** A small picture of one region (for the README): the union of the boxes, padded, inside the page. */
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

try {
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
    return { rows: texts, screenshot: file };
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

  // Settings are edited the way a user edits .vscode/settings.json; VS Code picks the file change up.
  const settingsFile = join(opt.workspace, ".vscode", "settings.json");
  const originalSettings = readFileSync(settingsFile, "utf8");
  const writeSettings = (extra) =>
    writeFileSync(settingsFile, JSON.stringify({ ...JSON.parse(originalSettings), ...extra }, null, 2));

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
