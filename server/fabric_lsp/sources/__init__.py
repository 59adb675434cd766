"""What to read: files found (walk, gitignore, globs), read within bounds (files, upward), decoded
(notebooks) and the project root they belong to. The lowest layer: it imports nothing of fabric_lsp above it."""
