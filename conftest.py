"""The examples in README.md and docs/*.md run as doctests in a workspace of their own (`tests/support/doc_examples.py`)."""

pytest_plugins = ["tests.support.doc_examples"]
