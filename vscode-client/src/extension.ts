// The Fabric LSP extension: starts the fabric-lsp language server for Python files and keeps it in step
// with the settings, the selected Python interpreter and workspace trust.
import * as path from "node:path";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  type ServerOptions,
  State,
  TransportKind,
} from "vscode-languageclient/node";
import { explainMarkdown, explainQuery } from "./explain";
import { analysisInterpreter, type ImportStrategy, type LaunchPlan, resolveLaunch } from "./interpreter";
import { NotebookFixAllProvider } from "./notebookFixAll";
import { SelectedPython } from "./pythonExtension";
import { changedKeys, mapSettings, type ServerSettings, type SettingsReader } from "./settings";
import { TestHook } from "./testHook";

const SECTION = "fabric-lsp";
const NAME = "Fabric LSP";
const EXPLAIN_SCHEME = "fabric-lsp-explain";
const CELL_SCHEME = "vscode-notebook-cell";
/** Python files, and the Python cells of Jupyter notebooks (synced as notebooks when the server supports it). */
const DOCUMENT_SELECTOR = [
  { scheme: "file", language: "python" },
  { scheme: "untitled", language: "python" },
  { notebook: "jupyter-notebook", language: "python" },
];

/** The notebook holding a cell: VS Code finds a resource's workspace folder (and its settings) by the
 * notebook's URI, not the cell's. Other URIs are their own scope. */
function settingsScope(uri: vscode.Uri): vscode.Uri {
  if (uri.scheme !== CELL_SCHEME) return uri;
  const cell = uri.toString();
  const notebook = vscode.workspace.notebookDocuments.find((nb) => nb.getCells().some((c) => c.document.uri.toString() === cell));
  return notebook?.uri ?? vscode.Uri.file(uri.path);
}

function reader(scope: vscode.Uri | undefined): SettingsReader {
  const config = vscode.workspace.getConfiguration(SECTION, scope ? { uri: scope, languageId: "python" } : undefined);
  return <T>(key: string) => config.inspect<T>(key);
}

/** Markdown documents shown by "Explain Error Message…", served from memory (read-only, never asks to save). */
class ExplainDocuments implements vscode.TextDocumentContentProvider {
  private readonly contents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private count = 0;

  add(markdown: string): vscode.Uri {
    this.count += 1;
    const uri = vscode.Uri.from({ scheme: EXPLAIN_SCHEME, path: `/Explanation ${this.count}.md` });
    this.contents.set(uri.toString(), markdown);
    this.changed.fire(uri);
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? "";
  }
}

class FabricLsp implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private plan: LaunchPlan | undefined;
  private starts = 0;
  private notifiedNoPython = false;
  private lastAnalysisPython: string | null = null;
  /** Program settings the last start did not apply (untrusted workspace), as logged. */
  private ignoredSettings: string[] = [];
  /** The launch settings (launchSettings()) of the last start, as JSON. */
  private startedWith: string | undefined;
  /** start/stop/restart run one after another, never interleaved. */
  private queue: Promise<void> = Promise.resolve();
  private readonly status: vscode.LanguageStatusItem;
  private readonly python: SelectedPython;
  private readonly hook: TestHook | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.python = new SelectedPython(log);
    this.status = vscode.languages.createLanguageStatusItem("fabric-lsp.status", { language: "python" });
    this.status.name = NAME;
    this.setStatus("starting");
    this.hook = TestHook.fromEnvironment(() => ({
      state: this.client ? State[this.client.state] : "NotStarted",
      serverVersion: this.client?.initializeResult?.serverInfo?.version,
      launchSource: this.plan?.source,
      serverCommand: this.plan ? [this.plan.command, ...this.plan.args] : undefined,
      analysisPython: this.lastAnalysisPython,
      starts: this.starts,
      trusted: vscode.workspace.isTrusted,
      ignoredSettings: this.ignoredSettings,
    }));
    this.disposables.push(this.status, this.python);
    if (this.hook) this.disposables.push(this.hook);
  }

  get runningClient(): LanguageClient | undefined {
    return this.client?.isRunning() ? this.client : undefined;
  }

  private get folder(): vscode.WorkspaceFolder | undefined {
    return vscode.workspace.workspaceFolders?.[0];
  }

  private get enabled(): boolean {
    return mapSettings(reader(this.folder?.uri), null).settings.enable;
  }

  private setStatus(kind: "starting" | "running" | "stopped" | "disabled" | "failed", detail?: string): void {
    const version = this.client?.initializeResult?.serverInfo?.version;
    const texts = {
      starting: "$(sync~spin) Fabric LSP: starting",
      running: `$(check) Fabric LSP ${version ?? ""}`.trimEnd(),
      stopped: "$(circle-slash) Fabric LSP: stopped",
      disabled: "$(circle-slash) Fabric LSP: disabled",
      failed: "$(error) Fabric LSP: not running",
    };
    this.status.text = texts[kind];
    this.status.busy = kind === "starting";
    this.status.severity =
      kind === "failed" ? vscode.LanguageStatusSeverity.Error : vscode.LanguageStatusSeverity.Information;
    this.status.detail = detail ?? (this.plan ? `${this.plan.source}: ${this.plan.command}` : undefined);
    this.status.command = { title: "Open logs", command: "fabric-lsp.showLogs" };
    this.hook?.schedule();
  }

  private enqueue(work: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(work).catch((error) => {
      this.log.error(`${String(error)}`);
      this.setStatus("failed", String(error));
    });
    return this.queue;
  }

  /** The analysis interpreter for a scope: the Python extension's selection (see analysisInterpreter). */
  private async analysisPython(scope: vscode.Uri | undefined): Promise<string | null> {
    let selected: string | undefined;
    if (vscode.workspace.isTrusted) {
      try {
        selected = await this.python.interpreter(scope);
      } catch (error) {
        this.log.warn(`Python extension: no selected interpreter (${String(error)})`);
      }
    }
    return analysisInterpreter(vscode.workspace.isTrusted, selected, this.plan?.untrustedAnalysisPython);
  }

  private async serverSettings(cellOrFile: vscode.Uri | undefined): Promise<ServerSettings> {
    const scope = cellOrFile && settingsScope(cellOrFile);
    const python = await this.analysisPython(scope);
    const { settings, problems } = mapSettings(reader(scope), python);
    for (const problem of problems) this.log.warn(problem);
    this.lastAnalysisPython = settings.python;
    return settings;
  }

  start(): Promise<void> {
    return this.enqueue(() => this.doStart());
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.doStop());
  }

  restart(): Promise<void> {
    return this.enqueue(async () => {
      await this.doStop();
      await this.doStart();
    });
  }

  /**
   * Restart unless a running server was started from the same launch settings. Granting workspace trust
   * fires both onDidGrantWorkspaceTrust and a change of the restricted settings: one restart for both.
   * Resolves to whether it restarted.
   */
  async restartIfChanged(): Promise<boolean> {
    let restarted = false;
    await this.enqueue(async () => {
      if (this.runningClient && this.startedWith === JSON.stringify(this.launchSettings())) return;
      restarted = true;
      await this.doStop();
      await this.doStart();
    });
    return restarted;
  }

  /** What the server process depends on: the program settings as VS Code gives them now, and trust. */
  private launchSettings() {
    const config = vscode.workspace.getConfiguration(SECTION, this.folder?.uri);
    return {
      path: config.get<string>("path") ?? "",
      interpreter: config.get<string>("interpreter") ?? "",
      importStrategy: config.get<ImportStrategy>("importStrategy") ?? "bundled",
      trusted: vscode.workspace.isTrusted,
      workspaceFolder: this.folder?.uri.fsPath,
      workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((folder) => folder.uri.fsPath),
    };
  }

  private async doStart(): Promise<void> {
    if (this.client) return;
    if (!this.enabled) {
      this.log.info("fabric-lsp.enable is false: the server is not started");
      this.setStatus("disabled", "fabric-lsp.enable is false");
      return;
    }
    this.setStatus("starting");
    const scope = this.folder?.uri;
    const settings = this.launchSettings();
    this.startedWith = JSON.stringify(settings);
    const result = await resolveLaunch({
      ...settings,
      env: process.env,
      launcher: this.context.asAbsolutePath(path.join("bundled", "tool", "launch.py")),
      pythonExtensionInterpreter: () => this.python.interpreter(scope),
    });
    this.ignoredSettings = result.ignored;
    for (const line of result.ignored) this.log.warn(line);
    if (!result.ok) {
      this.plan = undefined;
      this.log.error(result.message);
      for (const line of result.details) this.log.error(`  ${line}`);
      this.setStatus("failed", result.message);
      void this.notifyNoPython(result.message);
      return;
    }
    this.plan = result;
    for (const line of result.skipped) this.log.info(`passed over: ${line}`);
    this.log.info(
      `starting the server (${result.source}${result.pythonVersion ? `, Python ${result.pythonVersion}` : ""}): ` +
        [result.command, ...result.args].join(" "),
    );

    const serverOptions: ServerOptions = {
      command: result.command,
      args: result.args,
      transport: TransportKind.stdio,
      options: { env: { ...process.env, ...result.env }, cwd: this.folder?.uri.fsPath },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: DOCUMENT_SELECTOR,
      diagnosticCollectionName: SECTION,
      outputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: await this.serverSettings(scope),
      markdown: { isTrusted: false, supportHtml: false },
      middleware: {
        workspace: {
          // languageclient would push the raw `fabric-lsp` section (path, interpreter, ...); settingsChanged()
          // sends the mapped settings instead, once per change.
          didChangeConfiguration: async () => undefined,
          // The server asks for section "fabric-lsp" per scope; answer with the mapped settings, not the raw ones.
          configuration: async (params, token, next) => {
            const answers: unknown[] = [];
            for (const item of params.items) {
              if (item.section === SECTION) {
                const itemScope = item.scopeUri ? vscode.Uri.parse(item.scopeUri) : scope;
                answers.push(await this.serverSettings(itemScope));
              } else {
                const other = await next({ items: [item] }, token);
                answers.push(Array.isArray(other) ? other[0] : null);
              }
            }
            return answers;
          },
        },
      },
    };
    const client = new LanguageClient(SECTION, NAME, serverOptions, clientOptions);
    client.onDidChangeState((event) => {
      if (this.client !== client) return;
      if (event.newState === State.Running) this.setStatus("running");
      else if (event.newState === State.Starting) this.setStatus("starting");
      else this.setStatus("stopped", "The server stopped; see the logs");
    });
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      this.log.error(`the server did not start: ${String(error)}`);
      this.setStatus("failed", "The server did not start; see the logs");
      return;
    }
    this.starts += 1;
    this.notifiedNoPython = false; // a later failure deserves its own notification
    const info = client.initializeResult?.serverInfo;
    this.log.info(`server running: ${info?.name ?? "fabric-lsp"} ${info?.version ?? ""}`.trimEnd());
    this.setStatus("running");
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    try {
      if (client.isRunning()) await client.stop(5000);
      else await client.dispose(5000);
    } catch (error) {
      this.log.warn(`stopping the server: ${String(error)}`);
    }
    this.setStatus("stopped");
  }

  private async notifyNoPython(message: string): Promise<void> {
    // One notification per window: the status item and the log keep saying it after that.
    if (this.notifiedNoPython) return;
    this.notifiedNoPython = true;
    const actions = this.python.available ? ["Select Interpreter", "Open Settings", "Show Logs"] : ["Open Settings", "Show Logs"];
    const choice = await vscode.window.showErrorMessage(message, ...actions);
    if (choice === "Select Interpreter") await vscode.commands.executeCommand("python.setInterpreter");
    else if (choice === "Open Settings") await vscode.commands.executeCommand("workbench.action.openSettings", "fabric-lsp.interpreter");
    else if (choice === "Show Logs") this.log.show();
  }

  /** Send the live settings; the server applies them (and asks workspace/configuration per folder). */
  async settingsChanged(): Promise<void> {
    const client = this.client;
    if (!client?.isRunning()) return;
    const settings = await this.serverSettings(this.folder?.uri);
    await client.sendNotification(DidChangeConfigurationNotification.type, { settings: { [SECTION]: settings } });
    this.log.info(`settings sent to the server: ${JSON.stringify(settings)}`);
  }

  async explain(documents: ExplainDocuments): Promise<void> {
    const input = await vscode.window.showInputBox({
      title: "Fabric LSP: Explain Error Message",
      prompt: "Paste a Lightning Fabric error message, or a rule code such as FAB001",
      placeHolder: "RuntimeError: You are calling the method `TinyLM.generate()` from outside the model...",
      ignoreFocusOut: true,
    });
    if (input === undefined || !input.trim()) return;
    const client = this.client;
    if (!client?.isRunning()) {
      const choice = await vscode.window.showWarningMessage("The Fabric LSP server is not running.", "Show Logs");
      if (choice) this.log.show();
      return;
    }
    const result = await client.sendRequest(ExecuteCommandRequest.type, {
      command: "fabric-lsp.explain",
      arguments: [explainQuery(input)],
    });
    // No match: the server says so itself (window/showMessage).
    const markdown = explainMarkdown(result);
    if (!markdown) return;
    const uri = documents.add(markdown);
    try {
      await vscode.commands.executeCommand("markdown.showPreview", uri);
    } catch {
      // No Markdown preview (the built-in extension disabled): show the source instead.
      const doc = await vscode.workspace.openTextDocument(uri);
      await vscode.languages.setTextDocumentLanguage(doc, "markdown");
      await vscode.window.showTextDocument(doc, { preview: true });
    }
  }

  /** Follow the Python extension's interpreter selection without a reload. */
  watchSelectedPython(): void {
    void this.python.onDidChange(() => {
      this.log.info("the selected Python interpreter changed");
      void this.settingsChanged();
    });
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }

  async deactivate(): Promise<void> {
    await this.stop();
  }
}

let instance: FabricLsp | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel(NAME, { log: true });
  const lsp = new FabricLsp(context, log);
  instance = lsp;
  const documents = new ExplainDocuments();
  context.subscriptions.push(
    log,
    lsp,
    vscode.workspace.registerTextDocumentContentProvider(EXPLAIN_SCHEME, documents),
    vscode.commands.registerCommand("fabric-lsp.restart", async () => {
      log.info("restart requested");
      await lsp.restart();
    }),
    vscode.commands.registerCommand("fabric-lsp.showLogs", () => log.show()),
    vscode.commands.registerCommand("fabric-lsp.explainError", () => lsp.explain(documents)),
    vscode.languages.registerCodeActionsProvider(
      { notebookType: "jupyter-notebook" },
      new NotebookFixAllProvider(() => lsp.runningClient),
      NotebookFixAllProvider.metadata,
    ),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      const changed = changedKeys((key) => event.affectsConfiguration(key));
      if (changed.enable) {
        await lsp.restart();
        return;
      }
      // A new server reads every setting; without a restart the live ones are sent.
      const restarted = changed.restart && (await lsp.restartIfChanged());
      if (!restarted && changed.live) await lsp.settingsChanged();
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      log.info("the workspace is now trusted: restarting with the workspace's interpreter and settings");
      void lsp.restartIfChanged();
    }),
  );
  lsp.watchSelectedPython();
  await lsp.start();
}

export async function deactivate(): Promise<void> {
  await instance?.deactivate();
  instance = undefined;
}
