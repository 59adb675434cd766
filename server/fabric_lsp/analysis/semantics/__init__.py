"""What the constructs of a program mean to the value-flow interpreter (`analysis/flow.py`): Python
itself, torch, the model libraries and Lightning Fabric, one module per kind of knowledge, each a
mixin of `flow.Solver` (see flow.py's docstring for the interface)."""
