"""Everything a user can name is documented (in the manner of sqlite-utils' tests/test_docs.py): every design of the
registry has its section in docs/mechanisms.md and a row of the README's design table or the mechanisms page, every
command of `deniable` has help text and a mention in the docs, and CONTRIBUTING.md names every generator in
scripts/."""

from pathlib import Path

import click
import pytest

from deniable.client.designs import DESIGNS
from deniable.server.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOCS = "\n".join(path.read_text(encoding="utf-8") for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])


def _commands(group: click.Group, prefix: str = ""):
    for name, command in sorted(group.commands.items()):
        yield f"{prefix}{name}", command
        if isinstance(command, click.Group):
            yield from _commands(command, f"{prefix}{name} ")


@pytest.mark.parametrize("design", sorted(DESIGNS))
def test_every_design_is_documented(design):
    mechanisms = (ROOT / "docs" / "mechanisms.md").read_text(encoding="utf-8")
    assert f"`{design}`" in mechanisms, f"docs/mechanisms.md never names the design `{design}`"


@pytest.mark.parametrize("name, command", list(_commands(main)), ids=lambda value: value if isinstance(value, str) else "")
def test_every_command_has_help_and_a_mention_in_the_docs(name, command):
    assert (command.help or "").strip(), f"deniable {name}: no help text"
    assert f"deniable {name}" in DOCS, f"`deniable {name}` is mentioned nowhere in README.md or docs/"


def test_contributing_names_every_generator():
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    for script in sorted((ROOT / "scripts").glob("*.py")):
        assert f"scripts/{script.name}" in contributing, f"CONTRIBUTING.md does not say what scripts/{script.name} is for"
