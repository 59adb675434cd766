// Test-only: with FABRIC_LSP_E2E_REPORT=<file> in the environment, write what VS Code itself sees
// (diagnostics, hovers, code actions, document text, notebooks cell by cell and as saved, server state)
// to that JSON file whenever it changes, so the workbench end-to-end test can assert exact values next
// to what it reads from the screen.
import * as fs from "node:fs";
import * as vscode from "vscode";

export interface HookState {
  state: string;
  serverVersion?: string;
  launchSource?: string;
  serverCommand?: string[];
  analysisPython: string | null;
  starts: number;
  trusted: boolean;
  ignoredSettings: string[];
}

function hoverText(hovers: vscode.Hover[] | undefined): string[] {
  const texts: string[] = [];
  for (const hover of hovers ?? []) {
    for (const content of hover.contents) {
      if (typeof content === "string") texts.push(content);
      else if ("value" in content) texts.push(content.value);
    }
  }
  return texts;
}

const CELL_SCHEME = "vscode-notebook-cell";

interface ReportedDiagnostic {
  errors?: string[];
  [key: string]: unknown;
}

async function diagnosticsOf(uri: vscode.Uri): Promise<ReportedDiagnostic[]> {
  const ours = vscode.languages
    .getDiagnostics(uri)
    .filter((d) => d.source === "fabric-lsp" || String(typeof d.code === "object" ? d.code.value : d.code).startsWith("FAB"));
  const diagnostics: ReportedDiagnostic[] = [];
  for (const d of ours) {
    // A failed request is reported, not fatal: the rest of the report is still worth writing.
    const errors: string[] = [];
    const hovers = await vscode.commands
      .executeCommand<vscode.Hover[]>("vscode.executeHoverProvider", uri, d.range.start)
      .then(undefined, (error) => void errors.push(`hover: ${String(error)}`));
    const actions = await vscode.commands
      .executeCommand<vscode.CodeAction[]>("vscode.executeCodeActionProvider", uri, d.range)
      .then(undefined, (error) => void errors.push(`codeActions: ${String(error)}`));
    diagnostics.push({
      code: typeof d.code === "object" ? d.code.value : d.code,
      message: d.message,
      severity: vscode.DiagnosticSeverity[d.severity],
      source: d.source,
      range: [d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character],
      hover: hoverText(hovers),
      codeActions: (actions ?? []).map((a) => ({ title: a.title, kind: a.kind?.value, isPreferred: a.isPreferred ?? false })),
      related: (d.relatedInformation ?? []).map((r) => ({
        uri: r.location.uri.toString(),
        range: [r.location.range.start.line, r.location.range.start.character, r.location.range.end.line, r.location.range.end.character],
        message: r.message,
      })),
      ...(errors.length ? { errors } : {}),
    });
  }
  return diagnostics;
}

export class TestHook implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing = Promise.resolve();
  /** Per notebook URI: how often it was saved and the file's bytes right after the last save. */
  private readonly saves = new Map<string, { count: number; text: string }>();
  private retries = 0;
  private disposed = false;

  static fromEnvironment(getState: () => HookState): TestHook | undefined {
    const file = process.env.FABRIC_LSP_E2E_REPORT;
    return file ? new TestHook(file, getState) : undefined;
  }

  private constructor(
    private readonly file: string,
    private readonly getState: () => HookState,
  ) {
    this.disposables.push(
      vscode.languages.onDidChangeDiagnostics(() => this.schedule()),
      vscode.workspace.onDidChangeTextDocument(() => this.schedule()),
      vscode.workspace.onDidOpenNotebookDocument(() => this.schedule()),
      vscode.workspace.onDidChangeNotebookDocument(() => this.schedule()),
      vscode.window.onDidChangeVisibleTextEditors(() => this.schedule()),
      vscode.workspace.onDidSaveNotebookDocument(async (notebook) => {
        const key = notebook.uri.toString();
        const bytes = await vscode.workspace.fs.readFile(notebook.uri);
        this.saves.set(key, { count: (this.saves.get(key)?.count ?? 0) + 1, text: new TextDecoder().decode(bytes) });
        this.schedule();
      }),
    );
    this.schedule();
  }

  schedule(): void {
    if (this.disposed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.writing = this.writing.then(() => this.write()).catch((error) => console.error(`fabric-lsp test hook: ${String(error)}`));
    }, 250);
  }

  private async write(): Promise<void> {
    const files: Record<string, unknown> = {};
    const uris = new Map<string, vscode.Uri>();
    let failed = false;
    // Cells are reported under their notebook; anything else with diagnostics (a notebook file's own URI
    // included) or open as Python is a file.
    for (const [uri] of vscode.languages.getDiagnostics()) uris.set(uri.toString(), uri);
    for (const doc of vscode.workspace.textDocuments) if (doc.languageId === "python") uris.set(doc.uri.toString(), doc.uri);
    for (const uri of uris.values()) {
      if (uri.scheme === CELL_SCHEME) continue;
      const diagnostics = await diagnosticsOf(uri);
      failed ||= diagnostics.some((d) => d.errors);
      const document = vscode.workspace.textDocuments.find((doc) => doc.uri.toString() === uri.toString());
      if (!diagnostics.length && !document) continue;
      files[uri.toString()] = { diagnostics, text: document?.getText(), dirty: document?.isDirty };
    }
    const notebooks: Record<string, unknown> = {};
    for (const notebook of vscode.workspace.notebookDocuments) {
      const cells = [];
      for (const cell of notebook.getCells()) {
        const diagnostics = await diagnosticsOf(cell.document.uri);
        failed ||= diagnostics.some((d) => d.errors);
        cells.push({
          index: cell.index,
          kind: cell.kind === vscode.NotebookCellKind.Code ? "code" : "markup",
          language: cell.document.languageId,
          uri: cell.document.uri.toString(),
          text: cell.document.getText(),
          diagnostics,
        });
      }
      notebooks[notebook.uri.toString()] = {
        notebookType: notebook.notebookType,
        version: notebook.version,
        dirty: notebook.isDirty,
        cells,
        saved: this.saves.get(notebook.uri.toString()),
      };
    }
    // A cell's code actions fail ("Illegal argument") until the workbench has loaded the cell's text model
    // (its editor was shown): ask again shortly rather than wait for the next change.
    this.retries = failed ? this.retries + 1 : 0;
    if (failed && this.retries <= 120) setTimeout(() => this.schedule(), 1000);
    const report = { writtenAt: new Date().toISOString(), ...this.getState(), files, notebooks };
    const tmp = `${this.file}.tmp`;
    await fs.promises.writeFile(tmp, JSON.stringify(report, null, 2));
    await fs.promises.rename(tmp, this.file);
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const d of this.disposables) d.dispose();
  }
}
