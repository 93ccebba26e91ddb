"""Sphinx settings for the documentation: the guides (docs/*.md, read by MyST) and the references generated from the
code, the Python API from its docstrings (autodoc) and the command line from its --help (sphinx-click). Built with
warnings as errors by tests/docs/test_reference.py.

Sphinx rather than mkdocs: autodoc reads the signatures and annotations mypy checks (and the lazily loaded
`deniable.analysis` through its ``__all__``), sphinx-click writes the command reference from click itself, MyST reads
the Markdown guides as they are, and both model references, sqlite-utils' and statsmodels', are Sphinx."""

project = "deniable"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx_click"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "notebooks"]
# The guides link to each other's headings (analysis.md#wide-numbers).
myst_heading_anchors = 3
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
# Signatures stay readable: the types go in the parameter list below each one.
autodoc_typehints = "description"
html_theme = "alabaster"
html_title = "deniable"
# `name` in a docstring links to what it names where the reference has it (and is set as code where not).
default_role = "py:obj"
