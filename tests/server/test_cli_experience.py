"""A CLI that is safe and quick: no empty database from a mistyped path, one-line errors for a busy
port, a rejected token or a closed survey, a clear message without the server extra, a fast start."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from deniable import storage
from deniable.server.cli import main
from tests.conftest import EXAMPLES
from tests.server.conftest import ADMIN

DENIABLE = str(Path(sys.executable).with_name("deniable"))


@pytest.mark.parametrize("args", [
    ["export", "tax"], ["survey", "show", "tax"], ["survey", "list"], ["survey", "export", "tax"],
    ["survey", "close", "tax"], ["survey", "reopen", "tax"], ["tokens", "tax", "--count", "2"],
    ["admin", "list"], ["admin", "audit"], ["admin", "revoke", "abc"], ["compact"],
])
def test_a_mistyped_db_is_a_message_and_creates_nothing(runner, tmp_path, args):
    missing = tmp_path / "typo.db"
    result = runner.invoke(main, [*args, "--db", str(missing)])
    assert result.exit_code == 1 and "no such database file" in result.output, result.output
    assert list(tmp_path.iterdir()) == []


def test_reading_commands_leave_the_database_as_it_was(runner, tmp_path, demo):
    path = tmp_path / "survey.db"
    with storage.Store(str(path)) as store:
        store.add_survey(demo)
        store.compact()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    for args in (["export", "tax"], ["survey", "show", "tax"], ["survey", "list"], ["admin", "audit"]):
        assert runner.invoke(main, [*args, "--db", str(path)]).exit_code == 0
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_an_old_schema_is_not_migrated_by_a_reading_command(runner, tmp_path):
    import sqlite3

    path = tmp_path / "old.db"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    result = runner.invoke(main, ["survey", "list", "--db", str(path)])
    assert result.exit_code == 1 and "run `deniable init-db`" in result.output


def test_a_busy_port_is_one_line_and_a_nonzero_exit(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        for command in (["serve"], ["demo"]):
            result = subprocess.run([DENIABLE, *command, "--db", str(tmp_path / "x.db"), "--port", str(port)],
                                    capture_output=True, text=True, timeout=60)
            assert result.returncode == 1
            assert f"port {port} on 127.0.0.1 is already in use" in result.stderr
            assert "Traceback" not in result.stderr and "Serving" not in result.stderr + result.stdout


@pytest.mark.both_engines
def test_a_closed_survey_issues_no_invitations_until_reopened(runner, db_path, survey, client, admin_headers, store):
    assert runner.invoke(main, ["survey", "close", "tax", "--db", db_path]).exit_code == 0
    refused = runner.invoke(main, ["tokens", "tax", "--count", "2", "--db", db_path])
    assert refused.exit_code == 1 and "is closed: reopen it first (deniable survey reopen tax)" in refused.output
    api = client.post("/api/v1/surveys/tax/tokens", json={"count": 2}, headers=admin_headers)
    assert api.status_code == 410
    assert runner.invoke(main, ["survey", "reopen", "tax", "--db", db_path]).exit_code == 0
    assert not store.get_survey("tax").closed
    assert runner.invoke(main, ["tokens", "tax", "--count", "2", "--db", db_path]).exit_code == 0
    client.post("/api/v1/surveys/tax/close", headers=admin_headers)
    reopened = client.post("/api/v1/surveys/tax/reopen", headers=admin_headers)
    assert reopened.status_code == 200 and reopened.json["closed"] is False
    assert [e["action"] for e in store.audit_log()][:2] == ["survey reopened", "survey closed"]


def test_a_wrong_token_is_told_apart_from_none(client, survey):
    none = client.get("/api/v1/surveys")
    wrong = client.get("/api/v1/surveys", headers={"Authorization": "Bearer not-it"})
    assert none.status_code == wrong.status_code == 401
    assert "token rejected" in wrong.json["error"]["message"] and "token rejected" not in none.json["error"]["message"]
    assert client.get("/api/v1/surveys", headers={"Authorization": f"Bearer {ADMIN}"}).status_code == 200


def test_without_the_server_extra_the_command_says_how_to_get_it():
    # click (like flask) comes only with the server extra: hide it, as a client-only install would
    code = "import sys; sys.modules['click'] = None; from deniable.server.launcher import main; main()"
    result = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "pip install 'deniable[server]'" in result.stderr and "Traceback" not in result.stderr


def test_the_command_starts_without_importing_what_it_does_not_use():
    code = ("import sys; from deniable.server.cli import main; "
            "print(sorted(m for m in ('flask', 'sqlite_utils', 'pandas', 'numpy', 'scipy', 'psycopg', 'werkzeug', "
            "'openpyxl', 'matplotlib') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(result.stdout.replace("'", '"')) == []
    check = subprocess.run([DENIABLE, "survey", "check", str(EXAMPLES / "tax.yaml")], capture_output=True, text=True,
                           timeout=60)
    assert check.returncode == 0


def test_the_command_runs_blas_on_one_thread_unless_told_otherwise():
    # OpenBLAS's threads spun beside `survey check`'s small matrices (0.19 s of CPU for nothing on two cores)
    code = ("import sys, deniable.server.cli as cli; "
            "cli.main = lambda: __import__('numpy') and print(__import__('threadpoolctl').threadpool_info()[0]['num_threads']); "
            "from deniable.server.launcher import main; main()")
    environment = {key: value for key, value in os.environ.items() if not key.endswith("_NUM_THREADS")}
    alone = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                           env=environment)
    assert alone.stdout.strip() == "1"
    chosen = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                            env={**environment, "OPENBLAS_NUM_THREADS": "2"})
    assert chosen.stdout.strip() == "2"


# --- advice before fielding -----------------------------------------------------------

def _spec(tmp_path, *questions) -> str:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"id": "drugs", "title": "Drug use", "questions": list(questions)}))
    return str(path)


DRINKS = {"id": "drinks", "text": "Drinks last week?", "type": "number", "min": 0, "max": 20, "step": 1,
          "privacy": {"design": "laplace", "epsilon": 2}}
LIKERT = {"id": "risky", "text": "Cannabis is risky.", "type": "ordinal", "options": ["1", "2", "3", "4", "5"],
          "privacy": {"design": "ordinal", "epsilon": 1.5}}
COIN = {"id": "cannabis", "text": "Cannabis last year?", "type": "yes_no"}


def test_survey_check_gives_the_precision_at_the_planned_n(runner, tmp_path):
    from deniable.analysis import plan
    from deniable.client import Survey

    path = _spec(tmp_path, COIN, LIKERT, DRINKS)
    result = runner.invoke(main, ["survey", "check", path])
    assert result.exit_code == 0, result.output
    assert "Planning at n = 1,000 respondents" in result.output
    # The 0-20 number at ε = 2: the n its published shares need, searched by bootstrap (`sample_size`).
    from deniable.analysis import sample_size

    drinks = Survey.from_file(path).questions["drinks"]
    assert f"n for ±5 points: {sample_size(drinks, 0.05):,}" in result.output
    assert f"SE {plan(Survey.from_file(path), 1000)[2].se:.3f}" in result.output
    flags = [line for line in result.output.splitlines() if "FLAG" in line]
    assert len(flags) == 2 and all("only the mean is usable" in line for line in flags)
    assert not [line for line in flags if "cannabis" in line]
    # --n moves the figures: the coin-flip question at n = 400 has the margin the planning functions give.
    wider = runner.invoke(main, ["survey", "check", path, "--n", "400", "--json"])
    figures = json.loads(wider.output)["questions"]
    expected = {p.question_id: p for p in plan(Survey.from_file(path), 400)}
    assert figures["cannabis"]["planning"]["margin"] == pytest.approx(expected["cannabis"].margin)
    assert figures["cannabis"]["planning"]["n"] == 400 and figures["drinks"]["planning"]["mean_se"] > 0
    quiet = runner.invoke(main, ["survey", "check", path, "--no-plan"])
    assert quiet.exit_code == 0 and "Planning" not in quiet.output


def test_survey_show_plans_too(runner, tmp_path):
    db = str(tmp_path / "s.db")
    assert runner.invoke(main, ["survey", "add", _spec(tmp_path, COIN, LIKERT), "--db", db]).exit_code == 0
    shown = runner.invoke(main, ["survey", "show", "drugs", "--db", db, "--n", "5000"]).output
    assert "Planning at n = 5,000 respondents" in shown and "risky" in shown


@pytest.mark.parametrize("privacy, message", [
    ({"design": "k_rr", "epsilon": 50}, "ε = 50 leaves little protection"),
    ({"design": "unrelated_question", "p": "1/2", "innocuous_yes": 0}, "ε is infinite"),
])
def test_weak_and_one_sided_designs_are_flagged(runner, tmp_path, privacy, message):
    result = runner.invoke(main, ["survey", "check", _spec(tmp_path, {**COIN, "privacy": privacy})])
    assert result.exit_code == 0 and f"WARNING: question 'cannabis': {message}" in result.output, result.output
    assert "none (PUBLIC)" not in result.output


@pytest.mark.parametrize("privacy, message", [
    ({"desgin": "forced_response", "truth": "1/2", "yes": "1/4", "no": "1/4"}, "is 'desgin' a misspelling of 'design'?"),
    ({"design": "k_rr", "epsilon": 1e-9}, "so close to 0"),
])
def test_privacy_mistakes_are_refused_by_name(runner, tmp_path, privacy, message):
    result = runner.invoke(main, ["survey", "check", _spec(tmp_path, {**COIN, "privacy": privacy})])
    assert result.exit_code == 1 and message in result.output and "unknown design None" not in result.output


@pytest.mark.parametrize("example", ["tax.yaml", "questionnaire.yaml"])
def test_planning_loads_numpy_but_not_scipy_pandas_or_statsmodels(example):
    """`survey check` plans every question (ordinal and numeric ones by bootstrap) on numpy alone: scipy.linalg's import
    is 0.27 s, more than the planning itself."""
    script = ("import sys; from deniable.analysis.plans import plan; from deniable.analysis import plan as same; "
              "from deniable.client import Survey; "
              f"assert plan is same; plan(Survey.from_file({str(EXAMPLES / example)!r}), 1000); "
              "print(sorted(m for m in ('scipy', 'pandas', 'statsmodels') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"


def test_survey_check_plans_a_conditional_question_at_the_share_asked(runner):
    from deniable.analysis import plan
    from deniable.client import Survey

    path = str(EXAMPLES / "questionnaire.yaml")
    shown = runner.invoke(main, ["survey", "check", path, "--n", "2000"])
    assert shown.exit_code == 0, shown.output
    assert "asked of 50% (1,000 of 2,000, if every public answer is equally likely; --asked)" in shown.output
    given = runner.invoke(main, ["survey", "check", path, "--n", "2000", "--asked", "cash=0.4", "--json"])
    cash = json.loads(given.output)["questions"]["cash"]["planning"]
    expected = {p.question_id: p for p in plan(Survey.from_file(path), 2000, asked={"cash": 0.4})}["cash"]
    assert (cash["asked_share"], cash["asked_n"], cash["asked_from"]) == (0.4, 800, "given")
    assert cash["se"] == pytest.approx(expected.se)
    for wrong, why in (("dodged=0.4", "asked of every respondent"), ("cash=1.4", "must be a number in (0, 1]"),
                       ("cash", "expected QUESTION=SHARE"), ("nope=0.3", "no question 'nope'")):
        refused = runner.invoke(main, ["survey", "check", path, "--asked", wrong])
        assert refused.exit_code == 2 and why in refused.output and "Traceback" not in refused.output


def test_a_question_with_nothing_to_estimate_yet_leaves_the_others_estimated(runner, db_path, store, client):
    """An optional question nobody answered, or a split ballot whose reports so far all came from its direct arm,
    once made `deniable estimate` (every format) and the dashboard's download fail for the whole survey. Now each
    such question is named with why; the rest are estimated; asking for it by name is still an error."""
    from deniable.analysis import AnalysisError, compare, estimate_table, load, subgroups
    from deniable.client import Survey
    from tests.server.conftest import sign_in

    survey = Survey.from_dict({"id": "early", "title": "Early", "questions": [
        {"id": "team", "type": "choice", "text": "Team?", "options": ["A", "B"], "privacy": "none"},
        {"id": "asked", "type": "yes_no", "text": "A?", "privacy": {"design": "warner", "p": "3/4"}},
        {"id": "optional", "type": "yes_no", "text": "B?", "required": False, "privacy": {"design": "warner", "p": "3/4"}},
        {"id": "split", "type": "yes_no", "text": "C?", "required": False, "split_ballot": {"direct": "1/2"},
         "privacy": {"design": "warner", "p": "3/4"}}]})
    store.add_survey(survey)
    for fmt in ("table", "csv"):  # nothing at all to estimate: a failure in every format, each question named
        nothing = runner.invoke(main, ["estimate", "early", "--format", fmt, "--db", db_path])
        assert nothing.exit_code == 1 and "no question could be estimated" in nothing.output, fmt
        assert "Not estimated: asked: no reports yet\nNot estimated: optional: no reports yet" in nothing.output, fmt
    for position, answer in enumerate(("yes", "no", "yes")):
        store.submit("early", survey.hash, f"key-{position:08}",
                     survey.randomize({"team": "A", "asked": answer, "split": answer}, arms={"split": "direct"}))
    empty = ["optional: no reports yet",
             "split: no reports from the randomized arm yet (3 from the direct arm); the design's estimate needs at least one"]
    table = estimate_table(load(db=db_path, survey_id="early"))
    assert table.empty == empty and set(table.frame["question"]) == {"team", "asked"}
    assert set(load(db=db_path, survey_id="early").estimate_all()) == {"team", "asked"}  # the split ballot: left out
    with pytest.raises(AnalysisError, match="optional: no reports yet"):
        estimate_table(load(db=db_path, survey_id="early"), ["optional"])
    shown = runner.invoke(main, ["estimate", "early", "--db", db_path])
    assert shown.exit_code == 0 and "Question: asked" in shown.output
    assert all(f"Not estimated: {line}" in shown.output for line in empty)
    as_csv = runner.invoke(main, ["estimate", "early", "--format", "csv", "--db", db_path])
    assert as_csv.exit_code == 0 and as_csv.stdout.startswith("question,") and "Not estimated: optional" in as_csv.stderr
    named = runner.invoke(main, ["estimate", "early", "--question", "optional", "--db", db_path])
    assert named.exit_code == 1 and "optional: no reports yet" in named.output and "Traceback" not in named.output
    sign_in(client)
    download = client.get("/admin/surveys/early/versions/1/estimates.csv")
    assert download.status_code == 200 and download.get_data(as_text=True).count("\nasked,") == 2
    page = client.get("/admin/surveys/early").get_data(as_text=True)
    assert "no reports yet" in page and "no reports from the randomized arm yet (3 from the direct arm)" in page

    # by group: team B answers the split ballot through the design, team A only directly so far
    store.submit("early", survey.hash, "key-b-000001", survey.randomize({"team": "B", "asked": "no", "split": "no"},
                                                                        arms={"split": "randomized"}))
    data = load(db=db_path, survey_id="early")
    assert list(subgroups(data, "split", "team")) == ["B"]  # A has nothing to estimate from: left out
    by_team = runner.invoke(main, ["estimate", "early", "--by", "team", "--db", db_path])
    assert by_team.exit_code == 0, by_team.output
    assert "Not estimated: split among team = A: no reports from the randomized arm yet (3 from the direct arm)" \
        in by_team.output and "== split by team" in by_team.output
    with pytest.raises(AnalysisError, match=r"team='A': no reports from the randomized arm yet \(3 from the direct arm\)"):
        compare(data, "split", "team", "A", "B")


def test_serve_on_an_ipv6_address_with_several_workers(tmp_path):
    """`deniable serve --host ::1 --workers 2` could not start (gunicorn read "::1:PORT" as an empty port) and its
    links did not open; an IPv6 address is written in brackets. gunicorn's control socket is off."""
    import socket
    import time
    import urllib.request

    with socket.socket(socket.AF_INET6) as probe:
        probe.bind(("::1", 0))
        port = probe.getsockname()[1]
    deniable = str(Path(sys.executable).with_name("deniable"))
    server = subprocess.Popen([deniable, "serve", "--db", str(tmp_path / "v6.db"), "--host", "::1", "--port", str(port),
                               "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env={**os.environ, "DENIABLE_ADMIN_TOKEN": "t" * 24, "HOME": str(tmp_path)})
    try:
        deadline, answer = time.monotonic() + 90, None
        while answer is None and time.monotonic() < deadline and server.poll() is None:
            try:
                answer = json.loads(urllib.request.urlopen(f"http://[::1]:{port}/healthz", timeout=2).read())
            except OSError:
                time.sleep(0.2)
        assert answer is not None and answer["ok"], server.poll()
        # No control socket at the one path every deployment of the user would share (gunicorn 25 makes one).
        assert not (tmp_path / ".gunicorn").exists()
    finally:
        server.terminate()
        output = server.communicate(timeout=30)[0]
    assert f"http://[::1]:{port}/admin/login" in output
