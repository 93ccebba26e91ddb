"""What each extra promises, run inside a virtual environment that has that extra alone (`tests/test_extras.py`):
``python extras_smoke.py EXTRA REPO WORKDIR``. Prints one line per check; any failure is a traceback and exit 1."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

SPEC = {"id": "smoke", "title": "Smoke", "questions": [
    {"id": "dodged", "type": "yes_no", "text": "Did you?",
     "privacy": {"design": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}}]}


def client(repo: Path, work: Path) -> None:
    """The client needs nothing beyond the standard library: a spec, a randomized answer, ε."""
    from deniable.client import Survey

    survey = Survey.from_dict(SPEC)
    assert survey.randomize({"dodged": "yes"})["dodged"] in ("yes", "no")
    assert abs(survey.epsilon - 1.0986) < 1e-3, survey.epsilon
    print("client: randomized, ε", round(survey.epsilon, 4))


def yaml(repo: Path, work: Path) -> None:
    """A YAML spec read with its yes/no answers as the words they are."""
    from deniable.client import Survey

    survey = Survey.from_file(repo / "examples" / "tax.yaml")
    assert survey.questions["dodged"].mechanism.answers == ["yes", "no"]
    print("yaml: examples/tax.yaml read,", len(survey.questions), "questions")


def xlsform(repo: Path, work: Path) -> None:
    """An XLSForm read and written back: the same survey."""
    from deniable.client import Survey
    from deniable.client.xlsform import read_xlsform, write_xlsform

    survey = Survey.from_dict(read_xlsform(repo / "examples" / "questionnaire.xlsx"))
    written = work / "round.xlsx"
    write_xlsform(survey, written)
    assert Survey.from_dict(read_xlsform(written)).hash == survey.hash
    print("xlsform: round trip of", len(survey.questions), "questions")


def analysis(repo: Path, work: Path) -> None:
    """The quickstart notebook's code, cell by cell (its plot on matplotlib's file backend)."""
    import matplotlib

    matplotlib.use("Agg")
    os.chdir(work)
    notebook = json.loads((repo / "docs" / "notebooks" / "quickstart.ipynb").read_text())
    scope: dict = {}
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            code = "".join(line for line in cell["source"] if not line.startswith("%"))
            exec(compile(code, "quickstart.ipynb", "exec"), scope)  # noqa: S102 - the project's own notebook
    print("analysis: quickstart notebook ran,", sum(c["cell_type"] == "code" for c in notebook["cells"]), "cells")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _deniable(*arguments: str, cwd: Path) -> str:
    command = [str(Path(sys.executable).with_name("deniable")), *arguments]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (command, done.stdout, done.stderr)
    return done.stdout


def server(repo: Path, work: Path) -> None:
    """The documented production install: the demo set up, `deniable estimate`, a SQLite export and a served dashboard
    page."""
    database = str(work / "smoke.db")
    output = _deniable("demo", "--simulate", "40", "--no-serve", "--db", database, cwd=work)
    token = re.search(r"Admin token[^:]*: (\S+)", output).group(1)
    estimated = _deniable("estimate", "tax", "--db", database, cwd=work)
    assert "dodged" in estimated, estimated
    _deniable("export", "tax", "--db", database, "--format", "sqlite", "--output", str(work / "tax.sqlite"), cwd=work)
    with sqlite3.connect(work / "tax.sqlite") as exported:
        assert exported.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 40
    port = _free_port()
    served = subprocess.Popen([str(Path(sys.executable).with_name("deniable")), "serve", "--db", database,
                               "--port", str(port)], cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}"
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        for _ in range(300):
            try:
                page = opener.open(base + "/admin/login", timeout=5).read().decode()
                break
            except OSError:
                assert served.poll() is None, served.stderr.read().decode()
                time.sleep(0.1)
        csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
        opener.open(base + "/admin/login", urllib.parse.urlencode({"csrf": csrf, "token": token}).encode(), timeout=30)
        dashboard = opener.open(base + "/admin/surveys/tax", timeout=120)
        assert dashboard.status == 200 and "dodged" in dashboard.read().decode()
        assert opener.open(base + "/s/tax", timeout=30).status == 200
    finally:
        served.terminate()
        served.wait(timeout=30)
    print("server: demo, estimate, export and the dashboard's survey page served")


def postgresql(repo: Path, work: Path) -> None:
    """A store on PostgreSQL (the URL in $DENIABLE_SMOKE_POSTGRESQL): a survey added and a report stored and counted."""
    from deniable.client import Survey
    from deniable.storage import Store

    survey = Survey.from_dict(SPEC)
    with Store(os.environ["DENIABLE_SMOKE_POSTGRESQL"]) as store:
        store.add_survey(survey)
        record = store.get_survey(survey.id)
        store.submit(survey.id, record.hash, "0" * 32, survey.randomize({"dodged": "no"}))
        assert store.response_count(survey.id) == 1
    print("postgresql: a survey and a report stored")


if __name__ == "__main__":
    extra, repo, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    globals()[extra](repo, work)
