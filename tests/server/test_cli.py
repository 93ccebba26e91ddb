import json

import pytest
from click.testing import CliRunner

from deniable import storage
from deniable.client import Survey
from deniable.server.cli import main
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.both_engines

TAX = str(EXAMPLES / "tax.yaml")


def run(*args, env=None):
    result = CliRunner().invoke(main, list(args), env=env)
    return result


def test_survey_check_prints_the_privacy_summary():
    result = run("survey", "check", TAX)
    assert result.exit_code == 0, result.output
    survey = Survey.from_file(TAX)
    assert survey.hash[:12] in result.output
    assert "dodged" in result.output and "prior 2% → at most 5.8%" in result.output
    assert f"{survey.epsilon:.4f}" in result.output
    assert "WARNING" in result.output


def test_survey_check_json_matches_the_library():
    payload = json.loads(run("survey", "check", "--json", TAX).output)
    survey = Survey.from_file(TAX)
    assert payload["hash"] == survey.hash
    assert payload["questions"]["region"]["epsilon"] is None
    assert Survey.from_dict(payload["spec"]).hash == survey.hash


def test_survey_check_plans_a_wide_number_s_mean_at_once_and_says_its_shares_were_not_planned(tmp_path):
    """A 0..1000 number's shares take a bootstrap; its mean is in closed form: planned whatever the time limit. The
    limit is 0.01 s, far below the shares' bootstrap (about half a second since it starts sparse: a limit of 0.5 s let
    them finish on a quiet machine, and the test failed)."""
    from deniable.analysis import blas, plans, precision

    spec = {"id": "wide", "title": "t", "questions": [{"id": "income", "text": "?", "type": "number", "min": 0,
                                                        "max": 1000, "step": 1, "privacy": {"design": "laplace",
                                                                                            "epsilon": 1}}]}
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(spec))
    plans._PRECISION.clear()
    payload = json.loads(run("survey", "check", "--json", str(path), "--plan-seconds", "0.01").output)
    figures = payload["questions"]["income"]["planning"]
    with blas.one_thread():  # as plan works it out: the 1001² inverse moves in its 6th digit with BLAS's threads
        expected = (precision.mean_unit_variance(Survey.from_dict(spec).questions["income"]) / 1000) ** 0.5
    assert figures["mean_se"] == expected and figures["se"] is None and figures["n_for_margin"] is None
    assert payload["unplanned"] == [] and payload["shares_unplanned"] == ["income"]
    text = run("survey", "check", str(path), "--plan-seconds", "0.01").output
    assert f"income               each value's share not planned in time; mean ±{1.959964 * expected:.3g} on 0–1000" in text
    assert "Shares value by value not planned within the time limit: income" in text


def test_survey_check_reports_mistakes_without_a_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: s\ntitle: t\nquestions:\n  - {id: q, type: yes_no, text: '?', privacy: {design: warner, p: 1/2}}\n")
    result = run("survey", "check", str(bad))
    assert result.exit_code == 1
    assert "question 'q'.privacy.p: 1/2 makes the report independent" in result.output
    assert "Traceback" not in result.output
    missing = run("survey", "check", str(tmp_path / "nope.yaml"))
    assert missing.exit_code == 1 and "cannot read" in missing.output


def test_add_list_show_close_round_trip(db_path, tmp_path):
    added = run("survey", "add", TAX, "--db", db_path)
    assert added.exit_code == 0 and "Added survey 'tax' (version 1" in added.output
    assert "unchanged" in run("survey", "add", TAX, "--db", db_path).output
    changed = tmp_path / "changed.yaml"
    changed.write_text(EXAMPLES.joinpath("tax.yaml").read_text().replace("Taxes and daily life", "Taxes, again"))
    new_version = run("survey", "add", str(changed), "--db", db_path)
    assert "NEW VERSION 2" in new_version.output
    listing = run("survey", "list", "--db", db_path)
    assert "tax" in listing.output and "Taxes, again" in listing.output
    shown = run("survey", "show", "tax", "--db", db_path)
    assert "version 1" in shown.output and "version 2" in shown.output and "(current)" in shown.output
    assert "open survey" in shown.output
    assert "closed" in run("survey", "close", "tax", "--db", db_path).output
    with storage.Store(db_path) as store:
        assert store.get_survey("tax").closed


def test_db_comes_from_the_environment(tmp_path):
    path = str(tmp_path / "env.db")
    assert run("survey", "add", TAX, env={"DENIABLE_DB": path}).exit_code == 0
    with storage.Store(path) as store:
        assert store.get_survey("tax").version == 1


def test_tokens_print_links_and_switch_on_token_access(db_path):
    run("survey", "add", TAX, "--db", db_path)
    result = run("tokens", "tax", "--count", "3", "--db", db_path, "--base-url", "https://survey.example")
    links = [line for line in result.output.splitlines() if line.startswith("https://")]
    assert len(links) == 3 and all(link.startswith("https://survey.example/s/tax?t=") for link in links)
    with storage.Store(db_path) as store:
        assert store.get_survey("tax").access == "token"
        assert store.token_counts("tax") == {"issued": 3, "used": 0, "credentials": 0}


def test_export_to_stdout_and_to_a_file(db_path, tmp_path):
    assert run("demo", "--db", db_path, "--simulate", "25", "--no-serve").exit_code == 0
    jsonl = run("export", "tax", "--format", "jsonl", "--db", db_path)
    rows = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert len(rows) == 25
    for row in rows:  # the section on work is shown to those who worked, and its reports sent by them only
        work = {"cash", "undeclared", "hours"} if row["reports"]["worked"] == "yes" else set()
        assert set(row["reports"]) == {"region", "worked", "dodged", "fairness"} | work
    out = tmp_path / "tax.csv"
    written = run("export", "tax", "--format", "csv", "--output", str(out), "--db", db_path)
    assert written.exit_code == 0
    assert len(out.read_text().splitlines()) == 26
    assert not (tmp_path / "tax.csv.partial").exists()


def test_demo_sets_up_prints_links_and_rotates_the_admin_token(db_path):
    first = run("demo", "--db", db_path, "--no-serve", "--simulate", "10")
    assert first.exit_code == 0, first.output
    assert "Survey link: http://127.0.0.1:8000/s/tax" in first.output
    assert "Admin sign-in: http://127.0.0.1:8000/admin/login" in first.output
    assert "token=" not in first.output  # never a credential in a URL
    token = first.output.split("Admin token (shown once, stored hashed; also an API token): ")[1].split()[0]
    second = run("demo", "--db", db_path, "--no-serve")
    assert "unchanged" in second.output and token not in second.output
    with storage.Store(db_path) as store:
        assert store.response_count("tax") == 10


@pytest.mark.parametrize("args,message", [
    (("survey", "show", "nope"), "no survey 'nope'"),
    (("survey", "close", "nope"), "no survey 'nope'"),
    (("tokens", "nope", "--count", "2"), "no survey 'nope'"),
    (("tokens", "tax", "--count", "0"), "0 is not in the range"),
    (("export", "nope"), "no survey 'nope'"),
    (("export", "tax", "--format", "xml"), "'xml' is not one of"),
])
def test_errors_are_messages_with_a_nonzero_exit(db_path, args, message):
    run("survey", "add", TAX, "--db", db_path)
    result = run(*args, "--db", db_path)
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def test_a_file_that_is_not_a_database_is_a_clean_error(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    result = run("survey", "list", "--db", str(junk))
    assert result.exit_code == 1 and "cannot open the database" in result.output


def test_every_command_has_help():
    def walk(group, prefix=()):
        for name, command in group.commands.items():
            yield prefix + (name,), command
            if hasattr(command, "commands"):
                yield from walk(command, prefix + (name,))

    for path, command in walk(main):
        assert command.help, f"deniable {' '.join(path)} has no help"
        assert run(*path, "--help").exit_code == 0


def test_cli_actions_are_in_the_audit_log_as_the_dashboards_are(runner, tmp_path):
    db = str(tmp_path / "audit.db")
    spec = str(EXAMPLES / "tax.yaml")
    for args in (["survey", "add", spec], ["tokens", "tax", "--count", "2"], ["export", "tax", "--format", "csv"],
                 ["survey", "close", "tax"], ["survey", "reopen", "tax"]):
        result = runner.invoke(main, [*args, "--db", db])
        assert result.exit_code == 0, (args, result.output)
    with storage.Store(db) as store:
        entries = store.audit_log(20)
    actions = [e["action"] for e in reversed(entries)]
    assert actions == ["survey created", "invitation tokens issued", "responses exported", "survey closed",
                       "survey reopened"]
    assert all(e["actor"].startswith("cli") for e in entries)


def test_tokens_print_links_only_with_a_base_url(runner, tmp_path, monkeypatch):
    db = str(tmp_path / "links.db")
    assert runner.invoke(main, ["survey", "add", str(EXAMPLES / "tax.yaml"), "--db", db]).exit_code == 0
    monkeypatch.delenv("DENIABLE_BASE_URL", raising=False)
    bare = runner.invoke(main, ["tokens", "tax", "--count", "2", "--db", db])
    lines = [line for line in bare.output.splitlines() if line and not line.startswith(("No --base-url", "Survey"))]
    assert bare.exit_code == 0 and len(lines) == 2 and all("/" not in line for line in lines)
    assert "127.0.0.1" not in bare.output and "<your server>/s/tax?t=<token>" in bare.output
    monkeypatch.setenv("DENIABLE_BASE_URL", "https://survey.example.org/")
    linked = runner.invoke(main, ["tokens", "tax", "--count", "1", "--db", db])
    assert linked.output.strip().splitlines()[-1].startswith("https://survey.example.org/s/tax?t=")
    wrong = runner.invoke(main, ["tokens", "tax", "--count", "1", "--db", db, "--base-url", "survey.example.org"])
    assert wrong.exit_code == 2 and "is not an http(s) address" in wrong.output
