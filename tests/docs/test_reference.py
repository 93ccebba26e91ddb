"""The reference is generated and complete: Sphinx builds docs/ (the guides, the Python API from its docstrings, the
command line from its --help) with every warning an error, and each public name of the client and the analysis, and
each command of `deniable`, has its entry."""

import subprocess
import sys
from pathlib import Path

import click
import pytest

import deniable.analysis
import deniable.client
from deniable.server.cli import main

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(DOCS), str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr  # a warning (a broken cross-reference, bad markup) fails the build
    return out


def _commands(group: click.Group, path: str = "deniable") -> list[str]:
    found = [path]
    for name, command in group.commands.items():
        found += _commands(command, f"{path}-{name}") if isinstance(command, click.Group) else [f"{path}-{name}"]
    return found


@pytest.mark.slow
def test_every_public_name_has_its_entry(built):
    for module, page in ((deniable.client, "client"), (deniable.analysis, "analysis")):
        html = (built / "reference" / f"{page}.html").read_text()
        missing = [name for name in module.__all__ if f'id="{module.__name__}.{name}"' not in html]
        assert missing == [], f"{module.__name__}: not in the reference: {missing}"


@pytest.mark.slow
def test_every_command_has_its_entry(built):
    html = (built / "reference" / "cli.html").read_text()
    commands = _commands(main)
    assert len(commands) > 30
    assert [path for path in commands if f'id="{path}"' not in html] == []
    assert "--format" in html and "sqlite" in html  # the options, as --help says them
