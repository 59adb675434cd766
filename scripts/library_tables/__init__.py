"""Per-library parts of scripts/generate_library_tables.py (see that script's docstring).

Each ``lib_<name>.py`` module has ``describe(tables: common.LibraryTables) -> None``: it builds the
library's models from small configs with random weights, observes them and records the facts.
"""

# Table name -> module of this package that describes it. The table name is the import name.
LIBRARIES: dict[str, str] = {
    "transformers": "lib_transformers",
    "peft": "lib_peft",
    "timm": "lib_timm",
    "open_clip": "lib_open_clip",
    "torchvision": "lib_torchvision",
    "diffusers": "lib_diffusers",
    "sentence_transformers": "lib_sentence_transformers",
}

# Distribution name of each library (for its version).
DISTRIBUTIONS: dict[str, str] = {
    "transformers": "transformers",
    "peft": "peft",
    "timm": "timm",
    "open_clip": "open_clip_torch",
    "torchvision": "torchvision",
    "diffusers": "diffusers",
    "sentence_transformers": "sentence-transformers",
}
