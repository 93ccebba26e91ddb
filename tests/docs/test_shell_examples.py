"""Every `deniable` command line in the shell examples of README.md and docs/*.md is one the command takes: parsed by
the command itself (click, as the shell would hand it the words), so an option renamed or a choice dropped fails here
rather than in a reader's terminal. The lines run nothing (they serve, send e-mail, copy databases); the examples that
run are the Python and JavaScript ones (doctests, `test_js_examples.py`). Other tools' lines (createdb, pg_dump)
are theirs."""

import re
import shlex
from pathlib import Path

import click
import pytest

from deniable.server.cli import main

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(?:sh|bash|console|shell)\n(.*?)^```$", re.S | re.M)


def command_lines() -> list[tuple[str, list[str], dict]]:
    """(where, the words after `deniable`, the variables the block exported before the line)."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in FENCE.findall(path.read_text()):
            exported: dict = {}
            for line in block.splitlines():
                words = shlex.split(re.sub(r"\$\([^)]*\)", "SUBSTITUTED", line), comments=True)  # $(date +%F)
                if words[:1] == ["export"]:
                    exported.update(word.split("=", 1) for word in words[1:])
                elif words[:1] == ["deniable"]:
                    found.append((f"{path.name}: {' '.join(words[:3])}", words[1:], dict(exported)))
    return found


def parsed(arguments: list[str]) -> click.Context:
    """The context the innermost command would run with: every group on the way resolved, every option checked."""
    context, command = main.make_context("deniable", list(arguments)), main
    while isinstance(command, click.Group):
        name, command, rest = command.resolve_command(context, [*context._protected_args, *context.args])
        context = command.make_context(name, rest, parent=context)
    return context


def test_the_docs_have_command_lines():
    assert len(command_lines()) > 30


@pytest.mark.parametrize("where, arguments, exported", command_lines(), ids=[where for where, _, _ in command_lines()])
def test_a_documented_command_line_parses(where, arguments, exported, tmp_path, monkeypatch):
    for name in ("DENIABLE_BASE_URL", "DENIABLE_DATABASE_URL", "DENIABLE_SMTP_URL", "DENIABLE_SMTP_FROM"):
        monkeypatch.delenv(name, raising=False)  # only what the example itself sets
    for name, value in exported.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "people.csv").write_text("email\nana@example.org\n")  # the contacts file the lines name
    parsed(arguments)


def test_a_line_the_command_does_not_take_is_refused():
    with pytest.raises(click.UsageError, match="No such option '--formt'"):
        parsed(["export", "tax", "--formt", "csv"])
