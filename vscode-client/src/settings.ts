// VS Code settings -> the flat settings object the server reads (DESIGN.md "Configuration").
// No `vscode` import here: the logic is unit-tested under plain Node.

/** What `WorkspaceConfiguration.inspect(key)` returns, reduced to what matters here. */
export interface InspectedValue<T> {
  defaultValue?: T;
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
  defaultLanguageValue?: T;
  globalLanguageValue?: T;
  workspaceLanguageValue?: T;
  workspaceFolderLanguageValue?: T;
}

/** Reads one key of the `fabric-lsp` section (for one scope). */
export type SettingsReader = <T>(key: string) => InspectedValue<T> | undefined;

export type Severity = "error" | "warning" | "information" | "hint";
export const SEVERITIES: readonly Severity[] = ["error", "warning", "information", "hint"];
export type LogLevel = "error" | "warning" | "info" | "debug";
export const LOG_LEVELS: readonly LogLevel[] = ["error", "warning", "info", "debug"];

/** The server's keys. `null` means "not set": it never overrides pyproject.toml or the server's default. */
export interface ServerSettings {
  enable: boolean;
  select: string[] | null;
  ignore: string[] | null;
  severity: Record<string, Severity> | null;
  python: string | null;
  showHints: boolean | null;
  logLevel: LogLevel;
}

/** Settings that change how the server process is started: a change needs a restart. */
export const RESTART_KEYS = ["path", "interpreter", "importStrategy"] as const;
/** Settings the running server applies live. */
export const LIVE_KEYS = ["select", "ignore", "severity", "showHints", "logLevel"] as const;

const CODE = /^FAB\d*$/;

/**
 * The value the user set, most specific scope first; `undefined` when only the default applies.
 * The defaults in package.json are for the Settings UI; sending them would override pyproject.toml.
 */
export function explicitValue<T>(inspected: InspectedValue<T> | undefined): T | undefined {
  if (!inspected) return undefined;
  const order: (keyof InspectedValue<T>)[] = [
    "workspaceFolderLanguageValue",
    "workspaceFolderValue",
    "workspaceLanguageValue",
    "workspaceValue",
    "globalLanguageValue",
    "globalValue",
  ];
  for (const key of order) {
    const value = inspected[key];
    if (value !== undefined && value !== null) return value as T;
  }
  return undefined;
}

/** The value in force: the user's, else the default. */
export function effectiveValue<T>(inspected: InspectedValue<T> | undefined, fallback: T): T {
  const value = explicitValue(inspected);
  if (value !== undefined) return value;
  const def = inspected?.defaultValue;
  return def === undefined || def === null ? fallback : def;
}

function codes(value: unknown, key: string, problems: string[]): string[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value)) {
    problems.push(`fabric-lsp.${key} must be a list of rule codes such as ["FAB001"]; ignored`);
    return null;
  }
  const result: string[] = [];
  for (const item of value) {
    const code = typeof item === "string" ? item.trim().toUpperCase() : "";
    if (CODE.test(code)) result.push(code);
    else problems.push(`fabric-lsp.${key}: ${JSON.stringify(item)} is not a rule code (FAB001, FAB0, ...); ignored`);
  }
  return result;
}

function severities(value: unknown, problems: string[]): Record<string, Severity> | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "object" || Array.isArray(value)) {
    problems.push('fabric-lsp.severity must be an object such as {"FAB003": "warning"}; ignored');
    return null;
  }
  const result: Record<string, Severity> = {};
  for (const [rawCode, rawLevel] of Object.entries(value as Record<string, unknown>)) {
    const code = rawCode.trim().toUpperCase();
    const level = typeof rawLevel === "string" ? rawLevel.trim().toLowerCase() : "";
    if (!CODE.test(code)) {
      problems.push(`fabric-lsp.severity: ${JSON.stringify(rawCode)} is not a rule code; ignored`);
    } else if (!(SEVERITIES as readonly string[]).includes(level)) {
      problems.push(
        `fabric-lsp.severity: ${code} = ${JSON.stringify(rawLevel)} is not one of ${SEVERITIES.join(", ")}; ignored`,
      );
    } else {
      result[code] = level as Severity;
    }
  }
  return Object.keys(result).length ? result : null;
}

export interface MappedSettings {
  settings: ServerSettings;
  /** Invalid values that were dropped, said in words for the log. */
  problems: string[];
}

/**
 * Map the `fabric-lsp.*` settings of one scope to the server's settings.
 * `python` is the analysis interpreter (the workspace's selected Python), or null to let the server decide.
 */
export function mapSettings(read: SettingsReader, python: string | null): MappedSettings {
  const problems: string[] = [];
  const enable = effectiveValue<unknown>(read("enable"), true);
  const showHints = explicitValue<unknown>(read("showHints"));
  let logLevel = effectiveValue<unknown>(read("logLevel"), "info");
  if (!(LOG_LEVELS as readonly unknown[]).includes(logLevel)) {
    problems.push(`fabric-lsp.logLevel: ${JSON.stringify(logLevel)} is not one of ${LOG_LEVELS.join(", ")}; using info`);
    logLevel = "info";
  }
  if (showHints !== undefined && typeof showHints !== "boolean") {
    problems.push("fabric-lsp.showHints must be true or false; ignored");
  }
  return {
    settings: {
      enable: enable !== false,
      select: codes(explicitValue(read("select")), "select", problems),
      ignore: codes(explicitValue(read("ignore")), "ignore", problems),
      severity: severities(explicitValue(read("severity")), problems),
      python: python && python.trim() ? python : null,
      showHints: typeof showHints === "boolean" ? showHints : null,
      logLevel: logLevel as LogLevel,
    },
    problems,
  };
}

/** Which of the given full setting names ("fabric-lsp.select", ...) were changed, as short keys. */
export function changedKeys(affects: (section: string) => boolean): { restart: boolean; live: boolean; enable: boolean } {
  return {
    restart: RESTART_KEYS.some((key) => affects(`fabric-lsp.${key}`)),
    live: LIVE_KEYS.some((key) => affects(`fabric-lsp.${key}`)),
    enable: affects("fabric-lsp.enable"),
  };
}
