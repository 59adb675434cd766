import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { changedKeys, type InspectedValue, mapSettings, type SettingsReader } from "../src/settings";

// The defaults of package.json, as VS Code reports them in `inspect().defaultValue`.
const DEFAULTS: Record<string, unknown> = {
  enable: true,
  path: "",
  interpreter: "",
  importStrategy: "bundled",
  select: null,
  ignore: null,
  severity: null,
  showHints: null,
  logLevel: "info",
};

/** A reader over per-scope values, e.g. { select: { globalValue: ["FAB001"] } }. */
function readerOf(values: Record<string, Partial<InspectedValue<unknown>>>): SettingsReader {
  return <T>(key: string) => ({ defaultValue: DEFAULTS[key], ...(values[key] ?? {}) }) as InspectedValue<T>;
}

describe("mapSettings", () => {
  it("sends null for every setting the user left at its default, so pyproject.toml stays in force", () => {
    const { settings, problems } = mapSettings(readerOf({}), null);
    assert.deepEqual(settings, {
      enable: true,
      select: null,
      ignore: null,
      severity: null,
      python: null,
      showHints: null,
      logLevel: "info",
    });
    assert.deepEqual(problems, []);
  });

  it("maps the values the user set", () => {
    const { settings, problems } = mapSettings(
      readerOf({
        select: { globalValue: ["FAB001", "fab002"] },
        ignore: { workspaceValue: ["FAB003"] },
        severity: { globalValue: { FAB003: "warning", fab001: "Hint" } },
        showHints: { globalValue: false },
        logLevel: { globalValue: "debug" },
        enable: { workspaceValue: false },
      }),
      "/venv/bin/python",
    );
    assert.deepEqual(settings, {
      enable: false,
      select: ["FAB001", "FAB002"],
      ignore: ["FAB003"],
      severity: { FAB003: "warning", FAB001: "hint" },
      python: "/venv/bin/python",
      showHints: false,
      logLevel: "debug",
    });
    assert.deepEqual(problems, []);
  });

  it("takes the most specific scope: folder over workspace over user, language-specific over plain", () => {
    const read = readerOf({
      select: { globalValue: ["FAB001"], workspaceValue: ["FAB002"], workspaceFolderValue: ["FAB003"] },
      ignore: { workspaceFolderValue: ["FAB001"], workspaceFolderLanguageValue: ["FAB002"] },
      showHints: { globalValue: true, workspaceValue: false },
    });
    const { settings } = mapSettings(read, null);
    assert.deepEqual(settings.select, ["FAB003"]);
    assert.deepEqual(settings.ignore, ["FAB002"]);
    assert.equal(settings.showHints, false);
  });

  it("keeps an explicit empty list: it means 'nothing', unlike an unset value", () => {
    const { settings } = mapSettings(readerOf({ ignore: { globalValue: [] } }), null);
    assert.deepEqual(settings.ignore, []);
  });

  it("drops invalid values and says why", () => {
    const { settings, problems } = mapSettings(
      readerOf({
        select: { globalValue: ["FAB001", "E501", 3] },
        ignore: { globalValue: "FAB001" },
        severity: { globalValue: { FAB001: "fatal", W1: "error", FAB002: "information" } },
        logLevel: { globalValue: "verbose" },
        showHints: { globalValue: "yes" },
      }),
      null,
    );
    assert.deepEqual(settings.select, ["FAB001"]);
    assert.equal(settings.ignore, null);
    assert.deepEqual(settings.severity, { FAB002: "information" });
    assert.equal(settings.logLevel, "info");
    assert.equal(settings.showHints, null);
    assert.equal(problems.length, 7, problems.join("\n"));
    assert.ok(problems.some((p) => p.includes('"E501" is not a rule code')));
    assert.ok(problems.some((p) => p.includes('fabric-lsp.ignore must be a list')));
    assert.ok(problems.some((p) => p.includes('FAB001 = "fatal"')));
    assert.ok(problems.some((p) => p.includes('"verbose"')));
  });

  it("treats a blank analysis interpreter as not set", () => {
    assert.equal(mapSettings(readerOf({}), "  ").settings.python, null);
  });
});

describe("changedKeys", () => {
  const affects = (...keys: string[]) => (section: string) => keys.includes(section);

  it("asks for a restart when the server command changes", () => {
    assert.deepEqual(changedKeys(affects("fabric-lsp.interpreter")), { restart: true, live: false, enable: false });
    assert.deepEqual(changedKeys(affects("fabric-lsp.path")), { restart: true, live: false, enable: false });
    assert.deepEqual(changedKeys(affects("fabric-lsp.importStrategy")), { restart: true, live: false, enable: false });
  });

  it("applies rule settings live", () => {
    for (const key of ["select", "ignore", "severity", "showHints", "logLevel"]) {
      assert.deepEqual(changedKeys(affects(`fabric-lsp.${key}`)), { restart: false, live: true, enable: false }, key);
    }
  });

  it("ignores other extensions' settings", () => {
    assert.deepEqual(changedKeys(affects("python.defaultInterpreterPath")), { restart: false, live: false, enable: false });
  });
});
