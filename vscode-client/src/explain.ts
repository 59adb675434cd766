// The answer of the server's `fabric-lsp.explain` command, as Markdown. No `vscode` import: unit-tested.

/** Markdown from the command's result: a string, `{markdown}`/`{value}`/`{contents}`, or a list of those. */
export function explainMarkdown(result: unknown): string | undefined {
  if (result === null || result === undefined) return undefined;
  if (typeof result === "string") return result.trim() ? result : undefined;
  if (Array.isArray(result)) {
    const parts = result.map(explainMarkdown).filter((part): part is string => part !== undefined);
    return parts.length ? parts.join("\n\n---\n\n") : undefined;
  }
  if (typeof result === "object") {
    const record = result as Record<string, unknown>;
    for (const key of ["markdown", "value", "contents"]) {
      if (key in record) return explainMarkdown(record[key]);
    }
  }
  return undefined;
}

/** What the user typed, trimmed; a bare code ("fab001") is upper-cased for the server. */
export function explainQuery(input: string): string {
  const text = input.trim();
  return /^fab\d{3}$/i.test(text) ? text.toUpperCase() : text;
}
