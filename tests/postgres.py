"""A throwaway PostgreSQL cluster for the tests: initdb in a temporary folder, started with
pg_ctl on a free loopback port, stopped and removed at the end of the session.

PostgreSQL refuses to run as root: when the tests run as root, the cluster runs as the
``postgres`` user that Debian's package creates (``scripts/test.sh`` installs the package when
the binaries are absent). Each test gets its own schema, so tests never see each other's rows.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def binaries() -> Path | None:
    """The folder holding initdb and pg_ctl (Debian keeps them out of PATH)."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    for folder in candidates:
        if Path(folder, "initdb").exists() and Path(folder, "pg_ctl").exists():
            return Path(folder)
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ThrowawayPostgres:
    def __init__(self):
        folder = binaries()
        if folder is None:
            raise RuntimeError("PostgreSQL's initdb and pg_ctl were not found (install Debian's postgresql)")
        self.bin = folder
        self.root = Path(tempfile.mkdtemp(prefix="deniable-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.user = None
        if os.geteuid() == 0:
            self.user = pwd.getpwnam("postgres")
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)
            os.chmod(self.root, 0o755)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        settings = self._settings()
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-o", settings, "-w", "-t", "60", "start")
        self.admin_url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._sql("CREATE DATABASE deniable")
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/deniable"

    def _settings(self) -> str:
        # Commit timestamps on: the tests that look for what links a token to its response join on them too.
        return (f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=on "
                "-c max_connections=300 -c log_min_messages=warning -c track_commit_timestamp=on")

    def _run(self, program: str, *args: str):
        command = [str(self.bin / program), *args]
        if self.user is not None:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, cwd=self.root)
        if result.returncode != 0:
            log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
            raise RuntimeError(f"{program} failed: {result.stdout}{result.stderr}{log}")

    def _sql(self, sql: str, url: str | None = None):
        import psycopg

        with psycopg.connect(url or self.admin_url, autocommit=True) as connection:
            connection.execute(sql)

    def halt(self):
        """Stop the server (as a crash or an upgrade would), keeping its data."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def resume(self):
        settings = self._settings()
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-o", settings, "-w", "-t", "60", "start")

    def fresh_url(self) -> str:
        """A URL whose connections see only a new, empty schema."""
        schema = f"t_{secrets.token_hex(6)}"
        self._sql(f"CREATE SCHEMA {schema}", self.url)
        return f"{self.url}?options=-csearch_path%3D{schema}"

    def stop(self):
        from deniable import storage

        storage.postgresql.close_pools()
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
