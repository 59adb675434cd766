"""`io-error`: a path given on the command line that cannot be read is reported like a finding, as
ruff's E902 (`io-error`) is.

The entry has code `io-error`, severity error, the operating system's reason (`No such file or
directory`) and the path at line 1, column 1, so that every format (text, JSON, SARIF, GitHub, ...)
carries it, counts it in its summary and exits 1 as for any error: never an empty SARIF file or "All
checks passed!" next to an error. Like `invalid-syntax`, it takes no part in `select`/`ignore` and
`# noqa` cannot suppress it.
"""

from __future__ import annotations

import errno
import os

from fabric_lsp.findings import Finding, Position, Severity, Span

CODE = "io-error"
NAME = "io-error"
SUMMARY = "A path given to check cannot be read."


def is_io_error_finding(finding: Finding) -> bool:
    return finding.code == CODE


def missing_path_finding(path: str, error_number: int = errno.ENOENT) -> Finding:
    """The entry of a command-line path that does not exist (or cannot be read: `error_number`)."""
    start = Position(0, 0)
    return Finding(code=CODE, severity=Severity.ERROR, span=Span(os.path.abspath(path), start, start),
                   message=os.strerror(error_number), record_id="")
