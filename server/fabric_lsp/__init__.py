"""fabric-lsp: finds Lightning Fabric runtime errors while the code is typed."""

__version__ = "0.1.0"
