import json

from click.testing import CliRunner

from deniable.client import Survey
from deniable.server.cli import main
from tests.conftest import EXAMPLES


def test_survey_check_prints_the_privacy_summary():
    result = CliRunner().invoke(main, ["survey", "check", str(EXAMPLES / "tax.yaml")])
    assert result.exit_code == 0, result.output
    survey = Survey.from_file(EXAMPLES / "tax.yaml")
    assert survey.hash[:12] in result.output
    assert "dodged" in result.output and "prior 2% → at most 5.8%" in result.output
    assert f"{survey.epsilon:.4f}" in result.output
    assert "WARNING" in result.output


def test_survey_check_json_matches_the_library():
    result = CliRunner().invoke(main, ["survey", "check", "--json", str(EXAMPLES / "tax.yaml")])
    payload = json.loads(result.output)
    survey = Survey.from_file(EXAMPLES / "tax.yaml")
    assert payload["hash"] == survey.hash
    assert payload["questions"]["region"]["epsilon"] is None
    assert Survey.from_dict(payload["spec"]).hash == survey.hash


def test_survey_check_reports_mistakes_without_a_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: s\ntitle: t\nquestions:\n  - {id: q, type: yes_no, text: '?', privacy: {design: warner, p: 1/2}}\n")
    result = CliRunner().invoke(main, ["survey", "check", str(bad)])
    assert result.exit_code == 1
    assert "question 'q'.privacy.p: 1/2 makes the report independent" in result.output
    assert "Traceback" not in result.output
    missing = CliRunner().invoke(main, ["survey", "check", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 1 and "cannot read" in missing.output
