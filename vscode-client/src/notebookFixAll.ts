// `notebook.source.fixAll` for notebooks whose first cell is not Python.
//
// For `notebook.codeActionsOnSave` VS Code asks the code action providers of the notebook's FIRST cell
// only, whatever its language. The language client's provider is registered for Python cells, so a
// notebook opening with a Markdown title cell (most of them) would never reach the server. This provider
// answers for such a first cell by asking the server on behalf of the notebook's first Python cell (the
// server's notebook-level fix-all edits the whole notebook, whichever of its cells it is asked on).
import * as vscode from "vscode";
import {
  CodeActionRequest,
  CodeActionResolveRequest,
  CodeActionTriggerKind,
  type CodeAction as ProtocolCodeAction,
  type Command as ProtocolCommand,
  type LanguageClient,
} from "vscode-languageclient/node";

export const NOTEBOOK_FIX_ALL = vscode.CodeActionKind.Notebook.append("source.fixAll.fabric-lsp");

function isCodeAction(item: ProtocolCodeAction | ProtocolCommand): item is ProtocolCodeAction {
  return typeof (item as ProtocolCommand).command !== "string";
}

export class NotebookFixAllProvider implements vscode.CodeActionProvider {
  static readonly metadata: vscode.CodeActionProviderMetadata = { providedCodeActionKinds: [NOTEBOOK_FIX_ALL] };

  constructor(private readonly client: () => LanguageClient | undefined) {}

  async provideCodeActions(
    document: vscode.TextDocument,
    _range: vscode.Range,
    context: vscode.CodeActionContext,
    token: vscode.CancellationToken,
  ): Promise<vscode.CodeAction[] | undefined> {
    // A Python cell is the language client's own to answer.
    if (document.languageId === "python" || !context.only?.contains(NOTEBOOK_FIX_ALL)) return undefined;
    const client = this.client();
    if (!client?.isRunning()) return undefined;
    const uri = document.uri.toString();
    const notebook = vscode.workspace.notebookDocuments.find((nb) => nb.getCells().some((c) => c.document.uri.toString() === uri));
    const cell = notebook
      ?.getCells()
      .find((c) => c.kind === vscode.NotebookCellKind.Code && c.document.languageId === "python");
    if (!cell) return undefined;
    const result = await client.sendRequest(
      CodeActionRequest.type,
      {
        textDocument: { uri: client.code2ProtocolConverter.asUri(cell.document.uri) },
        range: client.code2ProtocolConverter.asRange(new vscode.Range(0, 0, 0, 0)),
        context: { diagnostics: [], only: [context.only.value], triggerKind: CodeActionTriggerKind.Automatic },
      },
      token,
    );
    const actions: vscode.CodeAction[] = [];
    for (const item of result ?? []) {
      if (!isCodeAction(item) || !item.kind || !NOTEBOOK_FIX_ALL.contains(vscode.CodeActionKind.Empty.append(item.kind))) continue;
      // Resolved now: this provider has no resolveCodeAction of its own.
      const resolved = item.edit ? item : await client.sendRequest(CodeActionResolveRequest.type, item, token);
      actions.push(await client.protocol2CodeConverter.asCodeAction(resolved, token));
    }
    return actions;
  }
}
