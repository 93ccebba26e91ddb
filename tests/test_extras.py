"""Every extra installs alone and does what it is for: each into a fresh virtual environment of its own, from the lock
(`uv sync --locked --extra NAME`, nothing else), then `tests/support/extras_smoke.py` inside it. The suite's own
environment has every extra, so a module one extra needs from another (the dashboard's analysis) is only seen here."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
UV = ROOT / ".uv" / "bin" / "uv"
SMOKE = ROOT / "tests" / "support" / "extras_smoke.py"


def environment_with(extra: str | None, where: Path) -> Path:
    """A virtual environment at ``where`` holding the project with ``extra`` alone (None: the bare client), from the
    lock. One at a time: building the editable project writes into the checkout."""
    if not UV.exists():
        pytest.fail("uv is missing: scripts/env.sh installs it in .uv/")
    command = [str(UV), "sync", "--locked", "--quiet", "--python", sys.executable]
    command += [] if extra is None else ["--extra", extra]
    environment = dict(os.environ, UV_PROJECT_ENVIRONMENT=str(where), UV_PYTHON_DOWNLOADS="never")
    with open(ROOT / ".uv" / "extras.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return where / "bin" / "python"


def run_smoke(python: Path, check: str, work: Path, **variables) -> str:
    done = subprocess.run([str(python), str(SMOKE), check, str(ROOT), str(work)], cwd=work,
                          env=dict(os.environ, **variables), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("extra, check", [(None, "client"), ("yaml", "yaml"), ("xlsform", "xlsform"),
                                          ("analysis", "analysis"), ("server", "server")])
def test_an_extra_installed_alone_does_what_it_is_for(tmp_path, extra, check):
    python = environment_with(extra, tmp_path / "venv")
    work = tmp_path / "work"
    work.mkdir()
    assert run_smoke(python, check, work).splitlines()[-1].startswith(f"{check}:")


@pytest.mark.slow
def test_the_bare_client_has_nothing_beyond_the_standard_library(tmp_path):
    python = environment_with(None, tmp_path / "venv")
    listed = subprocess.run([str(UV), "pip", "list", "--python", str(python), "--format", "freeze"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert [line.split("==")[0] for line in listed] == ["deniable"], listed


@pytest.mark.slow
def test_the_postgresql_extra_alone_stores_on_postgresql(tmp_path, postgres):
    python = environment_with("postgresql", tmp_path / "venv")
    work = tmp_path / "work"
    work.mkdir()
    output = run_smoke(python, "postgresql", work, DENIABLE_SMOKE_POSTGRESQL=postgres.fresh_url())
    assert output.startswith("postgresql:")


def test_the_main_command_says_its_options_before_installing_anything(tmp_path):
    """`bash scripts/main.sh --help` answers at once: it ran the whole setup (minutes on a fresh machine) first. Run
    from a folder without env.sh beside it: had it started setting up, it would fail."""
    script = tmp_path / "main.sh"
    script.write_text((ROOT / "scripts" / "main.sh").read_text())
    for flag in ("--help", "-h"):
        shown = subprocess.run(["bash", str(script), "--port", "9000", flag], capture_output=True, text=True, timeout=30)
        assert shown.returncode == 0 and "Usage: bash scripts/main.sh" in shown.stdout and "--port N" in shown.stdout
        assert shown.stderr == ""
