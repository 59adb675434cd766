"""Source -> facts. The only package that talks to jedi (through `workspace`).

    program.py        the files of one program, parsed and solved (`solve`)
    flow.py           the fixed-point value flow over the program's scopes (`Solver`)
    semantics/        what constructs mean to it: Python, torch, library calls, Fabric
    facts.py          the solved program -> the facts the rules read (`analyze`)
    libraries/        the tables generated from the real libraries (torch + Lightning, the model
                      libraries) and what the analysis asks of them

This module only names what the package offers to the rules, the engine and the servers.
"""

from fabric_lsp.analysis.facts import (
    BackwardFact,
    FabricFact,
    FabricUse,
    MarkFact,
    MetaModelFact,
    MethodCallFact,
    MethodInfo,
    Origin,
    ProgramFacts,
    SetupMisuseFact,
    FrozenSetupFact,
    WrappedPath,
    analyze,
    wrapped_paths,
)

__all__ = [
    "BackwardFact",
    "FabricFact",
    "FabricUse",
    "MarkFact",
    "MetaModelFact",
    "MethodCallFact",
    "MethodInfo",
    "Origin",
    "ProgramFacts",
    "SetupMisuseFact",
    "FrozenSetupFact",
    "WrappedPath",
    "analyze",
    "wrapped_paths",
]
