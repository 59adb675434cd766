"""What each settings key means, for people: its type, what it does and an example.

The keys themselves, their validation and their defaults are the code's (`config._KEYS`, `Config`,
`user_config.UserConfig`); this table only describes them. `scripts/generate_docs.py` renders the
documentation's configuration reference from it, with each default read from the code, and
tests/test_docs_site.py fails when a key has no entry here (or an entry names no key), when an
example is not accepted by the settings parser, or when the committed page differs from the rendered one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KeyDoc:
    key: str
    type: str  # as the documentation says it ("list of rule codes")
    description: str  # Markdown, one paragraph or more
    example: str  # the TOML value, as written after `key = `
    default: str | None = None  # Markdown; None: rendered from the code's default


# `[tool.fabric-lsp]` in pyproject.toml, or the top level of `.fabric-lsp.toml` / `fabric-lsp.toml`; the same
# keys as an editor's `initializationOptions` and `fabric-lsp` settings section. In the documentation's order.
PROJECT_KEYS: tuple[KeyDoc, ...] = (
    KeyDoc("select", "list of rule codes or prefixes",
           "The rules to report. Each entry is a code (`FAB001`), a prefix of codes (`FAB00`) or `ALL`, as in "
           "ruff. A settings file's `select` replaces the selection; on the command line `--select` replaces it "
           "too and `--extend-select` adds to it. A bad entry is an error and is left out: the others keep "
           "their meaning (`[\"FAB002\", \"FAB01\"]` selects FAB002, never every rule).",
           '["FAB001", "FAB002", "FAB003", "FAB004"]', default='`["ALL"]` (every rule)'),
    KeyDoc("extend-select", "list of rule codes or prefixes",
           "Rules added to `select` (ruff's `extend-select`).", '["FAB009"]', default="`[]`"),
    KeyDoc("ignore", "list of rule codes or prefixes",
           "Rules not to report. On the command line `--ignore` adds to this list: a rule the project turned "
           "off stays off.", '["FAB005"]'),
    KeyDoc("per-file-ignores", "table of glob = list of rule codes",
           "Rules not reported in the files a glob matches. A glob is relative to the settings file's folder, "
           "or a bare file name; a glob that matches a folder covers the files in it; `!glob` negates (the "
           "codes are ignored in the files it does *not* match).",
           '{ "scripts/*.py" = ["FAB001"], "conftest.py" = ["FAB003"] }', default="`{}`"),
    KeyDoc("severity", "table of rule code = severity",
           "The severity a rule is reported at: `error`, `warning`, `information` or `hint`. A finding at "
           "`warning` or above makes `check` exit 1; hints are shown only with `hints = true`.",
           '{ FAB003 = "warning" }'),
    KeyDoc("hints", "boolean",
           "Also report hints: code that cannot fail under the single-device strategy it states, but would "
           "under `fabric run --strategy ddp` or `LT_STRATEGY`. The command line's `--hints` turns them on "
           "for one run.", "true"),
    KeyDoc("include", "list of globs",
           "What a directory walk checks (ruff's `include`). Files named on the command line are checked "
           "whatever their name.", '["*.py", "*.ipynb", "*.pyw"]'),
    KeyDoc("extend-include", "list of globs", "Globs added to `include`.", '["*.pyw"]'),
    KeyDoc("exclude", "list of globs",
           "Files and folders a directory walk leaves out, in gitignore's syntax (see [Globs](#globs)). A file "
           "named on the command line is still checked, unless `--force-exclude` (which pre-commit's hook "
           "passes).", '["experiments/*", "third_party/"]'),
    KeyDoc("extend-exclude", "list of globs", "Globs added to `exclude`.", '["*_generated.py"]',
           default="`[]`"),
    KeyDoc("respect-gitignore", "boolean",
           "Directory walks skip what git ignores (`.gitignore` files, `.git/info/exclude`, the global "
           "excludes file), read as files inside a git repository (a `.git` of yours or root's); git is not "
           "run.", "false"),
    KeyDoc("notebooks", "boolean",
           "Check Jupyter notebooks (`.ipynb`). `false`: never read them, even when named on the command line "
           "(see [Notebooks](notebooks.md)).", "false"),
    KeyDoc("max-file-size", "integer (bytes)",
           "Files larger than this, counted in bytes as saved (for a notebook: its code cells), are skipped "
           "with a notice. No setting can raise it above 4 MiB (4194304): a larger value is reported and "
           "capped.", "1048576"),
    KeyDoc("python", "path, virtual environment folder or command name",
           "The interpreter whose installed packages the analysis reads (your project's torch, Lightning, "
           "libraries). Honoured in a settings file only in a trusted workspace (see [Trust model and "
           "security](security.md)); a relative path is relative to the settings file's folder. Unset: the "
           "user config's `python`, else `VIRTUAL_ENV`, else the project's `.venv` (read as files, never "
           "run), else the Python running fabric-lsp.", '".venv/bin/python"'),
    KeyDoc("extend-records", "list of folders",
           "Extra knowledge-base records (the same JSON schema) for `explain` and hover: each folder's `*.json` "
           "(not its subfolders), at most 100 files. Only folders inside the settings file's folder, unless the "
           "user config's `record-paths` allows one; a built-in record id is ignored unless the user config has "
           "`replace-records = true`. `check` never reads them: they change no finding.", '["docs/records"]'),
    KeyDoc("docs-url", "URL (http or https)",
           "Where your team publishes the rule pages (this documentation site, for instance): every link to a "
           "rule's page (`explain`, hover, each diagnostic's `codeDescription.href`, JSON `url`, SARIF "
           "`helpUri`) points there instead of the page installed with the package. `{code}` is replaced by "
           "the rule's code; a URL without it gets `FAB001.md` appended. For this site as `make docs` builds "
           "it, the rule pages are at `<site>/rules/FAB001/` (see [Publishing the "
           "documentation](ci.md#publishing-the-documentation)).",
           '"https://docs.example.org/fabric-lsp/rules/{code}/"', default="unset: the installed page (`file://…/fabric_lsp/rule_pages/FAB001.md`)"),
)

# The user config, outside every repository: `$FABRIC_LSP_USER_CONFIG`, else
# `$XDG_CONFIG_HOME/fabric-lsp/config.toml`, else `~/.config/fabric-lsp/config.toml`.
USER_KEYS: tuple[KeyDoc, ...] = (
    KeyDoc("python", "path to an interpreter",
           "The interpreter to analyse against, for every project (a project's own `python` setting wins only "
           "in a trusted workspace; `--python` and the editor's setting win over both). It is run once with "
           "`python -I -S` to read its `sys.path`.", '"/usr/bin/python3.12"'),
    KeyDoc("trusted", "boolean",
           "Trust every workspace: its `[tool.fabric-lsp] python` and its `.venv` may run.", "true"),
    KeyDoc("trusted-paths", "list of folders",
           "Trust the workspaces at or under these folders only (`~` is expanded).", '["~/work"]'),
    KeyDoc("replace-records", "boolean",
           "A project's `extend-records` may replace built-in records (not only add new ones).", "true"),
    KeyDoc("allow-programs-in-hooks", "boolean",
           "Allow `check --python` and `--trust-workspace` under pre-commit, whose options come from the "
           "repository's `.pre-commit-config.yaml`.", "true"),
    KeyDoc("record-paths", "list of folders",
           "Record folders outside a repository that its `extend-records` may name.", '["~/kb"]'),
)
