// The interpreter selected in the Python extension (ms-python.python), through its public API.
import * as vscode from "vscode";
import { PVSC_EXTENSION_ID, PythonExtension } from "@vscode/python-extension";

export class SelectedPython implements vscode.Disposable {
  private api: PythonExtension | undefined;
  private subscription: vscode.Disposable | undefined;

  constructor(private readonly log: vscode.LogOutputChannel) {}

  /** True when the Python extension is installed (it may still have no interpreter selected). */
  get available(): boolean {
    return vscode.extensions.getExtension(PVSC_EXTENSION_ID) !== undefined;
  }

  private async load(): Promise<PythonExtension | undefined> {
    if (this.api || !this.available) return this.api;
    try {
      this.api = await PythonExtension.api();
    } catch (error) {
      this.log.warn(`Python extension: its API is not available (${String(error)})`);
    }
    return this.api;
  }

  /** The selected interpreter's executable for the resource's folder, or undefined. */
  async interpreter(resource?: vscode.Uri): Promise<string | undefined> {
    const api = await this.load();
    if (!api) return undefined;
    const selected = api.environments.getActiveEnvironmentPath(resource);
    const resolved = await api.environments.resolveEnvironment(selected);
    // An environment without an executable (an empty conda env) is identified by its folder: unusable.
    return resolved?.executable.uri?.fsPath;
  }

  /** Call back when the user selects another interpreter. */
  async onDidChange(listener: (resource: vscode.Uri | undefined) => void): Promise<void> {
    const api = await this.load();
    if (!api || this.subscription) return;
    this.subscription = api.environments.onDidChangeActiveEnvironmentPath((event) => {
      const resource = event.resource instanceof vscode.Uri ? event.resource : event.resource?.uri;
      listener(resource);
    });
  }

  dispose(): void {
    this.subscription?.dispose();
  }
}
