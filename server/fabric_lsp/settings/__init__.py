"""Settings: `[tool.fabric-lsp]` resolved per file (config) over the user config (user_config)."""
