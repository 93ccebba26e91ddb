import json

import pytest

from click.testing import CliRunner

from deniable.analysis import estimate, load
from deniable.server import create_app
from deniable.server.cli import main


def test_cli_estimate_table_csv_json(demo_db):
    runner = CliRunner()
    table = runner.invoke(main, ["estimate", "tax", "--db", demo_db])
    assert table.exit_code == 0, table.output
    assert "4000 responses" in table.output and "clopper-pearson" in table.output and "Mean:" in table.output
    as_json = json.loads(runner.invoke(main, ["estimate", "tax", "--db", demo_db, "--format", "json"]).output,
                         parse_constant=lambda name: pytest.fail(f"invalid JSON constant {name}"))
    dodged = [row for row in as_json if row["question"] == "dodged" and row["answer"] == "yes"][0]
    expected = estimate(load(db=demo_db, survey_id="tax"), "dodged").table.loc["yes"]
    assert dodged["estimate"] == expected["estimate"] and dodged["ci_high"] == expected["ci_high"]
    csv_text = runner.invoke(main, ["estimate", "tax", "--db", demo_db, "--by", "region", "--question", "dodged",
                                    "--format", "csv"]).output
    header, *rows = csv_text.splitlines()
    assert header.startswith("question,group,answer,estimate,se,ci_low,ci_high")
    assert len(rows) == 8  # 4 regions × yes/no


def test_cli_estimate_errors(demo_db, tmp_path):
    runner = CliRunner()
    for args, message in [(["estimate", "nope", "--db", demo_db], "no survey 'nope'"),
                          (["estimate", "tax", "--db", str(tmp_path / "x.db")], "no such database"),
                          (["estimate", "tax", "--db", demo_db, "--by", "dodged"], "group only by a public question"),
                          (["estimate", "tax", "--db", demo_db, "--question", "zzz"], "no question 'zzz'")]:
        result = runner.invoke(main, args)
        assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output


def test_dashboard_shows_live_estimates_with_a_chart_per_question(demo_db):
    app = create_app({"DATABASE": demo_db, "ADMIN_TOKEN": "t"})
    client = app.test_client()
    assert client.get("/admin/surveys/tax").status_code == 401
    client.get("/admin/login?token=t")
    page = client.get("/admin/surveys/tax").data.decode()
    assert page.count("<svg") == 6
    assert "4000</strong> responses" in page
    expected = estimate(load(db=demo_db, survey_id="tax"), "dodged").table.loc["yes"]
    assert f"[{expected['ci_low']:.3f}, {expected['ci_high']:.3f}]" in page
    assert "Mean:" in page
