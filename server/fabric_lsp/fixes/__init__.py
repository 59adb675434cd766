"""Fixes as text: applying edits (edits), keeping them inside the checked paths (confinement), and
`# noqa` directives (noqa)."""
