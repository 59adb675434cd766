// Test-only: with FABRIC_LSP_E2E_REPORT=<file> in the environment, write what VS Code itself sees
// (diagnostics, hovers, code actions, document text, server state) to that JSON file whenever it changes,
// so the workbench end-to-end test can assert exact values next to what it reads from the screen.
import * as fs from "node:fs";
import * as vscode from "vscode";

export interface HookState {
  state: string;
  serverVersion?: string;
  launchSource?: string;
  serverCommand?: string[];
  analysisPython: string | null;
  starts: number;
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

export class TestHook implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing = Promise.resolve();

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
    );
    this.schedule();
  }

  schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.writing = this.writing.then(() => this.write()).catch(() => undefined);
    }, 250);
  }

  private async write(): Promise<void> {
    const files: Record<string, unknown> = {};
    const uris = new Map<string, vscode.Uri>();
    for (const [uri] of vscode.languages.getDiagnostics()) uris.set(uri.toString(), uri);
    for (const doc of vscode.workspace.textDocuments) if (doc.languageId === "python") uris.set(doc.uri.toString(), doc.uri);
    for (const uri of uris.values()) {
      const all = vscode.languages.getDiagnostics(uri);
      const ours = all.filter((d) => d.source === "fabric-lsp" || String(typeof d.code === "object" ? d.code.value : d.code).startsWith("FAB"));
      const document = vscode.workspace.textDocuments.find((doc) => doc.uri.toString() === uri.toString());
      if (!ours.length && !document) continue;
      const diagnostics = [];
      for (const d of ours) {
        const hovers = await vscode.commands.executeCommand<vscode.Hover[]>("vscode.executeHoverProvider", uri, d.range.start);
        const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>(
          "vscode.executeCodeActionProvider",
          uri,
          d.range,
        );
        diagnostics.push({
          code: typeof d.code === "object" ? d.code.value : d.code,
          message: d.message,
          severity: vscode.DiagnosticSeverity[d.severity],
          source: d.source,
          range: [d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character],
          hover: hoverText(hovers),
          codeActions: (actions ?? []).map((a) => ({ title: a.title, kind: a.kind?.value, isPreferred: a.isPreferred ?? false })),
        });
      }
      files[uri.toString()] = { diagnostics, text: document?.getText(), dirty: document?.isDirty };
    }
    const report = { writtenAt: new Date().toISOString(), ...this.getState(), files };
    const tmp = `${this.file}.tmp`;
    await fs.promises.writeFile(tmp, JSON.stringify(report, null, 2));
    await fs.promises.rename(tmp, this.file);
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const d of this.disposables) d.dispose();
  }
}
